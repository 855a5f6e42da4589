#!/usr/bin/env bash
# Runs the benchmarks on a GPU host that has no PostgreSQL, from the offline bundle
# (scripts/make-bundle.sh).  Run from the repository root; results go to
# bench/results/ and, when $OUT is set, are copied there too.
#
#   bench/gpu-host.sh setup BUNDLE.tar.gz   extract the bundle (.tar.gz or .tar.xz), run its tests
#                                           (not with SKIP_TESTS=1), start a
#                                           benchmark cluster, load SSB
#   bench/gpu-host.sh tests                 run the extracted bundle's tests; with WHEELS
#                                           holding the nvidia-cufile wheel, its libcufile
#                                           for the cuFile tests (PG_WARP_TEST_CUFILE)
#   bench/gpu-host.sh fdw                   arrow_fdw vs heap (bench/arrow_fdw_bench.py)
#   bench/gpu-host.sh export                pg2arrow vs its peers (bench/pg2arrow_bench.py)
#   bench/gpu-host.sh ssb                   the 13 SSB queries, heap vs arrow_fdw lineorder
#                                           (bench/ssb_bench.py), SF default 20, in its
#                                           own database ssb_sfN (loaded once; RELOAD=1)
#   bench/gpu-host.sh load                  load the ssb step's database and Arrow file
#                                           (SF default 20), e.g. beside the tests
#   bench/gpu-host.sh engine                issue 11's engine benchmark (bench/engine_bench.py):
#                                           Q1/Q2 on heap, arrow_fdw, pg_warp GPU and CPU
#                                           engine, DuckDB, and a pinned host-to-GPU copy
#                                           (bench/h2d_copy); the ssb step's database and
#                                           Arrow file (SF default 20; loaded if missing).
#                                           DuckDB comes as a wheel through WHEELS; fetch it
#                                           where pip works with
#       pip download duckdb --only-binary=:all: --python-version 3.12 \
#           --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 -d DIR
#                                           (without the manylinux_2_28 tag pip picks an
#                                           old duckdb, 1.2.2: the newer wheels have only
#                                           that tag).  COLD=1 restarts the cluster
#                                           first: lineorder in the page cache only (the
#                                           load's ctid-range export otherwise leaves it in
#                                           shared buffers); NOTE goes into the JSON
#   bench/gpu-host.sh ssb-engine            issue 29's SSB benchmark (bench/ssb_engine_bench.py):
#                                           the 13 SSB queries on PostgreSQL heap, pg_warp GPU
#                                           on Arrow (first run per query, then warm), GPU on
#                                           heap, CPU engine on Arrow, DuckDB (WHEELS, as for
#                                           engine) and the pinned copy of each query's
#                                           referenced bytes; best of RUNS (default 3); the
#                                           ssb step's database and Arrow file (SF default 20;
#                                           loaded if missing).  Before each query's first GPU
#                                           run the pg_warp service is restarted
#                                           (bench/service-restart.sh), which empties the GPU
#                                           column cache and the kept inner tables and leaves
#                                           PostgreSQL's shared buffers as they are;
#                                           COLD_FIRST_RUNS=cluster restarts the whole cluster
#                                           instead (shared buffers emptied too), drop empties
#                                           the caches with pgwarp.gpu_cache_drop() (the same
#                                           service: file pages kept registered with
#                                           pg_warp.pinned_files_size stay so, after a prewarm
#                                           of every column of lineorder first and the wait for
#                                           their registration in the background), 0: none;
#                                           QUERIES (e.g. q1.1,q2.1) picks a subset;
#                                           DIMS_ARROW=1: the Arrow sides read the
#                                           dimension tables from Arrow files too
#                                           (pg2arrow exports of them, made once);
#                                           FIRST_BREAKDOWN=1 runs each first run once more
#                                           under EXPLAIN ANALYZE (caches emptied again) and
#                                           reports where its time went (builds, read-ahead,
#                                           the service's run); FIRST_EXPLAIN=1 runs the timed
#                                           first runs themselves under EXPLAIN ANALYZE instead
#   bench/gpu-host.sh gpus                  issue 31's benchmark (bench/gpus_bench.py): the flat
#                                           queries and the 13 SSB queries on pg_warp GPU over
#                                           Arrow, first run and warm, once per pg_warp.gpus
#                                           setting of GPUS_SETTINGS (default "0 0,1"; "0 0,0"
#                                           on a host with one GPU), the cluster restarted for
#                                           each; answers checked against PostgreSQL heap
#   bench/gpu-host.sh hll                   issue 12's HLL benchmark (bench/hll_ssb.py):
#                                           hll_count(lo_custkey) vs count(DISTINCT
#                                           lo_custkey), with and without GROUP BY
#                                           lo_orderpriority, on heap, arrow_fdw and pg_warp
#                                           GPU and CPU engine; the ssb step's database
#                                           and Arrow file (SF default 20; loaded if
#                                           missing).  RUNS hll_count runs (default 5),
#                                           DISTINCT_RUNS count(DISTINCT) runs (default 1)
#   bench/gpu-host.sh datapath              issue 30's data-path benchmark (bench/data_path_bench.py):
#                                           the raw limits (bench/data_paths on lineorder.arrow:
#                                           O_DIRECT disk read, pinned and pageable copy, pread
#                                           into pinned buffers, registered file pages, cuFile)
#                                           beside pg_warp GPU's first (cache emptied by a
#                                           cluster restart, files in the page cache), cold
#                                           (files evicted too) and warm runs of the flat queries
#                                           and SSB Q1.1-Q1.3 on Arrow and heap, and DuckDB
#                                           (WHEELS, as for engine); the ssb step's database
#                                           and Arrow file (SF default 20; loaded if missing).
#                                           libcufile: CUFILE_LIB, else the nvidia-cufile wheel's
#                                           when WHEELS holds it (then also pg_warp's first and
#                                           cold runs with pg_warp.gpudirect = on, KvikIO where
#                                           WHEELS holds kvikio's wheels); DATA_PATHS_ARGS more data_paths
#                                           options (e.g. "-b 4G"); QUERIES a subset (q1,q1.1);
#                                           UNREGISTERED=1: the first runs on Arrow also with
#                                           pg_warp.pinned_files_size = 0 (no pages registered);
#                                           RESTORED=1: also with pg_warp.pinned_files_restore
#                                           and pg_warp.arrow_metadata_prewarm on (the
#                                           registrations and the metadata of the runs before
#                                           restored at the restart; off for the other first runs)
#   bench/gpu-host.sh restart               the first session after a cluster restart against
#                                           the next (bench/restart_bench.py), with
#                                           pg_warp.arrow_metadata_prewarm off and on: planning and
#                                           execution of QUERY (default q1.1) over the ssb step's
#                                           Arrow lineorder (SF default 20), RUNS restarts per value
#                                           (default 6), SETTLE seconds after each (default 5: the
#                                           registrations restored by then)
#   bench/gpu-host.sh huge-pages on|off     the benchmark cluster's shared memory on 2 MB
#                                           huge pages (vm.nr_hugepages reserved for what
#                                           PostgreSQL says it needs, huge_pages = try) or
#                                           back on 4 kB pages (the reservation given back);
#                                           restarts the cluster.  A parallel worker faults
#                                           in every page of shared memory it touches, one
#                                           fault per 4 kB page (about 2 us each on these
#                                           guests): the builds' workers scanning the
#                                           dimensions through shared buffers pay it on
#                                           every query
#
# Environment: SF (scale factor, default 10; 20 for ssb, engine, ssb-engine, hll and datapath), WORKERS (parallel
# workers for the scan benchmarks, DuckDB's threads, default 16), RUNS (ssb, engine:
# measured runs per query, default 5; ssb-engine: default 3), SIDES (engine, hll: a subset of their sides),
# DICT=1 (engine: also Q4 over a lineorder export with dictionary-encoded text keys),
# SHARED_BUFFERS (default 16GB), HUGE_PAGES=0 (setup: shared memory on 4 kB pages), WHEELS (a directory
# of Python wheels to install first, e.g. connectorx, psycopg, duckdb), PGPORT (default 5500),
# EXPORT_WORKERS (default 1,2,4,8,16), REPEAT (rounds over every point, best kept;
# default 1), SKIP_TESTS=1 (setup without the bundle tests), SKIP_LOAD=1 (setup
# without loading SSB into the database ssb, e.g. before `ssb`), PG2ARROW (the pg2arrow
# to benchmark; default: the bundle's), BASELINE and BASELINE_WORKERS (another
# pg2arrow build to run beside it, and at which worker counts), CUFILE_UDEV=1 (tests,
# datapath: where udev's database has no record of the block device under /tmp, as on
# the lent hosts, one written to /run/udev/data for libcufile, which refuses every
# file without it: error 5027; as root).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
top=/tmp/pg_warp_gpu_host
sf=${SF:-10}
export PGPORT=${PGPORT:-5500}
cluster=$top/cluster
# restarts the benchmark cluster (and the pg_warp service: the GPU column cache emptied)
restart_cmd="PGDATABASE=postgres $root/scripts/cluster.sh stop $cluster && PGDATABASE=postgres $root/scripts/cluster.sh start $cluster >/dev/null"
arrow_dir=$top/ssb-sf$sf
out=${OUT:-}

