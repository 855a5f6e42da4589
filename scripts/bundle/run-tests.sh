#!/usr/bin/env bash
# pg_warp bundle: tests pg_warp on this machine with nothing but the bundle.
#
# Creates a throwaway PostgreSQL cluster from the bundle in a temporary
# directory owned by an unprivileged OS user (as root: $PG_WARP_OSUSER, default
# pgwarp, created if missing; otherwise the calling user), starts it with
# shared_preload_libraries = 'pg_warp', runs the bundled pg_regress suites
# (test/sql, test/expected, and test/input, test/output converted with their Arrow
# fixtures by test/data/prepare_regress.py in the temporary directory), prints
# pgwarp.gpu_devices() and pgwarp.gpu_selftest(), runs test/python with pytest when
# python3 has pytest, stops the cluster and ends with one line
# "N passed, N failed, N skipped" (skipped: pytest's skipped and xfailed tests;
# exit status 1 on any failure).
#
# Environment: PGPORT (default: the first free port from 54339),
# PG_WARP_OSUSER, PG_WARP_KEEP=1 keeps the temporary directory,
# PG_WARP_CONF lines added to the cluster's postgresql.conf (e.g.
# "pg_warp.gpus = '0'" to test one GPU of several),
# PYTEST_ARGS extra pytest arguments, PYTEST_FILES the test files of
# test/python to run (names, space-separated; default: all), PG_WARP_LOG_DIR a directory that gets the
# whole pytest output (pytest.log: every failure's traceback), its JUnit XML and
# the cluster's server log at the end (the temporary directory goes with the
# machine on a lent GPU host), PG_WARP_GPU_CHECKS=0 leaves out the C programs of
# test/gpu (xpu_gpu_check, gpu_aggcheck, heap_gpucheck, xpu_join_check), e.g. when
# several runs share a host and one of them runs those.
set -uo pipefail

top=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
passed=0
failed=0
skipped=0
failures=()
pgrunning=0

note_pass() { passed=$((passed + 1)); }
note_fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAILED: $1"; }

work=$(mktemp -d /tmp/pg_warp_bundle_test.XXXXXX) || exit 1
chmod 755 "$work"

# who owns the cluster
if [ "$(id -u)" -eq 0 ]; then
    osuser=${PG_WARP_OSUSER:-pgwarp}
    if ! id "$osuser" >/dev/null 2>&1 \
        && ! useradd --system --no-create-home --shell /usr/sbin/nologin "$osuser"; then
        echo "could not create the OS user $osuser; using nobody"
        osuser=nobody
    fi
else
    osuser=$(id -un)
fi

# run a command as the cluster's owner
as_owner() {
    if [ "$(id -u)" -ne 0 ]; then
        "$@"
    elif command -v runuser >/dev/null 2>&1; then
        runuser -u "$osuser" -- "$@"
    else
        su -s /bin/sh "$osuser" -c "$(printf '%q ' "$@")"
    fi
}

# The owner must reach the bundle's programs (e.g. not when the bundle lies
# under /root): then work from a copy.
if ! as_owner test -x "$top/usr/lib/postgresql/15/bin/postgres" || ! as_owner test -r "$top/lib"; then
    echo "== $osuser cannot read $top; copying the bundle to $work/bundle"
    mkdir "$work/bundle"
    cp -a "$top/." "$work/bundle/"
    top=$work/bundle
fi
bin=$top/bin
export PATH="$bin:$PATH" PG_WARP_PGBIN="$bin" PG_WARP_TOOLS="$bin"

finish() {
    if [ -n "${PG_WARP_LOG_DIR:-}" ]; then
        mkdir -p "$PG_WARP_LOG_DIR"
        for f in pytest.log pytest.xml regress/regression.diffs cluster/server.log \
            xpu_gpu_check.log gpu_aggcheck.log heap_gpucheck.log xpu_join_check.log; do
            [ -f "$work/$f" ] && cp "$work/$f" "$PG_WARP_LOG_DIR/"
        done
    fi
    if [ "$pgrunning" = 1 ]; then
        as_owner "$bin/pg_ctl" -D "$work/cluster/data" -m fast -w stop >/dev/null 2>&1
        pgrunning=0
    fi
    echo
    for f in "${failures[@]+"${failures[@]}"}"; do echo "failed: $f"; done
    if [ "$failed" -eq 0 ] && [ "${PG_WARP_KEEP:-0}" != 1 ]; then
        rm -rf "$work"
    else
        echo "logs and results: $work"
    fi
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
    exit $?
}
trap 'note_fail "interrupted"; finish' INT TERM

echo "== host"
echo "$(uname -srm); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"); $(ldd --version 2>/dev/null | head -1)"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1
else
    echo "nvidia-smi: not found"
fi
[ -d /usr/share/zoneinfo ] || echo "note: /usr/share/zoneinfo is missing; the cluster runs in GMT, and named time zones other than POSIX-style ones are unavailable"
echo "bundle: $top"
[ -f "$top/BUILDINFO" ] && sed 's/^/  /' "$top/BUILDINFO"

