#!/usr/bin/env bash
# Runs every pg_warp test on this machine and ends with one line
# "N passed, N failed, N skipped" (non-zero exit on any failure).
#
# scripts/test.sh --fast: the fast tier (doc/testing.md), for a tree that has been
# built before: builds what changed (no make clean) and installs it, then runs the C
# unit tests (test/c), the GPU heap and Arrow paths' CPU stand-in (test/gpu heapfake,
# scanfake) and the pytest suites that need no cluster (FAST_PYTEST below: the Arrow library, the
# tools, the layout and the library boundary); no dependencies, no cluster, no fuzzer.
#
# On a fresh Debian 12 machine, as root: installs what it needs (setup-deps.sh),
# builds with assertions, installs into the system PostgreSQL 15, starts a
# throwaway cluster (cluster.sh) with shared_preload_libraries = 'pg_warp', runs
# the pg_regress suites (make installcheck, which writes their Arrow fixtures into
# test/data/generated first), the C unit tests (test/c), the fuzzer
# (scripts/fuzz.sh), the pytest suites (test/python), and stops the cluster.
#
# Environment: PGPORT (default: a free port) for the cluster; PG_WARP_SKIP_DEPS=1 skips
# setup-deps.sh; PYTEST_ARGS passes extra arguments to pytest (e.g. "-k fdw");
# PG_WARP_FUZZ_SECONDS (default 60) how long to fuzz the reader (0: replay the corpus only).
set -uo pipefail
fast=0
case "${1:-}" in
    --fast) fast=1 ;;
    "") ;;
    *) echo "usage: $0 [--fast]" >&2; exit 2 ;;
esac
# the pytest files of the fast tier: none of them starts or needs a cluster
FAST_PYTEST=(test_layout.py test_symbols.py test_arrow_json_form.py test_reader_smoke.py
             test_interop_read.py test_interop_write.py test_tools_common.py test_ssbgen.py)
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d /tmp/pg_warp_test.XXXXXX)
chmod 755 "$work"
# PGPORT if given, else a free port
export PGPORT=${PGPORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 54329)}
export PG_WARP_CLUSTER=$work/cluster
export PG_WARP_TOOLS=$root/tools/bin
# the test clusters (cluster.sh) run GpuPreAgg over heap tables on the CPU engine too
export PG_WARP_TEST_CLUSTER=1
passed=0
failed=0
skipped=0
failures=()

note_fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAILED: $1"; }
# stage TITLE: a stage's heading, with the seconds since the start (what to trim when
# the run grows: CI gives it 90 minutes and we keep it under 30)
stage() { echo "== $* [${SECONDS} s]"; }
finish() {
    scripts/cluster.sh stop "$PG_WARP_CLUSTER" >/dev/null 2>&1 || true
    echo
    for f in "${failures[@]+"${failures[@]}"}"; do echo "failed: $f"; done
    # keep the logs and the cluster of a failed run for a look; drop a clean one
    [ "$failed" -eq 0 ] && rm -rf "$work"
    echo "(${SECONDS} s)"
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
    exit $?
}
trap 'note_fail "interrupted"; finish' INT TERM

# run_ctests: the C unit tests of test/c (TAP), each "ok" a pass
run_ctests() {
    local t out rc ok bad
    stage "C unit tests (test/c, ASan + UBSan)"
    if make -j2 -C test/c >"$work/ctest-build.log" 2>&1; then
        for t in test/c/bin/test_*; do
            [ -x "$t" ] || continue
            out=$(cd test/c && "bin/$(basename "$t")" 2>&1); rc=$?
            ok=$(grep -c '^ok ' <<<"$out"); bad=$(grep -c '^not ok ' <<<"$out")
            passed=$((passed + ok))
            grep '^not ok ' <<<"$out" | head -20
            [ "$bad" -gt 0 ] && for _ in $(seq "$bad"); do note_fail "$(basename "$t")"; done
            if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
                tail -20 <<<"$out"; note_fail "$(basename "$t") exited with $rc"
            fi
            echo "$(basename "$t"): $ok passed, $bad failed"
        done
    else
        tail -30 "$work/ctest-build.log"; note_fail "C unit test build"
    fi
}

