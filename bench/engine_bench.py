#!/usr/bin/env python3
"""GpuPreAgg's engine beside PostgreSQL, DuckDB and a pinned host-to-GPU copy (a benchmark, not a test).

Issue 11, item 8, and issue 28, item 6.  Queries on SSB lineorder,

  Q1  SELECT sum(lo_extendedprice * lo_discount) FROM lineorder
      WHERE lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25
  Q2  SELECT lo_orderpriority, lo_shipmode, count(*), sum(lo_revenue),
      avg(lo_quantity), max(lo_supplycost) FROM lineorder GROUP BY 1, 2
  Q3  SELECT lo_orderkey % 600000, count(*), sum(lo_revenue) FROM lineorder
      GROUP BY 1                                   (600,000 groups)
  Q4  SELECT lo_shipmode, lo_orderpriority, count(*) FROM lineorder
      GROUP BY 1, 2                                (text keys alone)

side by side in one run, on (--sides picks a subset, by these names):

  heap      PostgreSQL, heap table public.lineorder, N parallel workers
  arrow_pg  PostgreSQL on an arrow_fdw table over the Arrow file
            (pg_warp.enable_gpupreagg off), the same workers
  warp_gpu  pg_warp GpuPreAgg on the Arrow table, pg_warp.engine = gpu
            (skipped, with a note, when pgwarp.service_status() has no GPU)
  warp_cpu  pg_warp GpuPreAgg on the Arrow table, pg_warp.engine = cpu
  warp_cpu_heap  pg_warp CPU engine on heap: GpuPreAgg over the heap table, its
            pages shipped to the service through shared memory
  warp_gpu_heap  pg_warp GPU on heap: GpuPreAgg over the heap table with
            pg_warp.engine = gpu (the GPU decodes the shipped tuples; skipped, with
            a note, when the service has no GPU)
  duckdb    DuckDB (python package duckdb), N threads, native tables made from
            the Arrow file's columns that the queries need; timed with its own
            clock around execute().fetchall()
  h2d       a pinned host-to-GPU copy (bench/h2d_copy) of as many bytes as the
            query's referenced column buffers take in the Arrow file (from its
            metadata: the sum of those columns' buffer sizes over all batches)

Every PostgreSQL side keeps one psql session (a warm backend) for the whole run.
Per side and query: one unmeasured run (the page cache, and the GPU column
cache of the pg_warp GPU sides: its time is kept as warm_up_s, the first run's
figure; its answer must equal
PostgreSQL heap's, floats and averages within 1e-9 relative), for the
PostgreSQL sides one EXPLAIN ANALYZE (for pg_warp: the engine, rows, bytes, I/O
and engine time, and whether the plan really is GpuPreAgg on the asked engine;
a fallback or PostgreSQL's own plan is reported as such, never as the
engine), then R measured runs interleaved across the sides (the order rotates
each round); medians.  A side that fails is reported with its error and no
number; the run goes on.  A wrong answer is reported loudly and the exit
status is 1.

Reported: seconds, lineorder rows/s, and issue 11's goals over Q1 and Q2,
each met / not met / not measured: GPU on Arrow faster than DuckDB (both
queries), GPU at least 2.5 G rows/s, GPU referenced bytes/s at least 80% of
the pinned copy rate, GPU on heap at least 5x PostgreSQL heap, CPU engine on
Arrow at least 5x PostgreSQL heap; then, for Q3 and Q4 (the CPU engine's hash
aggregation on many groups and on text keys), the CPU engine on Arrow beside
DuckDB and PostgreSQL heap.  --queries picks a subset of the queries.
Results: bench/results/engine_bench_<tag>.json and .png.

    make -C bench h2d_copy        # optional: built on first use when missing
    bench/engine_bench.py -d ssb_sf1 -a /tmp/ssb/lineorder.arrow -w 2 -r 3

With --dict-arrow FILE (lineorder written with lo_shipmode and
lo_orderpriority dictionary-encoded: pg2arrow -t lineorder -S
--dictionary=lo_shipmode,lo_orderpriority), Q4 also runs over that file: the
CPU engine on an arrow_fdw table over it (grouping on the dictionary
indices) and DuckDB on a native table made from the same file, with the
ratio DuckDB / CPU engine.

The database holds SSB (bench/ssb/load.sh) and the extension; the Arrow file is
lineorder exported with statistics (pg2arrow -t lineorder -S), readable by the
server.  Connection: the PG* environment variables and -d (PGOPTIONS sets
settings in every session, e.g. PGOPTIONS="-c pg_warp.engine_startup_cost=0").  DuckDB is a
benchmark dependency only (pip install duckdb); without it that side is
reported as unavailable.  bench/gpu-host.sh engine runs all of this on the GPU
host.
"""
import argparse

