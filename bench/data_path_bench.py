#!/usr/bin/env python3
"""Storage to GPU: the raw limits beside pg_warp's first, cold and warm runs (a benchmark, not a test).

Issue 30, item 9.  One run on one host:

1. The raw limits, bench/data_paths on the same lineorder Arrow file (built
   when missing): the disk's O_DIRECT read rate (the cold-file limit), the
   pinned and pageable host-to-GPU copy rates (the bus), and the candidate
   ways a page-cached file reaches GPU memory (pread into pinned buffers as
   the service does today, a registered read-only mapping of the file, its
   pipelined first touch, cuFile in GDS or compatibility mode), right after
   a restart (--restart-cmd: no server process holding the file mapped); and
   KvikIO reading it into GPU memory where kvikio imports.  See
   bench/results/README.md, "Storage to GPU", for what each way measures.

2. pg_warp on the flat queries of bench/engine_bench.py (Q1-Q4) and SSB
   Q1.1-Q1.3, on lineorder as an arrow_fdw table over the Arrow file and as
   the heap table, per side (--sides, by these names):

     heap           PostgreSQL, heap tables, N parallel workers (pg_warp.enabled
                    off): the reference answers, and its best time
     warp_gpu       pg_warp GPU on Arrow (skipped, with a line saying so, when the
                    service has no GPU)
     warp_gpu_heap  pg_warp GPU on the heap table (likewise)
     warp_cpu, warp_cpu_heap
                    the CPU engine on Arrow / heap (not by default: what runs on a
                    machine without a GPU)
     duckdb         DuckDB (python package duckdb), N threads, native tables: the
                    Arrow file's lineorder columns, date1 from PostgreSQL

   Each pg_warp side is timed these ways per query:
     first  the GPU column cache emptied (--restart-cmd: the cluster restarted,
            which restarts the service), the source's files in the page cache
            (read through once: the Arrow file, or the heap table's segment files)
     pinned (GPU sides) a first run of the same service with the source's file
            pages registered: files read through, the GPU column cache emptied
            with pgwarp.gpu_cache_drop() (registrations kept), one unmeasured
            run (it queues the pages not registered yet), the wait until the
            service has registered them all, the cache emptied again
     cold   the same, the source's files evicted from the page cache first
            (bench/data_paths -E: posix_fadvise DONTNEED, checked with mincore)
     warm   the best of R runs after one unmeasured run (the GPU column cache
            holding the query's columns or units)
   The first and cold runs (not the pinned ones) are the first query on lineorder of a new session
   that has only asked the service whether it is up (as bench/ssb_engine_bench.py's
   first runs).  Every
   answer, first, cold and warm, must equal PostgreSQL heap's (floats within
   1e-9 relative); a pg_warp side counts only where EXPLAIN ANALYZE shows
   GpuPreAgg on the asked engine.

   The bytes each query references: EXPLAIN ANALYZE's Bytes Read + Bytes From
   GPU Cache of the engine (after the warm-up: the same bytes, wherever they
   came from), else the Arrow file's metadata (Arrow) or the heap table's size.
   Every figure of the GpuPreAgg node that names bytes, pages, paths, rates or
   I/O is kept in the JSON (the data path the engine reports).

3. Rates: referenced bytes / seconds for each run, and each as a share of its
   limit measured in step 1: a first run against the pinned copy rate (issue
   30 item 1's goal: 80 %), a cold run against the O_DIRECT rate (item 3's
   goal: 80 %), a heap first run against PostgreSQL heap (item 4's goal:
   3x faster); the geometric mean of first runs against DuckDB's.  Item 1
   is shown two ways: the referenced bytes over the first run's whole time
   (planning, setup, the GPU's work and the answer's return included), and
   the files' rate over the engine's I/O Time from one more first run of
   pg_warp GPU on Arrow under EXPLAIN ANALYZE (the bytes read from the page
   cache into the GPU over the time the service spent reading them and
   queueing their copies: the transfer alone).  pg_warp GPU on heap gets
   such a first run under EXPLAIN ANALYZE too; each shows its planning and
   execution times and its data-path figures (units read, I/O Time).

4. Variants, as asked: pg_warp GPU on Arrow again with other server settings
   (ALTER SYSTEM before its restarts, put back at the end), beside its runs
   with the defaults: --cufile-lib (pg_warp.gpudirect = on: first and cold
   runs and a first-run EXPLAIN), --unregistered (pg_warp.pinned_files_size
   = 0: the first runs without the file's pages registered in the
   background while they read, and their EXPLAIN), --restored
   (pg_warp.pinned_files_restore = on: the first runs after a restart with
   the file's registrations of the runs before restored as the service
   starts, and their EXPLAIN; before each restart the registering of the
   runs before is waited for, and after it the registering of what was
   restored, as on a server that has been up for a while; with
   pg_warp.arrow_metadata_prewarm on too, the file's metadata laid out again
   at the start).  Every other first and cold run has both off (ALTER
   SYSTEM, put back at the end): a file the service has not registered yet,
   as a new file is (its metadata image, kept in the data directory, is
   still read by the first session).

Results: bench/results/data_path_<tag>.json and .png.  Without --restart-cmd
first runs are reported as not measured (the cache cannot be emptied); the
sides that cannot run are reported as unavailable, and the run goes on.

    make -C bench data_paths
    bench/data_path_bench.py -d ssb -a /tmp/ssb/lineorder.arrow -w 2 -r 3 \\
        --restart-cmd 'scripts/cluster.sh stop DIR && scripts/cluster.sh start DIR' \\
        --sides heap,warp_gpu,warp_gpu_heap,warp_cpu,warp_cpu_heap,duckdb

The database holds SSB (bench/ssb/load.sh) with pg_warp; the Arrow file is
lineorder exported with statistics (pg2arrow -t lineorder -S).  Reading the
heap table's files (to put them in the page cache or evict them) needs read
access to the data directory (root, or the server's OS user); without it the
heap sides' page cache state is reported as not controlled.  bench/gpu-host.sh
datapath runs all of this on the GPU host.
"""
import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import time

from bench_sides import (LABELS, DuckSide, PgSide, add_common_args, check, check_common_args, entry,
                         find_tool, geomean, measured_runs, open_data, open_sides, psql_rows, psql_script,
                         result_head, summarise, time_of, walk, warm_up_all, write_results)