# pick a port
port=${PGPORT:-}
if [ -z "$port" ]; then
    port=54339
    while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
fi
sock=$work/cluster
export PGHOST=$sock PGPORT=$port PGUSER=postgres PGDATABASE=postgres

echo "== cluster (port $port, owner $osuser)"
mkdir -p "$work/cluster"
[ "$(id -u)" -eq 0 ] && chown "$osuser" "$work/cluster"
if ! TZ=GMT as_owner "$bin/initdb" -D "$work/cluster/data" -U postgres --auth=trust \
        --encoding=UTF8 --locale=C >"$work/initdb.log" 2>&1; then
    cat "$work/initdb.log"
    note_fail "initdb"
    finish
fi
cat >>"$work/cluster/data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$sock'
shared_preload_libraries = 'pg_warp'
timezone = 'GMT'
log_timezone = 'GMT'
jit = off
fsync = off
max_worker_processes = 16
max_parallel_workers = 8
max_parallel_workers_per_gather = 4
# the tests run GpuPreAgg over heap tables on the CPU engine too (auto: only on a GPU)
pg_warp.enable_gpupreagg_heap = on
CONF
if [ -n "${PG_WARP_CONF:-}" ]; then
    printf '%s\n' "$PG_WARP_CONF" >>"$work/cluster/data/postgresql.conf"
    echo "postgresql.conf += $PG_WARP_CONF"
fi
if ! as_owner "$bin/pg_ctl" -D "$work/cluster/data" -l "$work/cluster/server.log" \
        -w -t 60 start >/dev/null; then
    tail -30 "$work/cluster/server.log"
    note_fail "cluster start"
    finish
fi
pgrunning=1
echo "$(psql -XAtc 'SELECT version()')"

echo "== pg_regress (test/sql, test/input; Arrow fixtures need python3 with pyarrow)"
# The suites run from a copy of the bundle's test/ in the work directory (the bundle
# is never written to): prepare_regress.py writes the Arrow fixtures into
# $work/regress/data/generated and converts input/ and output/ (@abs_srcdir@:
# $work/regress) into sql/ and expected/.
mkdir -p "$work/regress"
for d in sql expected input output; do
    [ -d "$top/test/$d" ] && cp -a "$top/test/$d" "$work/regress/"