log() { echo "[$(date -u +%H:%M:%S)] $*"; }

# CUFILE_UDEV=1: udev's record of the file system under /tmp (libcufile looks up
# ID_FS_USAGE and ID_FS_TYPE of a file's block device, in compatibility mode too)
cufile_udev() {
    local mm fs rec
    [ "${CUFILE_UDEV:-0}" = 1 ] || return 0
    mm=$(findmnt -no MAJ:MIN -T /tmp | head -1 | tr -d ' ')
    fs=$(findmnt -no FSTYPE -T /tmp | head -1)
    rec=/run/udev/data/b$mm
    if [ -z "$mm" ] || [ -z "$fs" ]; then
        log "CUFILE_UDEV: no block device found under /tmp"
    elif [ -f "$rec" ]; then
        log "CUFILE_UDEV: $rec is there already"
    else
        mkdir -p /run/udev/data
        printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "$fs" > "$rec"
        log "CUFILE_UDEV: wrote $rec ($fs)"
    fi
}

# the wheels of WHEELS into /tmp/pg_warp_site, readable by every user (the
# tests' cluster runs as another one)
install_wheels() {
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/pg_warp_site "$WHEELS"/*.whl
    chmod -R a+rX /tmp/pg_warp_site
}

# the nvidia-cufile wheel's libcufile under /tmp/pg_warp_site (WHEELS installed), if there
wheel_cufile() {
    ls /tmp/pg_warp_site/nvidia/*/lib/libcufile.so.0 2>/dev/null | head -1 || true
}
keep() { [ -n "$out" ] && cp "$@" "$out/" 2>/dev/null || true; }

