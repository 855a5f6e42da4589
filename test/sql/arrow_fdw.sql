-- arrow_fdw: options, IMPORT FOREIGN SCHEMA, type mapping and values.
-- The files are written by test/data/make_testdata.py into /tmp/pg_warp_testdata
-- (scripts/test.sh runs it before make installcheck).
SET client_min_messages = warning;
CREATE SCHEMA arrow_t;
SET search_path = arrow_t, public;
SET extra_float_digits = 0;
SET timezone = 'UTC';
SET datestyle = 'ISO, YMD';
SET intervalstyle = 'postgres';
RESET client_min_messages;

-- the wrapper and the server come with the extension
SELECT fdwname, fdwhandler::regproc, fdwvalidator::regproc FROM pg_foreign_data_wrapper
 WHERE fdwname = 'arrow_fdw';
SELECT srvname FROM pg_foreign_server WHERE srvname = 'arrow_fdw';
SHOW pg_warp.arrow_stats_skip;

-- option checks (validator)
CREATE FOREIGN TABLE bad (x int) SERVER arrow_fdw;
CREATE FOREIGN TABLE bad (x int) SERVER arrow_fdw OPTIONS (filename '/tmp/x');
CREATE FOREIGN TABLE bad (x int) SERVER arrow_fdw OPTIONS (file 'relative.arrow');
CREATE FOREIGN TABLE bad (x int) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow', dir '/tmp/pg_warp_testdata');
CREATE FOREIGN TABLE bad (x int) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow', suffix '.arrow');
CREATE FOREIGN TABLE bad (x int) SERVER arrow_fdw
  OPTIONS (dir '/tmp/pg_warp_testdata/dir', suffix '.arrow', pattern '*.arrow');
CREATE FOREIGN TABLE bad (x int) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow', parallel_workers '-1');
CREATE FOREIGN TABLE bad (x int OPTIONS (nosuch 'x')) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (x int) SERVER arrow_fdw OPTIONS (files ' , ');
ALTER SERVER arrow_fdw OPTIONS (ADD file '/tmp/x');

-- checked against the file at CREATE: a missing field, a type that cannot hold it
CREATE FOREIGN TABLE bad (nosuch int) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (i64 int4) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (u64 int8) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (dec numeric(12,1)) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (ts_us timestamp(3)) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (tstz timestamp) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (s int4) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (fsb uuid) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE FOREIGN TABLE bad (st text) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
SELECT count(*) FROM pg_class WHERE relname = 'bad';
-- ALTER is checked too
CREATE FOREIGN TABLE ok1 (i64 int8) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
ALTER FOREIGN TABLE ok1 ALTER COLUMN i64 TYPE int4;
ALTER FOREIGN TABLE ok1 OPTIONS (SET file '/tmp/pg_warp_testdata/many.arrow');
ALTER FOREIGN TABLE ok1 RENAME COLUMN i64 TO i64_renamed;
ALTER FOREIGN TABLE ok1 ALTER COLUMN i64 OPTIONS (ADD field 'no_such_field');
DROP FOREIGN TABLE ok1;

-- IMPORT: every type gets its default mapping; a struct needs a composite type
IMPORT FOREIGN SCHEMA types FROM SERVER arrow_fdw INTO arrow_t
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
CREATE TYPE st_t AS (a int4, b text);
-- with a composite type for the struct, the table is written by hand
CREATE FOREIGN TABLE types (
  b bool, i8 int2, i16 int2, i32 int4, i64 int8, u8 int2, u16 int4, u32 int8,
  u64 numeric, f16 float4, f32 float4, f64 float8, dec numeric(12,2),
  d32 date, d64 date, t32s time, t32ms time, t64us time, t64ns time,
  ts_s timestamp, ts_ms timestamp, ts_us timestamp, ts_ns timestamp,
  tstz timestamptz, dur_s interval, dur_ms interval, dur_us interval,
  dur_ns interval, mdn interval, s text, ls text, bin bytea, lbin bytea,
  fsb bytea, uid uuid, li int4[], lls text[], fsl float8[], st st_t,
  dict text, nul text
) SERVER arrow_fdw OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
\d types
SELECT b, i8, i16, i32, i64, u8, u16, u32, u64 FROM types;
SELECT f16, f32, f64, dec FROM types;
SELECT d32, d64, t32s, t32ms, t64us, t64ns FROM types;
SELECT ts_s, ts_ms, ts_us, ts_ns, tstz FROM types;
SELECT dur_s, dur_ms, dur_us, dur_ns, mdn FROM types;
SELECT length(s), s, ls, bin, lbin, fsb, uid FROM types;
SELECT li, lls, fsl, st, (st).a, dict, nul FROM types;
SELECT count(*), count(b), count(nul) FROM types;

