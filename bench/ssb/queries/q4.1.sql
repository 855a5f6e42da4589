-- SSB Q4.1: profit by year and customer nation, AMERICA to AMERICA, MFGR#1 and #2.
-- Selects about (1/5)(1/5)(2/5) = 0.016 of lineorder.
SELECT d_year, c_nation, sum(lo_revenue - lo_supplycost) AS profit
  FROM date1, customer, supplier, part, lineorder
 WHERE lo_custkey = c_custkey
   AND lo_suppkey = s_suppkey
   AND lo_partkey = p_partkey
   AND lo_orderdate = d_datekey
   AND c_region = 'AMERICA'
   AND s_region = 'AMERICA'
   AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')
 GROUP BY d_year, c_nation
 ORDER BY d_year, c_nation;
