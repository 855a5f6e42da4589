#!/usr/bin/env bash
# Quick start: on a fresh Debian 12 machine (as root), installs what pg_warp needs,
# builds and installs it into PostgreSQL 15, starts a throwaway cluster with
# shared_preload_libraries = 'pg_warp', creates the extension and shows what it
# found: its version and the GPUs it will use (or that it runs on the CPU engine).
# The cluster keeps running; the last lines say how to connect and how to stop it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-deps.sh
echo "== building pg_warp"
make -s -j"$(nproc)" >/dev/null
make -s install >/dev/null
dir=${PG_WARP_CLUSTER:-/tmp/pg_warp_cluster}
export PGPORT=${PGPORT:-5433}
eval "$(scripts/cluster.sh start "$dir")"
psql -Xq -c "CREATE EXTENSION IF NOT EXISTS pg_warp"

echo "== pg_warp $(psql -XAtc 'SELECT pgwarp.version()') on $(psql -XAtc 'SELECT version()' | cut -d, -f1)"
if [ "$(psql -XAtc 'SELECT count(*) FROM pgwarp.gpu_devices()')" -gt 0 ]; then
    echo "GPUs:"
    psql -X -c "SELECT device_index AS gpu, name, pg_size_pretty(total_memory) AS memory,
                       multiprocessors AS sms, compute_capability AS cc, pci_bus_id
                  FROM pgwarp.gpu_devices()"
    psql -X -c "SELECT device_index AS gpu, result, round(elapsed_ms::numeric, 2) AS ms
                  FROM pgwarp.gpu_selftest()"
else
    echo "no GPU: CPU engine"
fi
cat <<EOT

The cluster is running (data in $dir/data, log in $dir/server.log).
  connect:  psql -h $dir -p $PGPORT -U postgres
  stop:     PGPORT=$PGPORT scripts/cluster.sh destroy $dir
EOT