-- compressed files read the same (EXCEPT ALL both ways, every column as text)
DO $$
DECLARE cols text;
BEGIN
  SELECT string_agg(quote_ident(attname) || ' ' || format_type(atttypid, atttypmod), ', '
                    ORDER BY attnum) INTO cols
    FROM pg_attribute WHERE attrelid = 'types'::regclass AND attnum > 0;
  EXECUTE format('CREATE FOREIGN TABLE types_lz4 (%s) SERVER arrow_fdw OPTIONS (file %L)',
                 cols, '/tmp/pg_warp_testdata/types_lz4.arrow');
  EXECUTE format('CREATE FOREIGN TABLE types_zstd (%s) SERVER arrow_fdw OPTIONS (file %L)',
                 cols, '/tmp/pg_warp_testdata/types_zstd.arrow');
END $$;
SELECT count(*) FROM (SELECT t::text FROM types t EXCEPT ALL SELECT t::text FROM types_lz4 t) x;
SELECT count(*) FROM (SELECT t::text FROM types_lz4 t EXCEPT ALL SELECT t::text FROM types t) x;
SELECT count(*) FROM (SELECT t::text FROM types t EXCEPT ALL SELECT t::text FROM types_zstd t) x;
SELECT count(*) FROM (SELECT t::text FROM types_zstd t EXCEPT ALL SELECT t::text FROM types t) x;

-- other types that hold a field: wider integers, numeric, stored integers, varchar, domains
CREATE DOMAIN small_pos AS int4 CHECK (VALUE >= 0);
CREATE FOREIGN TABLE wider (
  i8 int8, u32 numeric, u64 numeric(20,0), d32 int4, ts_ns int8, t64ns int8,
  f32 float8, s varchar(400), i16 small_pos, dict varchar(10),
  d64 int8 OPTIONS (field 'd64'), renamed int4 OPTIONS (field 'i32')
) SERVER arrow_fdw OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
SELECT i8, u32, u64, d32, ts_ns, t64ns, f32, length(s), dict, d64, renamed FROM wider;
SELECT i16 FROM wider;     -- the domain's CHECK fails on a negative value
-- varchar(n) too short for a value: an error when that value is read
CREATE FOREIGN TABLE short_s (s varchar(3)) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/types.arrow');
SELECT s FROM short_s;

-- IMPORT with the default mapping
IMPORT FOREIGN SCHEMA imp FROM SERVER arrow_fdw INTO arrow_t
  OPTIONS (file '/tmp/pg_warp_testdata/many.arrow');
\d imp
SELECT count(*), sum(id), count(note) FROM imp;
-- LIMIT TO / EXCEPT name the table (the "remote schema" is its name)
IMPORT FOREIGN SCHEMA other LIMIT TO (nothing) FROM SERVER arrow_fdw INTO arrow_t
  OPTIONS (file '/tmp/pg_warp_testdata/many.arrow');
IMPORT FOREIGN SCHEMA other EXCEPT (other) FROM SERVER arrow_fdw INTO arrow_t
  OPTIONS (file '/tmp/pg_warp_testdata/many.arrow');
SELECT count(*) FROM pg_class WHERE relname = 'other';
-- a directory: one table over every file (suffix filters out notes.txt)
IMPORT FOREIGN SCHEMA parts FROM SERVER arrow_fdw INTO arrow_t
  OPTIONS (dir '/tmp/pg_warp_testdata/dir', suffix '.arrow');
SELECT k, count(*), min(x), max(x), min(s) FROM parts GROUP BY k ORDER BY k;
-- per_file: one table per file, named after it; LIMIT TO picks some
CREATE SCHEMA arrow_pf;
IMPORT FOREIGN SCHEMA whatever LIMIT TO ("part-0", "part-2") FROM SERVER arrow_fdw
  INTO arrow_pf OPTIONS (dir '/tmp/pg_warp_testdata/dir', pattern 'part-*.arrow', per_file 'true');
SELECT relname FROM pg_class WHERE relnamespace = 'arrow_pf'::regnamespace ORDER BY 1;
SELECT count(*), sum(x) FROM arrow_pf."part-2";
IMPORT FOREIGN SCHEMA whatever EXCEPT ("part-0", "part-2") FROM SERVER arrow_fdw
  INTO arrow_pf OPTIONS (files '/tmp/pg_warp_testdata/dir/part-0.arrow, /tmp/pg_warp_testdata/dir/part-1.arrow', per_file 'true');
SELECT relname FROM pg_class WHERE relnamespace = 'arrow_pf'::regnamespace ORDER BY 1;
DROP SCHEMA arrow_pf CASCADE;
-- files: listed in order
CREATE FOREIGN TABLE two (k int4, x int8) SERVER arrow_fdw
  OPTIONS (files '/tmp/pg_warp_testdata/dir/part-2.arrow,/tmp/pg_warp_testdata/dir/part-0.arrow');