# run_heapfake: the GPU heap path with the stand-in CUDA driver (test/gpu)
run_heapfake() {
    local out ok bad
    stage "the service's GPU heap path with a stand-in CUDA driver (test/gpu: make heapfake)"
    # no GPU here: test/gpu/fake_cuda.c runs the kernels' work on the host, so that
    # gpu_agg.c, gpu_input.c and heap_chunk.c's GPU path (staging, slots, fallbacks, cancel) run;
    # the real kernels run on a GPU host (make -C test/gpu heapcheck)
    if out=$(make -C test/gpu heapfake 2>&1); then :; fi
    ok=$(grep -c '^ok ' <<<"$out"); bad=$(grep -c '^not ok ' <<<"$out")
    passed=$((passed + ok))
    grep '^not ok ' <<<"$out" | head -20
    [ "$bad" -gt 0 ] && for _ in $(seq "$bad"); do note_fail "heap_gpucheck (fake driver)"; done
    if ! grep -q '^1\.\.[0-9]' <<<"$out" || [ "$ok" -eq 0 ]; then
        tail -20 <<<"$out"; note_fail "heap_gpucheck (fake driver) did not finish"
    fi
    echo "heap_gpucheck (fake driver): $ok passed, $bad failed"
}

# run_scanfake: the GPU Arrow input path (GpuScan's filter, file registration,
# pread fallback, cuFile through a stand-in libcufile) with the stand-in CUDA
# driver, through the service's own tests
run_scanfake() {
    stage "the service's GPU Arrow path with a stand-in CUDA driver (test/gpu: make scanfake)"
    if ! make -s -C test/gpu bin/fake/libcuda.so.1 bin/fake/libcufile.so.0 >"$work/fake.log" 2>&1; then
        tail -20 "$work/fake.log"; note_fail "stand-in CUDA driver and libcufile build"; return
    fi
    local saved=${LD_LIBRARY_PATH:-}
    export PG_WARP_TEST_FAKE_GPU=1 LD_LIBRARY_PATH=$root/test/gpu/bin/fake${saved:+:$saved}
    run_pytest test/python/test_service_scan.py test/python/test_service_join.py \
        test/python/test_service_data_path.py test/python/test_service_direct.py \
        test/python/test_service_read_ahead.py
    unset PG_WARP_TEST_FAKE_GPU
    if [ -n "$saved" ]; then export LD_LIBRARY_PATH=$saved; else unset LD_LIBRARY_PATH; fi
}

# run_pytest PATHS...: pytest over the paths; its passed, failed and skipped
# (xfailed too) tests are added to the counts
run_pytest() {
    local t f e s
    stage "pytest ($*)"
    # shellcheck disable=SC2086
    python3 -m pytest "$@" -q -p no:cacheprovider --junitxml="$work/pytest.xml" ${PYTEST_ARGS:-} 2>&1 | tail -40
    if [ -f "$work/pytest.xml" ]; then
        read -r t f e s < <(python3 test/python/junit_counts.py "$work/pytest.xml")
        passed=$((passed + t - f - e - s))
        skipped=$((skipped + s))
        for _ in $(seq $((f + e))); do failed=$((failed + 1)); done
        [ $((f + e)) -gt 0 ] && failures+=("pytest: $((f + e)) failed")
        [ "$t" -eq 0 ] && note_fail "pytest ran no test"
    else
        note_fail "pytest did not run"
    fi
}

stage "dependencies"
if [ "$fast" = 1 ]; then
    echo "skipped (--fast)"
elif [ "${PG_WARP_SKIP_DEPS:-0}" != 1 ]; then
    scripts/setup-deps.sh || { note_fail "setup-deps.sh"; finish; }
fi

