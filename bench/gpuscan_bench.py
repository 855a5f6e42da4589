#!/usr/bin/env python3
"""GpuScan against arrow_fdw's scan and a heap table (a timing check, not a test).

Writes a synthetic lineorder-like Arrow file of N rows (record batches of 64 Ki
rows, no statistics, so every batch is read) and the same rows into a heap
table, then times a selective scan whose passing rows feed PostgreSQL's own
aggregate (GpuPreAgg off, so the scan is what differs):

    SELECT count(*), sum(lo_extendedprice), max(lo_orderdate) FROM
      (SELECT lo_orderdate, lo_extendedprice FROM T
       WHERE lo_discount = 2 AND lo_quantity < 5 OFFSET 0) s

on: GpuScan (the warp service's CPU engine filters, only passing rows come
back), the arrow_fdw Foreign Scan (pg_warp.enable_gpuscan off: the backend's
engine filter), the Foreign Scan with pg_warp.enabled off (PostgreSQL
evaluates the quals), and the heap table; each serially (no parallel
workers) and with -w parallel workers.  One unmeasured run each, then the
best of R runs.  All answers must agree; prints one JSON object.

    bench/gpuscan_bench.py -n 10000000 -r 3 -w 2

Connection: the PG* environment variables.
"""
import argparse
import json
import sys

from scan_bench_common import LINEORDER_COLS, best_of, lineorder_file, psql

INNER = ("SELECT lo_orderdate, lo_extendedprice FROM %s "
         "WHERE lo_discount = 2 AND lo_quantity < 5 OFFSET 0")
QUERY = "SELECT count(*), sum(lo_extendedprice), max(lo_orderdate) FROM (%s) s" % INNER

CASES = [
    ("gpuscan", "gs_bench", ""),
    ("arrow_fdw", "gs_bench", "SET pg_warp.enable_gpuscan = off; "),
    ("arrow_fdw_engine_off", "gs_bench", "SET pg_warp.enabled = off; "),
    ("heap", "gs_bench_heap", ""),
]


def timed(table, settings, workers, runs):
    prefix = ("SET pg_warp.enable_gpupreagg = off; SET max_parallel_workers_per_gather = %d; "
              "SET parallel_setup_cost = 0; %s" % (workers, settings))
    plan = psql(prefix + "EXPLAIN (COSTS OFF) " + QUERY % table)
    best, answer = best_of(prefix + QUERY % table, runs)
    scan = [ln.strip() for ln in plan.split("\n") if "Scan" in ln]
    return best, answer, scan[0] if scan else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=10000000, help="rows")
    ap.add_argument("-r", type=int, default=3, help="measured runs")
    ap.add_argument("-w", type=int, default=2, help="parallel workers of the parallel runs")
    a = ap.parse_args()
    out = {"rows": a.n, "query": QUERY % "T", "runs": {}}
    with lineorder_file(a.n, "pg_warp_gsbench.") as path:
        psql("CREATE EXTENSION IF NOT EXISTS pg_warp; DROP FOREIGN TABLE IF EXISTS gs_bench; "
             "CREATE FOREIGN TABLE gs_bench (%s) SERVER arrow_fdw "
             "OPTIONS (file '%s'); DROP TABLE IF EXISTS gs_bench_heap; "
             "CREATE TABLE gs_bench_heap AS SELECT * FROM gs_bench; "
             "VACUUM ANALYZE gs_bench_heap" % (LINEORDER_COLS, path))
        answers = set()
        for workers in (0, a.w):
            for name, table, settings in CASES:
                best, answer, scan = timed(table, settings, workers, a.r)
                answers.add(answer)
                out["runs"]["%s_w%d" % (name, workers)] = {"s": round(best, 4), "plan": scan}
        psql("DROP FOREIGN TABLE gs_bench; DROP TABLE gs_bench_heap")
    if len(answers) != 1:
        sys.exit("answers differ: %s" % answers)
    out["answer"] = answers.pop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