SELECT k, count(*) FROM two GROUP BY k ORDER BY k;
-- the stream format reads too
CREATE FOREIGN TABLE stream (id int8, note text) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/stream.arrows');
SELECT count(*), min(id), max(id), count(note) FROM stream;
-- a file without record batches is an empty table
CREATE FOREIGN TABLE nobatch (id int8) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/empty_batches.arrow');
SELECT count(*) FROM nobatch;

-- IMPORT errors: several files with different schemas, no file
IMPORT FOREIGN SCHEMA mm FROM SERVER arrow_fdw INTO arrow_t
  OPTIONS (dir '/tmp/pg_warp_testdata/mismatch');
IMPORT FOREIGN SCHEMA nofiles FROM SERVER arrow_fdw INTO arrow_t
  OPTIONS (dir '/tmp/pg_warp_testdata/dir', suffix '.parquet');

-- values that PostgreSQL cannot hold exactly: errors that name file, row and column
CREATE FOREIGN TABLE exact (ts_ns timestamp, d32 date, d64 date, t64ns time,
  dur_ns interval, u64 numeric, s text) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/exact.arrow');
SELECT u64, s FROM exact;
SELECT ts_ns FROM exact;
-- int32 max days is infinity (doc/arrow_fdw.md, "Extreme values: infinity, NaN")
SELECT d32 FROM exact;
SELECT d64 FROM exact;
SELECT t64ns FROM exact;
SELECT dur_ns FROM exact;
-- declared as bigint, the stored integers read exactly
CREATE FOREIGN TABLE exact_raw (ts_ns int8, d32 int4, d64 int8, t64ns int8, dur_ns int8)
  SERVER arrow_fdw OPTIONS (file '/tmp/pg_warp_testdata/exact.arrow');
SELECT * FROM exact_raw;

-- file errors: each an SQL error, the server keeps running
\set VERBOSITY default
CREATE FOREIGN TABLE missing (x int8) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/no_such_file.arrow');
CREATE FOREIGN TABLE missing (x int8) SERVER arrow_fdw
  OPTIONS (dir '/tmp/pg_warp_testdata/no_such_dir');
-- (corrupt, truncated and garbage files: test_arrow_fdw.py checks their SQLSTATE;
-- their messages come from the reader and are not pinned here)
CREATE FOREIGN TABLE isdir (id int8) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/dir');
CREATE FOREIGN TABLE mism (x int8) SERVER arrow_fdw
  OPTIONS (dir '/tmp/pg_warp_testdata/mismatch');
\set VERBOSITY terse
SELECT 1 AS still_running;

-- permissions: naming files needs superuser or pg_read_server_files
CREATE ROLE arrow_user;
CREATE ROLE arrow_reader IN ROLE pg_read_server_files;
GRANT USAGE ON FOREIGN SERVER arrow_fdw TO arrow_user, arrow_reader;
GRANT ALL ON SCHEMA arrow_t TO arrow_user, arrow_reader;
GRANT SELECT ON imp TO arrow_user;
SET ROLE arrow_user;
CREATE FOREIGN TABLE arrow_t.u1 (id int8) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/many.arrow');
IMPORT FOREIGN SCHEMA u2 FROM SERVER arrow_fdw INTO arrow_t
  OPTIONS (file '/tmp/pg_warp_testdata/many.arrow');
SELECT count(*) FROM arrow_t.imp;   -- reading a granted table is fine
SELECT count(*) FROM arrow_t.parts; -- not granted
RESET ROLE;
SET ROLE arrow_reader;
CREATE FOREIGN TABLE arrow_t.u3 (id int8) SERVER arrow_fdw
  OPTIONS (file '/tmp/pg_warp_testdata/many.arrow');
SELECT count(*) FROM arrow_t.u3;
DROP FOREIGN TABLE arrow_t.u3;
RESET ROLE;
REVOKE ALL ON SCHEMA arrow_t FROM arrow_user, arrow_reader;
REVOKE ALL ON FOREIGN SERVER arrow_fdw FROM arrow_user, arrow_reader;
REVOKE ALL ON imp FROM arrow_user;
DROP ROLE arrow_user;
DROP ROLE arrow_reader;

-- ANALYZE samples rows
ANALYZE imp;
SELECT reltuples FROM pg_class WHERE relname = 'imp';
SELECT attname, null_frac BETWEEN 0.08 AND 0.12 AS about_a_tenth_null
  FROM pg_stats WHERE tablename = 'imp' AND schemaname = 'arrow_t' AND attname = 'note';

SET client_min_messages = warning;
DROP SCHEMA arrow_t CASCADE;
