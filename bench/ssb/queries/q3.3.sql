-- SSB Q3.3: as Q3.2 for two cities of the UNITED KINGDOM.
-- Selects about (1/125)(1/125)(6/7) = 0.000055 of lineorder.
SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue
  FROM customer, lineorder, supplier, date1
 WHERE lo_custkey = c_custkey
   AND lo_suppkey = s_suppkey
   AND lo_orderdate = d_datekey
   AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')
   AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')
   AND d_year >= 1992 AND d_year <= 1997
 GROUP BY c_city, s_city, d_year
 ORDER BY d_year ASC, revenue DESC;
