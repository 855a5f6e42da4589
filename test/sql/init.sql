-- The extension installs, reports its version, and owns the pg_warp.* GUCs.
CREATE EXTENSION pg_warp;
SELECT extname, extversion, extnamespace::regnamespace AS schema
  FROM pg_extension WHERE extname = 'pg_warp';
SELECT pgwarp.version();
SELECT pgwarp.preloaded();
SHOW pg_warp.enabled;
SET pg_warp.enabled = off;
SHOW pg_warp.enabled;
RESET pg_warp.enabled;
-- the prefix is reserved: a misspelt parameter is an error, not a silent placeholder
SET pg_warp.enable = on;
-- the schema pgwarp (PostgreSQL reserves "pg_" schema names) holds the extension's functions
SELECT p.proname
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'pgwarp' AND p.proname IN ('version', 'preloaded')
 ORDER BY 1;