from bench_sides import (LABELS, DuckSide, PgSide, add_common_args, check_common_args, compare_answers,
                         fmt_rate,
                         goal_of, measured_runs, open_data, open_sides, png_chart, ratio, result_head,
                         summarise, time_of, warm_up_all, write_results)

SCHEMA = "engine_bench"

QUERIES = [
    ("q1", "SELECT sum(lo_extendedprice * lo_discount) FROM lineorder "
           "WHERE lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25",
     ["lo_extendedprice", "lo_discount", "lo_quantity"]),
    ("q2", "SELECT lo_orderpriority, lo_shipmode, count(*), sum(lo_revenue), "
           "avg(lo_quantity), max(lo_supplycost) FROM lineorder GROUP BY 1, 2",
     ["lo_orderpriority", "lo_shipmode", "lo_revenue", "lo_quantity", "lo_supplycost"]),
    ("q3", "SELECT lo_orderkey % 600000, count(*), sum(lo_revenue) FROM lineorder GROUP BY 1",
     ["lo_orderkey", "lo_revenue"]),
    ("q4", "SELECT lo_shipmode, lo_orderpriority, count(*) FROM lineorder GROUP BY 1, 2",
     ["lo_shipmode", "lo_orderpriority"]),
]
# the queries of issue 11's goals, and those of the CPU engine's hash aggregation (issue 28)
GOAL_QUERIES = ["q1", "q2"]
HASH_QUERIES = ["q3", "q4"]

SIDES = ["heap", "arrow_pg", "warp_gpu", "warp_cpu", "warp_cpu_heap", "warp_gpu_heap", "duckdb",
         "h2d"]
GPU_ROWS_GOAL = 2.5e9


def goals(res, rows):
    """The goals of issue 11 item 8, each over Q1 and Q2 (those of them that ran)."""
    res = {q: res[q] for q in GOAL_QUERIES if q in res}

    def gpu_rows(qres):
        t, why = time_of(qres, "warp_gpu")
        return (rows / t, None) if t else (None, why)
    return [
        goal_of("GPU on Arrow faster than DuckDB (DuckDB s / GPU s > 1)", res,
                lambda qr: ratio(qr, "duckdb", "warp_gpu"), lambda v: v > 1, lambda v: "%.2fx" % v),
        goal_of("GPU on Arrow at least 2.5 G rows/s", res, gpu_rows,
                lambda v: v >= GPU_ROWS_GOAL, lambda v: "%.2f G rows/s" % (v / 1e9)),
        goal_of("GPU moves referenced bytes at >= 80% of the pinned copy rate", res,
                lambda qr: ratio(qr, "h2d", "warp_gpu"), lambda v: v >= 0.8,
                lambda v: "%.0f%%" % (100 * v)),
        goal_of("GPU on heap at least 5x PostgreSQL heap", res,
                lambda qr: ratio(qr, "heap", "warp_gpu_heap"), lambda v: v >= 5, lambda v: "%.2fx" % v),
        goal_of("CPU engine on Arrow at least 5x PostgreSQL heap", res,
                lambda qr: ratio(qr, "heap", "warp_cpu"), lambda v: v >= 5, lambda v: "%.2fx" % v),
    ]


# ---------------------------------------------------------------- output

def hash_comparison(res):
    """For Q3 and Q4: the CPU engine on Arrow, DuckDB and PostgreSQL heap
    (medians), and the ratios DuckDB / CPU engine and heap / CPU engine."""
    out = []
    for q in HASH_QUERIES:
        if q not in res:
            continue
        row = {"query": q}
        for side in ("warp_cpu", "duckdb", "heap"):
            row[side], row[side + "_why"] = time_of(res[q], side)
        row["duckdb_vs_cpu"], _ = ratio(res[q], "duckdb", "warp_cpu")
        row["heap_vs_cpu"], _ = ratio(res[q], "heap", "warp_cpu")
        out.append(row)
    return out