from canvas import Canvas
from engine_bench import QUERIES as FLAT_QUERIES
from ssb_engine_bench import load_queries, read_through, wait_for_service

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "data_path_bench"
SSB_QUERIES = ["q1.1", "q1.2", "q1.3"]
SIDES = ["heap", "warp_gpu", "warp_gpu_heap", "warp_cpu", "warp_cpu_heap", "duckdb"]
DEFAULT_SIDES = ["heap", "warp_gpu", "warp_gpu_heap", "duckdb"]
WARP_SIDES = ["warp_gpu", "warp_gpu_heap", "warp_cpu", "warp_cpu_heap"]
HEAP_SOURCE = {"warp_gpu": False, "warp_cpu": False, "warp_gpu_heap": True, "warp_cpu_heap": True}
MODES = ["first", "pinned", "cold", "warm"]
PINNED_SIDES = ["warp_gpu", "warp_gpu_heap"]    # the sides whose runs copy file pages to a GPU
# the GpuPreAgg figures that describe the data path (kept whole in the JSON)
PATH_KEY = re.compile(r"Bytes|Pages|Path|Rate|I/O|GPU Cache|Direct|Regist|cuFile|GDS|Units|Read")
# the limits of data_paths that runs are set against, and the candidates shown beside them
LIMIT_WAYS = ["odirect", "pinned", "pageable", "pread", "cold-pread", "pread-pinned", "register",
              "registered-copy", "register-copy", "cufile"]
# the ways measured again at other slice sizes (a slice: one pread, one copy)
SWEEP_WAYS = "pinned,pread-pinned,registered-copy"
GOAL_SHARE = 0.8
HEAP_FIRST_GOAL = 3.0
for _s in WARP_SIDES:
    LABELS.setdefault(_s + "_first", LABELS[_s] + ", first run")
    LABELS.setdefault(_s + "_cold", LABELS[_s] + ", cold run")
    LABELS.setdefault(_s + "_pinned", LABELS[_s] + ", first run, file pages registered")
for _m in ("first", "cold", "explain"):
    LABELS.setdefault("warp_gpu_cufile_" + _m, "pg_warp GPU on Arrow with cuFile, %s run" % _m)
    LABELS.setdefault("warp_gpu_unreg_" + _m, "pg_warp GPU on Arrow, no pages registered, %s run" % _m)


# ---------------------------------------------------------------- the raw limits

def run_data_paths(args, dp, slice_mib, ways=None):
    """One data_paths run over the Arrow file (ways: a -w list, None all):
    its JSON with ways by name and the exit status said, or why not."""
    cmd = [dp, args.arrow, "-t", str(args.io_threads), "-s", str(slice_mib), "-S",
           str(args.streams)] + (["-w", ways] if ways else []) + \
        (args.data_paths_args.split() if args.data_paths_args else [])
    print("data_paths: %s" % " ".join(cmd), flush=True)
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd="/tmp")
    print(r.stderr.rstrip())
    try:
        out = json.loads(r.stdout)
    except ValueError:
        return {"status": "failed", "exit": r.returncode, "command": " ".join(cmd),
                "why": (r.stderr.strip() or "no JSON")[-500:]}
    out.update(status={0: "ok", 3: "no GPU here: GPU ways unavailable", 1: "a way failed"}.get(
        r.returncode, "exit %d" % r.returncode), exit=r.returncode, command=" ".join(cmd),
        seconds=round(time.time() - t0, 1))
    out["by_way"] = {w["way"]: w for w in out["ways"]}
    return out


def raw_limits(args, dp):
    """Every way of data_paths at --slice-mib, then (with a GPU) the ways
    whose rate depends on the slice size at each of --sweep-slices: the
    first run's JSON, the sweep under "slice_sweep" (GB/s per slice and way)."""
    out = run_data_paths(args, dp, args.slice_mib)
    if not out.get("device"):
        return out
    sweep = {}
    for mib in [int(x) for x in args.sweep_slices.split(",") if x.strip()]:
        if mib == args.slice_mib:
            continue
        o = run_data_paths(args, dp, mib, SWEEP_WAYS)
        sweep[mib] = {w: (o["by_way"][w]["gb_per_s"] if o.get("by_way", {}).get(w, {}).get("status") == "ok"
                          else o.get("by_way", {}).get(w, {}).get("why") or o.get("why"))
                      for w in SWEEP_WAYS.split(",")}
    sweep[args.slice_mib] = {w: out["by_way"].get(w, {}).get("gb_per_s") for w in SWEEP_WAYS.split(",")}
    out["slice_sweep"] = sweep
    return out


def limit_rate(limits, way):
    """(bytes/s, None) of a way data_paths measured (or KvikIO's, as
    kvikio-warm and kvikio-cold), or (None, why not)."""
    if way.startswith("kvikio-"):
        k = limits.get("kvikio", {})
        m = k.get(way[len("kvikio-"):], {})
        return (m["bytes"] / m["seconds"], None) if "gb_per_s" in m else \
            (None, "KvikIO: %s" % (m.get("why") or k.get("why") or "not run"))
    w = limits.get("by_way", {}).get(way)
    if w is None:
        return None, "data_paths %s: %s" % (way, limits.get("why") or "not run")
    if w["status"] != "ok":
        return None, "data_paths %s: %s (%s)" % (way, w["status"], w.get("why"))
    return w["bytes"] / w["seconds"], None


# ---------------------------------------------------------------- KvikIO, the peer

