#!/usr/bin/env python3
"""hll_count beside count(DISTINCT) on SSB lineorder (a benchmark, not a test).

Issue 12, item 5, the speed half.  Four queries,

  all_hll        SELECT pgwarp.hll_count(lo_custkey) FROM lineorder
  all_distinct   SELECT count(DISTINCT lo_custkey) FROM lineorder
  group_hll      SELECT lo_orderpriority, pgwarp.hll_count(lo_custkey)
                 FROM lineorder GROUP BY 1
  group_distinct SELECT lo_orderpriority, count(DISTINCT lo_custkey)
                 FROM lineorder GROUP BY 1

side by side in one run, on (--sides picks a subset, by these names):

  heap      PostgreSQL, heap table public.lineorder, N parallel workers
  arrow_pg  PostgreSQL on an arrow_fdw table over the Arrow file
            (pg_warp.enable_gpupreagg off), the same workers
  warp_gpu  pg_warp on the Arrow table, GpuPreAgg on, pg_warp.engine = gpu
            (skipped, with a note, when pgwarp.service_status() has no GPU)
  warp_cpu  the same with pg_warp.engine = cpu

count(DISTINCT) runs on the PostgreSQL sides only (no engine evaluates it);
hll_count on every side.  Whether hll_count really ran in GpuPreAgg, on the
asked engine, is read from EXPLAIN (ANALYZE, FORMAT JSON): a side whose plan
has no GpuPreAgg node (hll_count not offloaded: PostgreSQL's own plan) or one
that fell back is measured all the same and reported as "not the engine",
with the plan's nodes, never as the engine.

Per side and query: for hll_count one unmeasured run and one EXPLAIN ANALYZE,
then R measured runs, interleaved across the sides (the order rotates each
round); count(DISTINCT) (tens of seconds at SF 20) runs --distinct-runs
times, measured, after the hll_count runs of the same table have warmed the
page cache, with a plain EXPLAIN.  Medians.

Reported per query and side: seconds, lineorder rows/s, the speed-up of
hll_count over count(DISTINCT) (over the same side's and over the fastest
PostgreSQL side's count(DISTINCT)), and the estimate's relative error
against the exact count (per group for the grouped query: the largest and
the mean).  Every side's hll_count must return the same estimate (one hash,
one sketch, one estimator): a difference is reported loudly and the exit
status is 1.  Goals of the issue, each met / not met / not measured: GPU
hll_count at least 40x faster than the fastest count(DISTINCT); GPU
hll_count at least 1 G rows/s.  Results: bench/results/hll_ssb_<tag>.json
and .png.

    bench/hll_ssb.py -d ssb_sf1 -a /tmp/ssb/lineorder.arrow -w 2 -r 3

The database holds SSB (bench/ssb/load.sh) and pg_warp; the Arrow file is
lineorder exported with statistics (pg2arrow -t lineorder -S), readable by
the server.  It shares engine_bench.py's session, setup and EXPLAIN reading
(bench_sides.py; schema engine_bench holds the foreign table).  Connection: the PG*
variables and -d.  bench/gpu-host.sh hll runs all of this on the GPU host.
"""
import argparse
import json
import math
import os
import statistics
import time

from canvas import Canvas
from bench_sides import (PgSide, explain_summary, git_commit, service_status, setup_database,
                         fmt_rate, write_results)

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "engine_bench"          # engine_bench.py's schema of the foreign table

QUERIES = [
    ("all_hll", "SELECT pgwarp.hll_count(lo_custkey) FROM lineorder"),
    ("all_distinct", "SELECT count(DISTINCT lo_custkey) FROM lineorder"),
    ("group_hll", "SELECT lo_orderpriority, pgwarp.hll_count(lo_custkey) "
                  "FROM lineorder GROUP BY 1 ORDER BY 1"),
    ("group_distinct", "SELECT lo_orderpriority, count(DISTINCT lo_custkey) "
                       "FROM lineorder GROUP BY 1 ORDER BY 1"),
]
SQL = dict(QUERIES)
SHAPES = [("all", "all_hll", "all_distinct"), ("group", "group_hll", "group_distinct")]
SIDES = ["heap", "arrow_pg", "warp_gpu", "warp_cpu"]
PG_SIDES = ["heap", "arrow_pg"]
LABELS = {"heap": "PostgreSQL heap", "arrow_pg": "PostgreSQL on arrow_fdw",
          "warp_gpu": "pg_warp GPU on Arrow", "warp_cpu": "pg_warp CPU engine on Arrow"}
