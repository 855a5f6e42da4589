#!/usr/bin/env python3
"""HyperLogLog benchmark (doc/hll.md, "Accuracy and speed"): pg_warp's hll_count
beside the postgresql-hll extension (Debian's postgresql-15-hll) in the same
cluster, and hll_count beside count(DISTINCT).

Accuracy: the relative error (estimate - n) / n at n = 10^MIN_EXP .. 10^MAX_EXP
distinct int8 values, over many independent trials per decade, of

    pg_warp          pgwarp.hll_sketch(v) / hll_merge          2^p registers of 6 bits
    postgresql-hll   hll_add_agg(hll_hash_bigint(v), p, 5)     2^p registers of 5 bits
                     / hll_union_agg, hll_cardinality

(p = 14 by default: 16384 registers on both sides; ours serializes to 12 KiB,
theirs to 10 KiB.  Its 5-bit registers hold ranks up to 31: at 10^9 values a
register passes that with probability 3e-5, so the width costs it nothing
here; its regwidth 6 returns NaN for large sets, citusdata/postgresql-hll#15.)
Both sides get the same int8 values and hash them with their own 64-bit hash
(ours: doc/hll.md "Hashing"; theirs: MurmurHash3 of the 8 bytes).  The values
of trial set s are g = 0, 1, 2, ... mapped by --values:

    random       hashint8extended(g, s)       pseudo-random, distinct
    consecutive  g + s * 2^40                 consecutive integers (keys)

Trials are cheap because they come from disjoint blocks of one stream: a pass
generates N = 10^MAX_EXP values once, sketches every block of 10^BLOCK_EXP
consecutive values once per side (one scan, GROUP BY block), and every decade
10^k >= 10^BLOCK_EXP is estimated from the merges of 10^(k - BLOCK_EXP)
consecutive blocks: one pass gives 10^(MAX_EXP - k) independent trials at 10^k
(disjoint value sets).  Passes repeat with new seeds until --passes or
--max-seconds (--jobs passes at once, in as many sessions, on a bigger
host).  Decades below the block size get their own scans, one query
per decade (GROUP BY trial), --small-trials trials each, and so do the
cardinalities of --extra-n.

Reported per decade and side: trials, mean relative error |err| with its 95%
confidence interval (Student t over the trials), bias (mean signed error)
with its interval, root mean square error; and the paired difference of the
two sides' |err| on the same sets with its interval: "pg_warp worse" or
"better" only when that interval excludes 0 (and there are at least 10
trials), else "no significant difference" (or "too few trials").  The expected mean |err| of an unbiased estimator with standard
error 1.04/sqrt(2^p) is sqrt(2/pi) * 1.04/sqrt(2^p) (0.648 % at p = 14).

Model (unless --model-trials 0; needs numpy): both estimators applied to the
same simulated registers of ideal random hashes, --model-trials trials per
decade 10^4 .. 10^--model-max-exp (10^9 in seconds) and at --model-n: what each estimator
gives when the hash is perfect, and their paired difference, which isolates
the estimators from the hashes.  Its mean error is the black line per decade
of the chart.

Speed (unless --skip-speed): a table of --rows rows (v: 10^6 distinct int8
in scrambled order, k: 5 groups), each query run --runs times (the median
reported), serial and with --workers parallel workers: count(DISTINCT v),
hll_count(v) and postgresql-hll, without and with GROUP BY k.

Output: bench/results/hll_<tag>.json and hll_<tag>_accuracy.png (mean error
and bias per decade with 95% intervals), hll_<tag>_speed.png; --redraw JSON
draws the charts of an earlier run's JSON again (no cluster needed).  The cluster is
the one the PG* variables name; the benchmark works in a database of its own
(hll_bench) that it creates.  Every scan is serial (one core per job).
"""
import argparse
import concurrent.futures
import json
import math
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
SIDES = ("pg_warp", "postgresql_hll")
# Student t, 0.975 quantile, 1 .. 30 degrees of freedom
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
MIN_TRIALS = 10             # fewer trials per decade give no verdict
SESSION = "SET jit = off; SET max_parallel_workers_per_gather = 0; SET work_mem = '256MB'; "


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


