#!/usr/bin/env python3
"""
Which default record batch size (pg2arrow -s) serves arrow_fdw best: for
each size, export a table with -S (min/max statistics) and time the export,
a selective scan (a range of the sorted key: statistics skip batches) and a
full scan.  Issue 27, item 11.

    bench/pg2arrow_batch_size.py [--rows 5000000] [--sizes 256m,64m,16m]
                                 [--dir /tmp/p2a_bs] [--repeat 3]

Needs a running cluster with pg_warp (PGHOST, PGPORT, PGUSER), pg2arrow in
PG_WARP_TOOLS (or tools/bin), and a directory the server can read.  Prints
one Markdown table row per size: file size, batches, export seconds, the
median of --repeat runs of each query (ms; as configured, and with
pg_warp.enabled off: arrow_fdw alone) and the batches the selective query
skipped (from EXPLAIN ANALYZE of a serial plan).
"""
import argparse
import os
import re
import statistics
import subprocess
import time

import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.environ.get("PG_WARP_TOOLS", os.path.join(ROOT, "tools", "bin"))


def psql(sql):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def timed_query(sql, repeat):
    """Median milliseconds of sql (psql's \\timing, one session per run)."""
    times = []
    for _ in range(repeat):
        r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"],
                           input="\\timing on\n" + sql + ";\n",
                           capture_output=True, text=True, check=True)
        times.append(float(re.findall(r"Time: ([0-9.]+) ms", r.stdout)[-1]))
    return statistics.median(times)


def setup_table(rows):
    have = psql("SELECT count(*) FROM pg_class WHERE relname = 'bs_src'")
    if have == "1" and psql("SELECT count(*) FROM bs_src") == str(rows):
        return
    psql("DROP TABLE IF EXISTS bs_src")
    psql("CREATE TABLE bs_src AS SELECT i::int8 AS id,"
         " timestamp '2026-01-01' + i * interval '1 second' AS ts,"
         " (random() * 1000)::int4 AS a, random() * 100 AS b,"
         " md5(i::text) || 'x' AS s"
         " FROM generate_series(1, %d) i" % rows)
    psql("VACUUM ANALYZE bs_src")


def one_size(size, rows, d, repeat):
    path = os.path.join(d, "bs_%s.arrow" % size)
    t0 = time.monotonic()
    subprocess.run([os.path.join(TOOLS, "pg2arrow"), "-t", "bs_src", "-S", "-s", size,
                    "-o", path], check=True)
    export_s = time.monotonic() - t0
    os.chmod(path, 0o644)
    psql("DROP FOREIGN TABLE IF EXISTS bs_ft; CREATE FOREIGN TABLE bs_ft (id int8, ts timestamp,"
         " a int4, b float8, s text) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    lo = rows // 2
    sel = ("SELECT count(*), sum(a) FROM bs_ft WHERE id BETWEEN %d AND %d"
           % (lo, lo + rows // 100))
    full = "SELECT count(*), sum(a) FROM bs_ft WHERE b > 50"
    plan = psql("SET max_parallel_workers_per_gather = 0; EXPLAIN (ANALYZE, VERBOSE) " + sel)
    off = "SET pg_warp.enabled = off; "
    # the top plan node's count (GpuPreAgg, or the Foreign Scan without the engine)
    skipped = re.search(r"Batches Skipped(?: by Statistics)?: ([0-9]+)", plan)
    skipped = int(skipped.group(1)) if skipped else 0
    with pa.ipc.open_file(path) as f:
        batches = f.num_record_batches
    return {"size": size, "mb": os.path.getsize(path) / 1e6, "batches": batches,
            "export": export_s, "sel": timed_query(sel, repeat),
            "full": timed_query(full, repeat), "sel_off": timed_query(off + sel, repeat),
            "full_off": timed_query(off + full, repeat), "skipped": skipped, "plan": plan}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5000000)
    ap.add_argument("--sizes", default="256m,128m,64m,32m,16m,8m,4m,1m")
    ap.add_argument("--dir", default="/tmp/p2a_bs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--show-plan", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    os.chmod(args.dir, 0o755)
    setup_table(args.rows)
    print("| -s | file MB | batches | skipped (1 % range) | export s | range query ms"
          " | range, pg_warp.enabled off | full scan ms | full, off |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for size in args.sizes.split(","):
        r = one_size(size, args.rows, args.dir, args.repeat)
        print("| %s | %.0f | %s | %s | %.1f | %.0f | %.0f | %.0f | %.0f |" % (
            r["size"], r["mb"], r["batches"], r["skipped"], r["export"], r["sel"],
            r["sel_off"], r["full"], r["full_off"]), flush=True)
        if args.show_plan:
            print(r["plan"])
        os.unlink(os.path.join(args.dir, "bs_%s.arrow" % size))


if __name__ == "__main__":
    main()
