#!/usr/bin/env bash
# Builds the offline bundle for GPU hosts without PostgreSQL or package access:
#
#   dist/pg_warp-bundle-<version>-x86_64.tar.gz
#   (.tar.xz with BUNDLE_XZ=1: 28 MB against 43 MB for sm_90 alone, so that a lent GPU host's
#   transfer limit, 64 MiB, also holds a DuckDB wheel of 25 MB for the benchmarks;
#   xz takes some minutes more here)
#
# with PostgreSQL 15 (server, client, pg_regress) from this machine's Debian
# packages, pg_warp built from this checkout (tracked files and untracked files
# that git does not ignore, copied to a temporary build directory, so the
# checkout's own build outputs are left alone), its fatbin and tools, every
# shared library they need that glibc does not provide, the regression suite,
# test/python, and run-tests.sh.  scripts/bundle/README describes the result.
#
# Needs: Debian 12 with postgresql-15 and postgresql-server-dev-15 (pg_config
# on the PATH, or PG_CONFIG), the build dependencies of pg_warp, and nvcc on the
# PATH: a bundle without GPU code is refused unless PG_WARP_ALLOW_CPU_ONLY=1.
# Libraries are found with ldd; the bundle's wrappers (bin/) put its lib/ on
# LD_LIBRARY_PATH, no binary is patched.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

die() { echo "make-bundle: $*" >&2; exit 1; }

[ "$(uname -m)" = x86_64 ] || die "builds x86-64 bundles only (this is $(uname -m))"
pg_config=${PG_CONFIG:-pg_config}
command -v "$pg_config" >/dev/null || die "pg_config not found"
pgbin=$("$pg_config" --bindir)
pglib=$("$pg_config" --pkglibdir)
pgshare=$("$pg_config" --sharedir)
pgversion=$("$pg_config" --version)
[ "$pgbin" = /usr/lib/postgresql/15/bin ] && [ "$pglib" = /usr/lib/postgresql/15/lib ] \
    && [ "$pgshare" = /usr/share/postgresql/15 ] \
    || die "expected Debian's PostgreSQL 15 layout, pg_config says $pgbin $pglib $pgshare"
pg_regress=$pglib/pgxs/src/test/regress/pg_regress
[ -x "$pg_regress" ] || die "no $pg_regress (install postgresql-server-dev-15)"

version=$(sed -n 's/^EXTVERSION *= *//p' Makefile)
[ -n "$version" ] || die "no EXTVERSION in Makefile"
name=pg_warp-bundle-$version-x86_64
work=$(mktemp -d /tmp/pg_warp_bundle.XXXXXX)
trap 'rm -rf "$work"' EXIT
build=$work/build
stage=$work/$name
mkdir -p "$build" "$stage"

echo "== source -> $build"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$src" ls-files -z -co --exclude-standard \
        | (cd "$src" && tar --null -T - -cf -) | tar -xf - -C "$build"
    commit="$(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD -- 2>/dev/null || echo '+changes')"
else
    cp -a "$src/." "$build/"
    make -C "$build" clean >/dev/null 2>&1 || true
    commit=unknown
fi

echo "== build (release, no assertions)"
if ! make -C "$build" -j"$(nproc)" >"$work/build.log" 2>&1; then
    tail -40 "$work/build.log"
    die "build failed"
fi
if [ ! -f "$build/src/xpu/pg_warp.fatbin" ]; then
    [ "${PG_WARP_ALLOW_CPU_ONLY:-0}" = 1 ] \
        || die "no GPU code was built (nvcc not on the PATH?); PG_WARP_ALLOW_CPU_ONLY=1 makes a CPU-only bundle"
    echo "warning: CPU-only bundle (no pg_warp.fatbin)"
fi

