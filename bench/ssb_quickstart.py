#!/usr/bin/env python3
"""A few SSB queries with pg_warp off and on: both times and the engine that ran (scripts/quickstart.sh).

Per query (bench/ssb/queries, default Q1.1, Q2.1, Q3.1): one session with
pg_warp.enabled off and one with it on, in which lineorder is the arrow_fdw
table over the Arrow file (-a) when one is given, else the heap table; each
runs the query once unmeasured, then --runs times (the best is printed); the
answers must be equal.  Then EXPLAIN (ANALYZE, VERBOSE) with pg_warp on says
what ran: GpuPreAgg on which engine with how many join depths, or PostgreSQL's
plan and pg_warp's reason.

    bench/ssb_quickstart.py -d ssb -a /tmp/ssb/lineorder.arrow
"""
import argparse
import os
import sys

from bench_sides import PgSession, SessionLost, explain_summary, psql_rows, setup_database
from ssb_engine_bench import load_queries

SCHEMA = "ssb_quickstart"


def best_run(session, sql, runs):
    """(best seconds, rows) of runs measured runs after an unmeasured one."""
    rows, _, err = session.run(sql)
    best = None
    for _ in range(runs):
        if err:
            break
        rows, secs, err = session.run(sql)
        best = secs if best is None or (secs is not None and secs < best) else best
    if err:
        raise SessionLost(err)
    return best, psql_rows(rows)


def what_ran(xrows):
    """What EXPLAIN ANALYZE's plan says ran, in a few words."""
    x = explain_summary("quickstart", xrows)[0]
    g = x.get("gpupreagg")
    if g and g.get("Engine") == "PostgreSQL (fallback)":
        return "GpuPreAgg fell back to PostgreSQL: %s" % g.get("Fallback Reason")
    if g:
        n = len(x.get("join_depths", []))
        return "GpuPreAgg on the %s engine, %d join depth%s" % (g.get("Engine"), n, "" if n == 1 else "s")
    scans = [n for n in x["nodes"] if n == "GpuScan"]
    return "PostgreSQL%s (pg_warp: %s)" % (" over a GpuScan" if scans else "",
                                            x.get("pg_warp", "no reason given"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-d", "--dbname", default=os.environ.get("PGDATABASE"))
    ap.add_argument("-a", "--arrow", help="lineorder as an Arrow file (default: the heap table)")
    ap.add_argument("-q", "--queries", default="q1.1,q2.1,q3.1")
    ap.add_argument("-w", "--workers", type=int, default=os.cpu_count() or 2,
                    help="parallel workers (default: the CPU count)")
    ap.add_argument("-r", "--runs", type=int, default=2, help="measured runs (best printed)")
    args = ap.parse_args()
    path = "public"
    if args.arrow:
        args.arrow = os.path.abspath(args.arrow)
        setup_database(args, SCHEMA)
        path = SCHEMA + ", public"
    queries = load_queries(set(args.queries.split(",")))
    common = "SET search_path = %s; SET jit = off; SET max_parallel_workers_per_gather = %d; " \
             % (path, args.workers)
    off = PgSession(args.dbname, common + "SET pg_warp.enabled = off;\n\\timing on")
    on = PgSession(args.dbname, common + "SET pg_warp.enabled = on;\n\\timing on")
    print("lineorder: %s; %d workers; best of %d runs" % (
        "Arrow file %s" % args.arrow if args.arrow else "heap table", args.workers, args.runs))
    print("%-6s %13s %13s  %s" % ("query", "pg_warp off", "pg_warp on", "what ran with pg_warp on"))
    status = 0
    for q, sql, _, _ in queries:
        t_off, a_off = best_run(off, sql, args.runs)
        t_on, a_on = best_run(on, sql, args.runs)
        xrows, _, err = on.run("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " + sql + ";")
        what = "EXPLAIN ANALYZE failed: %s" % err if err else what_ran(xrows)
        if a_on != a_off:
            what += "  *** ANSWERS DIFFER ***"
            status = 1
        print("%-6s %11.3f s %11.3f s  %s" % (q.upper(), t_off, t_on, what), flush=True)
    off.close()
    on.close()
    sys.exit(status)


if __name__ == "__main__":
    main()
