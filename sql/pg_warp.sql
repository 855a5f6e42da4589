/*
 * pg_warp: SQL objects of the extension (version @EXTVERSION@).
 * The install script sql/pg_warp--@EXTVERSION@.sql is generated from this file
 * by make; upgrade scripts sql/pg_warp--A--B.sql are kept beside it.
 */
\echo Use "CREATE EXTENSION pg_warp" to load this file. \quit

-- Privileges (doc/arrow_fdw.md, "Privileges"): every role may use the schema
-- and call the harmless functions (version, preloaded, gpu_devices, which
-- read no files and change nothing).  gpu_selftest stays revoked from
-- PUBLIC.  Nothing here reads files: arrow_fdw checks, when a table names
-- files, that its owner may read server files (superuser or
-- pg_read_server_files), like file_fdw.
GRANT USAGE ON SCHEMA pgwarp TO PUBLIC;

CREATE FUNCTION pgwarp.version()
RETURNS text
AS 'MODULE_PATHNAME', 'pg_warp_version'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION pgwarp.version() IS 'version of the loaded pg_warp library';
GRANT EXECUTE ON FUNCTION pgwarp.version() TO PUBLIC;

CREATE FUNCTION pgwarp.preloaded()
RETURNS bool
AS 'MODULE_PATHNAME', 'pg_warp_preloaded_fn'
LANGUAGE C STRICT STABLE PARALLEL SAFE;
COMMENT ON FUNCTION pgwarp.preloaded() IS 'whether pg_warp was loaded by shared_preload_libraries';
GRANT EXECUTE ON FUNCTION pgwarp.preloaded() TO PUBLIC;