def print_report(res, goal_list, rows, nbytes, info):
    """Per query a table of the sides (and GpuPreAgg's figures), the goals,
    then the CPU engine's hash aggregation beside DuckDB and PostgreSQL."""
    for q, sql, cols in QUERIES:
        print("\n%s: %s" % (q.upper(), sql))
        print("    referenced columns %s: %.1f MB in the Arrow file" % (", ".join(cols), nbytes[q] / 1e6))
        print("    %-29s %-16s %9s %10s %8s %9s  %s" % ("side", "status", "median s", "rows/s",
                                                        "vs heap", "ref GB/s", "runs (s) / note"))
        for side in SIDES:
            e = res[q].get(side)
            if e is None:
                continue
            med = "%9.4f" % e["median_s"] if "median_s" in e else "%9s" % "-"
            rate = "%10s" % (fmt_rate(e["rows_per_s"]) if "rows_per_s" in e else "-")
            vs = "%7.2fx" % e["speedup_vs_heap"] if "speedup_vs_heap" in e else "%8s" % "-"
            gbs = "%9.2f" % (e["referenced_bytes_per_s"] / 1e9) if "referenced_bytes_per_s" in e \
                else "%9s" % "-"
            runs = " ".join("%.4f" % t for t in e["runs_s"])
            note = e.get("note") or ""
            print("    %-29s %-16s %s %s %s %s  %s%s" % (LABELS[side], e["status"], med, rate, vs, gbs,
                                                         runs, ("; " if runs and note else "") + note))
            x = e.get("explain", {}).get("gpupreagg")
            if x:
                unit = lambda k: " ms" if k.endswith("Time") else " bytes" if k.startswith("Bytes") else ""
                print("    %29s %s" % ("", ", ".join("%s %s%s" % (k, v, unit(k)) for k, v in x.items())))
    print("\nGoals (issue 11 item 8):")
    for g in goal_list:
        parts = []
        for q, p in g["per_query"].items():
            parts.append("%s %s" % (q.upper(), p["shown"] if p["value"] is not None else "-"))
        whys = []
        for p in g["per_query"].values():
            if p["value"] is None and p["why"] not in whys:
                whys.append(p["why"])
        print("  %-13s %s: %s%s" % (g["status"].upper(), g["goal"], ", ".join(parts),
                                    "".join("\n  %13s   (%s)" % ("", w) for w in whys)))
    hash_rows = hash_comparison(res)
    if hash_rows:
        print("\nCPU engine's hash aggregation (issue 28 item 6; ratio > 1: the CPU engine is faster):")
        print("  %-5s %12s %10s %15s %14s %14s" % ("query", "CPU engine s", "DuckDB s", "PostgreSQL s",
                                                  "DuckDB / CPU", "heap / CPU"))
        for h in hash_rows:
            cell = lambda v, f: (f % v) if v is not None else "-"
            print("  %-5s %12s %10s %15s %14s %14s" % (
                h["query"].upper(), cell(h["warp_cpu"], "%.4f"), cell(h["duckdb"], "%.4f"),
                cell(h["heap"], "%.4f"), cell(h["duckdb_vs_cpu"], "%.2fx"),
                cell(h["heap_vs_cpu"], "%.2fx")))
            whys = [h[s + "_why"] for s in ("warp_cpu", "duckdb", "heap") if h[s + "_why"]]
            if whys:
                print("  %5s (%s)" % ("", "; ".join(whys)))


# ---------------------------------------------------------------- Q4 over a dictionary file

DICT_COLUMNS = ["lo_shipmode", "lo_orderpriority"]
DICT_Q4 = "SELECT lo_shipmode, lo_orderpriority, count(*) FROM %s GROUP BY 1, 2"


