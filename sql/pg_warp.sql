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

-- The self-test creates a CUDA context in the calling backend (hundreds of
-- MB of GPU memory while it runs): superusers only, unless granted.
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
    OUT connections int)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_warp_service_status'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION pgwarp.service_status() IS 'the pg_warp service: pid, uptime, engine, devices, memory in use, running tasks';

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