SPEEDUP_GOAL = 40.0
GPU_ROWS_GOAL = 1e9


def side_queries(side):
    """The queries a side runs: count(DISTINCT) only where PostgreSQL aggregates."""
    return [q for q, _ in QUERIES if side in PG_SIDES or q.endswith("_hll")]


def parse_answer(rows):
    """psql rows 'count' or 'group|count' -> {group: int}."""
    out = {}
    for line in rows:
        parts = line.split("|")
        out[parts[0] if len(parts) > 1 else ""] = int(parts[-1])
    return out


def entry():
    return {"status": "ok", "note": None, "runs_s": []}


def explain_hll(side, runner, e):
    """EXPLAIN ANALYZE of a hll_count query: the plan and whether it is the engine."""
    rows, _, err = runner.run("EXPLAIN (ANALYZE, FORMAT JSON) " + SQL[e["query"]])
    if err:
        e.update(status="failed", note="EXPLAIN ANALYZE: %s" % err)
        return
    e["explain"], problem = explain_summary(side, rows)
    e["gpupreagg_used"] = "gpupreagg" in e["explain"]
    if problem:
        e.update(status="not the engine", note=problem)


def explain_plain(runner, e):
    """A plain EXPLAIN (the slow count(DISTINCT) runs once or twice only)."""
    rows, _, err = runner.run("EXPLAIN (FORMAT JSON) " + SQL[e["query"]])
    if not err:
        plan = json.loads("\n".join(rows))[0]["Plan"]
        nodes, todo = [], [plan]
        while todo:
            n = todo.pop(0)
            nodes.append(n.get("Custom Plan Provider") or n["Node Type"])
            todo.extend(n.get("Plans", []))
        e["explain"] = {"nodes": nodes, "workers_planned": plan.get("Workers Planned")}


def record(e, rows, secs, err, what):
    """Adds one measured run (or its failure) to e; returns the answer or None."""
    if err or secs is None:
        e.update(status="failed", note="%s: %s" % (what, err or "psql printed no timing"))
        return None
    e["runs_s"].append(secs)
    answer = parse_answer(rows)
    if "answer" in e and e["answer"] != answer:
        e.update(status="wrong answer", note="%s answered %s, before %s" % (what, answer, e["answer"]))
    e.setdefault("answer", answer)
    return answer


def open_sides(args):
    """Runners of the selected sides; res entries for the ones that cannot run."""
    info = service_status(args)
    runners, res = {}, {}
    for side in args.sides:
        res[side] = {q: dict(entry(), query=q) for q in side_queries(side)}
        if side == "warp_gpu" and not info.get("gpu"):
            for e in res[side].values():
                e.update(status="unavailable",
                         note="the pg_warp service has no GPU: %s" % info.get("service_note"))
            continue
        runners[side] = PgSide(side, args, SCHEMA)
    return runners, res, info


def run_all(args, runners, res):
    """Warm-up + EXPLAIN ANALYZE of every hll_count, R measured rounds of them,
    then the count(DISTINCT) runs (each table warm from its hll_count runs)."""
    for side, r in runners.items():
        for q in ("all_hll", "group_hll"):
            e = res[side][q]
            rows, secs, err = r.run(SQL[q])
            if err:
                e.update(status="failed", note="warm-up: %s" % err)
                continue
            e["answer"] = parse_answer(rows)
            explain_hll(side, r, e)
        print("  %s: warm-up done (%s)" % (side, ", ".join(
            "%s %s" % (q, res[side][q]["status"]) for q in ("all_hll", "group_hll"))), flush=True)
    live = list(runners)
    for rnd in range(args.runs):
        k = rnd % len(live) if live else 0
        for side in live[k:] + live[:k]:
            for q in ("all_hll", "group_hll"):
                e = res[side][q]
                if e["status"] in ("ok", "not the engine"):
                    record(e, *runners[side].run(SQL[q]), what="run %d" % (rnd + 1))
        print("  hll_count round %d of %d done" % (rnd + 1, args.runs), flush=True)
    for side in (s for s in PG_SIDES if s in runners):
        for q in ("all_distinct", "group_distinct"):
            e = res[side][q]
            explain_plain(runners[side], e)
            for i in range(args.distinct_runs):
                t0 = time.time()
                if record(e, *runners[side].run(SQL[q]), what="run %d" % (i + 1)) is None:
                    break
                print("  %s %s run %d: %.1f s" % (side, q, i + 1, time.time() - t0), flush=True)


