#!/usr/bin/env python3
"""The 13 SSB queries on heap lineorder and on arrow_fdw lineorder (a benchmark, not a test).

Every query of bench/ssb/queries runs on the heap table `lineorder` and on an
arrow_fdw foreign table over the Arrow export of the same rows (the dimension
tables are the same heap tables for both), in one psql session: search_path
picks the fact table.  Both sides get the same parallel workers
(max_parallel_workers_per_gather, and parallel_workers on both tables), JIT off.
Per query: one unmeasured run of each side (the page cache, and the answers,
which must be equal), the plans with EXPLAIN ANALYZE (join types, the fact
scan's estimated and actual rows, the most loops of a nested loop's inner side,
e.g. index probes), then N measured runs alternating heap and Arrow; the
medians are reported.

The foreign table is not ANALYZEd (unless --analyze): its row estimates come
from the Arrow files alone, as for a table just created or imported.

    bench/ssb/load.sh -d ssb -s 1 --no-arrow
    bench/ssb_bench.py -d ssb -a /tmp/ssb/lineorder.arrow --export -w 2 -r 5

--export writes the Arrow file first with `pg2arrow -t lineorder -S` (batch
statistics).  Results: bench/results/ssb_<tag>.json and .png.  Connection: the
PG* environment variables and -d; the file must be readable by the server.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

from canvas import Canvas

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = os.path.join(HERE, "ssb", "queries")
SIDES = ("heap", "arrow")
SCHEMA = "ssb_arrow"


def psql(db, script, check=True):
    """Runs a script in one psql session; returns its standard output."""
    args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"] + (["-d", db] if db else [])
    r = subprocess.run(args, input=script, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit("psql failed: %s\n%s" % (script[:300], r.stderr))
    return r.stdout


def settings(workers, side):
    path = SCHEMA + ", public" if side == "arrow" else "public"
    return ("SET max_parallel_workers_per_gather = %d;\nSET jit = off;\n"
            "SET search_path = %s;\n" % (workers, path))


def setup(args):
    """The foreign table over the Arrow file; both fact tables get the workers."""
    if args.export or not os.path.exists(args.arrow):
        pg2arrow = args.pg2arrow or "pg2arrow"
        cmd = [pg2arrow] + (["-d", args.dbname] if args.dbname else []) + \
            ["-t", "lineorder", "-S", "-n", str(args.export_workers), "-o", args.arrow]
        t0 = time.time()
        subprocess.run(cmd, check=True)
        os.chmod(args.arrow, 0o644)
        print("exported lineorder with statistics to %s in %.1f s" % (args.arrow, time.time() - t0))
    psql(args.dbname, """
        DROP SCHEMA IF EXISTS {s} CASCADE;
        CREATE SCHEMA {s};
        IMPORT FOREIGN SCHEMA lineorder FROM SERVER arrow_fdw INTO {s} OPTIONS (file '{f}');
        ALTER FOREIGN TABLE {s}.lineorder OPTIONS (ADD parallel_workers '{w}');
        ALTER TABLE public.lineorder SET (parallel_workers = {w});
        """.format(s=SCHEMA, f=args.arrow.replace("'", "''"), w=args.workers))
    if args.analyze:
        psql(args.dbname, "ANALYZE %s.lineorder" % SCHEMA)


def walk(plan, out):
    out.append(plan)
    for p in plan.get("Plans", []):
        walk(p, out)
    return out


def plan_summary(db, workers, side, sql):
    """Join types, the fact scan's rows (estimated, actual), nested loops' inner loops."""
    out = psql(db, settings(workers, side) + "EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
    nodes = walk(json.loads(out)[0]["Plan"], [])
    joins = [n["Node Type"] for n in nodes if n["Node Type"] in ("Hash Join", "Merge Join", "Nested Loop")]
    probes = 0
    for n in nodes:
        if n["Node Type"] == "Nested Loop":
            inner = n["Plans"][1]
            probes = max(probes, int(inner.get("Actual Loops", 0)))
    scan = None
    for n in nodes:
        if n.get("Relation Name") == "lineorder":
            scan = n
    est = act = None
    if scan:
        # in a parallel plan Plan Rows is per process (total / parallel divisor)
        # and Actual Rows the mean per loop
        est = scan["Plan Rows"]
        act = round(scan["Actual Rows"] * scan["Actual Loops"])
        if scan.get("Parallel Aware"):
            est = "%s per process" % est
    return {"joins": joins, "scan_estimated_rows": est, "scan_actual_rows": act,
            "scan_node": scan["Node Type"] if scan else None, "nested_loop_inner_loops": probes}


def timed_runs(db, workers, queries, runs):
    """Medians of `runs` measured runs per query and side, in one session."""
    script = ["\\o /dev/null\n"]
    order = []
    for r in range(runs):
        for name, sql in queries:
            sides = SIDES if r % 2 == 0 else SIDES[::-1]
            for side in sides:
                script.append(settings(workers, side) + "\\timing on\n" + sql + ";\n\\timing off\n")
                order.append((name, side))
    out = psql(db, "".join(script))
    times = [float(m) / 1000 for m in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
    assert len(times) == len(order), (len(times), len(order))
    res = {}
    for (name, side), t in zip(order, times):
        res.setdefault(name, {}).setdefault(side, []).append(t)
    return res


def png_chart(path, rows):
    """Grouped bars, heap (grey) and Arrow (blue) seconds per query; no plotting library."""
    W, H, base, left = 60 * len(rows) + 80, 320, 270, 60
    c = Canvas(W, H)
    top = max(max(r["heap_s"], r["arrow_s"]) for r in rows) or 1
    c.rect(left - 2, 20, left, base, (0, 0, 0))
    c.rect(left - 2, base, W - 10, base + 2, (0, 0, 0))
    c.text(4, 20, "%.2f" % top)
    c.text(4, base - 10, "0 S")
    for i, r in enumerate(rows):
        x = left + 10 + 60 * i
        for k, (key, rgb) in enumerate((("heap_s", (120, 120, 120)), ("arrow_s", (40, 110, 200)))):
            h = int(230 * r[key] / top)
            c.rect(x + 20 * k, base - h, x + 20 * k + 18, base, rgb)
        c.text(x, base + 8, r["query"].upper())
    c.text(left + 10, 4, "HEAP")
    c.rect(left + 50, 4, left + 62, 14, (120, 120, 120))
    c.text(left + 80, 4, "ARROW")
    c.rect(left + 128, 4, left + 140, 14, (40, 110, 200))
    c.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-d", "--dbname", default=os.environ.get("PGDATABASE"))
    ap.add_argument("-a", "--arrow", required=True, help="the Arrow file of lineorder")
    ap.add_argument("--export", action="store_true", help="write it first (pg2arrow -S)")
    ap.add_argument("--pg2arrow", help="pg2arrow binary (default: on the PATH)")
    ap.add_argument("--export-workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("-w", "--workers", type=int, default=2, help="parallel workers, both sides")
    ap.add_argument("-r", "--runs", type=int, default=5)
    ap.add_argument("-q", "--queries", help="e.g. q1.2,q1.3 (default: all 13)")
    ap.add_argument("--analyze", action="store_true", help="ANALYZE the foreign table first")
    ap.add_argument("--tag", default=None)
    ap.add_argument("-o", "--outdir", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    args.arrow = os.path.abspath(args.arrow)

    setup(args)
    files = sorted(glob.glob(os.path.join(QUERIES, "q*.sql")))
    wanted = set(args.queries.split(",")) if args.queries else None
    queries = []
    for f in files:
        name = os.path.basename(f)[:-4]
        if wanted is None or name in wanted:
            with open(f) as fh:
                queries.append((name, fh.read().strip().rstrip(";")))
    lo_rows = int(psql(args.dbname, "SELECT count(*) FROM public.lineorder").strip())
    print("lineorder: %d rows; %d workers; %d runs; Arrow %s (%.2f GB)"
          % (lo_rows, args.workers, args.runs, args.arrow, os.path.getsize(args.arrow) / 1e9))

    rows = []
    for name, sql in queries:
        answers = {s: psql(args.dbname, settings(args.workers, s) + sql + ";") for s in SIDES}
        if answers["heap"] != answers["arrow"]:
            sys.exit("%s: different answers\nheap:\n%s\narrow:\n%s" % (name, answers["heap"], answers["arrow"]))
        plans = {s: plan_summary(args.dbname, args.workers, s, sql) for s in SIDES}
        rows.append({"query": name, "plans": plans})
    times = timed_runs(args.dbname, args.workers, queries, args.runs)

    print("%-5s %9s %9s %7s  %-38s %-38s %s" % ("query", "heap s", "arrow s", "a/h",
                                               "heap joins", "arrow joins", "arrow scan est/actual, NL inner loops"))
    for r in rows:
        t = times[r["query"]]
        r["heap_runs"], r["arrow_runs"] = t["heap"], t["arrow"]
        r["heap_s"], r["arrow_s"] = statistics.median(t["heap"]), statistics.median(t["arrow"])
        r["ratio"] = r["arrow_s"] / r["heap_s"]
        pa_, ph = r["plans"]["arrow"], r["plans"]["heap"]
        print("%-5s %9.3f %9.3f %7.2f  %-38s %-38s %s / %s, %d" % (
            r["query"], r["heap_s"], r["arrow_s"], r["ratio"], ",".join(ph["joins"]) or "-",
            ",".join(pa_["joins"]) or "-", pa_["scan_estimated_rows"], pa_["scan_actual_rows"],
            pa_["nested_loop_inner_loops"]))
    slower = [r["query"] for r in rows if r["arrow_s"] > r["heap_s"]]
    print("Arrow slower than heap: %s" % (", ".join(slower) or "none"))

    tag = args.tag or "sf%g_%dworkers" % (lo_rows / 6e6, args.workers)
    os.makedirs(args.outdir, exist_ok=True)
    summary = {"tag": tag, "lineorder_rows": lo_rows, "workers": args.workers, "runs": args.runs,
               "arrow_file": args.arrow, "arrow_bytes": os.path.getsize(args.arrow),
               "arrow_analyzed": args.analyze, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
               "host": os.uname().nodename, "cpus": os.cpu_count(), "queries": rows,
               "arrow_slower": slower}
    jpath = os.path.join(args.outdir, "ssb_%s.json" % tag)
    with open(jpath, "w") as f:
        json.dump(summary, f, indent=2)
    png_chart(os.path.join(args.outdir, "ssb_%s.png" % tag), rows)
    print("wrote %s and .png" % jpath)


if __name__ == "__main__":
    main()