class DeviceBuffer:
    """n bytes of GPU memory from the CUDA driver (ctypes), in device 0's
    primary context made current, described by __cuda_array_interface__"""

    def __init__(self, n):
        import ctypes
        cu = self.cu = ctypes.CDLL("libcuda.so.1")
        dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
        for call, *a in (("cuInit", 0), ("cuDeviceGet", ctypes.byref(dev), 0),
                         ("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev),
                         ("cuCtxSetCurrent", ctx),
                         ("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(n))):
            rc = getattr(cu, call)(*a)
            if rc != 0:
                raise RuntimeError("%s: CUDA error %d" % (call, rc))
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (ptr.value, False),
                                         "version": 3, "strides": None}

    def synchronize(self):
        self.cu.cuCtxSynchronize()


def kvikio_probe(path, threads, cap):
    """In a child process (--kvikio-probe): KvikIO reads the first cap bytes
    of path into GPU memory (cuMemAlloc through ctypes, handed to KvikIO by
    its __cuda_array_interface__: no CuPy needed), once as the page cache
    holds it and once evicted first by the parent (see kvikio_rates); prints
    one JSON object: version, mode (GDS or compatibility, as KvikIO reports
    it), seconds, bytes."""
    import kvikio
    import kvikio.defaults as kd
    if hasattr(kd, "set"):
        kd.set({"num_threads": threads})
    else:
        kd.num_threads_reset(threads)
    compat = kd.get("compat_mode") if hasattr(kd, "get") else kd.compat_mode()
    gds = None
    try:
        import kvikio.cufile_driver as cd
        gds = bool(cd.get("is_gds_available"))
    except Exception:           # older KvikIO: no such property
        pass
    n = min(os.path.getsize(path), cap)
    buf = DeviceBuffer(n)
    t0 = time.perf_counter()
    with kvikio.CuFile(path, "r") as f:
        got = f.read(buf)
    buf.synchronize()
    secs = time.perf_counter() - t0
    print(json.dumps({"version": getattr(kvikio, "__version__", None), "compat_mode": str(compat),
                      "gds_available": gds, "seconds": secs, "bytes": int(got), "threads": threads}))


def kvikio_rates(args, dp):
    """KvikIO beside data_paths: its read of the Arrow file into GPU memory,
    warm (read through first) and cold (evicted first), each in a child
    process; {"warm": ..., "cold": ...} or {"status": "unavailable", ...}."""
    try:
        importlib.import_module("kvikio")
    except Exception as e:     # ImportError, or a library that fails to load
        return {"status": "unavailable", "why": "the python package kvikio is needed (pip wheels "
                "kvikio-cu13, libkvikio-cu13, rapids-logger, cuda-pathfinder; on the GPU host "
                "through WHEELS): %s" % e}
    out = {"status": "ok"}
    for mode in ("warm", "cold"):
        if mode == "warm":
            read_through(args.arrow)
        else:
            left, why = evict(dp, [args.arrow])
            out["cold_resident_after_evict"] = left if why is None else why
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--kvikio-probe", args.arrow,
                            str(args.io_threads)], capture_output=True, text=True, timeout=600)
        try:
            o = json.loads(r.stdout.strip().split("\n")[-1])
            o["gb_per_s"] = o["bytes"] / o["seconds"] / 1e9
            out[mode] = o
            print("kvikio %s: %.3f s, %.2f GB/s, compat_mode %s, GDS available %s" % (
                mode, o["seconds"], o["gb_per_s"], o["compat_mode"], o["gds_available"]), flush=True)
        except (ValueError, IndexError, KeyError, ZeroDivisionError):
            out[mode] = {"status": "failed", "why": (r.stderr.strip() or "no output")[-500:]}
            print("kvikio %s failed: %s" % (mode, out[mode]["why"][-200:]), flush=True)
    return out


# ---------------------------------------------------------------- the sources' files

def heap_files(args):
    """The heap lineorder's segment files (main fork), or ([], why not)."""
    out = psql_script(args.dbname, "SELECT current_setting('data_directory'), "
                      "pg_relation_filepath('public.lineorder');").strip()
    datadir, rel = out.split("|")
    base = os.path.join(datadir, rel)
    files, i = [], 0
    while True:
        p = base if i == 0 else "%s.%d" % (base, i)
        if not os.path.exists(p):
            break
        files.append(p)
        i += 1
    if not files:
        return [], "the heap table's files (%s) cannot be seen from here" % base
    if not os.access(files[0], os.R_OK):
        return [], "the heap table's files (%s) are not readable by this user" % base
    return files, None


def evict(dp, files):
    """Evicts the files from the page cache (data_paths -E); (the share of
    their bytes still cached, None) or (None, why not)."""
    total, left = 0, 0.0
    for f in files:
        r = subprocess.run([dp, "-E", f], capture_output=True, text=True)
        if r.returncode != 0:
            return None, "data_paths -E %s: %s" % (f, r.stderr.strip())
        o = json.loads(r.stdout)
        if o["resident_after"] < 0:
            return None, "mincore failed on %s" % f
        total += o["bytes"]
        left += o["bytes"] * o["resident_after"]
    return (left / total if total else 0.0), None


# ---------------------------------------------------------------- first and cold runs

