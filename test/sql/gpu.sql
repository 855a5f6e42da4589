-- GPU discovery and the self-test of the installed GPU code.
-- Expected output: gpu.out on a host without a GPU (CI), gpu_1.out on a host
-- with working GPUs.  Queries print only facts that are the same on every such
-- host (no names, sizes or timings).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_warp;
RESET client_min_messages;
-- the detail of "no GPU found" names the reason, which varies between hosts
\set VERBOSITY terse

-- one row per GPU; none (and no error) without a driver or a device
SELECT count(*) > 0 AS has_gpu FROM pgwarp.gpu_devices();
-- the CUDA ordinals of the GPUs the service uses: those pg_warp.gpus lists,
-- else 0 to n - 1 (every GPU the driver reports); none without a GPU
WITH d AS (SELECT count(*) AS n, count(DISTINCT device_index) AS n_distinct,
                  coalesce(array_agg(device_index ORDER BY device_index), '{}') AS got
             FROM pgwarp.gpu_devices()),
     listed AS (SELECT array_agg(DISTINCT x::int ORDER BY x::int) AS want
                  FROM unnest(string_to_array(replace(current_setting('pg_warp.gpus'), ' ', ''),
                                              ',')) AS x
                 WHERE x <> '')
SELECT n_distinct = n AS indexes_unique,
       n = 0 OR got = coalesce(want, ARRAY(SELECT generate_series(0, n::int - 1)))
         AS indexes_as_configured
  FROM d, listed;
-- NULL without a GPU: bool_and of no rows
SELECT bool_and(name LIKE 'NVIDIA%') AS nvidia_names,
       bool_and(total_memory > 0) AS has_memory,
       bool_and(multiprocessors > 0) AS has_multiprocessors,
       bool_and(compute_capability ~ '^[0-9]+\.[0-9]+$') AS capability_format,
       bool_and(pci_bus_id ~ '^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$') AS bus_id_format
  FROM pgwarp.gpu_devices();

-- the self-test: one row per GPU, each 'ok'; a NOTICE and no rows without a GPU
SELECT count(*) = (SELECT count(*) FROM pgwarp.gpu_devices()) AS one_row_per_gpu,
       bool_and(result = 'ok') AS all_ok,
       bool_and(elapsed_ms > 0) AS timed
  FROM pgwarp.gpu_selftest();

-- a missing fatbin is a clear error where there is a GPU to load it on
SET pg_warp.fatbin_path = '/nonexistent/pg_warp.fatbin';
SELECT count(*) FROM pgwarp.gpu_selftest();
RESET pg_warp.fatbin_path;
SHOW pg_warp.fatbin_path;

-- the self-test is for superusers (and whoever they grant it to)
SELECT has_function_privilege('public', 'pgwarp.gpu_selftest()', 'EXECUTE') AS public_selftest,
       has_function_privilege('public', 'pgwarp.gpu_devices()', 'EXECUTE') AS public_devices;
\set VERBOSITY default
