-- SSB Q2.1: revenue by year and brand for one category, suppliers in AMERICA.
-- Selects about (1/25)(1/5) = 0.008 of lineorder.
SELECT sum(lo_revenue), d_year, p_brand1
  FROM lineorder, date1, part, supplier
 WHERE lo_orderdate = d_datekey
   AND lo_partkey = p_partkey
   AND lo_suppkey = s_suppkey
   AND p_category = 'MFGR#12'
   AND s_region = 'AMERICA'
 GROUP BY d_year, p_brand1
 ORDER BY d_year, p_brand1;