def summarise(res, rows):
    """Medians and rows/s of every measured entry."""
    for side in res:
        for e in res[side].values():
            if e["runs_s"] and e["status"] != "failed":
                e["median_s"] = statistics.median(e["runs_s"])
                e["rows_per_s"] = rows / e["median_s"]


def exact_counts(res):
    """{shape: answer} of count(DISTINCT) (the first PostgreSQL side that has it)."""
    out = {}
    for shape, _, qd in SHAPES:
        for side in PG_SIDES:
            e = res.get(side, {}).get(qd)
            if e and "answer" in e and e["status"] != "failed":
                out[shape] = e["answer"]
                break
    return out


def errors_and_agreement(res, exact):
    """The estimate's error per shape, and whether every side's estimate is the
    same; returns the list of disagreements (loud: a wrong answer)."""
    accuracy, wrong = {}, []
    for shape, qh, _ in SHAPES:
        answers = {s: res[s][qh]["answer"] for s in res
                   if "answer" in res[s].get(qh, {}) and res[s][qh]["status"] != "failed"}
        if not answers:
            continue
        ref_side = next(iter(answers))
        for s, a in answers.items():
            if a != answers[ref_side]:
                wrong.append("%s %s: %s, %s: %s" % (shape, LABELS[s], a, LABELS[ref_side],
                                                     answers[ref_side]))
                res[s][qh].update(status="wrong answer",
                                  note="estimate differs from %s's" % LABELS[ref_side])
        if shape in exact:
            est, ex = answers[ref_side], exact[shape]
            rel = {g: (est[g] - ex[g]) / ex[g] for g in ex if g in est and ex[g]}
            accuracy[shape] = {"estimate": est, "exact": ex, "relative_error": rel,
                               "max_abs_relative_error": max(abs(v) for v in rel.values()),
                               "mean_abs_relative_error":
                                   statistics.fmean(abs(v) for v in rel.values())}
    return accuracy, wrong


def speedups(res):
    """Per shape and side: hll_count's speed-up over count(DISTINCT) on the
    same side and over the fastest PostgreSQL side's count(DISTINCT)."""
    out = {}
    for shape, qh, qd in SHAPES:
        best = min((res[s][qd]["median_s"] for s in PG_SIDES
                    if s in res and "median_s" in res[s][qd]), default=None)
        out[shape] = {"fastest_count_distinct_s": best}
        for side in res:
            e = res[side][qh]
            if "median_s" not in e:
                continue
            row = {}
            if best:
                row["vs_fastest_count_distinct"] = best / e["median_s"]
            own = res[side].get(qd, {}).get("median_s")
            if own:
                row["vs_own_count_distinct"] = own / e["median_s"]
            out[shape][side] = row
    return out


def goals(res, ups, rows):
    """The issue's two speed goals, per shape, on the GPU side."""
    def verdict(name, fn, passes, fmt):
        per, vs = {}, []
        for shape, qh, _ in SHAPES:
            e = res.get("warp_gpu", {}).get(qh)
            if e is None:
                per[shape] = {"value": None, "why": "warp_gpu not selected (--sides)"}
            elif e["status"] != "ok" or "median_s" not in e:
                per[shape] = {"value": None, "why": "%s: %s%s" % (
                    LABELS["warp_gpu"], e["status"], " (%s)" % e["note"] if e["note"] else "")}
            else:
                v = fn(shape, e)
                per[shape] = ({"value": None, "why": "no count(DISTINCT) measured"} if v is None
                              else {"value": v, "shown": fmt(v), "passes": passes(v)})
            vs.append(per[shape].get("passes"))
        status = "not met" if False in vs else "not measured" if None in vs else "met"
        return {"goal": name, "status": status, "per_shape": per}
    return [
        verdict("GPU hll_count at least 40x faster than the fastest count(DISTINCT)",
                lambda shape, e: ups[shape].get("warp_gpu", {}).get("vs_fastest_count_distinct"),
                lambda v: v >= SPEEDUP_GOAL, lambda v: "%.1fx" % v),
        verdict("GPU hll_count at least 1 G rows/s", lambda shape, e: rows / e["median_s"],
                lambda v: v >= GPU_ROWS_GOAL, lambda v: "%.2f G rows/s" % (v / 1e9)),
    ]


