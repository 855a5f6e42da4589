#!/usr/bin/env python3
"""HyperLogLog benchmark (doc/hll.md, "Accuracy and speed"): pg_warp's hll_count
beside the postgresql-hll extension (Debian's postgresql-15-hll) in the same
cluster, and hll_count beside count(DISTINCT).

Accuracy: for n = 10^0 .. 10^MAX_EXP distinct int8 values (pseudo-random:
hashint8extended(g, seed) over generate_series(1, n), so that every seed is
another set and neither sketch's hash sees structured input), the mean
relative error |estimate - n| / n over the seeds, of
    pgwarp.hll_count(v)                                          p = 14
    hll_cardinality(hll_add_agg(hll_hash_bigint(v), 14, 5))      postgresql-hll
Both keep 2^14 registers.  postgresql-hll packs 5 bits per register (10 KiB;
its regwidth 6 returns NaN for large sets, citusdata/postgresql-hll#15), ours
6 bits (12 KiB serialized: 64-bit hashes need ranks up to 51); both are exact
(explicit lists of hashes) for small sets.  Both aggregates run in one scan of
the same values.  Seeds per decade: --seeds, capped so that a decade scans at
most --budget rows (one seed at least): on a small machine use the defaults,
on a big one raise --max-exp (9) and --budget.

Speed: a table of --rows rows (v: 10^6 distinct int8 in scrambled order, k: 5
groups), each query run --runs times (the median reported), serial
(max_parallel_workers_per_gather = 0) and with --workers parallel workers:
count(DISTINCT v), hll_count(v) and postgresql-hll, without and with GROUP BY k.

Output: bench/results/hll_<tag>.json and hll_<tag>_accuracy.png,
hll_<tag>_speed.png.  The cluster is the one the PG* variables name; the
benchmark works in a database of its own (hll_bench) that it creates.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from canvas import Canvas  # noqa: E402

DB = "hll_bench"
MULT = 2654435761           # scrambles generate_series into a spread-out set


def psql(sql, db=DB):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("psql failed: %s\n%s" % (sql, r.stderr))
    return r.stdout.strip()


def timed(sql, settings):
    """Milliseconds that the server took for sql (psql's \\timing), and its output."""
    script = settings + "\\timing on\n" + sql + ";\n"
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", DB],
                       input=script, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("psql failed: %s\n%s" % (sql, r.stderr))
    ms = [float(x) for x in re.findall(r"^Time: ([0-9.]+) ms", r.stdout, re.M)]
    out = [line for line in r.stdout.splitlines() if not line.startswith("Time:")]
    return ms[-1], out


def setup():
    if psql("SELECT count(*) FROM pg_database WHERE datname = '%s'" % DB, db="postgres") == "0":
        psql("CREATE DATABASE %s" % DB, db="postgres")
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("CREATE EXTENSION IF NOT EXISTS hll")


def accuracy(a):
    rows = []
    for k in range(a.min_exp, a.max_exp + 1):
        n = 10 ** k
        seeds = max(1, min(a.seeds, a.budget // n))
        ours, theirs = [], []
        t0 = time.time()
        for s in range(seeds):
            vals = "SELECT hashint8extended(g, %d) FROM generate_series(1, %d) g" % (s + 1, n)
            out = psql("SET pg_warp.hll_registers_bits = %d; SELECT pgwarp.hll_count(v), "
                       "hll_cardinality(hll_add_agg(hll_hash_bigint(v), %d, 5)) FROM (%s) t(v)"
                       % (a.p, a.p, vals))
            x, y = out.split("|")
            ours.append(int(x))
            theirs.append(float(y))
        row = {"n": n, "seeds": seeds,
               "pg_warp_mre": statistics.mean(abs(e - n) / n for e in ours),
               "postgresql_hll_mre": statistics.mean(abs(e - n) / n for e in theirs),
               "pg_warp": ours, "postgresql_hll": theirs,
               "seconds": round(time.time() - t0, 2)}
        print("n=10^%d seeds=%d  pg_warp %.5f  postgresql-hll %.5f  (%.1f s)"
              % (k, seeds, row["pg_warp_mre"], row["postgresql_hll_mre"], row["seconds"]),
              flush=True)
        rows.append(row)
    return rows


def speed(a):
    psql("DROP TABLE IF EXISTS hll_speed")
    psql("CREATE TABLE hll_speed AS SELECT (g::int8 * %d) %% 1000003 AS v, (g %% 5)::int AS k "
         "FROM generate_series(1, %d) g" % (MULT, a.rows))
    psql("VACUUM ANALYZE hll_speed")
    queries = {
        "count_distinct": "count(DISTINCT v)",
        "pg_warp_hll_count": "pgwarp.hll_count(v)",
        "postgresql_hll": "hll_cardinality(hll_add_agg(hll_hash_bigint(v), 14, 5))",
    }
    out = []
    for workers in (0, a.workers):
        settings = ("SET max_parallel_workers_per_gather = %d;\nSET jit = off;\n" % workers)
        for grouped in (False, True):
            for name, agg in queries.items():
                sql = ("SELECT k, %s FROM hll_speed GROUP BY k ORDER BY k" % agg if grouped
                       else "SELECT %s FROM hll_speed" % agg)
                times, result = [], None
                for _ in range(a.runs):
                    ms, result = timed(sql, settings)
                    times.append(ms)
                row = {"query": name, "group_by": grouped, "workers": workers,
                       "median_ms": statistics.median(times), "runs_ms": times,
                       "rows_per_s": a.rows / (statistics.median(times) / 1000),
                       "result": result}
                print("%-18s group_by=%-5s workers=%d  %8.1f ms  %s"
                      % (name, grouped, workers, row["median_ms"], " ".join(result)[:60]),
                      flush=True)
                out.append(row)
    psql("DROP TABLE hll_speed")
    return out


def draw_accuracy(rows, path):
    W, H, left, base = 140 + 60 * len(rows), 320, 70, 270
    c = Canvas(W, H)
    top = max(max(r["pg_warp_mre"], r["postgresql_hll_mre"]) for r in rows) or 1e-3
    c.rect(left - 2, 30, left, base, (0, 0, 0))
    c.rect(left - 2, base, W - 10, base + 2, (0, 0, 0))
    c.text(4, 30, "%.2f" % (100 * top))
    c.text(4, base - 10, "0")
    c.text(4, 44, "PCT")
    colors = [(40, 110, 200), (120, 120, 120)]
    for i, r in enumerate(rows):
        x = left + 10 + 60 * i
        for j, key in enumerate(("pg_warp_mre", "postgresql_hll_mre")):
            h = int((base - 40) * r[key] / top)
            c.rect(x + 22 * j, base - h, x + 22 * j + 20, base, colors[j])
        c.text(x, base + 8, "1E%d" % round(__import__("math").log10(r["n"])))
    c.text(left + 10, 6, "MEAN REL ERR")
    c.rect(left + 120, 6, left + 132, 16, colors[0])
    c.text(left + 140, 6, "PG WARP")
    c.rect(left + 210, 6, left + 222, 16, colors[1])
    c.text(left + 230, 6, "PG-HLL")
    c.save(path)


def draw_speed(rows, path):
    W, H, left, base = 120 + 75 * 4, 320, 60, 260
    c = Canvas(W, H)
    top = max(r["median_ms"] for r in rows)
    c.rect(left - 2, 30, left, base, (0, 0, 0))
    c.rect(left - 2, base, W - 10, base + 2, (0, 0, 0))
    c.text(4, 30, "%.1f S" % (top / 1000))
    c.text(4, base - 10, "0 S")
    colors = {"count_distinct": (200, 80, 60), "pg_warp_hll_count": (40, 110, 200),
              "postgresql_hll": (120, 120, 120)}
    groups = sorted({(r["workers"], r["group_by"]) for r in rows})
    for i, (workers, grouped) in enumerate(groups):
        x = left + 10 + 75 * i
        for j, r in enumerate(r for r in rows if (r["workers"], r["group_by"]) == (workers, grouped)):
            h = int((base - 40) * r["median_ms"] / top)
            c.rect(x + 20 * j, base - h, x + 20 * j + 18, base, colors[r["query"]])
        c.text(x, base + 8, "W%d" % workers)
        c.text(x, base + 22, "GROUP" if grouped else "ALL")
    for j, (name, label) in enumerate((("count_distinct", "DISTINCT"),
                                       ("pg_warp_hll_count", "PG WARP"),
                                       ("postgresql_hll", "PG-HLL"))):
        c.rect(left + 10 + 110 * j, 6, left + 22 + 110 * j, 16, colors[name])
        c.text(left + 28 + 110 * j, 6, label)
    c.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tag", default="devvm", help="name of the result files")
    ap.add_argument("--p", type=int, default=14, help="precision (log2 of the registers)")
    ap.add_argument("--min-exp", type=int, default=0)
    ap.add_argument("--max-exp", type=int, default=7, help="largest cardinality 10^N")
    ap.add_argument("--seeds", type=int, default=100, help="most seeds per cardinality")
    ap.add_argument("--budget", type=int, default=20000000,
                    help="rows per cardinality decade (seeds = min(seeds, budget / n))")
    ap.add_argument("--rows", type=int, default=10000000, help="rows of the speed table")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2, help="parallel workers of the speed runs")
    ap.add_argument("--skip-speed", action="store_true")
    a = ap.parse_args()
    setup()
    res = {"tag": a.tag, "host": platform.node(), "cpus": os.cpu_count(),
           "server_version": psql("SHOW server_version"),
           "postgresql_hll_version": psql("SELECT extversion FROM pg_extension WHERE extname = 'hll'"),
           "p": a.p, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "accuracy": accuracy(a)}
    if not a.skip_speed:
        res["speed_rows"] = a.rows
        res["speed"] = speed(a)
    outdir = os.path.join(HERE, "results")
    with open(os.path.join(outdir, "hll_%s.json" % a.tag), "w") as f:
        json.dump(res, f, indent=1)
    draw_accuracy(res["accuracy"], os.path.join(outdir, "hll_%s_accuracy.png" % a.tag))
    if not a.skip_speed:
        draw_speed(res["speed"], os.path.join(outdir, "hll_%s_speed.png" % a.tag))


if __name__ == "__main__":
    main()
