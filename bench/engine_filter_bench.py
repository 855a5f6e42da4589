#!/usr/bin/env python3
"""The engine filter of arrow_fdw scans, on vs off (a timing sanity check, not a test).

Writes a synthetic lineorder-like Arrow file of N rows (no statistics, so every
record batch is read and filtered) and times, serially (no parallel workers),

    SELECT count(*) FROM T WHERE lo_orderdate >= 19930101 AND lo_orderdate < 19940101
                             AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25

with pg_warp.enabled on (the engine filter evaluates the quals per record batch
before any tuple is built) and off (PostgreSQL evaluates them per row): one
unmeasured run each, then the best of R runs.  Checks that both counts agree and
prints one JSON object.

    bench/engine_filter_bench.py -n 4000000 -r 3

Connection: the PG* environment variables.  The file goes to a temporary
directory readable by the server's OS user.
"""
import argparse
import json
import sys

from scan_bench_common import LINEORDER_COLS, best_of, lineorder_file, psql

QUERY = ("SELECT count(*) FROM engine_bench WHERE lo_orderdate >= 19930101 "
         "AND lo_orderdate < 19940101 AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25")


def timed(enabled, runs):
    return best_of("SET max_parallel_workers_per_gather = 0; SET pg_warp.enabled = %s; %s"
                   % (enabled, QUERY), runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4000000, help="rows")
    ap.add_argument("-r", type=int, default=3, help="measured runs")
    a = ap.parse_args()
    with lineorder_file(a.n, "pg_warp_engbench.") as path:
        psql("CREATE EXTENSION IF NOT EXISTS pg_warp; DROP FOREIGN TABLE IF EXISTS engine_bench; "
             "CREATE FOREIGN TABLE engine_bench (%s) SERVER arrow_fdw "
             "OPTIONS (file '%s')" % (LINEORDER_COLS, path))
        on, n_on = timed("on", a.r)
        off, n_off = timed("off", a.r)
        psql("DROP FOREIGN TABLE engine_bench")
    if n_on != n_off:
        sys.exit("answers differ: on %s, off %s" % (n_on, n_off))
    print(json.dumps({"rows": a.n, "count": int(n_on), "enabled_on_s": round(on, 4),
                      "enabled_off_s": round(off, 4), "speedup": round(off / on, 2)}))


if __name__ == "__main__":
    main()