CREATE FUNCTION pgwarp.gpu_devices(
    OUT device_index int,
    OUT name text,
    OUT total_memory bigint,
    OUT multiprocessors int,
    OUT compute_capability text,
    OUT pci_bus_id text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_warp_gpu_devices'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED ROWS 8;
COMMENT ON FUNCTION pgwarp.gpu_devices() IS 'the GPUs that the CUDA driver reports (no rows without a GPU)';
GRANT EXECUTE ON FUNCTION pgwarp.gpu_devices() TO PUBLIC;

-- The self-test loads GPU code and takes GPU memory on every GPU of the warp
-- service while it runs: superusers only, unless granted.
CREATE FUNCTION pgwarp.gpu_selftest(
    OUT device_index int,
    OUT name text,
    OUT result text,
    OUT elapsed_ms float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_warp_gpu_selftest'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 8;
COMMENT ON FUNCTION pgwarp.gpu_selftest() IS 'runs the installed GPU code on every GPU and checks its result';
REVOKE ALL ON FUNCTION pgwarp.gpu_selftest() FROM PUBLIC;

-- arrow_fdw: Apache Arrow files as foreign tables (doc/arrow_fdw.md)
CREATE FUNCTION pgwarp.arrow_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME', 'arrow_fdw_handler'
LANGUAGE C STRICT;

CREATE FUNCTION pgwarp.arrow_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME', 'arrow_fdw_validator'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER arrow_fdw
  HANDLER pgwarp.arrow_fdw_handler
  VALIDATOR pgwarp.arrow_fdw_validator;
COMMENT ON FOREIGN DATA WRAPPER arrow_fdw IS 'Apache Arrow files as foreign tables';

CREATE SERVER arrow_fdw FOREIGN DATA WRAPPER arrow_fdw;
COMMENT ON SERVER arrow_fdw IS 'Apache Arrow files (options on each foreign table)';

-- The warp service (doc/service.md).  What it reports is harmless (a pid,
-- counters, GPU names that gpu_devices() shows as well): callable by PUBLIC.
CREATE FUNCTION pgwarp.service_status(
    OUT pid int,
    OUT started_at timestamptz,
    OUT uptime interval,
    OUT protocol_version int,
    OUT engine text,
    OUT engine_detail text,
    OUT device_count int,
    OUT devices text[],
    OUT memory_in_use bigint,
    OUT running_tasks int,
    OUT connections int,
    OUT queued_tasks int,
    OUT max_async_tasks int,
    OUT pinned_file_bytes bigint,
    OUT pinned_file_bytes_queued bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_warp_service_status'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pgwarp.service_status() IS 'the pg_warp service: pid, uptime, engine, devices, memory in use, running and queued tasks, file pages (Arrow files, heap segment files) registered for the GPUs and queued to be';

CREATE FUNCTION pgwarp.service_tasks(
    OUT pid int,
    OUT kind text,
    OUT state text,
    OUT queue_position int,
    OUT rows_done bigint,
    OUT since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_warp_service_tasks'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED ROWS 10;
COMMENT ON FUNCTION pgwarp.service_tasks() IS 'the runs of the pg_warp service: running, then queued in admission order';

CREATE FUNCTION pgwarp.gpu_cache_info(
    OUT device int,
    OUT relation regclass,
    OUT file text,
    OUT column_name text,
    OUT source text,
    OUT batches bigint,
    OUT bytes bigint,
    OUT hits bigint,
    OUT current bool)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_warp_gpu_cache_info'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED ROWS 100;
COMMENT ON FUNCTION pgwarp.gpu_cache_info() IS 'what the GPU column cache of the pg_warp service holds, per GPU, table, file and column';

CREATE FUNCTION pgwarp.gpu_cache_drop(
    OUT column_bytes bigint,
    OUT join_tables int,
    OUT join_bytes bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_warp_gpu_cache_drop'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION pgwarp.gpu_cache_drop() IS 'empties the GPU column cache and the kept GpuJoin inner tables of the pg_warp service; returns what it freed';
REVOKE ALL ON FUNCTION pgwarp.gpu_cache_drop() FROM PUBLIC;

CREATE FUNCTION pgwarp.gpu_cache_prewarm(rel regclass, columns text[] DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_warp_gpu_cache_prewarm'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION pgwarp.gpu_cache_prewarm(regclass, text[]) IS 'reads columns of a table into the GPU column cache of the pg_warp service; returns the bytes read';

-- ---------------------------------------------------------------------------
-- float2: IEEE 754 half-precision floating point (doc/float2.md)
--   src/types/float2.c (I/O, casts) and src/types/float2_ops.c (operators,
--   operator-class support, aggregate helpers).  Casts, operators and
--   aggregates follow float4's (the implicit/assignment choices are float4's
--   relative to the same types); the btree and hash operator classes join
--   PostgreSQL's float_ops families, so float2 compares, sorts, merges and
--   hashes with float4 and float8.
-- ---------------------------------------------------------------------------
CREATE TYPE pgwarp.float2;

CREATE FUNCTION pgwarp.float2in(cstring) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pgwarp.float2out(pgwarp.float2) RETURNS cstring
AS 'MODULE_PATHNAME', 'float2out' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pgwarp.float2recv(internal) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pgwarp.float2send(pgwarp.float2) RETURNS bytea
AS 'MODULE_PATHNAME', 'float2send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE pgwarp.float2 (
    INPUT = pgwarp.float2in,
    OUTPUT = pgwarp.float2out,
    RECEIVE = pgwarp.float2recv,
    SEND = pgwarp.float2send,
    INTERNALLENGTH = 2,
    PASSEDBYVALUE,
    ALIGNMENT = int2,
    STORAGE = plain,
    CATEGORY = 'N'
);
COMMENT ON TYPE pgwarp.float2 IS 'half-precision floating-point number, 2-byte storage (IEEE 754 binary16)';

-- casts: as float4's to and from the same types (float4 -> float2 and
-- float8 -> float2 as float8 -> float4: assignment)
CREATE FUNCTION pgwarp.float2_to_float4(pgwarp.float2) RETURNS float4
AS 'MODULE_PATHNAME', 'float2_to_float4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pgwarp.float2 AS float4) WITH FUNCTION pgwarp.float2_to_float4(pgwarp.float2) AS IMPLICIT;
CREATE FUNCTION pgwarp.float2_to_float8(pgwarp.float2) RETURNS float8
AS 'MODULE_PATHNAME', 'float2_to_float8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pgwarp.float2 AS float8) WITH FUNCTION pgwarp.float2_to_float8(pgwarp.float2) AS IMPLICIT;
CREATE FUNCTION pgwarp.float4_to_float2(float4) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float4_to_float2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (float4 AS pgwarp.float2) WITH FUNCTION pgwarp.float4_to_float2(float4) AS ASSIGNMENT;
CREATE FUNCTION pgwarp.float8_to_float2(float8) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float8_to_float2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (float8 AS pgwarp.float2) WITH FUNCTION pgwarp.float8_to_float2(float8) AS ASSIGNMENT;
CREATE FUNCTION pgwarp.int2_to_float2(int2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'int2_to_float2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (int2 AS pgwarp.float2) WITH FUNCTION pgwarp.int2_to_float2(int2) AS IMPLICIT;
CREATE FUNCTION pgwarp.int4_to_float2(int4) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'int4_to_float2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (int4 AS pgwarp.float2) WITH FUNCTION pgwarp.int4_to_float2(int4) AS IMPLICIT;
CREATE FUNCTION pgwarp.int8_to_float2(int8) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'int8_to_float2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (int8 AS pgwarp.float2) WITH FUNCTION pgwarp.int8_to_float2(int8) AS IMPLICIT;
CREATE FUNCTION pgwarp.float2_to_int2(pgwarp.float2) RETURNS int2
AS 'MODULE_PATHNAME', 'float2_to_int2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pgwarp.float2 AS int2) WITH FUNCTION pgwarp.float2_to_int2(pgwarp.float2) AS ASSIGNMENT;
CREATE FUNCTION pgwarp.float2_to_int4(pgwarp.float2) RETURNS int4
AS 'MODULE_PATHNAME', 'float2_to_int4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pgwarp.float2 AS int4) WITH FUNCTION pgwarp.float2_to_int4(pgwarp.float2) AS ASSIGNMENT;
CREATE FUNCTION pgwarp.float2_to_int8(pgwarp.float2) RETURNS int8
AS 'MODULE_PATHNAME', 'float2_to_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pgwarp.float2 AS int8) WITH FUNCTION pgwarp.float2_to_int8(pgwarp.float2) AS ASSIGNMENT;
CREATE FUNCTION pgwarp.numeric_to_float2(numeric) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'numeric_to_float2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (numeric AS pgwarp.float2) WITH FUNCTION pgwarp.numeric_to_float2(numeric) AS IMPLICIT;
CREATE FUNCTION pgwarp.float2_to_numeric(pgwarp.float2) RETURNS numeric
AS 'MODULE_PATHNAME', 'float2_to_numeric' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pgwarp.float2 AS numeric) WITH FUNCTION pgwarp.float2_to_numeric(pgwarp.float2) AS ASSIGNMENT;

-- arithmetic: float2 with float2 gives float2 (computed in float4, rounded);
-- with float4 gives float4, with float8 gives float8
CREATE FUNCTION pgwarp.float2pl(pgwarp.float2, pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2pl' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.+ (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2pl, COMMUTATOR = OPERATOR(pgwarp.+));
CREATE FUNCTION pgwarp.float2mi(pgwarp.float2, pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2mi' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.- (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2mi);
CREATE FUNCTION pgwarp.float2mul(pgwarp.float2, pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2mul' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.* (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2mul, COMMUTATOR = OPERATOR(pgwarp.*));
CREATE FUNCTION pgwarp.float2div(pgwarp.float2, pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2div' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp./ (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2div);
CREATE FUNCTION pgwarp.float24pl(pgwarp.float2, float4) RETURNS float4
AS 'MODULE_PATHNAME', 'float24pl' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.+ (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24pl, COMMUTATOR = OPERATOR(pgwarp.+));
CREATE FUNCTION pgwarp.float24mi(pgwarp.float2, float4) RETURNS float4
AS 'MODULE_PATHNAME', 'float24mi' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.- (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24mi);
CREATE FUNCTION pgwarp.float24mul(pgwarp.float2, float4) RETURNS float4
AS 'MODULE_PATHNAME', 'float24mul' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.* (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24mul, COMMUTATOR = OPERATOR(pgwarp.*));
CREATE FUNCTION pgwarp.float24div(pgwarp.float2, float4) RETURNS float4
AS 'MODULE_PATHNAME', 'float24div' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp./ (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24div);
CREATE FUNCTION pgwarp.float42pl(float4, pgwarp.float2) RETURNS float4
AS 'MODULE_PATHNAME', 'float42pl' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.+ (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42pl, COMMUTATOR = OPERATOR(pgwarp.+));
CREATE FUNCTION pgwarp.float42mi(float4, pgwarp.float2) RETURNS float4
AS 'MODULE_PATHNAME', 'float42mi' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.- (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42mi);
CREATE FUNCTION pgwarp.float42mul(float4, pgwarp.float2) RETURNS float4
AS 'MODULE_PATHNAME', 'float42mul' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.* (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42mul, COMMUTATOR = OPERATOR(pgwarp.*));
CREATE FUNCTION pgwarp.float42div(float4, pgwarp.float2) RETURNS float4
AS 'MODULE_PATHNAME', 'float42div' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp./ (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42div);
CREATE FUNCTION pgwarp.float28pl(pgwarp.float2, float8) RETURNS float8
AS 'MODULE_PATHNAME', 'float28pl' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.+ (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28pl, COMMUTATOR = OPERATOR(pgwarp.+));
CREATE FUNCTION pgwarp.float28mi(pgwarp.float2, float8) RETURNS float8
AS 'MODULE_PATHNAME', 'float28mi' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.- (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28mi);
CREATE FUNCTION pgwarp.float28mul(pgwarp.float2, float8) RETURNS float8
AS 'MODULE_PATHNAME', 'float28mul' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.* (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28mul, COMMUTATOR = OPERATOR(pgwarp.*));
CREATE FUNCTION pgwarp.float28div(pgwarp.float2, float8) RETURNS float8
AS 'MODULE_PATHNAME', 'float28div' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp./ (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28div);
CREATE FUNCTION pgwarp.float82pl(float8, pgwarp.float2) RETURNS float8
AS 'MODULE_PATHNAME', 'float82pl' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.+ (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82pl, COMMUTATOR = OPERATOR(pgwarp.+));
CREATE FUNCTION pgwarp.float82mi(float8, pgwarp.float2) RETURNS float8
AS 'MODULE_PATHNAME', 'float82mi' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.- (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82mi);
CREATE FUNCTION pgwarp.float82mul(float8, pgwarp.float2) RETURNS float8
AS 'MODULE_PATHNAME', 'float82mul' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.* (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82mul, COMMUTATOR = OPERATOR(pgwarp.*));
CREATE FUNCTION pgwarp.float82div(float8, pgwarp.float2) RETURNS float8
AS 'MODULE_PATHNAME', 'float82div' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp./ (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82div);
CREATE FUNCTION pgwarp.float2um(pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2um' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.- (RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2um);
CREATE FUNCTION pgwarp.float2up(pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2up' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.+ (RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2up);
CREATE FUNCTION pgwarp.abs(pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2abs' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR pgwarp.@ (RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.abs);
CREATE FUNCTION pgwarp.float2larger(pgwarp.float2, pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2larger' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION pgwarp.float2smaller(pgwarp.float2, pgwarp.float2) RETURNS pgwarp.float2
AS 'MODULE_PATHNAME', 'float2smaller' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- comparisons: float4's (NaN equals NaN and sorts above every number)
CREATE FUNCTION pgwarp.float2eq(pgwarp.float2, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float2eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.= (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2eq,
    COMMUTATOR = OPERATOR(pgwarp.=), NEGATOR = OPERATOR(pgwarp.<>),
    RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES);
CREATE FUNCTION pgwarp.float2ne(pgwarp.float2, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float2ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<> (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2ne,
    COMMUTATOR = OPERATOR(pgwarp.<>), NEGATOR = OPERATOR(pgwarp.=),
    RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE FUNCTION pgwarp.float2lt(pgwarp.float2, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float2lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.< (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2lt,
    COMMUTATOR = OPERATOR(pgwarp.>), NEGATOR = OPERATOR(pgwarp.>=),
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE FUNCTION pgwarp.float2le(pgwarp.float2, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float2le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<= (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2le,
    COMMUTATOR = OPERATOR(pgwarp.>=), NEGATOR = OPERATOR(pgwarp.>),
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE FUNCTION pgwarp.float2gt(pgwarp.float2, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float2gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.> (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2gt,
    COMMUTATOR = OPERATOR(pgwarp.<), NEGATOR = OPERATOR(pgwarp.<=),
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
CREATE FUNCTION pgwarp.float2ge(pgwarp.float2, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float2ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.>= (LEFTARG = pgwarp.float2, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float2ge,
    COMMUTATOR = OPERATOR(pgwarp.<=), NEGATOR = OPERATOR(pgwarp.<),
    RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE FUNCTION pgwarp.float2cmp(pgwarp.float2, pgwarp.float2) RETURNS int4
AS 'MODULE_PATHNAME', 'float2cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION pgwarp.float24eq(pgwarp.float2, float4) RETURNS bool
AS 'MODULE_PATHNAME', 'float24eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.= (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24eq,
    COMMUTATOR = OPERATOR(pgwarp.=), NEGATOR = OPERATOR(pgwarp.<>),
    RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES);
CREATE FUNCTION pgwarp.float24ne(pgwarp.float2, float4) RETURNS bool
AS 'MODULE_PATHNAME', 'float24ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<> (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24ne,
    COMMUTATOR = OPERATOR(pgwarp.<>), NEGATOR = OPERATOR(pgwarp.=),
    RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE FUNCTION pgwarp.float24lt(pgwarp.float2, float4) RETURNS bool
AS 'MODULE_PATHNAME', 'float24lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.< (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24lt,
    COMMUTATOR = OPERATOR(pgwarp.>), NEGATOR = OPERATOR(pgwarp.>=),
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE FUNCTION pgwarp.float24le(pgwarp.float2, float4) RETURNS bool
AS 'MODULE_PATHNAME', 'float24le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<= (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24le,
    COMMUTATOR = OPERATOR(pgwarp.>=), NEGATOR = OPERATOR(pgwarp.>),
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE FUNCTION pgwarp.float24gt(pgwarp.float2, float4) RETURNS bool
AS 'MODULE_PATHNAME', 'float24gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.> (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24gt,
    COMMUTATOR = OPERATOR(pgwarp.<), NEGATOR = OPERATOR(pgwarp.<=),
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
CREATE FUNCTION pgwarp.float24ge(pgwarp.float2, float4) RETURNS bool
AS 'MODULE_PATHNAME', 'float24ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.>= (LEFTARG = pgwarp.float2, RIGHTARG = float4, FUNCTION = pgwarp.float24ge,
    COMMUTATOR = OPERATOR(pgwarp.<=), NEGATOR = OPERATOR(pgwarp.<),
    RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE FUNCTION pgwarp.float24cmp(pgwarp.float2, float4) RETURNS int4
AS 'MODULE_PATHNAME', 'float24cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION pgwarp.float42eq(float4, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float42eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.= (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42eq,
    COMMUTATOR = OPERATOR(pgwarp.=), NEGATOR = OPERATOR(pgwarp.<>),
    RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES);
CREATE FUNCTION pgwarp.float42ne(float4, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float42ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<> (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42ne,
    COMMUTATOR = OPERATOR(pgwarp.<>), NEGATOR = OPERATOR(pgwarp.=),
    RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE FUNCTION pgwarp.float42lt(float4, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float42lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.< (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42lt,
    COMMUTATOR = OPERATOR(pgwarp.>), NEGATOR = OPERATOR(pgwarp.>=),
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE FUNCTION pgwarp.float42le(float4, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float42le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<= (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42le,
    COMMUTATOR = OPERATOR(pgwarp.>=), NEGATOR = OPERATOR(pgwarp.>),
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE FUNCTION pgwarp.float42gt(float4, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float42gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.> (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42gt,
    COMMUTATOR = OPERATOR(pgwarp.<), NEGATOR = OPERATOR(pgwarp.<=),
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
CREATE FUNCTION pgwarp.float42ge(float4, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float42ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.>= (LEFTARG = float4, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float42ge,
    COMMUTATOR = OPERATOR(pgwarp.<=), NEGATOR = OPERATOR(pgwarp.<),
    RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE FUNCTION pgwarp.float42cmp(float4, pgwarp.float2) RETURNS int4
AS 'MODULE_PATHNAME', 'float42cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION pgwarp.float28eq(pgwarp.float2, float8) RETURNS bool
AS 'MODULE_PATHNAME', 'float28eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.= (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28eq,
    COMMUTATOR = OPERATOR(pgwarp.=), NEGATOR = OPERATOR(pgwarp.<>),
    RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES);
CREATE FUNCTION pgwarp.float28ne(pgwarp.float2, float8) RETURNS bool
AS 'MODULE_PATHNAME', 'float28ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<> (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28ne,
    COMMUTATOR = OPERATOR(pgwarp.<>), NEGATOR = OPERATOR(pgwarp.=),
    RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE FUNCTION pgwarp.float28lt(pgwarp.float2, float8) RETURNS bool
AS 'MODULE_PATHNAME', 'float28lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.< (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28lt,
    COMMUTATOR = OPERATOR(pgwarp.>), NEGATOR = OPERATOR(pgwarp.>=),
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE FUNCTION pgwarp.float28le(pgwarp.float2, float8) RETURNS bool
AS 'MODULE_PATHNAME', 'float28le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<= (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28le,
    COMMUTATOR = OPERATOR(pgwarp.>=), NEGATOR = OPERATOR(pgwarp.>),
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE FUNCTION pgwarp.float28gt(pgwarp.float2, float8) RETURNS bool
AS 'MODULE_PATHNAME', 'float28gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.> (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28gt,
    COMMUTATOR = OPERATOR(pgwarp.<), NEGATOR = OPERATOR(pgwarp.<=),
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
CREATE FUNCTION pgwarp.float28ge(pgwarp.float2, float8) RETURNS bool
AS 'MODULE_PATHNAME', 'float28ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.>= (LEFTARG = pgwarp.float2, RIGHTARG = float8, FUNCTION = pgwarp.float28ge,
    COMMUTATOR = OPERATOR(pgwarp.<=), NEGATOR = OPERATOR(pgwarp.<),
    RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE FUNCTION pgwarp.float28cmp(pgwarp.float2, float8) RETURNS int4
AS 'MODULE_PATHNAME', 'float28cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION pgwarp.float82eq(float8, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float82eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.= (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82eq,
    COMMUTATOR = OPERATOR(pgwarp.=), NEGATOR = OPERATOR(pgwarp.<>),
    RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES);
CREATE FUNCTION pgwarp.float82ne(float8, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float82ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<> (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82ne,
    COMMUTATOR = OPERATOR(pgwarp.<>), NEGATOR = OPERATOR(pgwarp.=),
    RESTRICT = neqsel, JOIN = neqjoinsel);
CREATE FUNCTION pgwarp.float82lt(float8, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float82lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.< (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82lt,
    COMMUTATOR = OPERATOR(pgwarp.>), NEGATOR = OPERATOR(pgwarp.>=),
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel);
CREATE FUNCTION pgwarp.float82le(float8, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float82le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.<= (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82le,
    COMMUTATOR = OPERATOR(pgwarp.>=), NEGATOR = OPERATOR(pgwarp.>),
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel);
CREATE FUNCTION pgwarp.float82gt(float8, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float82gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.> (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82gt,
    COMMUTATOR = OPERATOR(pgwarp.<), NEGATOR = OPERATOR(pgwarp.<=),
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel);
CREATE FUNCTION pgwarp.float82ge(float8, pgwarp.float2) RETURNS bool
AS 'MODULE_PATHNAME', 'float82ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE OPERATOR pgwarp.>= (LEFTARG = float8, RIGHTARG = pgwarp.float2, FUNCTION = pgwarp.float82ge,
    COMMUTATOR = OPERATOR(pgwarp.<=), NEGATOR = OPERATOR(pgwarp.<),
    RESTRICT = scalargesel, JOIN = scalargejoinsel);
CREATE FUNCTION pgwarp.float82cmp(float8, pgwarp.float2) RETURNS int4
AS 'MODULE_PATHNAME', 'float82cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION pgwarp.float2_sortsupport(internal) RETURNS void
AS 'MODULE_PATHNAME', 'float2_sortsupport' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION pgwarp.in_range(pgwarp.float2, pgwarp.float2, float8, bool, bool) RETURNS bool
AS 'MODULE_PATHNAME', 'in_range_float2_float8' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION pgwarp.float2hash(pgwarp.float2) RETURNS int4
AS 'MODULE_PATHNAME', 'float2hash' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION pgwarp.float2hashextended(pgwarp.float2, int8) RETURNS int8
AS 'MODULE_PATHNAME', 'float2hashextended' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

-- btree: float2 joins PostgreSQL's float_ops family (with float4 and float8):
-- every value of the three types is exactly a float8, and the comparisons of
-- every pair agree, so cross-type comparisons are indexable and mergejoinable
CREATE OPERATOR CLASS pgwarp.float2_ops
    DEFAULT FOR TYPE pgwarp.float2 USING btree FAMILY pg_catalog.float_ops AS
    OPERATOR 1 pgwarp.< , OPERATOR 2 pgwarp.<= , OPERATOR 3 pgwarp.= ,
    OPERATOR 4 pgwarp.>= , OPERATOR 5 pgwarp.> ,
    FUNCTION 1 pgwarp.float2cmp(pgwarp.float2, pgwarp.float2),
    FUNCTION 2 pgwarp.float2_sortsupport(internal),
    FUNCTION 3 pgwarp.in_range(pgwarp.float2, pgwarp.float2, float8, bool, bool);
ALTER OPERATOR FAMILY pg_catalog.float_ops USING btree ADD
    OPERATOR 1 pgwarp.< (pgwarp.float2, float4),
    OPERATOR 2 pgwarp.<= (pgwarp.float2, float4),
    OPERATOR 3 pgwarp.= (pgwarp.float2, float4),
    OPERATOR 4 pgwarp.>= (pgwarp.float2, float4),
    OPERATOR 5 pgwarp.> (pgwarp.float2, float4),
    FUNCTION 1 (pgwarp.float2, float4) pgwarp.float24cmp(pgwarp.float2, float4),
    OPERATOR 1 pgwarp.< (float4, pgwarp.float2),
    OPERATOR 2 pgwarp.<= (float4, pgwarp.float2),
    OPERATOR 3 pgwarp.= (float4, pgwarp.float2),
    OPERATOR 4 pgwarp.>= (float4, pgwarp.float2),
    OPERATOR 5 pgwarp.> (float4, pgwarp.float2),
    FUNCTION 1 (float4, pgwarp.float2) pgwarp.float42cmp(float4, pgwarp.float2),
    OPERATOR 1 pgwarp.< (pgwarp.float2, float8),
    OPERATOR 2 pgwarp.<= (pgwarp.float2, float8),
    OPERATOR 3 pgwarp.= (pgwarp.float2, float8),
    OPERATOR 4 pgwarp.>= (pgwarp.float2, float8),
    OPERATOR 5 pgwarp.> (pgwarp.float2, float8),
    FUNCTION 1 (pgwarp.float2, float8) pgwarp.float28cmp(pgwarp.float2, float8),
    OPERATOR 1 pgwarp.< (float8, pgwarp.float2),
    OPERATOR 2 pgwarp.<= (float8, pgwarp.float2),
    OPERATOR 3 pgwarp.= (float8, pgwarp.float2),
    OPERATOR 4 pgwarp.>= (float8, pgwarp.float2),
    OPERATOR 5 pgwarp.> (float8, pgwarp.float2),
    FUNCTION 1 (float8, pgwarp.float2) pgwarp.float82cmp(float8, pgwarp.float2);

-- hash: float2hash hashes the float8 value, as hashfloat4 and hashfloat8 do,
-- so equal float2/float4/float8 values hash alike (cross-type hash joins)
CREATE OPERATOR CLASS pgwarp.float2_ops
    DEFAULT FOR TYPE pgwarp.float2 USING hash FAMILY pg_catalog.float_ops AS
    OPERATOR 1 pgwarp.= ,
    FUNCTION 1 pgwarp.float2hash(pgwarp.float2),
    FUNCTION 2 pgwarp.float2hashextended(pgwarp.float2, int8);
ALTER OPERATOR FAMILY pg_catalog.float_ops USING hash ADD
    OPERATOR 1 pgwarp.= (pgwarp.float2, float4),
    OPERATOR 1 pgwarp.= (float4, pgwarp.float2),
    OPERATOR 1 pgwarp.= (pgwarp.float2, float8),
    OPERATOR 1 pgwarp.= (float8, pgwarp.float2);

-- aggregates: sum as sum(float4) (a float4 result), avg/stddev/variance by
-- PostgreSQL's float8 accumulation of the exact values, min/max as float2
CREATE FUNCTION pgwarp.float2_sum_accum(float4, pgwarp.float2) RETURNS float4
AS 'MODULE_PATHNAME', 'float2_sum_accum' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION pgwarp.float2_accum(float8[], pgwarp.float2) RETURNS float8[]
AS 'MODULE_PATHNAME', 'float2_accum' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE pgwarp.sum(pgwarp.float2) (
    SFUNC = pgwarp.float2_sum_accum, STYPE = float4,
    COMBINEFUNC = pg_catalog.float4pl, PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.min(pgwarp.float2) (
    SFUNC = pgwarp.float2smaller, STYPE = pgwarp.float2,
    COMBINEFUNC = pgwarp.float2smaller, SORTOP = OPERATOR(pgwarp.<), PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.max(pgwarp.float2) (
    SFUNC = pgwarp.float2larger, STYPE = pgwarp.float2,
    COMBINEFUNC = pgwarp.float2larger, SORTOP = OPERATOR(pgwarp.>), PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.avg(pgwarp.float2) (
    SFUNC = pgwarp.float2_accum, STYPE = float8[], INITCOND = '{0,0,0}',
    FINALFUNC = pg_catalog.float8_avg, COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.stddev(pgwarp.float2) (
    SFUNC = pgwarp.float2_accum, STYPE = float8[], INITCOND = '{0,0,0}',
    FINALFUNC = pg_catalog.float8_stddev_samp, COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.stddev_samp(pgwarp.float2) (
    SFUNC = pgwarp.float2_accum, STYPE = float8[], INITCOND = '{0,0,0}',
    FINALFUNC = pg_catalog.float8_stddev_samp, COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.stddev_pop(pgwarp.float2) (
    SFUNC = pgwarp.float2_accum, STYPE = float8[], INITCOND = '{0,0,0}',
    FINALFUNC = pg_catalog.float8_stddev_pop, COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.variance(pgwarp.float2) (
    SFUNC = pgwarp.float2_accum, STYPE = float8[], INITCOND = '{0,0,0}',
    FINALFUNC = pg_catalog.float8_var_samp, COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.var_samp(pgwarp.float2) (
    SFUNC = pgwarp.float2_accum, STYPE = float8[], INITCOND = '{0,0,0}',
    FINALFUNC = pg_catalog.float8_var_samp, COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
CREATE AGGREGATE pgwarp.var_pop(pgwarp.float2) (
    SFUNC = pgwarp.float2_accum, STYPE = float8[], INITCOND = '{0,0,0}',
    FINALFUNC = pg_catalog.float8_var_pop, COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
-- end of float2

-- HyperLogLog approximate distinct counts (doc/hll.md): hll_count,
-- hll_sketch, hll_merge, hll_combine and hll_sketch_histogram.  The four
-- aggregates share one internal state with combine, serialize and
-- deserialize functions (parallel-safe).  Everything here reads and changes
-- nothing outside its arguments (hll_trans and hll_final_sketch also read
-- pg_warp.hll_registers_bits, hence STABLE): callable by PUBLIC.
CREATE FUNCTION pgwarp.hll_trans(internal, anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'pg_warp_hll_trans'
LANGUAGE C CALLED ON NULL INPUT STABLE PARALLEL SAFE;

CREATE FUNCTION pgwarp.hll_merge_trans(internal, bytea)
RETURNS internal
AS 'MODULE_PATHNAME', 'pg_warp_hll_merge_trans'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION pgwarp.hll_combine_states(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'pg_warp_hll_combine_states'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION pgwarp.hll_serialize_state(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'pg_warp_hll_serialize_state'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION pgwarp.hll_deserialize_state(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'pg_warp_hll_deserialize_state'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION pgwarp.hll_final_count(internal)
RETURNS bigint
AS 'MODULE_PATHNAME', 'pg_warp_hll_final_count'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION pgwarp.hll_final_sketch(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'pg_warp_hll_final_sketch'
LANGUAGE C CALLED ON NULL INPUT STABLE PARALLEL SAFE;

CREATE FUNCTION pgwarp.hll_final_combine(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'pg_warp_hll_final_combine'
LANGUAGE C CALLED ON NULL INPUT IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE pgwarp.hll_count(anyelement) (
    SFUNC = pgwarp.hll_trans,
    STYPE = internal,
    FINALFUNC = pgwarp.hll_final_count,
    COMBINEFUNC = pgwarp.hll_combine_states,
    SERIALFUNC = pgwarp.hll_serialize_state,
    DESERIALFUNC = pgwarp.hll_deserialize_state,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE pgwarp.hll_count(anyelement) IS 'approximate count(DISTINCT value) by a HyperLogLog sketch (NULLs ignored)';

CREATE AGGREGATE pgwarp.hll_sketch(anyelement) (
    SFUNC = pgwarp.hll_trans,
    STYPE = internal,
    FINALFUNC = pgwarp.hll_final_sketch,
    COMBINEFUNC = pgwarp.hll_combine_states,
    SERIALFUNC = pgwarp.hll_serialize_state,
    DESERIALFUNC = pgwarp.hll_deserialize_state,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE pgwarp.hll_sketch(anyelement) IS 'HyperLogLog sketch of the distinct values, for hll_merge and hll_combine';

CREATE AGGREGATE pgwarp.hll_merge(bytea) (
    SFUNC = pgwarp.hll_merge_trans,
    STYPE = internal,
    FINALFUNC = pgwarp.hll_final_count,
    COMBINEFUNC = pgwarp.hll_combine_states,
    SERIALFUNC = pgwarp.hll_serialize_state,
    DESERIALFUNC = pgwarp.hll_deserialize_state,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE pgwarp.hll_merge(bytea) IS 'approximate number of distinct values in the union of HyperLogLog sketches';

CREATE AGGREGATE pgwarp.hll_combine(bytea) (
    SFUNC = pgwarp.hll_merge_trans,
    STYPE = internal,
    FINALFUNC = pgwarp.hll_final_combine,
    COMBINEFUNC = pgwarp.hll_combine_states,
    SERIALFUNC = pgwarp.hll_serialize_state,
    DESERIALFUNC = pgwarp.hll_deserialize_state,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE pgwarp.hll_combine(bytea) IS 'HyperLogLog sketch of the union of sketches';

CREATE FUNCTION pgwarp.hll_sketch_histogram(bytea)
RETURNS int[]
AS 'MODULE_PATHNAME', 'pg_warp_hll_sketch_histogram'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION pgwarp.hll_sketch_histogram(bytea) IS 'registers of a HyperLogLog sketch per rank (element k = rank k, from index 0)';
