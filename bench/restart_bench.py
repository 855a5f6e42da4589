#!/usr/bin/env python3
"""
The first session after a cluster restart against the next session, with a
server setting off and then on (by default pg_warp.arrow_metadata_prewarm:
whether large Arrow files' record-batch metadata is laid out again at the
start).  For each value: ALTER SYSTEM, then --runs times: the restart
(--restart-cmd), the files of --read read through (the page cache warm, as
on a server that has been up), --settle seconds, then one new session's
EXPLAIN (ANALYZE, SUMMARY) of the query and a second new session's.  The
setting is put back at the end.  The answer is checked once per value
against PostgreSQL's (pg_warp.enabled = off).

    bench/restart_bench.py -d ssb1 --schema t44 \\
        --restart-cmd 'PGPORT=55431 scripts/cluster.sh stop /tmp/c && PGPORT=55431 scripts/cluster.sh start /tmp/c' \\
        --read /tmp/ssb1/lo_stats.arrow --tag devvm-sf1-1229batches

With --arrow FILE it makes the schema restart_bench itself, its lineorder a
foreign table over FILE (--workers: its parallel workers and the sessions'
max_parallel_workers_per_gather), and reads FILE after each restart
(bench/gpu-host.sh restart).

Prints each run and, per value, the median (min-max) of planning and
execution of the first and the next session; writes
bench/results/restart_<tag>.json and .png.  Connection settings come from
PGHOST, PGPORT, PGUSER.  A benchmark, not a test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench_sides import psql_script
from canvas import Canvas
from ssb_engine_bench import read_through

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def psql(db, sql):
    return psql_script(db, sql + ";\n").strip()


def explain(db, prefix, query):
    """one new session's planning and execution of query (ms)"""
    out = psql(db, prefix + "EXPLAIN (ANALYZE, TIMING off, SUMMARY on) " + query)
    got = {}
    for line in out.splitlines():
        for key, name in (("Planning Time:", "planning_ms"), ("Execution Time:", "execution_ms")):
            if line.strip().startswith(key):
                got[name] = float(line.split()[-2])
    return got


def spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)} if xs else None


