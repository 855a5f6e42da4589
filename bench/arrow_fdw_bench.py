#!/usr/bin/env python3
"""arrow_fdw vs heap on SSB lineorder (a benchmark, not a test).

Runs Q1.1's filter as one aggregate,

    SELECT sum(lo_revenue) FROM T WHERE lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25

once on the heap table `lineorder` and once on an arrow_fdw foreign table over the
Arrow export of the same table, with the same max_parallel_workers_per_gather, warm
cache (one unmeasured run first), N measured runs each.  Reports rows/s, GB/s, bytes
read against the size of the referenced columns and of the whole file, and checks that
both answers are equal.  Writes bench/results/arrow_fdw_<tag>.json and .png.

Full run (SSB loaded by bench/ssb/load.sh from branch ssb, which also exports
lineorder with pg2arrow; export with statistics: pg2arrow -t lineorder -S):

    bench/arrow_fdw_bench.py -d ssb -a bench/data/ssb-sf10/lineorder.arrow -w 4 -r 5

Small self-contained run (makes a synthetic lineorder of N rows in the database and
its Arrow file with pyarrow, statistics included):

    bench/arrow_fdw_bench.py --small 2000000 -w 2

Connection: the PG* environment variables (PGHOST, PGPORT, PGUSER) and -d.  The
Arrow file must be readable by the server's OS user.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from canvas import Canvas

HERE = os.path.dirname(os.path.abspath(__file__))
QUERY = ("SELECT sum(lo_revenue) FROM {t} "
         "WHERE lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25")
REFERENCED = ["lo_revenue", "lo_discount", "lo_quantity"]


def psql(db, sql, settings=()):
    args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"]
    if db:
        args += ["-d", db]
    script = "".join("SET %s = %s;\n" % kv for kv in settings) + sql
    r = subprocess.run(args, input=script, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("psql failed: %s\n%s" % (sql[:200], r.stderr))
    return r.stdout.strip()


def make_small(db, rows, path):
    """A synthetic lineorder (heap) and the same rows as an Arrow file with statistics."""
    import pyarrow as pa
    psql(db, """DROP TABLE IF EXISTS lineorder;
        CREATE TABLE lineorder AS
        SELECT i::int8 AS lo_orderkey, (i % 7 + 1)::int4 AS lo_linenumber,
               (i * 7919 % 50 + 1)::int4 AS lo_quantity,
               (i * 104729 % 10000000)::int8 AS lo_extendedprice,
               (i * 31 % 11)::int4 AS lo_discount,
               (i * 104729 % 10000000 * (100 - i * 31 % 11) / 100)::int8 AS lo_revenue,
               (19920101 + i % 2500)::int4 AS lo_orderdate,
               (ARRAY['AIR','MAIL','SHIP','TRUCK','RAIL','FOB','REG AIR'])[i % 7 + 1] AS lo_shipmode
          FROM generate_series(0::int8, @LAST@) i;
        VACUUM (FREEZE, ANALYZE) lineorder;""".replace("@LAST@", str(rows - 1)))
    # the Arrow file from the heap table's rows (COPY text -> pyarrow), batches of 1M rows
    tmp = tempfile.NamedTemporaryFile(suffix=".tsv", delete=False)
    tmp.close()
    subprocess.run(["psql", "-XAtq"] + (["-d", db] if db else []) +
                   ["-c", "\\copy (SELECT * FROM lineorder ORDER BY lo_orderkey) TO '%s'" % tmp.name],
                   check=True)
    import pyarrow.csv as pacsv
    names = ["lo_orderkey", "lo_linenumber", "lo_quantity", "lo_extendedprice", "lo_discount",
             "lo_revenue", "lo_orderdate", "lo_shipmode"]
    types = [pa.int64(), pa.int32(), pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int32(), pa.utf8()]
    t = pacsv.read_csv(tmp.name, read_options=pacsv.ReadOptions(column_names=names),
                       parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
                       convert_options=pacsv.ConvertOptions(column_types=dict(zip(names, types))))
    os.unlink(tmp.name)
    with pa.ipc.new_file(path, t.schema) as w:
        for b in t.to_batches(max_chunksize=1 << 20):
            md = {}
            for n, name in enumerate(names[:-1]):
                col = b.column(name)
                import pyarrow.compute as pc
                mm = pc.min_max(col)
                md["pg_warp.min.%d" % n] = str(mm["min"].as_py())
                md["pg_warp.max.%d" % n] = str(mm["max"].as_py())
            w.write_batch(b, custom_metadata=md)
    os.chmod(path, 0o644)


def explain(db, sql, workers):
    settings = [("max_parallel_workers_per_gather", workers), ("jit", "off")]
    out = psql(db, "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, settings)
    return json.loads(out)[0]


def find_scan(plan):
    if plan.get("Node Type") in ("Foreign Scan", "Seq Scan"):
        return plan
    for p in plan.get("Plans", []):
        s = find_scan(p)
        if s:
            return s
    return None


def workers_launched(plan):
    return plan.get("Workers Launched", 0) + sum(workers_launched(p) for p in plan.get("Plans", []))


def run(db, table, workers, runs):
    sql = QUERY.format(t=table)
    settings = [("max_parallel_workers_per_gather", workers), ("jit", "off")]
    answer = psql(db, sql, settings)          # warm-up (cache), and the answer
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        psql(db, sql, settings)
        times.append(time.perf_counter() - t0)
    # connection overhead measured with an empty statement, subtracted
    t0 = time.perf_counter()
    psql(db, "SELECT 1", settings)
    overhead = time.perf_counter() - t0
    ex = explain(db, sql, workers)
    return answer, sorted(times), overhead, ex


def png_bars(path, title_pairs):
    """A minimal PNG bar chart (no plotting library needed): bars of rows/s, labelled."""
    c = Canvas(480, 300)
    top = max(v for _, v in title_pairs) or 1
    colors = [(90, 90, 90), (40, 110, 200)]
    for k, (label, v) in enumerate(title_pairs):
        x0 = 80 + k * 200
        h = int(200 * v / top)
        c.rect(x0, 250 - h, x0 + 120, 250, colors[k % 2])
        c.text(x0, 260, label, scale=3)
        c.text(x0, 250 - h - 20, "%.1fM ROWS/S" % (v / 1e6), scale=2)
    c.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-d", "--dbname", default=os.environ.get("PGDATABASE"))
    ap.add_argument("-a", "--arrow", help="Arrow file (or directory) with lineorder")
    ap.add_argument("-w", "--workers", type=int, default=2,
                    help="parallel workers for both tables (and max_parallel_workers_per_gather)")
    ap.add_argument("-r", "--runs", type=int, default=5)
    ap.add_argument("--small", type=int, metavar="ROWS", help="make a synthetic lineorder of ROWS rows")
    ap.add_argument("--tag", default=None, help="name of the result files (default: from the row count)")
    ap.add_argument("-o", "--outdir", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    db = args.dbname

    if args.small:
        d = tempfile.mkdtemp(prefix="pg_warp_bench.")
        os.chmod(d, 0o755)
        args.arrow = os.path.join(d, "lineorder.arrow")
        print("making lineorder with %d rows and %s" % (args.small, args.arrow))
        make_small(db, args.small, args.arrow)
    if not args.arrow:
        ap.error("give -a ARROW (the Arrow export of lineorder) or --small ROWS")

    psql(db, "CREATE EXTENSION IF NOT EXISTS pg_warp")
    opt = "dir" if os.path.isdir(args.arrow) else "file"
    psql(db, "DROP FOREIGN TABLE IF EXISTS lineorder_arrow; "
             "IMPORT FOREIGN SCHEMA lineorder_arrow FROM SERVER arrow_fdw INTO public "
             "OPTIONS (%s '%s')" % (opt, args.arrow.replace("'", "''")))
    # the same number of workers on both sides: the planner's own choice
    # depends on each table's size, so pin it on both tables
    psql(db, "ALTER TABLE lineorder SET (parallel_workers = %d); "
             "ALTER FOREIGN TABLE lineorder_arrow OPTIONS (ADD parallel_workers '%d')"
             % (args.workers, args.workers))
    rows = int(psql(db, "SELECT reltuples::int8 FROM pg_class WHERE relname = 'lineorder'"))
    if rows <= 0:
        rows = int(psql(db, "SELECT count(*) FROM lineorder"))
    heap_bytes = int(psql(db, "SELECT pg_relation_size('lineorder')"))

    results = {}
    for name, table in (("heap", "lineorder"), ("arrow_fdw", "lineorder_arrow")):
        answer, times, overhead, ex = run(db, table, args.workers, args.runs)
        scan = find_scan(ex["Plan"])
        best = max(min(times) - overhead, 1e-6)
        median = max(times[len(times) // 2] - overhead, 1e-6)
        if name == "heap":
            read = heap_bytes
            extra = {"relation_bytes": heap_bytes}
        else:
            read = int(scan.get("Bytes Read", 0))
            extra = {"bytes_read": read, "batches_read": scan.get("Batches Read"),
                     "batches_skipped": scan.get("Batches Skipped"), "files": scan.get("Files")}
        results[name] = dict(answer=answer, seconds_best=best, seconds_median=median,
                             seconds_all=times, connection_overhead=overhead,
                             rows_per_s=rows / median, gb_per_s=read / median / 1e9,
                             workers_launched=workers_launched(ex["Plan"]),
                             **extra)
        print("%-9s %8.3f s (median of %d)  %10.1f Mrows/s  %6.2f GB/s  answer %s" %
              (name, median, args.runs, rows / median / 1e6, read / median / 1e9, answer))
    if results["heap"]["answer"] != results["arrow_fdw"]["answer"]:
        sys.exit("ANSWERS DIFFER: heap %s, arrow_fdw %s" % (results["heap"]["answer"],
                                                           results["arrow_fdw"]["answer"]))
    arrow_size = (sum(os.path.getsize(os.path.join(args.arrow, f)) for f in os.listdir(args.arrow))
                  if os.path.isdir(args.arrow) else os.path.getsize(args.arrow))
    # size of the referenced columns: EXPLAIN without statistics skipping
    off = psql(db, "EXPLAIN (FORMAT JSON) " + QUERY.format(t="lineorder_arrow"),
               [("pg_warp.arrow_stats_skip", "off")])
    ref_bytes = 0
    import re
    for m in re.finditer(r"read (\d+) of (\d+) bytes", off):
        ref_bytes += int(m.group(1))
    summary = dict(query=QUERY.format(t="<table>"), rows=rows, workers=args.workers, runs=args.runs,
                   arrow_path=args.arrow, arrow_file_bytes=arrow_size, referenced_columns=REFERENCED,
                   referenced_columns_bytes=ref_bytes,
                   arrow_bytes_read_vs_referenced=(results["arrow_fdw"]["bytes_read"] / ref_bytes
                                                   if ref_bytes else None),
                   speedup=results["heap"]["seconds_median"] / results["arrow_fdw"]["seconds_median"],
                   server=psql(db, "SELECT version()"), results=results,
                   when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    os.makedirs(args.outdir, exist_ok=True)
    tag = args.tag or ("small%d" % args.small if args.small else "rows%d" % rows)
    jpath = os.path.join(args.outdir, "arrow_fdw_%s.json" % tag)
    with open(jpath, "w") as f:
        json.dump(summary, f, indent=2)
    png_bars(os.path.join(args.outdir, "arrow_fdw_%s.png" % tag),
             [("HEAP", results["heap"]["rows_per_s"]), ("ARROW", results["arrow_fdw"]["rows_per_s"])])
    print("arrow: read %d bytes; referenced columns %d bytes; file %d bytes; speedup %.2fx" %
          (results["arrow_fdw"]["bytes_read"], ref_bytes, arrow_size, summary["speedup"]))
    print("wrote %s and .png" % jpath)


if __name__ == "__main__":
    main()
