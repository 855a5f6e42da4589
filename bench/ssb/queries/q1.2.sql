-- SSB Q1.2: as Q1.1 for January 1994, discounts 4..6, quantity 26..35.
-- Selects about (1/84)(3/11)(10/50) = 0.00065 of lineorder.
SELECT sum(lo_extendedprice * lo_discount) AS revenue
  FROM lineorder, date1
 WHERE lo_orderdate = d_datekey
   AND d_yearmonthnum = 199401
   AND lo_discount BETWEEN 4 AND 6
   AND lo_quantity BETWEEN 26 AND 35;
