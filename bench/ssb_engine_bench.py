#!/usr/bin/env python3
"""The 13 SSB queries end to end: PostgreSQL, pg_warp's engines and DuckDB (a benchmark, not a test).

Issue 29, item 8.  Every query of bench/ssb/queries (lineorder joined with its
dimension tables by their primary keys, then grouped) side by side in one run,
on (--sides picks a subset, by these names):

  heap           PostgreSQL, heap tables, N parallel workers (pg_warp.enabled off)
  warp_gpu       pg_warp GPU on Arrow: lineorder an arrow_fdw table over the Arrow
                 file, the dimensions heap tables, pg_warp.engine = gpu.  Reported
                 twice: its first run per query ("first run", the Arrow file in the
                 page cache; with --cold-cmd the GPU column cache emptied before
                 each), and warm (the measured runs, from the GPU column cache).
                 Skipped, with a note, when pgwarp.service_status() has no GPU
  warp_gpu_heap  pg_warp GPU on heap (heap lineorder, pg_warp.engine = gpu),
                 measured after one run over the table
  warp_cpu       pg_warp CPU engine on Arrow (pg_warp.engine = cpu)
  duckdb         DuckDB (python package duckdb), N threads, native tables: lineorder
                 from the Arrow file's columns that the queries read, the dimension
                 tables from PostgreSQL (COPY ... CSV); timed around execute().fetchall()
  h2d            a pinned host-to-GPU copy (bench/h2d_copy) of the query's referenced
                 lineorder column buffers in the Arrow file: the bus time that the
                 GPU's first run is reported beside (without it: at a nominal 55 GB/s)

and, when asked for, arrow_pg (PostgreSQL on the arrow_fdw table) and
warp_cpu_heap (the CPU engine on heap).

With --dims-arrow DIR the sides on Arrow (warp_gpu, warp_cpu, arrow_pg) read
the dimension tables from Arrow files too (DIR/customer.arrow, ..., e.g. from
pg2arrow: arrow_fdw tables beside the foreign lineorder), so that their joins'
inner tables are scans of Arrow files; the heap sides and DuckDB keep theirs.

Per query: PostgreSQL heap's unmeasured run gives the reference answer; every
other side's answer, in every run, must equal it (floats within 1e-9
relative); one unmeasured run per side, then for the PostgreSQL sides one
EXPLAIN (ANALYZE, VERBOSE): a pg_warp side counts as the engine only when the
plan has a GpuPreAgg node that ran on the asked engine with a Join Depth line
for each join of the query.  PostgreSQL's own plan (the joins in PostgreSQL:
pg_warp's reason is shown) or a fallback is reported as such, with its time,
never as the engine.  Then R measured rounds interleaved across the sides (the
order rotates each round); the best of them.  A failing side is reported with
its error; a wrong answer loudly, with exit status 1.

With --first-breakdown (and --cold-cmd) each query's first run is run once
more, the cache emptied again, under EXPLAIN (ANALYZE, VERBOSE): a table of
where its time went (the inner tables' builds, with their scans and table;
when the run was asked of the service; the read-ahead beside the builds; the
service's run, with its setup and batch loop) beside the warm run's service
time, kept in the JSON as warp_gpu_first's "breakdown".  The timed first
runs are the plain ones.

Reported per query and side: seconds, lineorder rows/s, the ratio to
PostgreSQL heap and to DuckDB; per side the geometric mean over the queries;
issue 29's goals, each met / not met / not measured (reported, for the first
run beside the bus time).  Results: bench/results/ssb_engine_<tag>.json and .png.

    bench/ssb/load.sh -d ssb -s 1 --no-arrow
    pg2arrow -d ssb -t lineorder -S -o /tmp/ssb/lineorder.arrow
    bench/ssb_engine_bench.py -d ssb -a /tmp/ssb/lineorder.arrow -w 2 -r 3

The database holds SSB with its primary keys (load.sh) and pg_warp; the Arrow
file is lineorder exported with statistics, readable by the server.
Connection: the PG* environment variables and -d.  bench/gpu-host.sh
ssb-engine runs all of this on the GPU host from the offline bundle.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

from bench_sides import (LABELS, DuckSide, PgSide, add_common_args, check, check_common_args, entry,
                         explain_summary, fmt_rate, geomean, goal_of, measured_runs, open_data,
                         open_sides, png_chart, psql_rows, psql_script, referenced_bytes, result_head,
                         summarise, time_of, warm_up_all, write_results)

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "ssb_engine"
QUERY_DIR = os.path.join(HERE, "ssb", "queries")
DIMENSIONS = ["customer", "supplier", "part", "date1"]
SIDES = ["heap", "warp_gpu", "warp_gpu_heap", "warp_cpu", "duckdb", "h2d"]
OPTIONAL_SIDES = ["arrow_pg", "warp_cpu_heap"]
# the report's order; warp_gpu_first is warp_gpu's first run per query
REPORT_SIDES = ["heap", "arrow_pg", "warp_gpu_first", "warp_gpu", "warp_gpu_heap", "warp_cpu",
                "warp_cpu_heap", "duckdb", "h2d"]
NOMINAL_BUS = 55e9              # bytes/s of a pinned host-to-GPU copy (DESIGN.md)
GPU_ROWS_GOAL = 2.5e9


def load_queries(wanted):
    """(name, sql, lineorder columns, joins) of bench/ssb/queries' files
    (wanted: names such as q1.1, or None for all); comments dropped."""
    out = []
    for path in sorted(glob.glob(os.path.join(QUERY_DIR, "q*.sql"))):
        name = os.path.basename(path)[:-4]
        if wanted and name not in wanted:
            continue
        with open(path) as f:
            sql = " ".join(line.split("--")[0].strip() for line in f).strip().rstrip(";").strip()
        sql = re.sub(r"\s+", " ", sql)
        tables = re.search(r"\bFROM (.*?) WHERE\b", sql, re.I).group(1).split(",")
        cols = sorted(set(re.findall(r"\blo_\w+", sql)))
        out.append((name, sql, cols, len(tables) - 1))
    return out


def read_through(path):
    """Reads the file once (into the page cache); seconds."""
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while f.read(16 << 20):
            pass
    return time.perf_counter() - t0


def wait_for_service(runner, engine, seconds=120):
    """Waits until a new session of runner finds the service up with the
    engine (after a restart), so that a run then is the query alone; None,
    or why not."""
    why = None
    deadline = time.time() + seconds
    while time.time() < deadline:
        rows, _, err = runner.run("SELECT engine FROM pgwarp.service_status()")
        if not err and rows and rows[-1] == engine:
            return None
        why = err or "the service's engine is %s" % (rows[-1] if rows else "unknown")
        runner.close()
        time.sleep(1)
    return "%s after %d s" % (why, seconds)


def arrow_dimensions(args):
    """With --dims-arrow: the dimension tables as arrow_fdw tables in SCHEMA
    over DIR/<table>.arrow (the Arrow sides find them first on their
    search_path), each file's rows checked against the heap table's.
    Returns what the result records about the dimensions."""
    if not args.dims_arrow:
        return {"arrow_sides": "heap tables (public)"}
    files = [os.path.join(args.dims_arrow, t + ".arrow") for t in DIMENSIONS]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        sys.exit("--dims-arrow: no such file: %s" % ", ".join(missing))
    # ANALYZE: PostgreSQL keeps no statistics of a foreign table until asked,
    # and without them its join estimates make the joins look like row
    # expansions that GpuJoin refuses (as a user would, the tables are analyzed)
    psql_script(args.dbname, "SET client_min_messages = warning;\n" + "".join(
        "IMPORT FOREIGN SCHEMA %s FROM SERVER arrow_fdw INTO %s OPTIONS (file '%s');\n"
        "ANALYZE %s.%s;\n" % (t, SCHEMA, f.replace("'", "''"), SCHEMA, t)
        for t, f in zip(DIMENSIONS, files)))
    for t in DIMENSIONS:
        counts = psql_script(args.dbname, "SELECT count(*) FROM public.%s; SELECT count(*) FROM %s.%s;"
                             % (t, SCHEMA, t)).split()
        if counts[0] != counts[1]:
            sys.exit("--dims-arrow: %s has %s rows on heap, %s in its Arrow file" % (t, counts[0], counts[1]))
    print("dimensions of the Arrow sides: Arrow files in %s" % args.dims_arrow)
    return {"arrow_sides": "Arrow files (arrow_fdw)", "files": files,
            "bytes": {t: os.path.getsize(f) for t, f in zip(DIMENSIONS, files)}}


def first_runs(args, queries, runner, res):
    """warp_gpu's first run of each query, before any other run of it: the
    Arrow file in the page cache, and with --cold-cmd the GPU column cache
    emptied before each.  Returns the answers, checked once the reference is
    known (check_first_runs)."""
    answers, seen = {}, set()
    for q, sql, cols, joins in queries:
        e = res[q]["warp_gpu_first"] = entry("ok")
        if args.cold_cmd:
            why = cold_start(args, runner)
            if why:
                e.update(status="failed", note=why)
                continue
            e["gpu_column_cache"] = "emptied before this run (--cold-cmd)"
        else:
            before = [c for c in cols if c in seen]
            e["gpu_column_cache"] = "not emptied (no --cold-cmd)"
            if before:
                e["columns_read_by_an_earlier_first_run"] = before
                e["bytes_read_by_an_earlier_first_run"] = referenced_bytes(args.arrow, before)[0]
        seen.update(cols)
        e["service_before"] = service_pages(runner)
        rows, secs, err = runner.run(("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " if args.first_explain
                                      else "") + sql)
        if err or secs is None:
            e.update(status="failed", note=err or "psql printed no timing")
            continue
        e["runs_s"].append(secs)
        if args.first_explain:
            # the run's own figures; its answer is not seen (the warm runs' are checked)
            e["breakdown"], e["breakdown_explain"], problem = first_breakdown(rows, joins)
            e["explain_plan"] = json.loads("\n".join(rows))[0]["Plan"]
            e["note"] = "run under EXPLAIN ANALYZE (--first-explain)%s" % (
                ": %s" % problem if problem else "")
        else:
            answers[q] = psql_rows(rows)
        print("  %s: first GPU run %.3f s%s" % (q, secs, pages_note(e["service_before"])), flush=True)
        if args.first_explain:
            g = e["breakdown_explain"].get("gpupreagg", {})
            ways = [(k, g[k]) for k in ("Bytes From GPU Cache", "Bytes From Pinned File Pages",
                                        "Bytes Read With pread", "Bytes Read With cuFile")
                    if g.get(k)]
            if ways or "I/O Time" in g:
                print("      %s; I/O time %s ms" % (", ".join("%s %.0f MB" % (k, v / 1e6) for k, v in ways)
                                                 or "no bytes", g.get("I/O Time")), flush=True)
            for k in ("Read Ahead", "GPU 0"):
                if k in g:
                    print("      %s: %s" % (k, g[k]), flush=True)
    return answers


SERVICE_PAGES = ("pinned_file_bytes", "pinned_file_bytes_queued")


def service_pages(runner):
    """The service's registered and queued file-page bytes just before a
    first run (a first run's reads come from registered pages or pread), or
    {} where the session cannot tell."""
    rows, _, err = runner.run("SELECT %s FROM pgwarp.service_status()" % ", ".join(SERVICE_PAGES))
    if err or not rows:
        return {}
    try:
        return dict(zip(SERVICE_PAGES, map(int, rows[-1].split("|"))))
    except ValueError:
        return {}


def pages_note(pages):
    """' (file pages registered N MB, queued M MB)' for a first run's line."""
    if not pages:
        return ""
    return " (file pages registered %.0f MB, queued %.0f MB)" % (
        pages["pinned_file_bytes"] / 1e6, pages["pinned_file_bytes_queued"] / 1e6)


def cold_start(args, runner):
    """Runs --cold-cmd and waits for the service; None, or why it failed."""
    runner.close()
    r = subprocess.run(args.cold_cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        return "--cold-cmd failed: %s" % r.stderr.strip()[-300:]
    why = wait_for_service(runner, "gpu")
    return "after --cold-cmd: %s" % why if why else None


def ms_after(text, label):
    """The milliseconds that follow label in an EXPLAIN line, or None."""
    m = re.search(re.escape(label) + r" ([0-9.]+)", text)
    return float(m.group(1)) if m else None


# a depth's build under EXPLAIN (ANALYZE, VERBOSE) (src/engine/gpu_join.c)
BUILT = re.compile(r"built in ([0-9.]+) ms: (?:group scans|scan) ([0-9.]+), table ([0-9.]+), "
                   r"load ([0-9.]+)")


def first_breakdown(rows, depths):
    """Where one first run's time went, from its EXPLAIN (ANALYZE, VERBOSE,
    FORMAT JSON): the inner tables' builds (the longest depth's: its scans,
    the table made, the load into the service), when the run was asked of
    the service, the read-ahead beside the builds, the service's run (its
    setup and batch loop on GPU 0) and the execution; milliseconds.
    Returns (breakdown, explain summary, problem)."""
    summary, problem = explain_summary("warp_gpu", rows, depths)
    g = summary.get("gpupreagg", {})
    out = {"planning_ms": summary.get("planning_ms"), "execution_ms": summary.get("execution_ms"),
           "request_ms": g.get("Request Time"), "service_wall_ms": g.get("Service Wall Time"),
           "read_ahead_ms": g.get("Read Ahead Time"), "read_ahead_bytes": g.get("Read Ahead Bytes"),
           "end_ms": g.get("end_ms")}
    builds = []
    for line in summary.get("join_depths", []):
        m = BUILT.search(line)
        if m:
            builds.append(dict(zip(("built_ms", "scans_ms", "table_ms", "load_ms"),
                                   map(float, m.groups()))))
    if builds:
        longest = max(builds, key=lambda b: b["built_ms"] or 0)
        out.update({"build_ms": longest["built_ms"], "build_scans_ms": longest["scans_ms"],
                    "build_table_ms": longest["table_ms"], "build_load_ms": longest["load_ms"]})
    gpu0 = g.get("GPU 0", "")
    out.update({"gpu_setup_ms": ms_after(gpu0, "setup"), "gpu_batches_ms": ms_after(gpu0, "batches"),
                "gpu_kernels_ms": ms_after(gpu0, "kernels")})
    return out, summary, problem


def first_breakdowns(args, queries, runner, res):
    """--first-breakdown: each query's first run once more, the GPU column
    cache emptied again, under EXPLAIN (ANALYZE, VERBOSE) (not the timed
    run: EXPLAIN's own cost stays out of the figures), into
    warp_gpu_first's "breakdown"."""
    for q, sql, _, joins in queries:
        e = res[q]["warp_gpu_first"]
        why = cold_start(args, runner)
        if why:
            e["breakdown_note"] = why
            continue
        rows, _, err = runner.run("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " + sql)
        if err:
            e["breakdown_note"] = "EXPLAIN ANALYZE: %s" % err
            continue
        e["breakdown"], e["breakdown_explain"], problem = first_breakdown(rows, joins)
        if problem:
            e["breakdown_note"] = problem
        print("  %s: first run under EXPLAIN ANALYZE %.1f ms" % (q, e["breakdown"]["execution_ms"]),
              flush=True)


def print_breakdown(queries, res, which):
    """The table of --first-breakdown or --first-explain (milliseconds)."""
    cols = [("planning_ms", "plan"), ("execution_ms", "exec"), ("build_ms", "builds"),
            ("build_scans_ms", "scans"), ("build_table_ms", "table"), ("request_ms", "request"),
            ("read_ahead_ms", "read-ahead"), ("gpu_setup_ms", "setup"), ("gpu_batches_ms", "batches"),
            ("service_wall_ms", "run"), ("end_ms", "end")]
    print("\nWhere each first run's time went (EXPLAIN ANALYZE of %s, ms; plan: the new " % which +
          "session's planning; builds: the longest depth's, of which its scans and its table; request: "
          "when the run was asked of the service; run: the service's wall time, of which setup and "
          "the batch loop; end: the GpuPreAgg node after its first row, its shutdown's waits included)")
    print("  %-6s" % "query" + "".join("%11s" % h for _, h in cols) + "%11s" % "warm run")
    for q, _, _, _ in queries:
        b = res[q].get("warp_gpu_first", {}).get("breakdown")
        if not b:
            continue
        warm = res[q].get("warp_gpu", {}).get("explain", {}).get("gpupreagg", {}).get("Service Wall Time")
        print("  %-6s" % q + "".join("%11s" % ("-" if b.get(k) is None else "%.1f" % b[k])
                                     for k, _ in cols) +
              "%11s" % ("-" if warm is None else "%.1f" % warm))


def check_first_runs(res, ref, answers):
    """The first runs' answers against the reference; their plan is warp_gpu's
    (the same session settings): not the engine there, not the engine here."""
    for q, rows in answers.items():
        e = res[q]["warp_gpu_first"]
        check(e, ref[q], rows)
        warm = res[q].get("warp_gpu", {})
        if "explain" in warm:
            e["plan"] = warm["explain"]["plan"]
        if warm.get("status") == "not the engine" and e["status"] == "ok":
            e.update(status="not the engine", note=warm["note"])


def bus_times(res, nbytes, info):
    """Per query, the seconds a pinned copy of its referenced bytes takes:
    bench/h2d_copy's best when measured, else at the nominal 55 GB/s."""
    out = {}
    for q in res:
        t, _ = time_of(res[q], "h2d")
        if t is not None:
            out[q] = {"seconds": t, "source": "bench/h2d_copy (%s)" % info.get("gpu_device", "GPU")}
        else:
            out[q] = {"seconds": nbytes[q] / NOMINAL_BUS, "source": "nominal 55 GB/s"}
    return out


def side_geomeans(res, sides):
    """Per side: the geometric mean of its best times over the queries it has
    a time for, how many, how many ran what the side stands for, and its
    ratios to PostgreSQL heap and DuckDB over the queries both have."""
    out = {}
    for side in sides:
        qs = [q for q in res if "time_s" in res[q].get(side, {})]
        if not qs:
            continue
        g = {"geomean_s": geomean([res[q][side]["time_s"] for q in qs]), "queries": len(qs),
             "as_the_side": sum(1 for q in qs if res[q][side]["status"] == "ok")}
        for base in ("heap", "duckdb"):
            both = [q for q in qs if "time_s" in res[q].get(base, {})]
            if both and base != side:
                g["vs_" + base] = geomean([res[q][base]["time_s"] for q in both]) / \
                    geomean([res[q][side]["time_s"] for q in both])
        out[side] = g
    return out


def geomean_goal(name, res, num, den, passes, fmt):
    """A goal on geomean(num's times) / geomean(den's times) over every query:
    measured only when both sides ran what they stand for on all of them."""
    a, b, whys = [], [], {}
    for q in res:
        ta, wa = time_of(res[q], num)
        tb, wb = time_of(res[q], den)
        if ta is None or tb is None:
            whys.setdefault("; ".join(w for w in (wa, wb) if w), []).append(q.upper())
        else:
            a.append(ta)
            b.append(tb)
    if whys:
        return {"goal": name, "status": "not measured", "value": None,
                "why": ["%s: %s" % (", ".join(qs), w) for w, qs in whys.items()]}
    v = geomean(a) / geomean(b)
    return {"goal": name, "status": "met" if passes(v) else "not met", "value": v, "shown": fmt(v)}


def goals(res, rows, bus):
    """Issue 29 item 8's goals, over one run."""
    q12 = {q: res[q] for q in res if re.match(r"^q[12]\.", q)}

    def gpu_rows(qres):
        t, why = time_of(qres, "warp_gpu")
        return (rows / t, None) if t else (None, why)

    per_query = {}
    for q in res:
        t, why = time_of(res[q], "warp_gpu_first")
        per_query[q] = {"value": None, "why": why} if t is None else {
            "value": t / bus[q]["seconds"],
            "shown": "%.3f s / %.3f s = %.1fx" % (t, bus[q]["seconds"], t / bus[q]["seconds"])}
    first = {"goal": "GPU on Arrow, first run (page cache): its time / the bus time of its referenced "
                     "bytes", "per_query": per_query,
             "status": "reported" if any(p["value"] is not None for p in per_query.values())
             else "not measured"}
    return [
        geomean_goal("GPU on Arrow, warm: SSB geometric mean at least 3x faster than DuckDB's", res,
                     "duckdb", "warp_gpu", lambda v: v >= 3, lambda v: "%.2fx" % v),
        goal_of("GPU on Arrow, warm: every Q1.x and Q2.x at least 2.5 G lineorder rows/s", q12, gpu_rows,
                lambda v: v >= GPU_ROWS_GOAL, lambda v: "%.2f G rows/s" % (v / 1e9)),
        first,
        geomean_goal("CPU engine on Arrow: geometric mean at least 5x faster than PostgreSQL heap", res,
                     "heap", "warp_cpu", lambda v: v >= 5, lambda v: "%.2fx" % v),
        geomean_goal("CPU engine on Arrow: geometric mean within 4x of DuckDB's", res,
                     "warp_cpu", "duckdb", lambda v: v <= 4, lambda v: "%.2fx DuckDB's time" % v),
        geomean_goal("GPU on heap (after one run over the table): geometric mean at least 5x "
                     "PostgreSQL heap", res, "heap", "warp_gpu_heap", lambda v: v >= 5,
                     lambda v: "%.2fx" % v),
    ]


def plan_line(e):
    """A pg_warp side's plan in a line: GpuPreAgg's engine and join depths,
    its figures, or PostgreSQL's plan and why."""
    x = e.get("explain")
    if not x:
        return e.get("plan")
    line = x["plan"]
    g = x.get("gpupreagg")
    if g:
        line += "; " + ", ".join("%s %s" % (k, g[k]) for k in ("Rows Read", "Rows Passed", "Groups",
                                                                "Bytes Read", "Bytes From GPU Cache",
                                                                "Engine Time", "Fallback Reason") if k in g)
        for i, d in enumerate(x.get("join_depths", [])):
            line += "\n%s Join Depth %d: %s" % (" " * 32, i + 1, d)
    return line


def print_report(queries, res, rows, nbytes, bus, means, goal_list):
    for q, sql, cols, joins in queries:
        print("\n%s (%d joins): %s" % (q.upper(), joins, sql))
        print("    referenced lineorder columns %s: %.1f MB in the Arrow file; bus time %.4f s (%s)"
              % (", ".join(cols), nbytes[q] / 1e6, bus[q]["seconds"], bus[q]["source"]))
        print("    %-31s %-15s %9s %10s %8s %9s  %s" % ("side", "status", "best s", "rows/s", "vs heap",
                                                       "vs DuckDB", "runs (s) / note"))
        for side in REPORT_SIDES:
            e = res[q].get(side)
            if e is None:
                continue
            cell = lambda k, f, w: (f % e[k]) if k in e else "%*s" % (w, "-")
            runs = " ".join("%.4f" % t for t in e["runs_s"])
            note = e.get("note") or ""
            print("    %-31s %-15s %s %s %s %s  %s%s" % (
                LABELS[side], e["status"], cell("time_s", "%9.4f", 9),
                "%10s" % (fmt_rate(e["rows_per_s"]) if "rows_per_s" in e else "-"),
                cell("speedup_vs_heap", "%7.2fx", 8), cell("speedup_vs_duckdb", "%8.2fx", 9),
                runs, ("; " if runs and note else "") + note))
            if side == "warp_gpu_first" and "gpu_column_cache" in e:
                print("    %31s GPU column cache %s%s" % (
                    "", e["gpu_column_cache"], "; %.1f of its %.1f MB read by an earlier query's first run"
                    % (e["bytes_read_by_an_earlier_first_run"] / 1e6, nbytes[q] / 1e6)
                    if "bytes_read_by_an_earlier_first_run" in e else ""))
            elif side.startswith("warp_") and plan_line(e):
                print("    %31s %s" % ("", plan_line(e)))
    print("\nGeometric means over the queries (best of each; 'as the side': the queries where it ran "
          "what it stands for):")
    print("  %-31s %10s %8s %12s %9s %9s" % ("side", "geomean s", "queries", "as the side", "vs heap",
                                            "vs DuckDB"))
    for side in REPORT_SIDES:
        g = means.get(side)
        if g:
            print("  %-31s %10.4f %8d %12d %9s %9s" % (
                LABELS[side], g["geomean_s"], g["queries"], g["as_the_side"],
                "%.2fx" % g["vs_heap"] if "vs_heap" in g else "-",
                "%.2fx" % g["vs_duckdb"] if "vs_duckdb" in g else "-"))
    print("\nGoals (issue 29 item 8), from this run:")
    for g in goal_list:
        if "per_query" in g:
            shown = ", ".join("%s %s" % (q.upper(), p["shown"] if p["value"] is not None else "-")
                              for q, p in g["per_query"].items())
            whys = []
            for p in g["per_query"].values():
                if p["value"] is None and p["why"] and p["why"] not in whys:
                    whys.append(p["why"])
        else:
            shown = g.get("shown", "-")
            whys = g.get("why", [])
        print("  %-13s %s: %s" % (g["status"].upper(), g["goal"], shown))
        for w in whys[:3]:
            print("  %13s   (%s)" % ("", w))
        if len(whys) > 3:
            print("  %13s   (and %d more)" % ("", len(whys) - 3))


def main():
    """Options, setup, first GPU runs, warm-up, measured rounds, report, JSON and PNG."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="sides: " + ", ".join(SIDES + OPTIONAL_SIDES))
    add_common_args(ap, 3, "measured runs per side and query (the best is kept)")
    ap.add_argument("--sides", default=",".join(SIDES), help="a comma-separated subset (default: %(default)s)")
    ap.add_argument("-q", "--queries", help="e.g. q1.1,q2.1 (default: all 13)")
    ap.add_argument("--cold-cmd", help="a shell command that empties the GPU column cache, run before "
                    "each query's first GPU run (e.g. a cluster restart)")
    ap.add_argument("--dims-arrow", metavar="DIR",
                    help="the Arrow sides read the dimension tables from DIR/<table>.arrow too")
    ap.add_argument("--first-breakdown", action="store_true",
                    help="after the timed first runs, each once more under EXPLAIN (ANALYZE, VERBOSE), "
                    "the cache emptied again by --cold-cmd: where its time went (needs --cold-cmd)")
    ap.add_argument("--first-explain", action="store_true",
                    help="the timed first runs themselves under EXPLAIN (ANALYZE, VERBOSE): where the "
                    "time of those runs went (their times then include EXPLAIN's; their answers are "
                    "not checked)")
    args = ap.parse_args()
    if args.first_breakdown and not args.cold_cmd:
        ap.error("--first-breakdown needs --cold-cmd")
    if args.first_breakdown and args.first_explain:
        ap.error("--first-explain already has each first run's breakdown")
    check_common_args(ap, args, SIDES + OPTIONAL_SIDES)
    wanted = set(args.queries.split(",")) if args.queries else None
    queries = load_queries(wanted)
    if not queries or (wanted and len(queries) != len(wanted)):
        ap.error("unknown query(ies) in %s; queries: q1.1 .. q4.3" % args.queries)

    data = open_data(args, SCHEMA, queries)
    dims = arrow_dimensions(args)
    heap_rows, nbytes = data["heap_rows"], data["nbytes"]
    res = {q: {} for q, _, _, _ in queries}

    def make_duck():
        duck = DuckSide(args.workers)
        duck.load_arrow("lineorder", args.arrow, data["columns"])
        for t in DIMENSIONS:
            duck.load_pg(args.dbname, t)
        return duck
    runners, info = open_sides(args, res, SCHEMA, make_duck)
    info["dimensions"] = dims
    print("service: %s" % info.get("service_note"))
    if "duckdb" in info:
        print("duckdb %(version)s, %(threads)s threads, native tables loaded in %(load_s)s s" % info["duckdb"])
    if any(s in runners for s in ("warp_gpu", "warp_cpu", "arrow_pg")):
        info["arrow_read_through_s"] = round(read_through(args.arrow), 3)
        print("Arrow file read once into the page cache in %.2f s" % info["arrow_read_through_s"])
        for path in dims.get("files", []):
            read_through(path)

    first = {}
    if "warp_gpu" in runners:
        print("first GPU runs%s:" % (" (GPU column cache emptied before each: %s)" % args.cold_cmd
                                    if args.cold_cmd else ""))
        first = first_runs(args, queries, runners["warp_gpu"], res)
        if args.first_breakdown:
            print("first GPU runs again, under EXPLAIN ANALYZE:")
            first_breakdowns(args, queries, runners["warp_gpu"], res)
    elif "warp_gpu" in args.sides:
        for q in res:
            res[q]["warp_gpu_first"] = dict(res[q]["warp_gpu"], runs_s=[])
    depths = {q: joins for q, _, _, joins in queries}
    ref = warm_up_all(args, queries, runners, res, nbytes, SCHEMA, depths)
    check_first_runs(res, ref, first)
    measured_runs(args, queries, runners, res, ref, nbytes)
    for r in runners.values():
        if isinstance(r, PgSide):
            r.close()
    summarise(res, heap_rows, nbytes, best=True)
    bus = bus_times(res, nbytes, info)
    means = side_geomeans(res, REPORT_SIDES)
    goal_list = goals(res, heap_rows, bus)
    print_report(queries, res, heap_rows, nbytes, bus, means, goal_list)
    if args.first_breakdown or args.first_explain:
        print_breakdown(queries, res, "a second cold run" if args.first_breakdown else "the timed run")

    wrong = ["%s %s" % (q.upper(), LABELS[s]) for q in res for s, e in res[q].items()
             if e["status"] == "wrong answer"]
    tag = args.tag or "sf%g_%dworkers" % (round(heap_rows / 6e6, 2), args.workers)
    summary = result_head(args, tag, data, info)
    summary.update({
        "statistic": "best", "cold_cmd": args.cold_cmd,
        "queries": {q: {"sql": sql, "joins": joins, "referenced_columns": cols,
                        "referenced_bytes": nbytes[q], "bus": bus[q], "sides": res[q]}
                    for q, sql, cols, joins in queries},
        "geomeans": means, "goals": goal_list, "wrong_answers": wrong,
    })
    write_results(args, "ssb_engine_" + tag, summary, lambda path: png_chart(
        path, res, [q for q, _, _, _ in queries], REPORT_SIDES,
        "SSB ENGINE %s: LINEORDER %.1fM ROWS, %d WORKERS, BEST OF %d%s"
        % (tag.upper(), heap_rows / 1e6, args.workers, args.runs,
           ", DIMENSIONS ON ARROW TOO" if args.dims_arrow else "")), wrong)


if __name__ == "__main__":
    main()
