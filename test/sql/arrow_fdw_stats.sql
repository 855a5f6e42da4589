-- arrow_fdw: record-batch statistics of every type that has them (timestamp,
-- timestamptz, decimal, uint64, float, date64, time, int16), compared with
-- PostgreSQL on the same rows, skipping on and off.
SET client_min_messages = warning;
CREATE SCHEMA arrow_st;
SET search_path = arrow_st, public;
RESET client_min_messages;
SET timezone = 'UTC';

-- 10 batches of 100 rows (i = 0 .. 999)
CREATE FOREIGN TABLE st (ts timestamp, tsns timestamp, tstz timestamptz, dec numeric(10,2),
  u64 numeric, f32 float4, d64 date, t64 time, i16 int2)
  SERVER arrow_fdw OPTIONS (file '/tmp/pg_warp_testdata/stats_types.arrow');
CREATE TABLE heap AS
  SELECT timestamp '2020-01-01' + i * interval '1 second' AS ts,
         timestamp '2020-01-01' + i * interval '1 second' AS tsns,
         timestamptz '2020-01-01 00:00:00+00' + i * interval '1 second' AS tstz,
         (i * 0.50 - 100)::numeric(10,2) AS dec,
         i::numeric * 18014398509481984 AS u64,
         (i * 0.25)::float4 AS f32,
         date '2000-01-01' + i AS d64,
         time '00:00' + i * interval '1 minute' AS t64,
         (i - 500)::int2 AS i16
    FROM generate_series(0, 999) i;
SELECT count(*) FROM (SELECT * FROM st EXCEPT ALL SELECT * FROM heap) x;
SELECT count(*) FROM (SELECT * FROM heap EXCEPT ALL SELECT * FROM st) x;

CREATE TABLE conds (q text);
INSERT INTO conds VALUES
  ('ts > ''2020-01-01 00:15:00'''), ('ts BETWEEN ''2020-01-01 00:01:40'' AND ''2020-01-01 00:03:19'''),
  ('tsns = ''2020-01-01 00:10:00'''), ('tstz < ''2020-01-01 00:01:00+00'''),
  ('dec < -50'), ('dec = 0.50'), ('dec >= 399.5'), ('dec IN (-100, 12.5, 1000)'),
  ('u64 > 9223372036854775807'), ('u64 = 18014398509481984'), ('u64 < 0'),
  ('f32 <= 10'), ('f32 > 200'), ('f32 = 0.25'),
  ('d64 = ''2000-03-01'''), ('d64 < ''2000-01-01'''), ('t64 >= ''15:00'''),
  ('i16 < -400'), ('i16 = ANY (''{1,2}''::int2[])'), ('i16 = 3'), ('i16 < 70000'),
  ('i16 > -70000'), ('i16 >= 499::int8'), ('i16 = 2.5');
CREATE FUNCTION check_conds(skip bool) RETURNS TABLE (cond text, arrow bigint, heap bigint)
LANGUAGE plpgsql AS $$
DECLARE c text;
BEGIN
  PERFORM set_config('pg_warp.arrow_stats_skip', skip::text, true);
  FOR c IN SELECT q FROM conds LOOP
    cond := c;
    EXECUTE format('SELECT count(*) * 1000 + coalesce(sum(i16), 0) FROM st WHERE %s', c) INTO arrow;
    EXECUTE format('SELECT count(*) * 1000 + coalesce(sum(i16), 0) FROM heap WHERE %s', c) INTO heap;
    RETURN NEXT;
  END LOOP;
END $$;
SELECT * FROM check_conds(true) WHERE arrow IS DISTINCT FROM heap;
SELECT * FROM check_conds(false) WHERE arrow IS DISTINCT FROM heap;

-- how many batches each condition leaves
CREATE FUNCTION batches(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; r text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM st WHERE ' || q LOOP
    IF l ~ 'Batches (Read|Skipped)' THEN r := r || ltrim(l) || ' '; END IF;
  END LOOP;
  RETURN rtrim(r);
END $$;
SELECT q, batches(q) FROM conds;

SET client_min_messages = warning;
DROP SCHEMA arrow_st CASCADE;