echo "== PostgreSQL from $pgbin, $pglib, $pgshare"
mkdir -p "$stage$pgbin" "$stage$pglib" "$stage$pgshare"
cp -a "$pgbin/." "$stage$pgbin/"
cp "$pg_regress" "$stage$pgbin/pg_regress"
# server modules: all but JIT (LLVM is large and optional) and any pg_warp
# already installed on this machine; static libraries, PGXS and bitcode are
# for building, not running
for so in "$pglib"/*.so; do
    base=$(basename "$so")
    case "$base" in
        llvmjit.so|pg_warp*) continue ;;
    esac
    if ldd "$so" | grep -q 'not found'; then
        echo "skipped $base (a library it needs is not installed here)"
        continue
    fi
    cp -a "$so" "$stage$pglib/"
done
# share: all but the manual pages and any installed pg_warp
(cd "$pgshare" && tar --exclude=./man --exclude='./extension/pg_warp*' -cf - .) \
    | tar -xf - -C "$stage$pgshare"

echo "== pg_warp"
make -C "$build" install DESTDIR="$stage" >>"$work/build.log" 2>&1 \
    || { tail -20 "$work/build.log"; die "make install failed"; }
rm -rf "$stage$pglib/bitcode"

echo "== shared libraries"
# glibc's own libraries come from the host (the bundle needs glibc >= this one's)
glibc_re='^(libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale|libthread_db|libnss_[a-z0-9_]+|libc_malloc_debug|libmemusage|libpcprofile|libSegFault|ld-linux-x86-64|linux-vdso)\.so'
mkdir -p "$stage/lib"
# stage_elfs: the ELF files under the stage, into the array elfs
stage_elfs() {
    elfs=()
    while IFS= read -r -d '' f; do
        [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && elfs+=("$f")
    done < <(find "$stage" -type f -print0)
    return 0
}
stage_elfs
for f in "${elfs[@]}"; do
    ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r soname path; do
    [[ "$soname" =~ $glibc_re ]] && continue
    [ -e "$stage/lib/$soname" ] || cp -L "$path" "$stage/lib/$soname"
done
# every ELF file must now resolve every library from the bundle or glibc
missing=0
for f in "${elfs[@]}"; do
    if LD_LIBRARY_PATH=$stage/lib ldd "$f" 2>&1 | grep -q 'not found'; then
        echo "unresolved libraries in ${f#$stage/}:"
        LD_LIBRARY_PATH=$stage/lib ldd "$f" | grep 'not found'
        missing=1
    fi
    # and nothing but glibc from the system
    LD_LIBRARY_PATH=$stage/lib ldd "$f" 2>/dev/null \
        | awk -v top="$stage/lib/" '$2 == "=>" && $3 ~ /^\// && index($3, top) != 1 { print $1 }' \
        | while read -r soname; do
            [[ "$soname" =~ $glibc_re ]] || { echo "${f#$stage/} uses the system's $soname"; exit 1; }
        done || missing=1
done
[ "$missing" = 0 ] || die "library check failed"

echo "== wrappers, tests, scripts"
mkdir -p "$stage/bin"
install -m 755 scripts/bundle/pg-warp-exec scripts/bundle/pg-warp-env "$stage/bin/"
for p in "$stage$pgbin"/*; do
    [ -x "$p" ] && [ -f "$p" ] && ln -s pg-warp-exec "$stage/bin/$(basename "$p")"
done
install -m 755 scripts/bundle/run-tests.sh "$stage/run-tests.sh"
install -m 644 scripts/bundle/README "$stage/README"
install -m 644 LICENSE "$stage/LICENSE"
mkdir -p "$stage/test" "$stage/scripts"
for d in sql expected input output data python; do
    [ -d "$build/test/$d" ] && cp -a "$build/test/$d" "$stage/test/"
done
rm -rf "$stage/test/python/__pycache__"
# the SSB generator's tests and the SSB queries' suite load with the kit in the
# source tree (bench/ssb); on a GPU host bench/gpu-host.sh ssb-engine runs the 13
# queries and checks every answer against PostgreSQL's
rm -f "$stage/test/python/test_ssbgen.py" "$stage/test/python/test_ssb_engine.py"
# the layout test reads src/ and the Makefiles, which the bundle does not ship
rm -f "$stage/test/python/test_layout.py"
# files written by Polars and DuckDB: GPU hosts without package access lack both (CI runs it)
rm -f "$stage/test/python/test_modern_writers.py"
# the xPU interpreter's PostgreSQL-oracle harness (test_xpu_oracle.py) and, with GPU
# code, its GPU check (run-tests.sh runs it where there is a GPU)
make -C "$build/test/c" bin/xpu_harness bin/agg_client bin/scan_client >>"$work/build.log" 2>&1 \
    || die "building test/c/bin/xpu_harness, agg_client and scan_client failed"
mkdir -p "$stage/test/c/bin"
install -m 755 "$build/test/c/bin/xpu_harness" "$stage/test/c/bin/"
# the AGG_RUN client of test_service_agg.py
install -m 755 "$build/test/c/bin/agg_client" "$stage/test/c/bin/"
install -m 755 "$build/test/c/bin/scan_client" "$stage/test/c/bin/"
if [ -f "$build/src/xpu/pg_warp.fatbin" ]; then
    make -C "$build/test/gpu" bin/xpu_gpu_check bin/xpu_join_check \
        GPU_ARCH="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]" \
        >>"$work/build.log" 2>&1 || die "building test/gpu/bin/xpu_gpu_check and xpu_join_check failed"
    # the GPU runner against host references (GROUP BY over Arrow batches, heap
    # chunks): plain C programs that load the bundle's fatbin
    make -C "$build/test/gpu" bin/gpu_aggcheck bin/heap_gpucheck >>"$work/build.log" 2>&1 \
        || die "building test/gpu/bin/gpu_aggcheck and heap_gpucheck failed"
    mkdir -p "$stage/test/gpu/bin"
    install -m 755 "$build/test/gpu/bin/xpu_gpu_check" "$build/test/gpu/bin/xpu_join_check" \
        "$build/test/gpu/bin/gpu_aggcheck" "$build/test/gpu/bin/heap_gpucheck" "$stage/test/gpu/bin/"
fi
# the stand-in CUDA driver of test_gpu_fault.py (a GPU fault on demand)
make -C "$build/test/gpu" bin/fake/libcuda.so.1 >>"$work/build.log" 2>&1 \
    || die "building test/gpu/bin/fake/libcuda.so.1 failed"
mkdir -p "$stage/test/gpu/bin/fake"
install -m 755 "$build/test/gpu/bin/fake/libcuda.so.1" "$stage/test/gpu/bin/fake/"
# test/python starts its own clusters with scripts/cluster.sh
[ -f "$build/scripts/cluster.sh" ] && install -m 755 "$build/scripts/cluster.sh" "$stage/scripts/"

{
    echo "pg_warp $version, commit $commit, built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "$pgversion ($(dpkg-query -W -f='${Package} ${Version}' postgresql-15 2>/dev/null || echo 'package unknown'))"
    if [ -f "$build/src/xpu/pg_warp.fatbin" ]; then
        echo "GPU code: sm_80, sm_90, compute_90 PTX; $(nvcc --version | tail -2 | head -1)"
    else
        echo "GPU code: none (CPU-only bundle)"
    fi
    echo "tools: $(cd "$build/tools/bin" 2>/dev/null && find . -maxdepth 1 -type f -perm -u+x -printf '%f ' || true)"
    echo "libraries: $(cd "$stage/lib" && ls | tr '\n' ' ')"
} >"$stage/BUILDINFO"

echo "== debug sections stripped (the symbol tables stay: test_symbols.py reads them)"
stage_elfs
for f in "${elfs[@]}"; do
    strip --strip-debug "$f" 2>/dev/null || true
done

echo "== archive"
mkdir -p "$src/dist"
if [ "${BUNDLE_XZ:-0}" = 1 ]; then
    out=$src/dist/$name.tar.xz
    compress=(xz -9 -T0)
else
    out=$src/dist/$name.tar.gz
    compress=(gzip -9)
fi
tar -C "$work" --owner=0 --group=0 --numeric-owner -cf - "$name" | "${compress[@]}" >"$out.tmp"
mv "$out.tmp" "$out"
echo "$out: $(du -h "$out" | cut -f1) ($(du -sh "$stage" | cut -f1) unpacked)"
