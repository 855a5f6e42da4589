-- SSB Q2.2: as Q2.1 for 8 brands, suppliers in ASIA.
-- Selects about (8/1000)(1/5) = 0.0016 of lineorder.
SELECT sum(lo_revenue), d_year, p_brand1
  FROM lineorder, date1, part, supplier
 WHERE lo_orderdate = d_datekey
   AND lo_partkey = p_partkey
   AND lo_suppkey = s_suppkey
   AND p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228'
   AND s_region = 'ASIA'
 GROUP BY d_year, p_brand1
 ORDER BY d_year, p_brand1;
