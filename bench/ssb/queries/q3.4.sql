-- SSB Q3.4: as Q3.3 for December 1997.
-- Selects about (1/125)(1/125)(1/84) = 0.00000076 of lineorder.
SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue
  FROM customer, lineorder, supplier, date1
 WHERE lo_custkey = c_custkey
   AND lo_suppkey = s_suppkey
   AND lo_orderdate = d_datekey
   AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')
   AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')
   AND d_yearmonth = 'Dec1997'
 GROUP BY c_city, s_city, d_year
 ORDER BY d_year ASC, revenue DESC;
