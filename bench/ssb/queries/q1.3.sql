-- SSB Q1.3: as Q1.2 for week 6 of 1994, discounts 5..7.
-- Selects about (1/364)(3/11)(10/50) = 0.00015 of lineorder.
SELECT sum(lo_extendedprice * lo_discount) AS revenue
  FROM lineorder, date1
 WHERE lo_orderdate = d_datekey
   AND d_weeknuminyear = 6
   AND d_year = 1994
   AND lo_discount BETWEEN 5 AND 7
   AND lo_quantity BETWEEN 26 AND 35;
