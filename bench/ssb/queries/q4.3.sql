-- SSB Q4.3: as Q4.2 for UNITED STATES suppliers and category MFGR#14, by city and brand.
-- Selects about (1/5)(1/25)(1/25)(2/7) = 0.000091 of lineorder.
SELECT d_year, s_city, p_brand1, sum(lo_revenue - lo_supplycost) AS profit
  FROM date1, customer, supplier, part, lineorder
 WHERE lo_custkey = c_custkey
   AND lo_suppkey = s_suppkey
   AND lo_partkey = p_partkey
   AND lo_orderdate = d_datekey
   AND c_region = 'AMERICA'
   AND s_nation = 'UNITED STATES'
   AND (d_year = 1997 OR d_year = 1998)
   AND p_category = 'MFGR#14'
 GROUP BY d_year, s_city, p_brand1
 ORDER BY d_year, s_city, p_brand1;
