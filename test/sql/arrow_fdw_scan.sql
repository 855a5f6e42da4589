-- arrow_fdw scans: referenced columns only, record batches skipped by their
-- statistics, EXPLAIN, parallel scans; PostgreSQL itself is the oracle.
SET client_min_messages = warning;
CREATE SCHEMA arrow_s;
SET search_path = arrow_s, public;
RESET client_min_messages;
SET extra_float_digits = 0;

-- 100 batches of 1000 rows, statistics on id, grp, val, day
CREATE FOREIGN TABLE many (id int8, grp int4, val float8, day date, note text)
  SERVER arrow_fdw OPTIONS (file '/tmp/pg_warp_testdata/many.arrow');
CREATE FOREIGN TABLE many_nostats (id int8, grp int4, val float8, day date, note text)
  SERVER arrow_fdw OPTIONS (file '/tmp/pg_warp_testdata/many_nostats.arrow');
-- the same rows made by PostgreSQL
CREATE TABLE heap AS
  SELECT id::int8, (id % 7)::int4 AS grp, ((id * 37) % 1000)::float8 / 10.0 AS val,
         date '1970-01-01' + (id / 1000)::int4 AS day,
         CASE WHEN id % 10 = 0 THEN NULL ELSE 'n' || id END AS note
    FROM generate_series(0, 99999) id;
SELECT count(*) FROM (SELECT * FROM many EXCEPT ALL SELECT * FROM heap) x;
SELECT count(*) FROM (SELECT * FROM heap EXCEPT ALL SELECT * FROM many) x;

-- EXPLAIN without ANALYZE: referenced columns, files, statistics conditions
-- (byte counts depend on the pyarrow version that wrote the file: masked)
CREATE FUNCTION explain_arrow(q text, do_analyze bool DEFAULT true) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE l text; a text := CASE WHEN do_analyze THEN 'on' ELSE 'off' END;
BEGIN
  FOR l IN EXECUTE format('EXPLAIN (ANALYZE %s, COSTS OFF, TIMING OFF, SUMMARY OFF) %s',
                          a, q) LOOP
    l := regexp_replace(l, '\(read \d+ of \d+ bytes\)', '(read N of N bytes)');
    l := regexp_replace(l, 'Bytes Read: \d+', 'Bytes Read: N');
    RETURN NEXT l;
  END LOOP;
END $$;
-- bytes to read vs file size from the EXPLAIN line
CREATE FUNCTION explain_bytes(q text) RETURNS TABLE (to_read bigint, file_size bigint)
LANGUAGE plpgsql AS $$
DECLARE l text; m text[];
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    m := regexp_match(l, '\(read (\d+) of (\d+) bytes\)');
    IF m IS NOT NULL THEN to_read := m[1]; file_size := m[2]; RETURN NEXT; END IF;
  END LOOP;
END $$;
SELECT * FROM explain_arrow('SELECT sum(val) FROM many WHERE id BETWEEN 1500 AND 2500', false);

-- only the referenced columns are read: one int8 column is about 1/5 of the file
SELECT to_read > 0 AND to_read * 3 < file_size AS one_column_is_a_fraction
  FROM explain_bytes('SELECT sum(id) FROM many');
SELECT a.to_read < b.to_read AS fewer_bytes_for_fewer_columns
  FROM explain_bytes('SELECT sum(id) FROM many') a,
       explain_bytes('SELECT sum(id), max(note) FROM many') b;
SELECT to_read = 0 AS count_star_reads_no_column FROM explain_bytes('SELECT count(*) FROM many');

-- skipping: EXPLAIN ANALYZE counts the batches read and skipped
SELECT * FROM explain_arrow('SELECT sum(val) FROM many WHERE id BETWEEN 1500 AND 2500');
SELECT * FROM explain_arrow('SELECT count(*) FROM many WHERE id = 42');
SELECT * FROM explain_arrow('SELECT count(*) FROM many WHERE id IN (5, 99999, 123456)');
SELECT * FROM explain_arrow('SELECT count(*) FROM many WHERE 5000 > id AND day >= ''1970-01-03''');
SELECT * FROM explain_arrow('SELECT count(*) FROM many WHERE id < 0');
-- float columns: only the minimum is used (NaN sorts above every maximum)
SELECT * FROM explain_arrow('SELECT count(*) FROM many WHERE val < 0');
SELECT * FROM explain_arrow('SELECT count(*) FROM many WHERE val > 1000');
-- no statistics, or not a usable condition: every batch is read
SELECT * FROM explain_arrow('SELECT count(*) FROM many_nostats WHERE id = 42');
SELECT * FROM explain_arrow('SELECT count(*) FROM many WHERE id + 1 = 43 OR grp = 3');
-- switched off
SET pg_warp.arrow_stats_skip = off;
SELECT * FROM explain_arrow('SELECT count(*) FROM many WHERE id = 42');
RESET pg_warp.arrow_stats_skip;