# ---------------------------------------------------------------- accuracy

def values_sql(a, seed, count):
    """SELECT g, v for g = 0 .. count - 1: the int8 values of trial set seed."""
    v = ("hashint8extended(g, %d)" % seed if a.values == "random"
         else "g + %d::int8 * 1099511627776" % seed)
    return ("SELECT g, %s AS v FROM (SELECT generate_series(0::int8, %d) AS g) s0"
            % (v, count - 1))


def parse_estimates(out):
    """Rows 'trial|ours|theirs' -> list of (ours, theirs) in trial order."""
    rows = []
    for line in out.splitlines():
        _, x, y = line.split("|")
        rows.append((float(x), float(y)))
    return rows


def small_decade(a, k, n=None):
    """Trials of 10^k values (k < block exponent; or of n values): one scan, GROUP BY trial."""
    n = n or 10 ** k
    trials = max(1, min(a.small_trials, a.small_budget // n))
    sql = (SESSION + "SET pg_warp.hll_registers_bits = %d; "
           "SELECT g / %d AS t, pgwarp.hll_count(v), "
           "hll_cardinality(hll_add_agg(hll_hash_bigint(v), %d, %d)) "
           "FROM (%s) s GROUP BY 1 ORDER BY 1"
           % (a.p, n, a.p, a.regwidth, values_sql(a, 1000 + n % 997, trials * n)))
    return parse_estimates(psql(sql))


def one_pass(a, seed):
    """One pass of 10^max_exp values: {k: [(ours, theirs), ...]} for k >= block_exp."""
    block = 10 ** a.block_exp
    table = "hll_blocks_%d" % seed
    psql(SESSION + "SET pg_warp.hll_registers_bits = %d; "
         "DROP TABLE IF EXISTS %s; "
         "CREATE UNLOGGED TABLE %s AS SELECT g / %d AS blk, "
         "pgwarp.hll_sketch(v) AS ours, hll_add_agg(hll_hash_bigint(v), %d, %d) AS theirs "
         "FROM (%s) s GROUP BY 1"
         % (a.p, table, table, block, a.p, a.regwidth, values_sql(a, seed, 10 ** a.max_exp)))
    got = {}
    for k in range(max(a.block_exp, a.min_exp), a.max_exp + 1):
        per = 10 ** (k - a.block_exp)
        got[k] = parse_estimates(psql(
            SESSION + "SELECT blk / %d AS t, pgwarp.hll_merge(ours), "
            "hll_cardinality(hll_union_agg(theirs)) FROM %s GROUP BY 1 ORDER BY 1"
            % (per, table)))
    psql("DROP TABLE %s" % table)
    return got


def t975(df):
    """The 0.975 quantile of Student's t with df degrees of freedom (approximate past 30)."""
    return T975[df - 1] if df <= 30 else 1.96 + 2.5 / df


def mean_ci(xs):
    """(mean, low, high): the mean of xs and its 95% interval (None without 2 values)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, None, None
    h = t975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - h, m + h


def side_stats(n, estimates):
    """The figures of one side at one decade, from its estimates."""
    err = [(e - n) / n for e in estimates]
    mre, mre_lo, mre_hi = mean_ci([abs(x) for x in err])
    bias, bias_lo, bias_hi = mean_ci(err)
    return {"mre": mre, "mre_ci95": [mre_lo, mre_hi], "bias": bias,
            "bias_ci95": [bias_lo, bias_hi],
            "rmse": math.sqrt(statistics.fmean(x * x for x in err)),
            "max_abs": max(abs(x) for x in err)}


def decade_row(k, pairs, source, keep_raw, n=None):
    """The report of decade 10^k (or of cardinality n) from its (ours, theirs) estimate pairs."""
    n = n or 10 ** k
    row = {"exp": k, "n": n, "trials": len(pairs), "source": source}
    for i, side in enumerate(SIDES):
        row[side] = side_stats(n, [p[i] for p in pairs])
    diff, lo, hi = mean_ci([abs(o - n) / n - abs(t - n) / n for o, t in pairs])
    if len(pairs) < MIN_TRIALS:
        verdict = "too few trials"
    elif lo <= 0 <= hi:
        verdict = "no significant difference"
    else:
        verdict = "pg_warp worse" if lo > 0 else "pg_warp better"
    row["mre_diff"] = {"mean": diff, "ci95": [lo, hi], "verdict": verdict}
    if keep_raw:
        row["estimates"] = {side: [p[i] for p in pairs] for i, side in enumerate(SIDES)}
    return row


def pct(x):
    return "   -   " if x is None else "%7.4f" % (100 * x)


def print_row(r):
    o, t, d = r["pg_warp"], r["postgresql_hll"], r["mre_diff"]
    print("10^%-4g trials %6d | mre %% pg_warp %s [%s,%s] hll %s [%s,%s] | bias %% %s %s | "
          "diff %s [%s,%s] %s"
          % (r["exp"], r["trials"], pct(o["mre"]), pct(o["mre_ci95"][0]), pct(o["mre_ci95"][1]),
             pct(t["mre"]), pct(t["mre_ci95"][0]), pct(t["mre_ci95"][1]),
             pct(o["bias"]), pct(t["bias"]), pct(d["mean"]), pct(d["ci95"][0]),
             pct(d["ci95"][1]), d["verdict"]), flush=True)


def accuracy(a):
    """Every decade's report (see the header), and how the passes went."""
    pairs, source = {}, {}                  # by cardinality
    t0 = time.time()
    for k in range(a.min_exp, min(a.block_exp, a.max_exp + 1)):
        pairs[10 ** k] = small_decade(a, k)
        source[10 ** k] = "own scan, %d trials of 10^%d values" % (len(pairs[10 ** k]), k)
        print("10^%d: %d trials (%.0f s)" % (k, len(pairs[10 ** k]), time.time() - t0), flush=True)
    for n in [int(x) for x in a.extra_n.split(",") if x]:
        pairs[n] = small_decade(a, None, n)
        source[n] = "own scan, %d trials of %d values" % (len(pairs[n]), n)
    passes = 0
    t1 = time.time()
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        while passes < a.passes and (passes == 0 or time.time() - t1 < a.max_seconds):
            count = min(a.jobs, a.passes - passes)
            for got in pool.map(lambda seed: one_pass(a, seed),
                                range(passes + 1, passes + count + 1)):
                for k, rows in got.items():
                    pairs.setdefault(10 ** k, []).extend(rows)
            passes += count
            print("passes 1..%d: 10^%d values each, %.0f s so far"
                  % (passes, a.max_exp, time.time() - t1), flush=True)
    for k in range(max(a.block_exp, a.min_exp), a.max_exp + 1):
        source[10 ** k] = ("%d passes of 10^%d values in blocks of 10^%d, merges of %d blocks"
                           % (passes, a.max_exp, a.block_exp, 10 ** (k - a.block_exp)))
    rows = []
    for n in sorted(pairs):
        rows.append(decade_row(round(math.log10(n), 2), pairs[n], source[n],
                               len(pairs[n]) <= a.keep_raw, n))
        print_row(rows[-1])
    return rows, {"passes": passes, "pass_seconds": round(time.time() - t1, 1),
                  "total_seconds": round(time.time() - t0, 1)}


# ---------------------------------------------------------------- model

def ertl_sigma(x):
    """sigma of Ertl's estimator, as hll_sketch.c computes it."""
    if x == 1.0:
        return math.inf
    y, z = 1.0, x
    while True:
        x *= x
        prev, z = z, z + x * y
        y += y
        if z == prev:
            return z


def ertl_tau(x):
    """tau of Ertl's estimator, as hll_sketch.c computes it."""
    if x in (0.0, 1.0):
        return 0.0
    y, z = 1.0, 1.0 - x
    while True:
        x = math.sqrt(x)
        y *= 0.5
        prev, z = z, z - (1.0 - x) * (1.0 - x) * y
        if z == prev:
            return z / 3.0


def model_ours(counts, p):
    """hll_estimate() of a dense sketch from its register histogram counts[0 .. 65 - p]."""
    q, m = 64 - p, float(1 << p)
    z = m * ertl_tau((m - counts[q + 1]) / m)
    for k in range(q, 0, -1):
        z = 0.5 * (z + counts[k])
    z += m * ertl_sigma(counts[0] / m)
    return m * m / (2.0 * math.log(2.0) * z)


def model_theirs(counts, p):
    """postgresql-hll's estimate of compressed registers (the HyperLogLog paper's raw
    estimate with alpha_m, linear counting below 5m/2 while a register is 0; its
    large-range correction starts past 10^11 at p = 14, so it is left out)."""
    m = 1 << p
    raw = 0.7213 / (1 + 1.079 / m) * m * m / sum(c * 2.0 ** -r for r, c in enumerate(counts))
    if counts[0] and raw < 2.5 * m:
        return m * math.log(m / counts[0])
    return raw


def model(a):
    """Both estimators on the same simulated registers of ideal hashes (numpy).

    Per trial and register: its count of values k (multinomial over the 2^p
    registers), and its rank, the maximum of k geometric ranks, drawn by
    inversion: P(rank <= r) = (1 - 2^-r)^k.  Ours keeps ranks up to 65 - p,
    postgresql-hll up to 2^regwidth - 1.  With the same registers the
    difference of the two sides is the estimators' alone; what a real run
    adds is the hashes'.
    """
    try:
        import numpy as np
    except ImportError:
        print("model: numpy is missing, skipped", flush=True)
        return None
    rng = np.random.default_rng(a.model_seed)
    m, rows = 1 << a.p, []
    points = [10 ** k for k in range(max(a.min_exp, 4), a.model_max_exp + 1)]
    for n in sorted(points + [int(x) for x in a.model_n.split(",") if x]):
        pairs = []
        for done in range(0, a.model_trials, 100):
            cnt = rng.multinomial(n, np.full(m, 1.0 / m), size=min(100, a.model_trials - done))
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.ceil(-np.log2(-np.expm1(np.log(rng.random(cnt.shape)) / cnt)))
            r = np.where(cnt == 0, 0, np.maximum(r, 1)).astype(np.int64)
            for regs in r:
                ours = np.bincount(np.minimum(regs, 65 - a.p), minlength=66 - a.p)
                theirs = np.bincount(np.minimum(regs, 2 ** a.regwidth - 1),
                                     minlength=2 ** a.regwidth)
                pairs.append((model_ours([int(c) for c in ours], a.p),
                              model_theirs([int(c) for c in theirs], a.p)))
        rows.append(decade_row(round(math.log10(n), 2), pairs,
                               "model: ideal hashes, same registers for both", False, n))
        print("model n=%-11d" % n, end="")
        print_row(rows[-1])
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


def _bar(c, x, y_of, mean, lo, hi, rgb):
    """One side's mean (a square) and 95% interval (a capped vertical line)."""
    if lo is not None:
        y0, y1 = y_of(hi), y_of(lo)
        c.rect(x - 1, y0, x + 1, y1 + 1, rgb)
        c.rect(x - 5, y0, x + 5, y0 + 2, rgb)
        c.rect(x - 5, y1 - 1, x + 5, y1 + 1, rgb)
    y = y_of(mean)
    c.rect(x - 4, y - 4, x + 4, y + 4, rgb)


def _panel(c, rows, key, ci_key, top_y, height, lo_v, hi_v, left, width, title, ref=None):
    """A panel: per decade both sides' key (in %) with its interval, between lo_v and hi_v."""
    def y_of(v):
        v = min(max(v, lo_v), hi_v)
        return int(top_y + height * (hi_v - v) / (hi_v - lo_v))
    base = y_of(max(lo_v, 0.0) if lo_v < 0 < hi_v else lo_v)
    c.rect(left - 2, top_y, left, top_y + height, (0, 0, 0))
    c.rect(left - 2, base, left + width, base + 1, (0, 0, 0))
    c.text(4, top_y, "%.2f%%" % (100 * hi_v))
    c.text(4, top_y + height - 10, "%.2f%%" % (100 * lo_v))
    c.text(left + 10, top_y - 16, title)
    if ref is not None:
        for x in range(left, left + width, 12):
            c.rect(x, y_of(ref), x + 6, y_of(ref) + 1, (200, 80, 60))
        c.text(4, y_of(ref) - 5, "%.2f%%" % (100 * ref), rgb=(200, 80, 60))
    colors = [(40, 110, 200), (110, 110, 110)]
    for i, r in enumerate(rows):
        x = left + 40 + 80 * i
        for j, side in enumerate(SIDES):
            s = r[side]
            _bar(c, x - 12 + 24 * j, y_of, s[key], s[ci_key][0], s[ci_key][1], colors[j])
    return colors


def draw_accuracy(rows, model_rows, a, path):
    """The accuracy chart: mean |error| and bias per decade with 95% intervals,
    the model's mean |error| (ideal hashes, ours) as a black line per decade."""
    left = 70
    width = max(80 * len(rows), 480)    # room for the panel titles and the legend
    c = Canvas(left + width + 20, 600)
    top = max(max(r[s]["mre_ci95"][1] or r[s]["mre"] for s in SIDES) for r in rows)
    ref = math.sqrt(2 / math.pi) * 1.04 / math.sqrt(2 ** a.p)
    top = min(max(top * 1.1, 1.2 * ref), 4 * ref)       # longer intervals are clipped
    colors = _panel(c, rows, "mre", "mre_ci95", 50, 220, 0.0, top, left, width,
                    "MEAN REL ERROR, 95% CI (DASHED: 1.04/SQRT(M), BLACK: MODEL)", ref)
    b = max(max(max(abs(r[s]["bias_ci95"][0] or 0), abs(r[s]["bias_ci95"][1] or 0),
                    abs(r[s]["bias"])) for s in SIDES) for r in rows)
    b = min(max(b * 1.1, 0.001), 4 * ref)
    for mr in model_rows or []:
        for i, r in enumerate(rows):
            if r["exp"] == mr["exp"]:
                y = int(50 + 220 * (top - min(mr["pg_warp"]["mre"], top)) / top)
                c.rect(left + 40 + 80 * i - 20, y, left + 40 + 80 * i + 20, y + 2, (0, 0, 0))
    _panel(c, rows, "bias", "bias_ci95", 330, 220, -b, b, left, width,
           "BIAS (MEAN SIGNED ERROR), 95% CI")
    for i, r in enumerate(rows):
        x = left + 40 + 80 * i
        c.text(x - 12, 560, "1E%d" % r["exp"] if r["exp"] == int(r["exp"]) else str(r["n"]))
        c.text(x - 20, 574, "N=%d" % r["trials"])
    c.text(4, 6, "HLL P=%d %s VALUES" % (a.p, a.values.upper()))
    c.rect(left + 200, 6, left + 212, 16, colors[0])
    c.text(left + 218, 6, "PG WARP")
    c.rect(left + 290, 6, left + 302, 16, colors[1])
    c.text(left + 308, 6, "POSTGRESQL-HLL")
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
    ap.add_argument("--regwidth", type=int, default=5, help="postgresql-hll's register bits")
    ap.add_argument("--values", choices=("random", "consecutive"), default="random")
    ap.add_argument("--min-exp", type=int, default=0)
    ap.add_argument("--max-exp", type=int, default=8,
                    help="largest cardinality 10^N, also the values of one pass")
    ap.add_argument("--block-exp", type=int, default=5,
                    help="passes sketch blocks of 10^N values; smaller decades get own scans")
    ap.add_argument("--passes", type=int, default=20, help="most passes")
    ap.add_argument("--jobs", type=int, default=1,
                    help="passes run at once, each in its own session (a core each)")
    ap.add_argument("--max-seconds", type=float, default=600,
                    help="no new pass starts after this many seconds of passes")
    ap.add_argument("--small-trials", type=int, default=2000,
                    help="trials per decade below the block size")
    ap.add_argument("--small-budget", type=int, default=20000000,
                    help="most values per decade below the block size")
    ap.add_argument("--extra-n", default="40000",
                    help="more cardinalities (own scans), comma-separated: 40000 is where "
                    "postgresql-hll leaves linear counting at p = 14")
    ap.add_argument("--keep-raw", type=int, default=2000,
                    help="keep the estimates in the JSON for decades with at most N trials")
    ap.add_argument("--model-trials", type=int, default=2000,
                    help="trials per decade of the ideal-hash model (0: none)")
    ap.add_argument("--model-max-exp", type=int, default=9, help="the model's largest decade")
    ap.add_argument("--model-seed", type=int, default=1)
    ap.add_argument("--model-n", default="20000,40000,45000,60000,80000",
                    help="more cardinalities for the model, comma-separated (between the "
                    "decades: postgresql-hll leaves linear counting at 2.5 * 2^p)")
    ap.add_argument("--rows", type=int, default=10000000, help="rows of the speed table")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2, help="parallel workers of the speed runs")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--redraw", metavar="JSON", help="only draw the charts of this result file")
    a = ap.parse_args()
    outdir = os.path.join(HERE, "results")
    if a.redraw:
        with open(a.redraw) as f:
            res = json.load(f)
        a.p, a.values = res["p"], res["values"]
        draw_accuracy(res["accuracy"], res.get("model"), a,
                      os.path.join(outdir, "hll_%s_accuracy.png" % res["tag"]))
        if res.get("speed"):
            draw_speed(res["speed"], os.path.join(outdir, "hll_%s_speed.png" % res["tag"]))
        return
    if not a.min_exp <= a.max_exp or not 0 <= a.block_exp <= a.max_exp:
        ap.error("want --min-exp <= --max-exp and 0 <= --block-exp <= --max-exp")
    setup()
    res = {"tag": a.tag, "host": platform.node(), "cpus": os.cpu_count(),
           "server_version": psql("SHOW server_version"),
           "postgresql_hll_version": psql("SELECT extversion FROM pg_extension WHERE extname = 'hll'"),
           "p": a.p, "registers": 2 ** a.p,
           "register_bits": {"pg_warp": 6, "postgresql_hll": a.regwidth},
           "values": a.values,
           "expected_mre_unbiased": math.sqrt(2 / math.pi) * 1.04 / math.sqrt(2 ** a.p),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    res["accuracy"], res["accuracy_run"] = accuracy(a)
    if a.model_trials > 0:
        res["model"] = model(a)
    if not a.skip_speed:
        res["speed_rows"] = a.rows
        res["speed"] = speed(a)
    with open(os.path.join(outdir, "hll_%s.json" % a.tag), "w") as f:
        json.dump(res, f, indent=1)
    draw_accuracy(res["accuracy"], res.get("model"), a, os.path.join(outdir, "hll_%s_accuracy.png" % a.tag))
    if not a.skip_speed:
        draw_speed(res["speed"], os.path.join(outdir, "hll_%s_speed.png" % a.tag))


if __name__ == "__main__":
    main()