def print_report(res, ups, accuracy, goal_list):
    for shape, qh, qd in SHAPES:
        print("\n%s: %s\n%s  vs %s" % (shape.upper(), SQL[qh], " " * len(shape), SQL[qd]))
        print("    %-28s %-15s %-16s %9s %10s %8s %8s  %s" % (
            "side", "aggregate", "status", "median s", "rows/s", "x own", "x best", "runs (s) / note"))
        for side in res:
            for q in (qh, qd):
                e = res[side].get(q)
                if e is None:
                    continue
                up = ups[shape].get(side, {}) if q == qh else {}
                print("    %-28s %-15s %-16s %9s %10s %8s %8s  %s%s" % (
                    LABELS[side], "hll_count" if q == qh else "count(DISTINCT)", e["status"],
                    "%.4f" % e["median_s"] if "median_s" in e else "-",
                    fmt_rate(e["rows_per_s"]) if "rows_per_s" in e else "-",
                    "%.1fx" % up["vs_own_count_distinct"] if "vs_own_count_distinct" in up else "-",
                    "%.1fx" % up["vs_fastest_count_distinct"]
                    if "vs_fastest_count_distinct" in up else "-",
                    " ".join("%.3f" % t for t in e["runs_s"]),
                    ("; " if e["runs_s"] and e["note"] else "") + (e["note"] or "")))
                x = e.get("explain", {})
                if q == qh and x:
                    g = x.get("gpupreagg")
                    print("    %28s plan: %s%s" % ("", " > ".join(x["nodes"]),
                                                   "; GpuPreAgg %s" % g if g else ""))
        a = accuracy.get(shape)
        if a:
            print("    estimate vs exact: %s; largest |error| %.3f %%, mean %.3f %%" % (
                ", ".join("%s%d/%d" % (g + " " if g else "", a["estimate"][g], a["exact"][g])
                          for g in a["exact"] if g in a["estimate"]),
                100 * a["max_abs_relative_error"], 100 * a["mean_abs_relative_error"]))
    print("\nGoals (issue 12 item 5):")
    for g in goal_list:
        whys = []
        for p in g["per_shape"].values():
            if p["value"] is None and p["why"] not in whys:
                whys.append(p["why"])
        print("  %-13s %s: %s%s" % (g["status"].upper(), g["goal"], ", ".join(
            "%s %s" % (s, p["shown"] if p["value"] is not None else "-")
            for s, p in g["per_shape"].items()), "".join("\n  %13s   (%s)" % ("", w) for w in whys)))