env_from_bundle() {
    local b
    b=$(ls -d "$top"/pg_warp-bundle-*/ 2>/dev/null | head -1)
    [ -n "$b" ] || { echo "gpu-host: no extracted bundle under $top (run setup first)" >&2; exit 1; }
    eval "$("$b/bin/pg-warp-env")"
    export PGHOST=$cluster PGUSER=postgres PGDATABASE=ssb
    if [ -n "${WHEELS:-}" ]; then
        install_wheels
        export PYTHONPATH=/tmp/pg_warp_site${PYTHONPATH:+:$PYTHONPATH}
    fi
}

# ssb_database SF: sets db (ssb_sfSF) and arrow (its lineorder as an Arrow file
# with batch statistics), loading both first when either is missing (or RELOAD=1).
# Used by ssb and engine, so that both measure the same data.
ssb_database() {
    local sf=$1 loaded
    db=ssb_sf$sf
    arrow=$top/ssb-sf$sf-stats/lineorder.arrow
    loaded=$(PGDATABASE=postgres psql -XAtc "SELECT 1 FROM pg_database WHERE datname = '$db'")
    if [ "${RELOAD:-0}" = 1 ] || [ -z "$loaded" ] || [ ! -f "$arrow" ]; then
        log "SSB SF $sf into database $db (heap), lineorder to Arrow with statistics"
        PGDATABASE=postgres psql -Xqc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
        psql -d "$db" -Xqc "CREATE EXTENSION pg_warp"
        make -s -C bench/ssb
        bench/ssb/load.sh -d "$db" -s "$sf" -j "$(nproc)" --no-arrow 2>&1 | tee "$top/ssb-load.log"
        mkdir -p "$(dirname "$arrow")"; chmod 755 "$(dirname "$arrow")"
        time "${PG2ARROW:-pg2arrow}" -d "$db" -t lineorder -S -n "$(nproc)" -o "$arrow"
        chmod 644 "$arrow"
    fi
}

