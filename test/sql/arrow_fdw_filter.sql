-- arrow_fdw: row filters.  Conditions that compare an integer column with an
-- integer constant are checked on the Arrow values before a row reaches the
-- executor.  Every query is compared with pg_warp.enabled = off, where
-- PostgreSQL evaluates every qual itself: NULLs, extreme values, constants of
-- other integer widths, constants on the left, impossible bounds.
SET client_min_messages = warning;
CREATE SCHEMA arrow_filt;
SET search_path = arrow_filt, public;
RESET client_min_messages;
-- 5 rows: minimum, maximum, 0, NULL, 42 of each width
CREATE FOREIGN TABLE ty (i16 int2, i32 int4, i64 int8)
  SERVER arrow_fdw OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
-- 100 batches of 1000 rows: id 0 .. 99999, grp = id % 7
CREATE FOREIGN TABLE many (id int8, grp int4)
  SERVER arrow_fdw OPTIONS (file '/tmp/pg_warp_testdata/many_nostats.arrow');

-- the rows of query q (sorted), with pg_warp on and off; they must agree
CREATE FUNCTION on_off(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  on_rows text;
  off_rows text;
  sql text := format('SELECT coalesce(string_agg(r::text, '' '' ORDER BY r::text), ''none'') FROM (%s) r', q);
BEGIN
  SET LOCAL pg_warp.enabled = on;
  EXECUTE sql INTO on_rows;
  SET LOCAL pg_warp.enabled = off;
  EXECUTE sql INTO off_rows;
  SET LOCAL pg_warp.enabled = on;
  IF on_rows IS DISTINCT FROM off_rows THEN
    RETURN format('DIFFERENT: on %s, off %s', on_rows, off_rows);
  END IF;
  RETURN on_rows;
END $$;

CREATE TABLE q (n serial, cond text);
INSERT INTO q (cond) VALUES
  ('i16 < 0'), ('i16 <= -32768'), ('i16 > 32766'), ('i16 = 42'), ('42 = i16'),
  ('0 > i16'), ('-32768 >= i16'), ('i16 < 100000'), ('i16 > -100000::int8'),
  ('i16 >= 32768'), ('i16 = 70000::int4'),
  ('i32 BETWEEN 0 AND 42'), ('i32 > 2147483646'), ('i32 < -2147483647'),
  ('i32 >= ''-9223372036854775808''::int8'), ('i32 = 42::int2'),
  ('i64 < ''-9223372036854775808''::int8'), ('i64 > 9223372036854775807'),
  ('i64 >= ''-9223372036854775808''::int8'), ('i64 <= 9223372036854775807'),
  ('i64 < -9223372036854775808'),
  ('i64 > 0 AND i16 < 100'), ('i64 <> 0'), ('i32 IN (0, 42)'),
  ('i64 IS NULL'), ('i64 IS NOT NULL AND i64 < 1'), ('i16 < 0 OR i64 = 42');
SELECT n, cond, on_off('SELECT i16, i32, i64 FROM ty WHERE ' || cond) AS rows
  FROM q ORDER BY n;

-- many batches, with and without parallel workers
SELECT on_off('SELECT count(*), sum(id) FROM many WHERE grp = 3');
SELECT on_off('SELECT count(*), min(id), max(id) FROM many WHERE id >= 12345 AND id < 54321 AND grp > 4');
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
ALTER FOREIGN TABLE many OPTIONS (ADD parallel_workers '2');
SELECT on_off('SELECT count(*), sum(id) FROM many WHERE grp = 3 AND id > 500');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- EXPLAIN ANALYZE counts the rows the scan removed; PostgreSQL rechecks the rest
SET max_parallel_workers_per_gather = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT count(*) FROM many WHERE grp = 3;
SET pg_warp.enabled = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT count(*) FROM many WHERE grp = 3;
RESET pg_warp.enabled;
RESET max_parallel_workers_per_gather;

SET client_min_messages = warning;
DROP SCHEMA arrow_filt CASCADE;