def png_chart(path, res, title):
    """Per shape, a bar per side and aggregate: rows/s on a log scale (10^5 ..
    the fastest), the figure beside it, or the status where it has none."""
    bar_h, gap, left, width = 16, 5, 360, 1100
    c = Canvas(width, 50 + sum(36 + (bar_h + gap) * sum(q in res[s] for s in res for q in (qh, qd))
                               for _, qh, qd in SHAPES))
    c.text(10, 10, title)
    rates = [e["rows_per_s"] for s in res for e in res[s].values() if "rows_per_s" in e]
    lo, hi = 1e5, max(rates + [1e6]) * 1.5
    colors = {"hll": (40, 160, 60), "distinct": (200, 80, 60)}
    y = 40
    for shape, qh, qd in SHAPES:
        c.text(10, y, "%s   ROWS/S (LOG SCALE)" % ("NO GROUP BY" if shape == "all"
                                                    else "GROUP BY LO_ORDERPRIORITY"), scale=3)
        y += 26
        for side in res:
            for q in (qh, qd):
                e = res[side].get(q)
                if e is None:
                    continue
                c.text(10, y + 3, "%s %s" % (LABELS[side], "HLL" if q == qh else "DISTINCT"))
                if "rows_per_s" in e:
                    frac = math.log10(max(e["rows_per_s"], lo) / lo) / math.log10(hi / lo)
                    w = max(1, int((width - left - 220) * frac))
                    c.rect(left, y, left + w, y + bar_h, colors["hll" if q == qh else "distinct"])
                    label = fmt_rate(e["rows_per_s"])
                    if e["status"] != "ok":
                        label += " (%s)" % e["status"]
                    c.text(left + w + 6, y + 3, label)
                else:
                    c.text(left, y + 3, e["status"], rgb=(150, 0, 0))
                y += bar_h + gap
        y += 10
    c.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="sides: " + ", ".join(SIDES))
    ap.add_argument("-d", "--dbname", default=os.environ.get("PGDATABASE"))
    ap.add_argument("-a", "--arrow", required=True, help="lineorder as an Arrow file with statistics")
    ap.add_argument("-w", "--workers", type=int, default=16, help="parallel workers (default 16)")
    ap.add_argument("-r", "--runs", type=int, default=5, help="measured runs of each hll_count")
    ap.add_argument("--distinct-runs", type=int, default=1,
                    help="measured runs of each count(DISTINCT) (slow; default 1)")
    ap.add_argument("--sides", default=",".join(SIDES), help="a comma-separated subset")
    ap.add_argument("--tag", help="result name (default: sfSF-HOST-Nworkers)")
    ap.add_argument("--timeout", type=int, default=1200, help="statement_timeout, seconds")
    ap.add_argument("--note", help="free text kept in the JSON")
    ap.add_argument("-o", "--outdir", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    args.arrow = os.path.abspath(args.arrow)
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if not args.sides or any(s not in SIDES for s in args.sides):
        ap.error("sides: a subset of %s" % ", ".join(SIDES))
    if args.runs < 1 or args.distinct_runs < 1 or args.workers < 0:
        ap.error("-r and --distinct-runs want at least 1, -w at least 0")
    if not os.path.isfile(args.arrow):
        ap.error("no Arrow file %s" % args.arrow)

    rows, version, ext_version = setup_database(args, SCHEMA)
    print("lineorder: %d rows; Arrow file %s (%.2f GB); %d workers; %d runs (count(DISTINCT) %d)"
          % (rows, args.arrow, os.path.getsize(args.arrow) / 1e9, args.workers, args.runs,
             args.distinct_runs), flush=True)
    runners, res, info = open_sides(args)
    print("service: %s" % info.get("service_note"), flush=True)
    run_all(args, runners, res)
    for r in runners.values():
        r.close()
    summarise(res, rows)
    exact = exact_counts(res)
    accuracy, wrong = errors_and_agreement(res, exact)
    ups = speedups(res)
    goal_list = goals(res, ups, rows)
    print_report(res, ups, accuracy, goal_list)

    host = os.uname().nodename
    tag = args.tag or "sf%g-%s-%dworkers" % (round(rows / 6e6, 2), host, args.workers)
    summary = {
        "tag": tag, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": host,
        "cpus": os.cpu_count(), "bench_commit": git_commit(), "note": args.note,
        "server": version, "pg_warp_version": ext_version, "lineorder_rows": rows,
        "arrow_file": args.arrow, "arrow_file_bytes": os.path.getsize(args.arrow),
        "workers": args.workers, "runs": args.runs, "distinct_runs": args.distinct_runs,
        "info": info, "queries": SQL, "sides": res, "speedups": ups, "accuracy": accuracy,
        "goals": goal_list, "wrong_answers": wrong,
    }
    write_results(args, "hll_ssb_" + tag, summary, lambda path: png_chart(
        path, res, "HLL_COUNT VS COUNT(DISTINCT LO_CUSTKEY) %s: %.1fM ROWS, %d WORKERS"
        % (tag.upper(), rows / 1e6, args.workers)), wrong, "ESTIMATES DIFFER BETWEEN SIDES")


if __name__ == "__main__":
    main()