def dict_q4(args, ref_rows):
    """Q4 over --dict-arrow (lineorder's shipmode and orderpriority written
    dictionary-encoded, e.g. pg2arrow --dictionary=lo_shipmode,lo_orderpriority):
    the CPU engine on an arrow_fdw table over it (the engine groups on the
    indices, src/xpu/xpu_agg_index.h) and DuckDB on a native table made from
    the same file; one unmeasured run each (its answer must be Q4's), then
    args.runs runs interleaved; medians and DuckDB / CPU engine."""
    table = "%s.lineorder_dict" % SCHEMA
    setup = PgSide("warp_cpu", args, SCHEMA)
    _, _, err = setup.run("DROP FOREIGN TABLE IF EXISTS %s; CREATE FOREIGN TABLE %s "
                          "(lo_shipmode text, lo_orderpriority text) SERVER arrow_fdw "
                          "OPTIONS (file '%s')" % (table, table, args.dict_arrow))
    setup.close()
    out = {"file": args.dict_arrow, "sql": DICT_Q4 % "lineorder_dict"}
    if err:
        out["error"] = err
        print("\nQ4 over the dictionary file: %s" % err)
        return out
    sides = {"warp_cpu": PgSide("warp_cpu", args, SCHEMA)}
    try:
        duck = DuckSide(args.workers)
        duck.load_arrow("lineorder_dict", args.dict_arrow, DICT_COLUMNS)
        sides["duckdb"] = duck
    except Exception as e:              # duckdb missing, or its own errors
        out["duckdb_error"] = "%s: %s" % (type(e).__name__, e)
    times = {s: [] for s in sides}
    for rnd in range(args.runs + 1):
        for side, runner in sides.items():
            rows, secs, err = runner.run(DICT_Q4 % ("lineorder_dict" if side == "duckdb" else table))
            if err:
                out[side + "_error"] = err
                continue
            if rnd == 0 and ref_rows is not None:
                diff = compare_answers(ref_rows, rows if side == "duckdb" else
                                       [tuple(line.split("|")) for line in rows])
                if diff:
                    out[side + "_error"] = "WRONG ANSWER: " + diff
            if rnd > 0:
                times[side].append(secs)
    sides["warp_cpu"].close()
    print("\nQ4 over the dictionary-encoded file %s:" % args.dict_arrow)
    for side in sides:
        t = sorted(times[side])
        out[side + "_runs_s"] = times[side]
        if t and side + "_error" not in out:
            out[side + "_median_s"] = t[len(t) // 2]
        print("  %-28s %s" % (LABELS[side], "%.4f s" % out[side + "_median_s"]
                              if side + "_median_s" in out else out.get(side + "_error", "-")))
    if "warp_cpu_median_s" in out and "duckdb_median_s" in out:
        out["duckdb_vs_cpu"] = out["duckdb_median_s"] / out["warp_cpu_median_s"]
        print("  DuckDB / CPU engine: %.2fx (> 1: the CPU engine is faster)" % out["duckdb_vs_cpu"])
    return out


def main():
    """Options, setup, warm-up, measured rounds, report, JSON and PNG."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="sides: " + ", ".join(SIDES))
    add_common_args(ap, 5, "measured runs per side and query")
    ap.add_argument("--sides", default=",".join(SIDES), help="a comma-separated subset (default: all)")
    ap.add_argument("--queries", default=",".join(q for q, _, _ in QUERIES),
                    help="a comma-separated subset of q1,q2,q3,q4 (default: all)")
    ap.add_argument("--dict-arrow", help="lineorder with lo_shipmode and lo_orderpriority "
                    "dictionary-encoded: Q4 over it too, CPU engine and DuckDB")
    args = ap.parse_args()
    check_common_args(ap, args, SIDES)
    wanted = [q.strip().lower() for q in args.queries.split(",") if q.strip()]
    bad = [q for q in wanted if q not in [name for name, _, _ in QUERIES]]
    if bad or not wanted:
        ap.error("unknown query(ies) %s; queries: %s" % (", ".join(bad),
                                                         ", ".join(q for q, _, _ in QUERIES)))
    QUERIES[:] = [q for q in QUERIES if q[0] in wanted]

    data = open_data(args, SCHEMA, QUERIES)
    heap_rows, nbytes = data["heap_rows"], data["nbytes"]
    res = {q: {} for q, _, _ in QUERIES}

    def make_duck():
        duck = DuckSide(args.workers)
        duck.load_arrow("lineorder", args.arrow, data["columns"])
        return duck
    runners, info = open_sides(args, res, SCHEMA, make_duck)
    print("service: %s" % info.get("service_note"))
    if "duckdb" in info:
        print("duckdb %(version)s, %(threads)s threads, native table loaded in %(load_s)s s" % info["duckdb"])

    ref = warm_up_all(args, QUERIES, runners, res, nbytes, SCHEMA)
    measured_runs(args, QUERIES, runners, res, ref, nbytes)
    for r in runners.values():
        if isinstance(r, PgSide):
            r.close()
    summarise(res, heap_rows, nbytes)
    goal_list = goals(res, heap_rows)
    print_report(res, goal_list, heap_rows, nbytes, info)
    dict_res = None
    if args.dict_arrow:
        dict_res = dict_q4(args, ref.get("q4") if isinstance(ref, dict) else None)

    wrong = ["%s %s" % (q.upper(), LABELS[s]) for q in res for s, e in res[q].items()
             if e["status"] == "wrong answer"]
    tag = args.tag or "sf%g_%dworkers" % (round(heap_rows / 6e6, 2), args.workers)
    summary = result_head(args, tag, data, info)
    summary.update({
        "queries": {q: {"sql": sql, "referenced_columns": cols, "referenced_bytes": nbytes[q],
                        "sides": res[q]} for q, sql, cols in QUERIES},
        "goals": goal_list, "hash_aggregation": hash_comparison(res), "wrong_answers": wrong,
    })
    if dict_res is not None:
        summary["q4_dictionary"] = dict_res
    write_results(args, "engine_bench_" + tag, summary, lambda path: png_chart(
        path, res, [q for q, _, _ in QUERIES], SIDES, "ENGINE BENCH %s: LINEORDER %.1fM ROWS, %d WORKERS"
        % (tag.upper(), heap_rows / 1e6, args.workers)), wrong)


if __name__ == "__main__":
    main()