case "${1:-}" in
setup)
    bundle=${2:?bundle tarball}
    rm -rf "$top"; mkdir -p "$top"; chmod 755 "$top"
    log "extracting $bundle"
    tar -xf "$bundle" -C "$top"      # .tar.gz or .tar.xz
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\))' || true
    if [ "${SKIP_TESTS:-0}" != 1 ]; then
        "$0" tests
    fi
    env_from_bundle
    log "benchmark cluster on port $PGPORT"
    PGDATABASE=postgres scripts/cluster.sh start "$cluster" >/dev/null
    PGDATABASE=postgres psql -Xq <<SQL
ALTER SYSTEM SET shared_buffers = '${SHARED_BUFFERS:-16GB}';
ALTER SYSTEM SET max_worker_processes = 40;
ALTER SYSTEM SET max_parallel_workers = 32;
ALTER SYSTEM SET max_parallel_workers_per_gather = 16;
ALTER SYSTEM SET work_mem = '256MB';
ALTER SYSTEM SET maintenance_work_mem = '4GB';
ALTER SYSTEM SET max_wal_size = '64GB';
ALTER SYSTEM SET synchronous_commit = off;
ALTER SYSTEM SET jit = off;
SQL
    scripts/cluster.sh stop "$cluster"
    PGDATABASE=postgres scripts/cluster.sh start "$cluster" >/dev/null
    PGDATABASE=postgres psql -Xqc "CREATE DATABASE ssb"
    psql -Xqc "CREATE EXTENSION pg_warp"
    # shared memory on huge pages unless HUGE_PAGES=0 (8-12 % off the join queries'
    # first runs on the H200 host: bench/results/README.md); 4 kB pages where refused
    if [ "${HUGE_PAGES:-1}" = 1 ]; then
        "$0" huge-pages on || log "shared memory stays on 4 kB pages"
    fi
    [ "${SKIP_LOAD:-0}" = 1 ] && exit 0
    log "SSB SF $sf: generate, load, export with pg2arrow"
    make -s -C bench/ssb
    mkdir -p "$arrow_dir"; chmod 755 "$arrow_dir"
    time bench/ssb/load.sh -d ssb -s "$sf" -j "$(nproc)" -a "$arrow_dir" 2>&1 | tee "$top/load.log"
    keep "$top/load.log"
    ls -l "$arrow_dir"
    psql -Xc "SELECT relname, pg_size_pretty(pg_relation_size(oid)) FROM pg_class WHERE relname IN ('lineorder','customer','part','supplier','date1')"
    ;;
