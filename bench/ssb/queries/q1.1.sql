-- SSB Q1.1: revenue from discounts 1..3 on small orders in 1993.
-- Selects about (1/7)(3/11)(24/50) = 0.019 of lineorder.
SELECT sum(lo_extendedprice * lo_discount) AS revenue
  FROM lineorder, date1
 WHERE lo_orderdate = d_datekey
   AND d_year = 1993
   AND lo_discount BETWEEN 1 AND 3
   AND lo_quantity < 25;
