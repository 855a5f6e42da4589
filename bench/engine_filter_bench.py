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
import os
import shutil
import subprocess
import sys
import tempfile
import time

QUERY = ("SELECT count(*) FROM engine_bench WHERE lo_orderdate >= 19930101 "
         "AND lo_orderdate < 19940101 AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25")


def psql(sql):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], input=sql,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("psql failed: %s\n%s" % (sql[:200], r.stderr))
    return r.stdout.strip()


def make_file(path, n):
    import pyarrow as pa
    import pyarrow.compute as pc

    def ints(lo, hi, seed):
        """n uniform integers in [lo, hi) (pyarrow's seeded uniform doubles)."""
        u = pc.random(n, initializer=seed)
        return pc.cast(pc.floor(pc.add(pc.multiply(u, hi - lo), lo)), pa.int64())

    date = pc.add(pc.add(pc.multiply(ints(1992, 1999, 1), 10000),
                         pc.multiply(ints(1, 13, 2), 100)), ints(1, 29, 3))
    table = pa.table({
        "lo_orderdate": pc.cast(date, pa.int32()),
        "lo_discount": pc.cast(ints(0, 11, 4), pa.int32()),
        "lo_quantity": pc.cast(ints(1, 51, 5), pa.int32()),
        "lo_extendedprice": ints(90000, 10000000, 6),
    })
    with pa.ipc.new_file(path, table.schema) as w:
        for b in table.to_batches(max_chunksize=65536):
            w.write_batch(b)
    os.chmod(path, 0o644)


def timed(enabled, runs):
    best, answer = None, None
    for i in range(runs + 1):
        t0 = time.perf_counter()
        answer = psql("SET max_parallel_workers_per_gather = 0; SET pg_warp.enabled = %s; %s"
                      % (enabled, QUERY))
        dt = time.perf_counter() - t0
        if i > 0:
            best = dt if best is None else min(best, dt)
    return best, answer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4000000, help="rows")
    ap.add_argument("-r", type=int, default=3, help="measured runs")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="pg_warp_engbench.")
    os.chmod(d, 0o755)
    try:
        path = os.path.join(d, "lineorder.arrow")
        make_file(path, a.n)
        psql("CREATE EXTENSION IF NOT EXISTS pg_warp; DROP FOREIGN TABLE IF EXISTS engine_bench; "
             "CREATE FOREIGN TABLE engine_bench (lo_orderdate int4, lo_discount int4, "
             "lo_quantity int4, lo_extendedprice int8) SERVER arrow_fdw "
             "OPTIONS (file '%s')" % path)
        on, n_on = timed("on", a.r)
        off, n_off = timed("off", a.r)
        psql("DROP FOREIGN TABLE engine_bench")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if n_on != n_off:
        sys.exit("answers differ: on %s, off %s" % (n_on, n_off))
    print(json.dumps({"rows": a.n, "count": int(n_on), "enabled_on_s": round(on, 4),
                      "enabled_off_s": round(off, 4), "speedup": round(off / on, 2)}))


if __name__ == "__main__":
    main()