tests)
    b=$(ls -d "$top"/pg_warp-bundle-*/ 2>/dev/null | head -1)
    [ -n "$b" ] || { echo "gpu-host: no extracted bundle under $top (run setup first)" >&2; exit 1; }
    log "bundle tests (regression suite + GPU self-test + pytest)"
    if [ -n "${WHEELS:-}" ]; then
        install_wheels
        lib=$(wheel_cufile)
        if [ -z "${PG_WARP_TEST_CUFILE:-}" ] && [ -n "$lib" ]; then
            export PG_WARP_TEST_CUFILE=$lib
        fi
    fi
    log "cuFile tests: ${PG_WARP_TEST_CUFILE:-skipped (no PG_WARP_TEST_CUFILE, no nvidia-cufile wheel in WHEELS)}"
    cufile_udev
    # its own cluster on a free port, beside the benchmark cluster on $PGPORT
    env -u PGPORT PG_WARP_LOG_DIR="$top/test-logs" "$b/run-tests.sh" 2>&1 | tee "$top/run-tests.log"
    keep "$top/run-tests.log" "$top"/test-logs/*
    ;;
fdw)
    env_from_bundle
    log "arrow_fdw vs heap, $sf, ${WORKERS:-16} workers"
    python3 bench/arrow_fdw_bench.py -d ssb -a "$arrow_dir/lineorder.arrow" \
        -w "${WORKERS:-16}" -r 5 --tag "sf$sf-gpu-host" 2>&1 | tee "$top/fdw.log"
    keep "$top/fdw.log" bench/results/arrow_fdw_sf"$sf"-gpu-host.*
    ;;
export)
    env_from_bundle
    log "pg2arrow vs peers"
    mkdir -p "$top/export"; chmod 755 "$top/export"
    touch "$top/export.start"
    python3 bench/pg2arrow_bench.py -d ssb -t lineorder -w "${EXPORT_WORKERS:-1,2,4,8,16}" \
        --repeat "${REPEAT:-1}" --pg2arrow "${PG2ARROW:-$(command -v pg2arrow)}" \
        ${BASELINE:+--baseline "$BASELINE"} ${BASELINE_WORKERS:+--baseline-workers "$BASELINE_WORKERS"} \
        --tmpdir "$top/export" 2>&1 | tee "$top/export.log"
    keep "$top/export.log" $(find bench/results -name 'pg2arrow_bench-*' -newer "$top/export.start")
    ;;
ssb)
    env_from_bundle
    sf=${SF:-20}
    ssb_database "$sf"
    log "SSB SF $sf: heap vs arrow_fdw, ${WORKERS:-16} workers"
    touch "$top/ssb.start"
    python3 bench/ssb_bench.py -d "$db" -a "$arrow" -w "${WORKERS:-16}" -r "${RUNS:-5}" \
        --tag "sf$sf-gpu-host-${WORKERS:-16}workers" 2>&1 | tee "$top/ssb.log"
    keep "$top/ssb.log" $(find bench/results -name 'ssb_*' -newer "$top/ssb.start")
    ;;
load)
    env_from_bundle
    ssb_database "${SF:-20}"
    ;;
engine)
    env_from_bundle
    sf=${SF:-20}
    ssb_database "$sf"
    make -s -C bench h2d_copy || log "bench/h2d_copy not built: no pinned-copy figures"
    tag=sf$sf-gpu-host-${WORKERS:-16}workers
    if [ "${COLD:-0}" = 1 ]; then
        log "restarting the cluster: shared buffers empty, lineorder in the page cache"
        PGDATABASE=postgres scripts/cluster.sh stop "$cluster"
        PGDATABASE=postgres scripts/cluster.sh start "$cluster" >/dev/null
    fi
    dict=()
    if [ "${DICT:-0}" = 1 ]; then
        # Q4 over lineorder with its text keys dictionary-encoded (issue 28 item 6)
        dict_arrow=$top/ssb-sf$sf-dict/lineorder.arrow
        if [ ! -f "$dict_arrow" ]; then
            log "lineorder to Arrow with dictionary-encoded lo_shipmode, lo_orderpriority"
            mkdir -p "$(dirname "$dict_arrow")"; chmod 755 "$(dirname "$dict_arrow")"
            "${PG2ARROW:-pg2arrow}" -d "$db" -t lineorder -S -n "$(nproc)" \
                --dictionary=lo_shipmode,lo_orderpriority -o "$dict_arrow"
            chmod 644 "$dict_arrow"
        fi
        dict=(--dict-arrow "$dict_arrow")
    fi
    log "engine benchmark, SSB SF $sf, ${WORKERS:-16} workers, ${RUNS:-5} runs"
    touch "$top/engine.start"
    status=0
    python3 bench/engine_bench.py -d "$db" -a "$arrow" -w "${WORKERS:-16}" -r "${RUNS:-5}" \
        ${SIDES:+--sides "$SIDES"} ${NOTE:+--note "$NOTE"} "${dict[@]}" --tag "$tag" 2>&1 | tee "$top/engine.log" || status=$?
    keep "$top/engine.log" $(find bench/results -name "engine_bench_$tag.*" -newer "$top/engine.start")
    exit $status
    ;;
ssb-engine)
    env_from_bundle
    sf=${SF:-20}
    ssb_database "$sf"
    make -s -C bench h2d_copy || log "bench/h2d_copy not built: bus times at a nominal 55 GB/s"
    tag=sf$sf-gpu-host-${WORKERS:-16}workers
    cold=()
    case "${COLD_FIRST_RUNS:-service}" in
    service) cold=(--cold-cmd "$root/bench/service-restart.sh $db") ;;
    cluster) cold=(--cold-cmd "PGDATABASE=postgres $root/scripts/cluster.sh stop $cluster &&
                               PGDATABASE=postgres $root/scripts/cluster.sh start $cluster >/dev/null") ;;
    drop)
        cold=(--cold-cmd "psql -d $db -XAtqc 'SELECT pgwarp.gpu_cache_drop()' >/dev/null")
        log "pg_warp.pinned_files_size: $(psql -d "$db" -XAtqc 'SHOW pg_warp.pinned_files_size');" \
            "every column of lineorder read into the GPU cache first (pages registered)"
        psql -d "$db" -XAtq -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
            -c "DROP SCHEMA IF EXISTS pinned_first CASCADE" -c "CREATE SCHEMA pinned_first" \
            -c "IMPORT FOREIGN SCHEMA lineorder FROM SERVER arrow_fdw INTO pinned_first OPTIONS (file '$arrow')" \
            -c "SELECT pgwarp.gpu_cache_prewarm('pinned_first.lineorder')" \
            -c "DROP SCHEMA pinned_first CASCADE" >/dev/null
        # the service registers the pages the prewarm read in the background
        for _ in $(seq 600); do
            [ "$(psql -d "$db" -XAtqc 'SELECT pinned_file_bytes_queued FROM pgwarp.service_status()')" = 0 ] \
                && break
            sleep 0.2
        done
        log "file pages registered: $(psql -d "$db" -XAtqc 'SELECT pinned_file_bytes, pinned_file_bytes_queued FROM pgwarp.service_status()')" ;;
    0) ;;
    *) echo "gpu-host: COLD_FIRST_RUNS is service, cluster, drop or 0" >&2; exit 1 ;;
    esac
    dims=()
    if [ "${DIMS_ARROW:-0}" = 1 ]; then
        dims_dir=$top/ssb-sf$sf-dims
        mkdir -p "$dims_dir"; chmod 755 "$dims_dir"
        for t in customer supplier part date1; do
            if [ ! -f "$dims_dir/$t.arrow" ]; then
                log "$t to Arrow"
                "${PG2ARROW:-pg2arrow}" -d "$db" -t "$t" -o "$dims_dir/$t.arrow.tmp"
                chmod 644 "$dims_dir/$t.arrow.tmp"; mv "$dims_dir/$t.arrow.tmp" "$dims_dir/$t.arrow"
            fi
        done
        dims=(--dims-arrow "$dims_dir")
        tag=$tag-dims-arrow
    fi
    log "SSB engine benchmark, SF $sf, ${WORKERS:-16} workers, best of ${RUNS:-3} runs"
    touch "$top/ssb-engine.start"
    status=0
    python3 bench/ssb_engine_bench.py -d "$db" -a "$arrow" -w "${WORKERS:-16}" -r "${RUNS:-3}" \
        ${SIDES:+--sides "$SIDES"} ${QUERIES:+-q "$QUERIES"} ${NOTE:+--note "$NOTE"} "${cold[@]}" \
        ${FIRST_BREAKDOWN:+--first-breakdown} ${FIRST_EXPLAIN:+--first-explain} "${dims[@]}" --tag "$tag" \
        2>&1 | tee "$top/ssb-engine.log" || status=$?
    keep "$top/ssb-engine.log" $(find bench/results -name "ssb_engine_$tag.*" -newer "$top/ssb-engine.start")
    exit $status
    ;;
gpus)
    env_from_bundle
    sf=${SF:-20}
    ssb_database "$sf"
    tag=sf$sf-gpu-host-$(nvidia-smi -L 2>/dev/null | wc -l)gpus
    settings=()
    for g in ${GPUS_SETTINGS:-0 0,1}; do settings+=(--gpus "$g"); done
    log "pg_warp on GPUs ${GPUS_SETTINGS:-0 0,1}, SSB SF $sf, best of ${RUNS:-3} runs"
    touch "$top/gpus.start"
    status=0
    python3 bench/gpus_bench.py -d "$db" -a "$arrow" -r "${RUNS:-3}" -w "${WORKERS:-16}" \
        --restart-cmd "PGDATABASE=postgres $root/scripts/cluster.sh stop $cluster &&
                       PGDATABASE=postgres $root/scripts/cluster.sh start $cluster >/dev/null" \
        "${settings[@]}" ${QUERIES:+-q "$QUERIES"} --tag "$tag" 2>&1 | tee "$top/gpus.log" || status=$?
    keep "$top/gpus.log" $(find bench/results -name "gpus_$tag.*" -newer "$top/gpus.start")
    exit $status
    ;;
datapath)
    env_from_bundle
    sf=${SF:-20}
    ssb_database "$sf"
    make -s -C bench data_paths
    if [ -z "${CUFILE_LIB:-}" ]; then
        lib=$(wheel_cufile)
        [ -n "$lib" ] && export CUFILE_LIB=$lib
    fi
    cufile_udev
    log "libcufile: ${CUFILE_LIB:-libcufile.so.0 from the library path, if there}"
    tag=sf$sf-gpu-host-${WORKERS:-16}workers
    log "data-path benchmark, SSB SF $sf, ${WORKERS:-16} workers, best of ${RUNS:-3} warm runs"
    touch "$top/datapath.start"
    status=0
    python3 bench/data_path_bench.py -d "$db" -a "$arrow" -w "${WORKERS:-16}" -r "${RUNS:-3}" \
        --restart-cmd "$restart_cmd" ${SIDES:+--sides "$SIDES"} ${QUERIES:+-q "$QUERIES"} ${NOTE:+--note "$NOTE"} \
        ${DATA_PATHS_ARGS:+--data-paths-args "$DATA_PATHS_ARGS"} ${CUFILE_LIB:+--cufile-lib "$CUFILE_LIB"} \
        ${UNREGISTERED:+--unregistered} ${RESTORED:+--restored} \
        --tag "$tag" 2>&1 | tee "$top/datapath.log" \
        || status=$?
    keep "$top/datapath.log" $(find bench/results -name "data_path_$tag.*" -newer "$top/datapath.start")
    exit $status
    ;;
restart)
    env_from_bundle
    sf=${SF:-20}
    ssb_database "$sf"
    q=${QUERY:-q1.1}
    tag=sf$sf-gpu-host-${WORKERS:-16}workers-$q
    log "the first session after a restart, $q, SSB SF $sf, ${RUNS:-6} restarts per value"
    touch "$top/restart.start"
    status=0
    python3 bench/restart_bench.py -d "$db" --arrow "$arrow" --workers "${WORKERS:-16}" \
        --query "bench/ssb/queries/$q.sql" --restart-cmd "$restart_cmd" --runs "${RUNS:-6}" \
        --settle "${SETTLE:-5}" --tag "$tag" 2>&1 | tee "$top/restart.log" || status=$?
    keep "$top/restart.log" $(find bench/results -name "restart_$tag.*" -newer "$top/restart.start")
    exit $status
    ;;
hll)
    env_from_bundle
    sf=${SF:-20}
    ssb_database "$sf"
    tag=sf$sf-$(hostname -s)-${WORKERS:-16}workers
    log "HLL benchmark, SSB SF $sf, ${WORKERS:-16} workers, ${RUNS:-5} runs"
    touch "$top/hll.start"
    status=0
    python3 bench/hll_ssb.py -d "$db" -a "$arrow" -w "${WORKERS:-16}" -r "${RUNS:-5}" \
        --distinct-runs "${DISTINCT_RUNS:-1}" ${SIDES:+--sides "$SIDES"} --tag "$tag" \
        2>&1 | tee "$top/hll.log" || status=$?
    keep "$top/hll.log" $(find bench/results -name "hll_ssb_$tag.*" -newer "$top/hll.start")
    exit $status
    ;;
huge-pages)
    env_from_bundle
    case "${2:-}" in
    on) setting=try ;;
    off) setting=off ;;
    *) echo "usage: $0 huge-pages on|off" >&2; exit 2 ;;
    esac
    pages=$(PGDATABASE=postgres psql -XAtc "SHOW shared_memory_size_in_huge_pages")
    PGDATABASE=postgres psql -Xqc "ALTER SYSTEM SET huge_pages = '$setting'"
    scripts/cluster.sh stop "$cluster"
    want=0
    [ "$2" = on ] && want=$((pages + 16))
    echo "$want" > /proc/sys/vm/nr_hugepages || log "could not set vm.nr_hugepages to $want"
    PGDATABASE=postgres scripts/cluster.sh start "$cluster" >/dev/null
    # pages the cluster's mapping holds or has reserved
    used=$(awk '/^HugePages_Total/ {t = $2} /^HugePages_Free/ {f = $2} /^HugePages_Rsvd/ {r = $2}
                END {print t - f + r}' /proc/meminfo)
    log "huge pages: $(cat /proc/sys/vm/nr_hugepages) reserved of $want asked, $used in use" \
        "(PostgreSQL needs $pages), huge_pages = $setting"
    if [ "$2" = on ] && [ "$used" -eq 0 ]; then
        echo "gpu-host: the cluster's shared memory is not on huge pages" >&2
        exit 1
    fi
    ;;
*)
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
    exit 2
    ;;
esac
