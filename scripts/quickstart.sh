#!/usr/bin/env bash
# Quick start: on a fresh Debian 12 machine (as root), installs what pg_warp needs,
# builds and installs it into PostgreSQL 15, starts a throwaway cluster with
# shared_preload_libraries = 'pg_warp', creates the extension and shows what it
# found: its version and the GPUs it will use (or that it runs on the CPU engine).
# Then it loads a small Star Schema Benchmark (SF 1: 6 M lineorder rows, database ssb,
# lineorder also as an Arrow file) and runs three SSB queries with pg_warp.enabled off
# and on, printing both times and what ran (bench/ssb_quickstart.py); about 40 s on 2
# cores (the whole script, without the CUDA fatbin: 2.6 min there); SSB=0 skips that.
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

if [ "${SSB:-1}" = 1 ]; then
    echo "== SSB scale factor 1: generate and load (database ssb), lineorder to Arrow"
    make -s -C bench/ssb
    psql -Xq -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ssb" -c "CREATE DATABASE ssb"
    psql -Xq -d ssb -c "CREATE EXTENSION pg_warp"
    bench/ssb/load.sh -d ssb -s 1 --no-arrow
    mkdir -p "$dir/ssb" && chmod 755 "$dir/ssb"
    "$(pg_config --bindir)/pg2arrow" -d ssb -t lineorder -S -n "$(nproc)" -o "$dir/ssb/lineorder.arrow" >/dev/null
    chmod 644 "$dir/ssb/lineorder.arrow"
    echo "== three SSB queries, pg_warp off and on (lineorder from the Arrow file)"
    python3 bench/ssb_quickstart.py -d ssb -a "$dir/ssb/lineorder.arrow"
fi
cat <<EOT

The cluster is running (data in $dir/data, log in $dir/server.log).
  connect:  psql -h $dir -p $PGPORT -U postgres      (SSB: add -d ssb; bench/ssb/queries)
  stop:     PGPORT=$PGPORT scripts/cluster.sh destroy $dir
EOT
