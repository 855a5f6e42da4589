-- SSB Q3.1: revenue by customer nation, supplier nation and year within ASIA.
-- Selects about (1/5)(1/5)(6/7) = 0.034 of lineorder.
SELECT c_nation, s_nation, d_year, sum(lo_revenue) AS revenue
  FROM customer, lineorder, supplier, date1
 WHERE lo_custkey = c_custkey
   AND lo_suppkey = s_suppkey
   AND lo_orderdate = d_datekey
   AND c_region = 'ASIA'
   AND s_region = 'ASIA'
   AND d_year >= 1992 AND d_year <= 1997
 GROUP BY c_nation, s_nation, d_year
 ORDER BY d_year ASC, revenue DESC;