-- results equal PostgreSQL's for every kind of condition, skipping on and off
CREATE TABLE conds (q text);
INSERT INTO conds VALUES
  ('id = 42'), ('id < 1000'), ('id <= 1000'), ('id > 98999'), ('id >= 98999'),
  ('id BETWEEN 1500 AND 2500'), ('id IN (0, 999, 1000, 55555, -1)'),
  ('id = ANY (''{7,70000}''::int8[])'), ('grp = 3 AND id < 3000'),
  ('42::int4 = id'), ('id < 5000::numeric'), ('val < 0.5'), ('val >= 99.9'),
  ('day = ''1970-01-05'''), ('day BETWEEN ''1970-02-01'' AND ''1970-02-03'''),
  ('note = ''n77'''), ('id = 1 OR id = 99998'), ('id IN (NULL)'), ('id > NULL');
CREATE FUNCTION check_conds(skip bool) RETURNS TABLE (cond text, arrow bigint, heap bigint)
LANGUAGE plpgsql AS $$
DECLARE c text;
BEGIN
  PERFORM set_config('pg_warp.arrow_stats_skip', skip::text, true);
  FOR c IN SELECT q FROM conds LOOP
    cond := c;
    EXECUTE format('SELECT count(*) + coalesce(sum(id), 0) FROM many WHERE %s', c) INTO arrow;
    EXECUTE format('SELECT count(*) + coalesce(sum(id), 0) FROM heap WHERE %s', c) INTO heap;
    RETURN NEXT;
  END LOOP;
END $$;
SELECT * FROM check_conds(true) WHERE arrow IS DISTINCT FROM heap;
SELECT * FROM check_conds(false) WHERE arrow IS DISTINCT FROM heap;
SELECT count(*) FROM check_conds(true);

-- prepared statements: parameters are not constants at planning; still correct
PREPARE p(int8) AS SELECT count(*) FROM many WHERE id < $1;
EXECUTE p(1500);
SET plan_cache_mode = force_generic_plan;
EXECUTE p(2500);
RESET plan_cache_mode;
DEALLOCATE p;

-- parallel scans return every row once
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT * FROM explain_arrow('SELECT count(*), sum(id) FROM many', false);
SELECT count(*), count(DISTINCT id), sum(id), min(id), max(id) FROM many;
SELECT count(*) FROM (SELECT * FROM many EXCEPT ALL SELECT * FROM heap) x;
SELECT count(*) FROM (SELECT * FROM heap EXCEPT ALL SELECT * FROM many) x;
SELECT count(*), sum(id) FROM many WHERE id BETWEEN 1500 AND 2500;
-- several files: batches of every file are handed out from one counter
CREATE FOREIGN TABLE parts (k int4, x int8, s text) SERVER arrow_fdw
  OPTIONS (dir '/tmp/pg_warp_testdata/dir', suffix '.arrow');
SELECT * FROM explain_arrow('SELECT count(*), sum(x) FROM parts', false);
SELECT count(*), count(DISTINCT x), sum(x), count(DISTINCT s) FROM parts;
SELECT k, count(*) FROM parts GROUP BY k ORDER BY k;
-- the table option parallel_workers overrides the planner's choice
ALTER FOREIGN TABLE many OPTIONS (ADD parallel_workers '0');
SELECT * FROM explain_arrow('SELECT count(*) FROM many', false);
ALTER FOREIGN TABLE many OPTIONS (DROP parallel_workers);
-- joined with a heap table
SELECT count(*) FROM many m JOIN heap h USING (id) WHERE h.id % 1000 = 0;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- rescans (inner side of a nested loop)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT count(*) FROM (VALUES (1), (2), (3)) v(x) JOIN many m ON m.id = v.x * 1000;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

SET client_min_messages = warning;
DROP SCHEMA arrow_s CASCADE;