def restart(args, runners, runner, engine):
    """Runs --restart-cmd (the GPU column cache emptied), then waits for the
    service (through runner); None, or why it failed.  Every PostgreSQL
    side's session is closed first (the restart ends them)."""
    for r in runners.values():
        if isinstance(r, PgSide):
            r.close()
    r = subprocess.run(args.restart_cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        return "--restart-cmd failed: %s" % r.stderr.strip()[-300:]
    why = wait_for_service(runner, engine)
    return "after --restart-cmd: %s" % why if why else None


def before_run(args, runners, runner, engine, dp, e, mode, files):
    """A first or cold run's start: the restart (--restart-cmd, every
    session of runners closed; then runner's service awaited), and the
    source's files (files: (paths, why not)) read through (first) or
    evicted (cold), said in e; False (e failed) when the restart failed."""
    src_files, src_why = files
    why = restart(args, runners, runner, engine)
    if why:
        e.update(status="failed", note=why)
        return False
    if src_why:
        e["page_cache"] = "not controlled: %s" % src_why
    elif mode == "first":
        secs = sum(read_through(f) for f in src_files)
        e["page_cache"] = "read through once first (%.2f s)" % secs
    else:
        left, why = evict(dp, src_files)
        e["page_cache"] = "evicted first: %s" % (
            "held (%.1f%% still cached)" % (100 * left) if left is not None and left <= 0.01
            else "did NOT hold (%.1f%% still cached)" % (100 * left) if left is not None
            else why)
        e["resident_after_evict"] = left
    return True


def registered(runner, timeout=300):
    """Waits until the service has nothing queued to be registered; (the
    bytes of file pages registered, None), or (None, why not)"""
    deadline = time.time() + timeout
    while True:
        rows, _, err = runner.run("SELECT pinned_file_bytes, pinned_file_bytes_queued "
                                  "FROM pgwarp.service_status()")
        if err or not rows:
            return None, err or "pgwarp.service_status() returned no row"
        pinned, queued = (int(x) for x in rows[-1].split("|"))
        if queued == 0:
            return pinned, None
        if time.time() > deadline:
            return None, "%d bytes still queued to be registered after %d s" % (queued, timeout)
        time.sleep(0.2)


def before_pinned(runner, sql, e, src_files):
    """A pinned run's start (the same service): the source's files read
    through, the GPU column cache emptied, one unmeasured run, the wait
    until nothing is queued to be registered, the cache emptied again, said
    in e; False (e failed) when a step failed."""
    def fail(why):
        e.update(status="failed", note=why)
        return False
    secs = sum(read_through(f) for f in src_files)
    for step in ("drop", "run", "wait", "drop"):
        if step == "drop":
            _, _, err = runner.run("SELECT pgwarp.gpu_cache_drop()")
        elif step == "run":
            _, _, err = runner.run(sql)
        else:
            pinned, err = registered(runner)
        if err:
            return fail("%s before the pinned run: %s" % (step, err))
    if pinned == 0:
        return fail("nothing registered (pg_warp.pinned_files_size 0, or the driver refused)")
    e["page_cache"] = "read through once first (%.2f s), %.2f GB registered, GPU cache emptied" % (
        secs, pinned / 1e9)
    return True


def timed_run(runner, sql, e, label):
    """One run of sql, its time into e; its rows, or None (e failed)"""
    rows, secs, err = runner.run(sql)
    if err or secs is None:
        e.update(status="failed", note=err or "psql printed no timing")
        print("  %s failed: %s" % (label, e["note"]), flush=True)
        return None
    e["runs_s"].append(secs)
    print("  %s: %.3f s (%s)" % (label, secs, e["page_cache"]), flush=True)
    return psql_rows(rows)


def first_and_cold(args, queries, runners, res, files, dp, engine):
    """Per query and pg_warp side: the first run (files in the page cache) and
    the cold run (files evicted), each right after a restart.  Answers are
    kept for checking once the reference is known."""
    answers = {}
    for q, sql, *_ in queries:
        for side in WARP_SIDES:
            if side not in runners:
                continue
            for mode in ("first", "cold", "pinned"):
                e = res[q][side + "_" + mode] = entry("ok")
                if mode == "pinned" and side not in PINNED_SIDES:
                    e.update(status="not measured", note="the CPU engine copies no file pages to a GPU")
                    continue
                if mode == "pinned":
                    src_files, src_why = files[HEAP_SOURCE[side]]
                    if src_why:
                        e.update(status="not measured", note=src_why)
                        continue
                    if not before_pinned(runners[side], sql, e, src_files):
                        print("  %s %s pinned run: %s" % (q, side, e["note"]), flush=True)
                        continue
                elif not args.restart_cmd:
                    e.update(status="not measured", note="no --restart-cmd: the GPU column cache "
                             "cannot be emptied")
                    continue
                elif not before_run(args, runners, runners[side], engine, dp, e, mode,
                                    files[HEAP_SOURCE[side]]):
                    continue
                rows = timed_run(runners[side], sql, e, "%s %s %s run" % (q, side, mode))
                if rows is not None:
                    answers[(q, side, mode)] = rows
    return answers


def first_explains(args, queries, runners, res, files, dp, engine):
    """pg_warp GPU on Arrow and on heap: per query one more first run
    (restart, the files read through) under EXPLAIN ANALYZE; its figures
    kept in res[q][side + "_first_explain"] (on Arrow, the files' rate over
    I/O Time; on heap, where the run's time went: the units the service
    read, its I/O Time)"""
    if not args.restart_cmd:
        return
    for q, sql, *_ in queries:
        for side in PINNED_SIDES:
            if side not in runners:
                continue
            e = res[q][side + "_first_explain"] = entry("ok")
            if not before_run(args, runners, runners[side], engine, dp, e, "first",
                              files[HEAP_SOURCE[side]]):
                continue
            err = explain_into(e, runners[side], sql)
            print("  %s %s first-run EXPLAIN: %s" % (
                q, side, err or "planning %s ms, execution %s ms%s" % (
                    e["planning_ms"], e["execution_ms"], "; files at %s GB/s of I/O Time" %
                    e["file_read_rate"] if e["file_read_rate"] else "")), flush=True)


def explain_into(e, runner, sql):
    """One EXPLAIN ANALYZE of sql: its data-path figures into e["data_path"]
    and the files' rate over I/O Time into e["file_read_rate"] (the
    leader's: the run's, where gpa_figures sums the workers' figures);
    returns the error, or None"""
    rows, _, err = runner.run("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
    e["data_path"] = {} if err else gpa_figures(rows)
    e["file_read_rate"] = None if err else gpa_figures(rows, leader_only=True).get(
        "File Read Rate")
    if not err:
        # where a first run's time goes: planning (a new backend's first query
        # lays out the file's metadata) against execution
        top = json.loads("\n".join(rows))[0]
        e["planning_ms"] = top.get("Planning Time")
        e["execution_ms"] = top.get("Execution Time")
    return err


def first_file_rate(res, q):
    """The files' rate over I/O Time (bytes/s) of pg_warp GPU on Arrow's
    first-run EXPLAIN (EXPLAIN's File Read Rate, GB/s), or None"""
    rate = res[q].get("warp_gpu_first_explain", {}).get("file_read_rate")
    return rate * 1e9 if rate else None


def gpa_figures(rows, leader_only=False):
    """The data-path figures (PATH_KEY) of the GpuPreAgg node of an EXPLAIN
    (ANALYZE, FORMAT JSON)'s rows, its workers' summed (leader_only: the
    node's own); {} when none"""
    try:
        nodes = walk(json.loads("\n".join(rows))[0]["Plan"], [])
    except (ValueError, KeyError, IndexError):
        return {}               # a notice among the rows: no figures, the run goes on
    gpa = [n for n in nodes if n.get("Custom Plan Provider") == "GpuPreAgg"]
    figs = {}
    for part in gpa[:1] + (gpa[0].get("Workers", []) if gpa and not leader_only else []):
        for k, v in part.items():
            if PATH_KEY.search(k) and isinstance(v, (int, float, str)) and k != "Output":
                if isinstance(v, (int, float)) and isinstance(figs.get(k), (int, float)) \
                        and part is not gpa[0]:
                    figs[k] += v
                else:
                    figs.setdefault(k, v)
    return figs


RESTORE = "pg_warp.pinned_files_restore"
PREWARM = "pg_warp.arrow_metadata_prewarm"
# what a restart keeps of the files used before it: their registrations,
# their record batches' metadata laid out again (off for the first and cold
# runs, on for --restored)
KEPT_ACROSS = (RESTORE, PREWARM)


def variants(args):
    """pg_warp GPU on Arrow again with other server settings, as asked:
    [(name, label, {setting: value}, modes)]; each a side warp_gpu_<name>"""
    v = []
    if args.cufile_lib:
        v.append(("cufile", "pg_warp.gpudirect = on (cuFile)",
                  {"pg_warp.gpudirect": "on", "pg_warp.cufile_library": args.cufile_lib},
                  ("first", "cold", "explain")))
    if args.restored:
        v.append(("restored", "pg_warp.pinned_files_restore and pg_warp.arrow_metadata_prewarm = on "
                  "(the file's registrations and metadata kept across the restart; registering "
                  "finished before it and after it)",
                  {k: "on" for k in KEPT_ACROSS}, ("first", "explain")))
    if args.unregistered:
        v.append(("unreg", "pg_warp.pinned_files_size = 0 (no file pages registered)",
                  {"pg_warp.pinned_files_size": "0"}, ("first", "explain")))
    return v


def auto_conf(args, names):
    """{name: value} of those settings that postgresql.auto.conf (ALTER
    SYSTEM) holds now"""
    out = psql_script(args.dbname, "SELECT name || '=' || setting FROM pg_file_settings "
                      "WHERE sourcefile LIKE '%%postgresql.auto.conf' AND name IN (%s);"
                      % ", ".join("'%s'" % n for n in names))
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def alter_system(args, settings, before=None):
    """ALTER SYSTEM SET each of settings; with before (auto_conf's, taken
    earlier): each set back to it, or reset where it held none"""
    quote = lambda v: "'%s'" % str(v).replace("'", "''")
    if before is None:
        script = " ".join("ALTER SYSTEM SET %s = %s;" % (k, quote(v)) for k, v in settings.items())
    else:
        script = " ".join("ALTER SYSTEM SET %s = %s;" % (k, quote(before[k])) if k in before
                          else "ALTER SYSTEM RESET %s;" % k for k in settings)
    psql_script(args.dbname, script)


def variant_runs(args, queries, runners, res, dp, engine, variant):
    """One of variants(): pg_warp GPU on Arrow with its settings (ALTER
    SYSTEM, put back at the end), per query its modes of: a first and a cold
    run as first_and_cold's, and one EXPLAIN ANALYZE after a restart with the
    file in the page cache (its data path: the bytes read each way, the
    files' rate over I/O Time)"""
    name, label, settings, modes = variant
    side = "warp_gpu_" + name
    answers = {}
    runner = PgSide("warp_gpu", args, SCHEMA)
    every = dict(runners, **{side: runner})
    before = auto_conf(args, list(settings))
    alter_system(args, settings)
    try:
        for q, sql, *_ in queries:
            for mode in modes:
                e = res[q][side + "_" + mode] = entry("ok")
                if name == "restored":
                    # the service's list holds what it had registered when it
                    # stopped: the registering of the runs before finished
                    _, why = registered(runner)
                    if why:
                        e.update(status="failed", note="before the restart: %s" % why)
                        continue
                if not before_run(args, every, runner, engine, dp, e,
                                  "cold" if mode == "cold" else "first", ([args.arrow], None)):
                    continue
                if name == "restored":
                    # and the restored regions registered again before the run
                    pinned, why = registered(runner)
                    if why:
                        e.update(status="failed", note="after the restart: %s" % why)
                        continue
                    e["page_cache"] += ", %.2f GB registered after the restart" % (pinned / 1e9)
                if mode == "explain":
                    err = explain_into(e, runner, sql)
                    print("  %s %s EXPLAIN: %s" % (q, name, e["data_path"] or err), flush=True)
                    continue
                rows = timed_run(runner, sql, e, "%s %s %s run" % (q, name, mode))
                if rows is not None:
                    answers[(q, side, mode)] = rows
    finally:
        runner.close()
        alter_system(args, settings, before)
    return answers


def variant_report(queries, res, table, limits, variant):
    """A variant's lines (variant_runs), each beside pg_warp GPU on Arrow's
    own run and its limit"""
    name, label, _, modes = variant
    side = "warp_gpu_" + name
    pinned, _ = limit_rate(limits, "pinned")
    odirect, _ = limit_rate(limits, "odirect")
    print("\npg_warp GPU on Arrow with %s, against the defaults:" % label)
    for q, *_ in queries:
        nbytes = table.get(q, {}).get("warp_gpu", {}).get("referenced_bytes")
        for mode, limit, lname in (("first", pinned, "pinned copy"), ("cold", odirect, "O_DIRECT")):
            e = res[q].get(side + "_" + mode)
            if e is None:
                continue
            t, why = time_of(res[q], side + "_" + mode)
            default_t, _ = time_of(res[q], "warp_gpu_" + mode)
            if not t:
                print("  %-5s %-5s %s" % (q.upper(), mode, why or e.get("note")))
                continue
            rate = nbytes / t if nbytes else None
            e["bytes_per_s"] = rate
            e["share_of_limit"] = rate / limit if rate and limit else None
            print("  %-5s %-5s %.4f s%s%s (defaults: %s)" % (
                q.upper(), mode, t, ", %.2f GB/s" % (rate / 1e9) if rate else "",
                " = %.0f%% of the %s" % (100 * rate / limit, lname) if rate and limit else "",
                "%.4f s" % default_t if default_t else "-"))
        x = res[q].get(side + "_explain", {})
        if x.get("data_path"):
            # the rate over I/O Time is of the files read (pread, cuFile);
            # copies from registered pages are queued without a read
            rate = x.get("file_read_rate") if any(
                x["data_path"].get(k) for k in ("Bytes Read With pread", "Bytes Read With cuFile")) \
                else None
            print("        EXPLAIN: %s%s%s" % (
                "planning %s ms, execution %s ms; " % (x.get("planning_ms"), x.get("execution_ms"))
                if x.get("execution_ms") is not None else "", ", ".join(
                "%s %s" % kv for kv in x["data_path"].items()
                if any(w in kv[0] for w in ("cuFile", "pread", "Pinned File Pages", "Data Path"))),
                "; files at %s GB/s of I/O Time%s" % (
                    rate, " = %.0f%% of the pinned copy" % (100 * rate * 1e9 / pinned) if pinned else "")
                if rate else ""))


def check_first_cold(res, ref, answers):
    """The first and cold answers against the reference; a side that is not
    the engine (its warm EXPLAIN) is not the engine in these runs either."""
    for (q, side, mode), rows in answers.items():
        e = res[q][side + "_" + mode]
        check(e, ref[q], rows)
        warm = res[q].get(side, {})
        if warm.get("status") == "not the engine" and e["status"] == "ok":
            e.update(status="not the engine", note=warm["note"])


# ---------------------------------------------------------------- bytes and the data path

def path_figures(runners, queries, res):
    """Per pg_warp side and query, one more (warm) EXPLAIN ANALYZE: the
    GpuPreAgg node's data-path figures (PATH_KEY), its workers' summed."""
    for q, sql, *_ in queries:
        for side in WARP_SIDES:
            if side not in runners or res[q][side]["status"] not in ("ok", "not the engine"):
                continue
            rows, _, err = runners[side].run("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " + sql)
            figs = {} if err else gpa_figures(rows)
            if figs:
                res[q][side]["data_path"] = figs


def referenced(res, q, side, arrow_bytes, heap):
    """(bytes the query references on side's source, how known).  Arrow: the
    engine's Bytes Read + Bytes From GPU Cache (the shared run's figures, on
    the leader); heap: every page of the table (Heap Pages x the block size;
    the node's Bytes Read counts only the leader's shipped pages)."""
    x = res[q].get(side, {}).get("explain", {}).get("gpupreagg", {})
    if HEAP_SOURCE[side]:
        if x.get("Heap Pages"):
            return x["Heap Pages"] * heap["block_size"], "EXPLAIN ANALYZE: Heap Pages x the block size"
        return heap["bytes"], "the heap table's size (pg_relation_size)"
    n = (x.get("Bytes Read") or 0) + (x.get("Bytes From GPU Cache") or 0)
    if n > 0:
        return n, "EXPLAIN ANALYZE: Bytes Read + Bytes From GPU Cache"
    return arrow_bytes[q], "the Arrow file's metadata (the referenced columns' buffers)"


# ---------------------------------------------------------------- the report

def rates(res, queries, limits, arrow_bytes, heap):
    """Per query and pg_warp side: referenced bytes, and per mode the time,
    bytes/s and its share of the limit (first: pinned copy, cold: O_DIRECT);
    res entries get the figures too."""
    pinned, pinned_why = limit_rate(limits, "pinned")
    odirect, odirect_why = limit_rate(limits, "odirect")
    table = {}
    for q, *_ in queries:
        for side in WARP_SIDES:
            if side not in res[q]:
                continue
            nbytes, how = referenced(res, q, side, arrow_bytes, heap)
            row = {"referenced_bytes": nbytes, "referenced_bytes_from": how}
            for mode in MODES:
                key = side if mode == "warm" else side + "_" + mode
                t, why = time_of(res[q], key)
                cell = {"seconds": t, "why": why}
                if t:
                    cell["bytes_per_s"] = nbytes / t
                    limit, lwhy = {"first": (pinned, pinned_why), "pinned": (pinned, pinned_why),
                                   "cold": (odirect, odirect_why)}.get(mode, (None, None))
                    if limit:
                        cell["share_of_limit"] = cell["bytes_per_s"] / limit
                        cell["limit"] = "O_DIRECT read" if mode == "cold" else "pinned copy"
                    elif lwhy:
                        cell["limit_why"] = lwhy
                if mode == "first" and side == "warp_gpu":
                    rate = first_file_rate(res, q)
                    cell["file_rate"] = rate
                    cell["file_rate_share"] = rate / pinned if rate and pinned else None
                row[mode] = cell
            table.setdefault(q, {})[side] = row
    return table


def goals(res, table, queries):
    """Issue 30's goals that this run measures, each met / not met / not measured."""
    out = []

    def share_goal(name, side, mode, key="share_of_limit"):
        per, verdicts = {}, []
        for q, *_ in queries:
            c = table.get(q, {}).get(side, {}).get(mode, {})
            v = c.get(key)
            per[q] = {"value": v, "shown": "%.0f%%" % (100 * v) if v is not None else "-",
                      "why": None if v is not None else c.get("limit_why") or c.get("why") or
                      "%s not run" % LABELS.get(side, side)}
            verdicts.append(None if v is None else v >= GOAL_SHARE)
        status = "not met" if False in verdicts else "not measured" if None in verdicts else "met"
        out.append({"goal": name, "status": status, "per_query": per})

    share_goal("Arrow in the page cache, first run: referenced bytes/s >= 80% of the pinned copy rate "
               "(item 1)", "warp_gpu", "first")
    share_goal("Arrow in the page cache, first run: the files' rate over the engine's I/O Time >= 80% "
               "of the pinned copy rate (item 1, the transfer alone)", "warp_gpu", "first",
               "file_rate_share")
    share_goal("Arrow in the page cache, first run with the file's pages registered: referenced "
               "bytes/s >= 80% of the pinned copy rate (item 1)", "warp_gpu", "pinned")
    share_goal("Arrow evicted, cold run: referenced bytes/s >= 80% of the O_DIRECT read rate (item 3)",
               "warp_gpu", "cold")
    share_goal("Heap evicted, cold run: referenced bytes/s >= 80% of the O_DIRECT read rate",
               "warp_gpu_heap", "cold")
    for key, what in (("warp_gpu_heap_first", "first run"),
                      ("warp_gpu_heap_pinned", "first run with the segment files' pages registered")):
        per, verdicts = {}, []
        for q, *_ in queries:
            a, wa = time_of(res[q], "heap")
            b, wb = time_of(res[q], key)
            v = a / b if a and b else None
            per[q] = {"value": v, "shown": "%.2fx" % v if v else "-",
                      "why": None if v else "; ".join(w for w in (wa, wb) if w)}
            verdicts.append(None if v is None else v >= HEAP_FIRST_GOAL)
        out.append({"goal": "GPU on heap, %s: at least 3x faster than PostgreSQL heap (item 4)" % what,
                    "status": "not met" if False in verdicts else "not measured" if None in verdicts
                    else "met", "per_query": per})
    a, b = [], []
    for q, *_ in queries:
        td, _ = time_of(res[q], "duckdb")
        tf, _ = time_of(res[q], "warp_gpu_first")
        if td and tf:
            a.append(tf)
            b.append(td)
    g = {"goal": "GPU on Arrow, first runs: geometric mean below DuckDB's (item 9, over these %d "
                 "queries, not the 13 of SSB)" % len(queries)}
    if len(a) == len(queries):
        v = geomean(a) / geomean(b)
        g.update(status="met" if v < 1 else "not met", value=v,
                 shown="%.3f s / %.3f s = %.2fx DuckDB's" % (geomean(a), geomean(b), v))
    else:
        g.update(status="not measured", value=None, shown="-",
                 why="first runs or DuckDB missing on %d of %d queries" % (len(queries) - len(a),
                                                                          len(queries)))
    out.append(g)
    return out


def print_report(queries, res, table, limits, goal_list, heap_bytes):
    print("\nRaw limits (bench/data_paths on %s, %s):" % (limits.get("file"), limits.get("device")
                                                         or "no GPU"))
    for way in LIMIT_WAYS:
        w = limits.get("by_way", {}).get(way)
        if w is None:
            continue
        if w["status"] == "ok":
            print("  %-16s %8.3f s %8.2f GB/s  %s; %s" % (way, w["seconds"], w["bytes"] / w["seconds"] / 1e9,
                                                         w.get("target") or "", w.get("page_cache") or ""))
        else:
            print("  %-16s %s: %s" % (way, w["status"], w.get("why")))
    if limits.get("by_way", {}).get("cufile", {}).get("mode"):
        print("  cuFile mode: %s" % limits["by_way"]["cufile"]["mode"])
    for mib, ways in sorted(limits.get("slice_sweep", {}).items()):
        print("  slices of %3d MiB: %s" % (mib, ", ".join(
            "%s %s" % (w, "%.2f GB/s" % v if isinstance(v, float) else v) for w, v in ways.items())))
    kv = limits.get("kvikio", {})
    for mode in ("warm", "cold"):
        if "gb_per_s" in kv.get(mode, {}):
            print("  %-16s %8.3f s %8.2f GB/s  KvikIO into GPU memory, the file %s; compat_mode %s" % (
                "kvikio-" + mode, kv[mode]["seconds"], kv[mode]["gb_per_s"],
                "in the page cache" if mode == "warm" else "evicted first", kv[mode]["compat_mode"]))
    if kv.get("status") and kv["status"] != "ok":
        print("  %-16s %s: %s" % ("kvikio", kv["status"], kv.get("why")))
    print("\nheap lineorder: %.2f GB" % (heap_bytes / 1e9))
    for q, sql, *_ in queries:
        print("\n%s: %s" % (q.upper(), sql))
        for base in ("heap", "duckdb"):
            e = res[q].get(base)
            if e:
                t, why = time_of(res[q], base)
                print("    %-30s %s" % (LABELS[base], "%.4f s (best)" % t if t else why))
        for side, row in table.get(q, {}).items():
            if res[q][side]["status"] == "unavailable":
                print("    %-30s unavailable: %s" % (LABELS[side], res[q][side]["note"]))
                continue
            print("    %-30s referenced %.1f MB (%s)" % (LABELS[side], row["referenced_bytes"] / 1e6,
                                                       row["referenced_bytes_from"]))
            for mode in MODES:
                c = row[mode]
                if c["seconds"] is None:
                    print("      %-6s %s" % (mode, c["why"]))
                    continue
                share = " = %.0f%% of the %s" % (100 * c["share_of_limit"], c["limit"]) \
                    if "share_of_limit" in c else ""
                e = res[q][side if mode == "warm" else side + "_" + mode]
                print("      %-6s %8.4f s %8.2f GB/s%s%s" % (mode, c["seconds"], c["bytes_per_s"] / 1e9,
                                                           share, "; page cache " + e["page_cache"]
                                                           if e.get("page_cache") else ""))
                if c.get("file_rate"):
                    print("      %-6s files at %.2f GB/s of I/O Time (EXPLAIN ANALYZE of another first "
                          "run)%s" % ("", c["file_rate"] / 1e9, " = %.0f%% of the pinned copy" %
                                      (100 * c["file_rate_share"]) if c.get("file_rate_share") else ""))
            x = res[q].get(side + "_first_explain", {})
            if x.get("execution_ms") is not None:
                print("      first EXPLAIN: planning %s ms, execution %s ms; %s" % (
                    x["planning_ms"], x["execution_ms"],
                    ", ".join("%s %s" % kv for kv in x["data_path"].items())))
            figs = res[q][side].get("data_path")
            if figs:
                print("      warm EXPLAIN: %s" % ", ".join("%s %s" % kv for kv in figs.items()))
    print("\nGoals (issue 30), from this run:")
    for g in goal_list:
        if "per_query" in g:
            shown = ", ".join("%s %s" % (q.upper(), p["shown"]) for q, p in g["per_query"].items())
            whys = sorted({p["why"] for p in g["per_query"].values() if p["why"]})
        else:
            shown, whys = g["shown"], [g["why"]] if g.get("why") else []
        print("  %-13s %s: %s" % (g["status"].upper(), g["goal"], shown))
        for w in whys[:2]:
            print("  %13s   (%s)" % ("", w))


MODE_COLORS = {"first": (150, 210, 150), "pinned": (90, 190, 190), "cold": (120, 150, 230),
               "warm": (40, 160, 60)}


def chart(path, queries, res, table, limits, title):
    """The limits as bars of GB/s on top, then per query and pg_warp side (that
    could run) a bar per mode (first, pinned, cold, warm) of referenced GB/s, on one
    linear scale."""
    table = {q: {s: row for s, row in table[q].items() if res[q][s]["status"] != "unavailable"}
             for q in table}
    lims = [(w, limit_rate(limits, w)[0]) for w in LIMIT_WAYS + ["kvikio-warm", "kvikio-cold"]
            if w != "register"]
    lims = [(w, r) for w, r in lims if r]
    rows = [(q, s, m, table[q][s][m].get("bytes_per_s")) for q, *_ in queries for s in table.get(q, {})
            for m in MODES]
    top = max([r for _, r in lims] + [r for *_, r in rows if r] + [1])
    bar, left, width = 14, 330, 1100
    c = Canvas(width, 60 + (bar + 4) * (len(lims) + len(rows)) + 30 * (len(queries) + 1))
    c.text(10, 10, title)
    y = 40
    c.text(10, y, "RAW LIMITS GB/S (BENCH/DATA_PATHS)")
    y += 18
    scale = (width - left - 120) / top
    for w, r in lims:
        c.text(10, y + 2, w)
        c.rect(left, y, left + max(1, int(r * scale)), y + bar, (200, 60, 60))
        c.text(left + int(r * scale) + 6, y + 2, "%.1f" % (r / 1e9))
        y += bar + 4
    for q, *_ in queries:
        y += 12
        c.text(10, y, "%s REFERENCED GB/S" % q.upper())
        y += 18
        for s in table.get(q, {}):
            for m in MODES:
                r = table[q][s][m].get("bytes_per_s")
                c.text(10, y + 2, "%s %s" % (LABELS[s].replace("pg_warp ", ""), m))
                if r:
                    c.rect(left, y, left + max(1, int(r * scale)), y + bar, MODE_COLORS[m])
                    c.text(left + int(r * scale) + 6, y + 2, "%.1f" % (r / 1e9))
                else:
                    c.text(left, y + 2, "not measured", rgb=(150, 0, 0))
                y += bar + 4
    c.save(path)


# ---------------------------------------------------------------- main

def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--kvikio-probe":
        kvikio_probe(sys.argv[2], int(sys.argv[3]), 16 << 30)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="sides: " + ", ".join(SIDES))
    add_common_args(ap, 3, "warm runs per side and query (the best is kept)")
    ap.add_argument("--sides", default=",".join(DEFAULT_SIDES), help="a comma-separated subset of "
                    "%s (default: %%(default)s)" % ", ".join(SIDES))
    ap.add_argument("-q", "--queries", help="a subset of q1,q2,q3,q4,q1.1,q1.2,q1.3 (default: all)")
    ap.add_argument("--restart-cmd", help="a shell command that restarts the cluster (and with it the "
                    "service: the GPU column cache emptied), run before every first and cold run")
    ap.add_argument("--data-paths", help="the data_paths binary (default: bench/data_paths, built if "
                    "missing)")
    ap.add_argument("--io-threads", type=int, default=os.cpu_count(),
                    help="data_paths' threads (default: the CPU count)")
    ap.add_argument("--streams", type=int, default=4, help="data_paths' copy streams (default 4)")
    ap.add_argument("--slice-mib", type=int, default=8, help="data_paths' slice size (default 8 MiB)")
    ap.add_argument("--sweep-slices", default="2,32,64",
                    help="other slice sizes (MiB) at which %s run again (default %%(default)s; "
                    "'' none)" % SWEEP_WAYS)
    ap.add_argument("--data-paths-args", help="more data_paths options, e.g. '-b 4G -D 2048'")
    ap.add_argument("--cufile-lib", help="a libcufile: also time pg_warp GPU on Arrow's first and "
                    "cold runs with pg_warp.gpudirect = on and pg_warp.cufile_library = this "
                    "(ALTER SYSTEM, put back at the end; needs --restart-cmd)")
    ap.add_argument("--unregistered", action="store_true",
                    help="also time pg_warp GPU on Arrow's first runs with pg_warp.pinned_files_size "
                    "= 0 (no file pages registered, not even in the background; ALTER SYSTEM, put "
                    "back at the end; needs --restart-cmd)")
    ap.add_argument("--restored", action="store_true",
                    help="also time pg_warp GPU on Arrow's first runs with pg_warp.pinned_files_restore "
                    "= on: the file's pages registered again as the service starts, from the "
                    "registrations of the runs before (the other first and cold runs have it off; "
                    "needs --restart-cmd)")
    args = ap.parse_args()
    check_common_args(ap, args, SIDES)
    wanted = [x.strip().lower() for x in args.queries.split(",")] if args.queries else None
    queries = [(q, sql, cols, 0) for q, sql, cols in FLAT_QUERIES if not wanted or q in wanted]
    ssb = set(wanted or SSB_QUERIES) & set(SSB_QUERIES)
    queries += load_queries(ssb) if ssb else []
    if not queries or (wanted and len(queries) != len(wanted)):
        ap.error("unknown query(ies) in %s" % args.queries)

    dp, dp_why = find_tool("data_paths", args.data_paths)
    data = open_data(args, SCHEMA, queries)
    res = {q: {} for q, *_ in queries}

    def make_duck():
        duck = DuckSide(args.workers)
        duck.load_arrow("lineorder", args.arrow, data["columns"])
        duck.load_pg(args.dbname, "date1")
        return duck
    runners, info = open_sides(args, res, SCHEMA, make_duck)
    print("service: %s" % info.get("service_note"))
    for side in args.sides:
        if side in WARP_SIDES and side not in runners:
            print("SKIPPED %s (first, cold and warm runs): %s" % (LABELS[side],
                                                                  res[queries[0][0]][side]["note"]))
            for q in res:
                for mode in ("first", "cold", "pinned"):
                    res[q][side + "_" + mode] = dict(res[q][side], runs_s=[])
    if "duckdb" in info:
        print("duckdb %(version)s, %(threads)s threads, native tables loaded in %(load_s)s s"
              % info["duckdb"])

    # first and cold runs time a file the service has not registered: no
    # registrations restored, no metadata laid out at the restarts
    # (--restored times those)
    restore_before = auto_conf(args, list(KEPT_ACROSS)) if args.restart_cmd else None
    if restore_before is not None:
        alter_system(args, {k: "off" for k in KEPT_ACROSS})
    try:
        # the raw limits, with no server process holding the file mapped (a restart ends them)
        if args.restart_cmd and any(isinstance(r, PgSide) for r in runners.values()):
            probe = PgSide("heap", args, SCHEMA)
            why = restart(args, runners, probe, info.get("service_engine"))
            probe.close()
            if why:
                print("WARNING: the restart before the raw limits: %s" % why)
        limits = raw_limits(args, dp) if dp else {"status": "unavailable", "why": dp_why}
        if dp is None:
            print("raw limits not measured: %s" % dp_why)
        else:
            limits["kvikio"] = kvikio_rates(args, dp)
            if limits["kvikio"]["status"] != "ok":
                print("KvikIO not measured: %s" % limits["kvikio"]["why"])

        hfiles, hwhy = heap_files(args)
        files = {False: ([args.arrow], None), True: (hfiles, hwhy)}
        heap_bytes, block_size = map(int, psql_script(
            args.dbname, "SELECT pg_relation_size('public.lineorder'), current_setting('block_size')")
            .strip().split("|"))
        if hwhy:
            print("heap files: %s" % hwhy)
        if not args.restart_cmd:
            print("no --restart-cmd: first and cold runs not measured")
        answers = {}
        if dp and any(s in runners for s in WARP_SIDES):
            print("first and cold runs (restart before each):")
            answers = first_and_cold(args, queries, runners, res, files, dp, info.get("service_engine"))
            first_explains(args, queries, runners, res, files, dp, info.get("service_engine"))
        for v in variants(args) if dp and "warp_gpu" in runners and args.restart_cmd else []:
            print("runs with %s:" % v[1])
            answers.update(variant_runs(args, queries, runners, res, dp, info.get("service_engine"), v))
        # the warm state: every source in the page cache again, then the reference and warm-ups
        for f in [args.arrow] + hfiles:
            read_through(f)
        ref = warm_up_all(args, queries, runners, res, data["nbytes"], SCHEMA,
                          {q: joins for q, _, _, joins in queries})
        check_first_cold(res, ref, answers)
        measured_runs(args, queries, runners, res, ref, data["nbytes"])
    finally:
        if restore_before is not None:
            alter_system(args, {k: "off" for k in KEPT_ACROSS}, restore_before)
    path_figures(runners, queries, res)
    for r in runners.values():
        if isinstance(r, PgSide):
            r.close()
    summarise(res, data["heap_rows"], data["nbytes"], best=True)
    table = rates(res, queries, limits, data["nbytes"], {"bytes": heap_bytes, "block_size": block_size})
    goal_list = goals(res, table, queries)
    print_report(queries, res, table, limits, goal_list, heap_bytes)
    for v in variants(args):
        variant_report(queries, res, table, limits, v)

    wrong = ["%s %s" % (q.upper(), s) for q in res for s, e in res[q].items()
             if e["status"] == "wrong answer"]
    tag = args.tag or "sf%g_%dworkers" % (round(data["heap_rows"] / 6e6, 2), args.workers)
    summary = result_head(args, tag, data, info)
    summary.update({
        "statistic": "best", "restart_cmd": args.restart_cmd, "heap_bytes": heap_bytes,
        "raw_limits": limits,
        "queries": {q: {"sql": sql, "joins": joins, "referenced_columns": cols,
                        "arrow_referenced_bytes": data["nbytes"][q], "sides": res[q],
                        "rates": table.get(q, {})} for q, sql, cols, joins in queries},
        "goals": goal_list, "wrong_answers": wrong,
    })
    write_results(args, "data_path_" + tag, summary, lambda path: chart(
        path, queries, res, table, limits, "DATA PATHS %s: LINEORDER %.1fM ROWS, %s" % (
            tag.upper(), data["heap_rows"] / 1e6, (limits.get("device") or "NO GPU").upper())), wrong)


if __name__ == "__main__":
    main()