done
python3 "$top/test/data/prepare_regress.py" "$work/regress" || note_fail "arrow_fdw test data"
tests=()
[ -f "$work/regress/sql/init.sql" ] && tests+=(init)
for f in "$work"/regress/sql/*.sql; do
    t=$(basename "$f" .sql)
    [ "$t" = init ] || tests+=("$t")
done
(cd "$work/regress" && "$bin/pg_regress" --inputdir="$work/regress" --outputdir="$work/regress" \
    --bindir="$bin" --host="$sock" --port="$port" --user=postgres \
    --dbname=contrib_regression --load-extension=plpgsql "${tests[@]}") \
    >"$work/regress.log" 2>&1
grep -E '\.\.\. ' "$work/regress.log" || cat "$work/regress.log"
n_ok=$(grep -cE '\.\.\. ok' "$work/regress.log")
n_bad=$(grep -cE '\.\.\. FAILED' "$work/regress.log")
passed=$((passed + n_ok))
if [ "$n_bad" -gt 0 ] || [ "$n_ok" -eq 0 ]; then
    [ -f "$work/regress/regression.diffs" ] && head -200 "$work/regress/regression.diffs"
    [ "$n_bad" -gt 0 ] || n_bad=1
    for _ in $(seq "$n_bad"); do note_fail "pg_regress (see $work/regress/regression.diffs)"; done
fi

echo "== GPUs"
psql -Xq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS pg_warp" >/dev/null 2>&1
if psql -X -v ON_ERROR_STOP=1 -c "SELECT * FROM pgwarp.gpu_devices()"; then
    note_pass
else
    note_fail "pgwarp.gpu_devices()"
fi
# where nvidia-smi sees GPUs, pg_warp must see them too
ngpu_smi=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
ngpu_pg=$(psql -XAt -c "SELECT count(*) FROM pgwarp.gpu_devices()" 2>/dev/null)
if [ "${ngpu_smi:-0}" -gt 0 ]; then
    if [ "${ngpu_pg:-0}" -gt 0 ]; then
        note_pass
    else
        note_fail "nvidia-smi lists $ngpu_smi GPUs, pgwarp.gpu_devices() none"
    fi
fi
if out=$(psql -X -v ON_ERROR_STOP=1 -c "SELECT * FROM pgwarp.gpu_selftest()" 2>&1); then
    echo "$out"
    bad=$(psql -XAt -c "SELECT count(*) FROM pgwarp.gpu_selftest() WHERE result <> 'ok'" 2>/dev/null)
    if [ "$bad" = 0 ]; then note_pass; else note_fail "pgwarp.gpu_selftest(): result not ok"; fi
else
    echo "$out"
    note_fail "pgwarp.gpu_selftest()"
fi

echo "== xPU interpreter: GPU against CPU (test/gpu)"
if [ "${PG_WARP_GPU_CHECKS:-1}" = 0 ]; then
    echo "skipped: PG_WARP_GPU_CHECKS=0"
elif [ "${ngpu_smi:-0}" -gt 0 ] && [ -x "$top/test/gpu/bin/xpu_gpu_check" ]; then
    "$top/test/gpu/bin/xpu_gpu_check" >"$work/xpu_gpu_check.log" 2>&1
    rc=$?
    n_ok=$(grep -c '^ok ' "$work/xpu_gpu_check.log")
    n_bad=$(grep -c '^not ok ' "$work/xpu_gpu_check.log")
    grep '^not ok ' "$work/xpu_gpu_check.log"
    echo "$n_ok ok, $n_bad not ok (exit status $rc)"
    passed=$((passed + n_ok))
    for _ in $(seq "$n_bad"); do note_fail "xpu_gpu_check (see $work/xpu_gpu_check.log)"; done
    if [ "$rc" -ne 0 ] || [ "$n_ok" -eq 0 ]; then note_fail "xpu_gpu_check exited with $rc"; fi
elif [ "${ngpu_smi:-0}" -gt 0 ]; then
    note_fail "this bundle has no test/gpu/bin/xpu_gpu_check (built without nvcc?)"
else
    echo "skipped: no GPU"
fi

# gpu_check NAME ARGS...: a TAP program of test/gpu/bin on the GPU ("ok" / "not ok" lines)
gpu_check() {
    local name=$1 rc n_ok n_bad
    shift
    timeout "${PG_WARP_GPU_CHECK_SECONDS:-900}" "$top/test/gpu/bin/$name" "$@" \
        >"$work/$name.log" 2>&1
    rc=$?
    n_ok=$(grep -c '^ok ' "$work/$name.log")
    n_bad=$(grep -c '^not ok ' "$work/$name.log")
    grep -E '^not ok |^Bail out' "$work/$name.log"
    echo "$name: $n_ok ok, $n_bad not ok (exit status $rc)"
    passed=$((passed + n_ok))
    for _ in $(seq "$n_bad"); do note_fail "$name (see $work/$name.log)"; done
    if [ "$rc" -ne 0 ] && [ "$n_bad" -eq 0 ]; then note_fail "$name exited with $rc"; fi
}

echo "== pytest (test/python)"
if [ -d "$top/test/python" ] && python3 -c "import pytest" 2>/dev/null; then
    # shellcheck disable=SC2086
    # the whole output (short tracebacks) to pytest.log; here the summary, one
    # line per failure with its message (-rfE), so that a short log still says why
    paths=("$top/test/python")
    if [ -n "${PYTEST_FILES:-}" ]; then
        paths=()
        for f in $PYTEST_FILES; do paths+=("$top/test/python/$f"); done
    fi
    (cd "$work" && python3 -m pytest "${paths[@]}" -q -p no:cacheprovider -rfE \
        --tb=short --junitxml="$work/pytest.xml" ${PYTEST_ARGS:-}) >"$work/pytest.log" 2>&1
    sed -n '/short test summary info/,$p' "$work/pytest.log" | cut -c1-400
    grep -qE 'short test summary info' "$work/pytest.log" || tail -40 "$work/pytest.log"
    if [ -f "$work/pytest.xml" ]; then
        read -r t f e s < <(python3 "$top/test/python/junit_counts.py" "$work/pytest.xml")
        passed=$((passed + t - f - e - s))
        skipped=$((skipped + s))
        for _ in $(seq $((f + e))); do note_fail "pytest"; done
        [ "$t" -eq 0 ] && note_fail "pytest ran no test"
    else
        note_fail "pytest did not run"
    fi
elif [ -d "$top/test/python" ]; then
    echo "skipped: python3 has no pytest"
else
    echo "skipped: no test/python in the bundle"
fi

echo "== the GPU runner against host references (test/gpu: gpu_aggcheck, heap_gpucheck, xpu_join_check)"
fatbin=$top/usr/lib/postgresql/15/lib/pg_warp.fatbin
if [ "${PG_WARP_GPU_CHECKS:-1}" = 0 ]; then
    echo "skipped: PG_WARP_GPU_CHECKS=0"
elif [ "${ngpu_smi:-0}" -gt 0 ] && [ -x "$top/test/gpu/bin/gpu_aggcheck" ] && [ -f "$fatbin" ]; then
    mkdir -p "$work/gpucheck"
    gpu_check gpu_aggcheck "$fatbin" "$work/gpucheck"
    gpu_check heap_gpucheck "$fatbin"
    if [ -x "$top/test/gpu/bin/xpu_join_check" ]; then
        gpu_check xpu_join_check
    else
        note_fail "this bundle has no test/gpu/bin/xpu_join_check"
    fi
    rm -rf "$work/gpucheck"
elif [ "${ngpu_smi:-0}" -gt 0 ]; then
    note_fail "this bundle has no test/gpu/bin/gpu_aggcheck (built without nvcc?)"
else
    echo "skipped: no GPU"
fi

finish
