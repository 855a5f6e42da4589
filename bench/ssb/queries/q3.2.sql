-- SSB Q3.2: revenue by city pair and year within the UNITED STATES.
-- Selects about (1/25)(1/25)(6/7) = 0.0014 of lineorder.
SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue
  FROM customer, lineorder, supplier, date1
 WHERE lo_custkey = c_custkey
   AND lo_suppkey = s_suppkey
   AND lo_orderdate = d_datekey
   AND c_nation = 'UNITED STATES'
   AND s_nation = 'UNITED STATES'
   AND d_year >= 1992 AND d_year <= 1997
 GROUP BY c_city, s_city, d_year
 ORDER BY d_year ASC, revenue DESC;
