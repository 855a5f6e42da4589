/*
 * pg_warp: SQL objects of the extension (version @EXTVERSION@).
 * The install script sql/pg_warp--@EXTVERSION@.sql is generated from this file
 * by make; upgrade scripts sql/pg_warp--A--B.sql are kept beside it.
 */
\echo Use "CREATE EXTENSION pg_warp" to load this file. \quit

CREATE FUNCTION pgwarp.version()
RETURNS text
AS 'MODULE_PATHNAME', 'pg_warp_version'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION pgwarp.version() IS 'version of the loaded pg_warp library';

CREATE FUNCTION pgwarp.preloaded()
RETURNS bool
AS 'MODULE_PATHNAME', 'pg_warp_preloaded_fn'
LANGUAGE C STRICT STABLE PARALLEL SAFE;
COMMENT ON FUNCTION pgwarp.preloaded() IS 'whether pg_warp was loaded by shared_preload_libraries';

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