def chart(res, setting, path):
    """bars: median planning (dark) and execution (light) of the first and next
    session, per value"""
    cells = [(v, which) for v in res["values"] for which in ("first", "next")]
    top = max(res["summary"][v][w]["planning_ms"]["median"] +
              res["summary"][v][w]["execution_ms"]["median"] for v, w in cells) or 1
    c = Canvas(max(120 + 110 * len(cells), 620), 310)
    c.text(10, 8, setting, scale=2)
    c.text(10, 24, "first session after a restart, and the next: planning + execution ms",
           scale=1)
    for i, (v, w) in enumerate(cells):
        s = res["summary"][v][w]
        plan, exe = s["planning_ms"]["median"], s["execution_ms"]["median"]
        x = 80 + 110 * i
        y0 = 260
        hp, he = int(200 * plan / top), int(200 * exe / top)
        c.rect(x, y0 - hp, x + 60, y0, (40, 70, 150))
        c.rect(x, y0 - hp - he, x + 60, y0 - hp, (150, 180, 230))
        c.text(x, y0 - hp - he - 14, "%.1f+%.1f" % (plan, exe), scale=1)
        c.text(x, y0 + 8, "%s %s" % (v, w), scale=2)
    c.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-d", "--dbname", default=os.environ.get("PGDATABASE", "postgres"))
    ap.add_argument("--schema", default="public", help="the search_path's first schema")
    ap.add_argument("--query", default=os.path.join(HERE, "ssb", "queries", "q1.1.sql"),
                    help="a file of SQL, or the SQL itself")
    ap.add_argument("--restart-cmd", required=True)
    ap.add_argument("--read", nargs="*", default=[], help="files read through after each restart")
    ap.add_argument("--setting", default="pg_warp.arrow_metadata_prewarm")
    ap.add_argument("--values", default="off,on")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds between the restart and the first session")
    ap.add_argument("--arrow", help="lineorder as this Arrow file, in the schema restart_bench")
    ap.add_argument("--workers", type=int, default=0,
                    help="with --arrow: parallel workers (0: as configured)")
    ap.add_argument("--tag", default="devvm")
    args = ap.parse_args()
    if args.arrow:
        args.schema = "restart_bench"
        args.read = args.read + [args.arrow]
        psql(args.dbname, "SET client_min_messages = warning; "
             "DROP SCHEMA IF EXISTS restart_bench CASCADE; CREATE SCHEMA restart_bench; "
             "IMPORT FOREIGN SCHEMA lineorder FROM SERVER arrow_fdw INTO restart_bench "
             "OPTIONS (file '%s')" % args.arrow.replace("'", "''"))
        if args.workers > 0:
            psql(args.dbname, "ALTER FOREIGN TABLE restart_bench.lineorder OPTIONS "
                 "(ADD parallel_workers '%d')" % args.workers)
    query = open(args.query).read() if os.path.exists(args.query) else args.query
    query = "\n".join(ln for ln in query.splitlines() if not ln.strip().startswith("--"))
    query = query.strip().rstrip(";")
    prefix = "SET search_path = %s, public; " % args.schema
    if args.workers > 0:
        prefix += "SET max_parallel_workers_per_gather = %d; " % args.workers
    before = psql(args.dbname, "SELECT setting FROM pg_file_settings WHERE name = '%s' AND "
                  "sourcefile LIKE '%%postgresql.auto.conf'" % args.setting)
    res = {"setting": args.setting, "values": args.values.split(","), "query": query,
           "schema": args.schema, "arrow": args.arrow, "workers": args.workers,
           "settle_s": args.settle, "runs": {}, "summary": {}, "answers": {},
           "commit": subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                    capture_output=True, text=True).stdout.strip()}
    try:
        for v in res["values"]:
            psql(args.dbname, "ALTER SYSTEM SET %s = '%s'" % (args.setting, v))
            runs = res["runs"][v] = []
            for i in range(args.runs):
                r = subprocess.run(args.restart_cmd, shell=True, capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit("--restart-cmd failed: %s" % r.stderr[-500:])
                for path in args.read:
                    read_through(path)
                time.sleep(args.settle)
                run = {"first": explain(args.dbname, prefix, query),
                       "next": explain(args.dbname, prefix, query)}
                runs.append(run)
                print("%s = %s, run %d: first %.2f + %.2f ms, next %.2f + %.2f ms (planning + "
                      "execution)" % (args.setting, v, i + 1, run["first"]["planning_ms"],
                                      run["first"]["execution_ms"], run["next"]["planning_ms"],
                                      run["next"]["execution_ms"]), flush=True)
            res["summary"][v] = {w: {k: spread([r[w][k] for r in runs])
                                     for k in ("planning_ms", "execution_ms")}
                                 for w in ("first", "next")}
            on = psql(args.dbname, prefix + query)
            off = psql(args.dbname, prefix + "SET pg_warp.enabled = off; " + query)
            res["answers"][v] = "same" if on == off else "DIFFERENT: %r against %r" % (on, off)
    finally:
        psql(args.dbname, "ALTER SYSTEM SET %s = '%s'" % (args.setting, before) if before
             else "ALTER SYSTEM RESET %s" % args.setting)
    print("\n| %s | session | planning ms | execution ms | answer |" % args.setting)
    print("| --- | --- | ---: | ---: | --- |")
    for v in res["values"]:
        for w in ("first", "next"):
            s = res["summary"][v][w]
            print("| %s | %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %s |" % (
                v, w, *(s["planning_ms"][k] for k in ("median", "min", "max")),
                *(s["execution_ms"][k] for k in ("median", "min", "max")), res["answers"][v]))
    out = os.path.join(HERE, "results", "restart_%s" % args.tag)
    with open(out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    chart(res, args.setting, out + ".png")
    print("\nwrote %s.json and .png" % out)


if __name__ == "__main__":
    main()