stage "build (assertions on) and install"
[ "$fast" = 1 ] || make clean >/dev/null 2>&1
# Without a GPU the fatbin only has to compile (for one architecture), never run,
# and no stage before pytest reads it: nvcc (one core for some eight minutes, most
# of a fresh build) then runs beside those stages, and pytest waits for it
# (wait_fatbin).  With a GPU, or with --fast, it is built first, as the tests need it.
archs=()
fatbin_pid=
nvidia-smi -L >/dev/null 2>&1 || archs=(CUDA_ARCHS=90)
if [ "$fast" = 0 ] && [ ${#archs[@]} -gt 0 ] && command -v nvcc >/dev/null 2>&1; then
    { make ASSERT=1 WERROR=1 "${archs[@]}" src/xpu/pg_warp.fatbin &&
      make install-fatbin "${archs[@]}"; } >"$work/fatbin.log" 2>&1 &
    fatbin_pid=$!
    archs+=(NVCC=)
fi
if ! { make -j2 ASSERT=1 WERROR=1 "${archs[@]}" >"$work/build.log" 2>&1 &&
       make install "${archs[@]}" >>"$work/build.log" 2>&1; }; then
    tail -40 "$work/build.log"
    note_fail "build"
    finish
fi
grep -E "warning|nvcc" "$work/build.log" | head -20

# wait_fatbin: the end of the fatbin's build in the background, if one was started
wait_fatbin() {
    [ -n "$fatbin_pid" ] || return 0
    stage "the fatbin (built in the background since the build stage)"
    if wait "$fatbin_pid"; then
        grep -E "warning|nvcc" "$work/fatbin.log" | head -20
    else
        tail -40 "$work/fatbin.log"
        note_fail "build (the fatbin)"
    fi
    fatbin_pid=
}

if [ "$fast" = 1 ]; then
    run_ctests
    run_heapfake
    run_scanfake
    run_pytest "${FAST_PYTEST[@]/#/test/python/}"
    finish
fi

stage "cluster"
if ! cluster_env=$(scripts/cluster.sh start "$PG_WARP_CLUSTER"); then
    note_fail "cluster start"
    finish
fi
eval "$cluster_env"
echo "PostgreSQL $(psql -XAtc 'SHOW server_version') on port $PGPORT, data in $PG_WARP_CLUSTER"

stage "pg_regress (make installcheck: Arrow fixtures written into the test tree first)"
# The server reads the fixtures as the cluster's OS user.  Where that user cannot
# reach the checkout (a clone under /root, mode 700), the suites run from a copy of
# test/ in $work (mode 755), which gets its own fixtures: nothing else is shared.
regress_dir=$root/test
if [ "$(id -u)" -eq 0 ] && ! runuser -u "${PG_WARP_OSUSER:-pgwarp}" -- test -x "$root/test/data"; then
    regress_dir=$work/test
    echo "${PG_WARP_OSUSER:-pgwarp} cannot read $root/test: running the suites from a copy in $regress_dir"
    mkdir -p "$regress_dir"
    cp -a test/sql test/expected test/input test/output "$regress_dir/"
fi
make installcheck REGRESS_DIR="$regress_dir" >"$work/regress.log" 2>&1
grep -E '^(test|     ) |^ok|^not ok|^\s*[a-z_0-9]+\s+\.\.\.' "$work/regress.log" || cat "$work/regress.log"
n_ok=$(grep -cE '\.\.\. ok' "$work/regress.log")
n_bad=$(grep -cE '\.\.\. FAILED' "$work/regress.log")
passed=$((passed + n_ok))
if [ "$n_bad" -gt 0 ] || [ "$n_ok" -eq 0 ]; then
    [ -f "$regress_dir/regression.diffs" ] && head -100 "$regress_dir/regression.diffs"
    [ "$n_bad" -gt 0 ] || n_bad=1
    for _ in $(seq "$n_bad"); do note_fail "pg_regress (see $regress_dir/regression.diffs)"; done
fi

run_ctests
run_heapfake
run_scanfake

stage "fuzzing the Arrow reader (seed corpus replayed, then ${PG_WARP_FUZZ_SECONDS:-60} s; ASan + UBSan)"
if scripts/fuzz.sh "${PG_WARP_FUZZ_SECONDS:-60}" >"$work/fuzz.log" 2>&1; then
    cat "$work/fuzz.log"
    passed=$((passed + 1))
else
    tail -30 "$work/fuzz.log"; note_fail "fuzz (scripts/fuzz.sh)"
fi

wait_fatbin
run_pytest test/python

finish
