-- SSB Q2.3: as Q2.1 for one brand, suppliers in EUROPE.
-- Selects about (1/1000)(1/5) = 0.0002 of lineorder.
SELECT sum(lo_revenue), d_year, p_brand1
  FROM lineorder, date1, part, supplier
 WHERE lo_orderdate = d_datekey
   AND lo_partkey = p_partkey
   AND lo_suppkey = s_suppkey
   AND p_brand1 = 'MFGR#2239'
   AND s_region = 'EUROPE'
 GROUP BY d_year, p_brand1
 ORDER BY d_year, p_brand1;
