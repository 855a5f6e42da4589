#!/usr/bin/env python3
"""pg_warp on one GPU and on several, side by side in one run (a benchmark, not a test).

Issue 31 (and the code of issue 30 item 6, src/service/gpu_multi.c): the flat
queries of bench/engine_bench.py and the 13 SSB queries of bench/ssb/queries,
on lineorder as an arrow_fdw table over the Arrow file (the dimensions heap
tables), pg_warp.engine = gpu, once for each pg_warp.gpus setting given with
--gpus (default '0' then '0,1'; '0,0' runs the spreading on a host with one
GPU, two shares on one device).  For each setting the cluster is restarted
(--restart-cmd; pg_warp.gpus is read at server start), which also empties the
GPU column cache; then per query its first run (the file in the page cache,
the cache cold) and the best of R warm runs.  Every answer must equal
PostgreSQL heap's (pg_warp.enabled off, N workers, run once per query first),
and each setting's EXPLAIN ANALYZE must show the engine on the GPU.  The
runs of a query are one psql session: its first run pays for a new backend
(the Arrow file's metadata, catalog caches, the service connection), the warm
ones do not, as in an application's connection.  Reported
per query and setting: seconds, lineorder rows/s, and each setting's ratio to
the first one, first runs and warm; the geometric means; the goal of issue 31
(the last setting at least 1.7x the first on the warm geometric mean).
Results: bench/results/gpus_<tag>.json and .png.

    bench/gpus_bench.py -d ssb_sf20 -a /path/lineorder.arrow \\
        --restart-cmd 'scripts/cluster.sh stop DIR && scripts/cluster.sh start DIR' \\
        --gpus 0 --gpus 0,1 -r 3

Connection: the PG* environment variables and -d; the database holds SSB
(bench/ssb/load.sh) and pg_warp.  bench/gpu-host.sh gpus runs it on the GPU
host from the offline bundle.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

from bench_sides import git_commit, same_value
from canvas import Canvas
from engine_bench import QUERIES as FLAT_QUERIES
from ssb_engine_bench import load_queries

SCHEMA = "gpus_bench"
COLORS = [(60, 60, 60), (30, 120, 200), (220, 120, 30), (40, 160, 80)]


def psql(db, sql, settings=(), check=True):
    """(rows, seconds) of sql in one psql session after the settings; rows as
    lists of fields.  The time is psql's \\timing of sql alone."""
    args = ["psql", "-XAtq", "-F", "|", "-v", "ON_ERROR_STOP=1", "-d", db]
    script = "\n".join([x.rstrip(";") + ";" for x in settings] + ["\\timing on", sql.rstrip(";") + ";"])
    r = subprocess.run(args, input=script, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (sql[:80], r.stderr.strip()[-400:]))
    rows, secs = [], None
    for line in r.stdout.splitlines():
        m = re.match(r"^Time: ([0-9.]+) ms", line)
        if m:
            secs = float(m.group(1)) / 1000
        elif line:
            rows.append(line.split("|"))
    return rows, secs


def psql_runs(db, sql, settings, n):
    """n runs of sql in ONE psql session after the settings (so that only
    the first pays for a new backend: its caches, the service connection):
    a list of (rows, seconds), one per run"""
    args = ["psql", "-XAtq", "-F", "|", "-v", "ON_ERROR_STOP=1", "-d", db]
    body = [x.rstrip(";") + ";" for x in settings] + ["\\timing on"]
    for _ in range(n):
        body += ["\\echo ==run==", sql.rstrip(";") + ";"]
    r = subprocess.run(args, input="\n".join(body), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (sql[:80], r.stderr.strip()[-400:]))
    runs = []
    for line in r.stdout.splitlines():
        m = re.match(r"^Time: ([0-9.]+) ms", line)
        if line == "==run==":
            runs.append([[], None])
        elif m and runs:
            runs[-1][1] = float(m.group(1)) / 1000
        elif line and runs:
            runs[-1][0].append(line.split("|"))
    return [(rows, secs) for rows, secs in runs]


def same_rows(ref, rows, ordered=True):
    """rows equal ref's (numbers within same_value's tolerance); a query
    without ORDER BY (ordered false) as sorted rows"""
    if not ordered:
        ref, rows = sorted(ref), sorted(rows)
    return len(ref) == len(rows) and all(
        len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b)) for a, b in zip(ref, rows))


def wait_service(db, engine, devices, seconds=120):
    want = "gpu|%d" % devices if engine == "gpu" else "cpu only|0"
    deadline = time.time() + seconds
    while time.time() < deadline:
        r = subprocess.run(["psql", "-XAtq", "-d", db, "-c",
                            "SELECT engine, device_count FROM pgwarp.service_status()"],
                           capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() == want:
            return
        time.sleep(1)
    sys.exit("gpus_bench: the service did not come up with %d GPUs: %s" % (devices, r.stdout + r.stderr))


def engine_ran(db, sql, settings, engine):
    """(ran, plan): whether the engine ran sql on `engine`, and the EXPLAIN
    ANALYZE that says so, taken after one run of sql in the same session
    (a warm backend, as in the timed runs: its planning and executor start
    are then those of the runs)"""
    (rows, _), = psql_runs(db, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql,
                           list(settings) + [sql], 1)
    plan = "\n".join("|".join(r) for r in rows)
    return "GpuPreAgg" in plan and "Engine: %s" % engine.upper() in plan, plan


def plan_times(plan):
    """the warm EXPLAIN ANALYZE's times (ms): execution, the service's wall
    time, the kernels, and each GPU's share line ("GPU n: ...")"""
    out = {"gpus": re.findall(r"^\s*(GPU \d+: .*)$", plan, re.M)}
    for key, label in (("execution_ms", "Execution Time"), ("service_wall_ms", "Service Wall Time"),
                       ("engine_ms", "Engine Time"), ("planning_ms", "Planning Time"),
                       ("round_trip_ms", "Service Round Trip"), ("request_ms", "Request Time")):
        m = re.search(r"%s: ([0-9.]+) ms" % label, plan)
        out[key] = float(m.group(1)) if m else None
    return out


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def chart(path, res, names, settings):
    """Per query, a bar of warm lineorder M rows/s per setting."""
    bar_h, gap, width = 16, 4, 1000
    c = Canvas(width, 40 + len(names) * (26 + len(settings) * (bar_h + gap)))
    c.text(10, 10, "PG_WARP GPU WARM M ROWS/S BY PG_WARP.GPUS")
    top = max([e["warm_rows_per_s"] for q in res for e in res[q]["settings"].values()
               if e.get("warm_rows_per_s")] + [1])
    y = 40
    for q in names:
        c.text(10, y, q.upper(), scale=3)
        y += 22
        for i, s in enumerate(settings):
            e = res[q]["settings"].get(s, {})
            c.text(10, y + 4, "GPUS " + s.replace(",", " "))
            if e.get("warm_rows_per_s"):
                w = max(1, int((width - 320) * e["warm_rows_per_s"] / top))
                c.rect(120, y, 120 + w, y + bar_h, COLORS[i % len(COLORS)])
                c.text(126 + w, y + 4, "%.0f" % (e["warm_rows_per_s"] / 1e6))
            else:
                c.text(120, y + 4, e.get("status", "not run"), rgb=(150, 0, 0))
            y += bar_h + gap
        y += 4
    c.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-d", "--dbname", required=True)
    ap.add_argument("-a", "--arrow", required=True, help="lineorder as an Arrow file")
    ap.add_argument("--restart-cmd", required=True, help="restarts the cluster (shell)")
    ap.add_argument("--gpus", action="append", help="a pg_warp.gpus setting (repeatable)")
    ap.add_argument("-r", "--runs", type=int, default=3)
    ap.add_argument("-w", "--workers", type=int, default=16, help="PostgreSQL heap's workers")
    ap.add_argument("-q", "--queries", help="names, e.g. q1,q2.1 (default: all)")
    ap.add_argument("--tag", default="run")
    ap.add_argument("--engine", default="gpu", choices=["gpu", "cpu"],
                    help="cpu: the runner itself tried where there is no GPU (the settings "
                    "then change nothing)")
    ap.add_argument("--outdir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "results"))
    args = ap.parse_args()
    settings_list = args.gpus or ["0", "0,1"]
    wanted = set(args.queries.split(",")) if args.queries else None
    queries = [(n, s) for n, s, _ in FLAT_QUERIES if n in ("q1", "q2")] + \
        [(n, s) for n, s, _, _ in load_queries(None)]
    queries = [(n, s) for n, s in queries if not wanted or n in wanted]
    db = args.dbname
    psql(db, "CREATE EXTENSION IF NOT EXISTS pg_warp; DROP SCHEMA IF EXISTS %s CASCADE; "
         "CREATE SCHEMA %s; IMPORT FOREIGN SCHEMA lineorder FROM SERVER arrow_fdw INTO %s "
         "OPTIONS (file '%s')" % (SCHEMA, SCHEMA, SCHEMA, args.arrow.replace("'", "''")))
    rows = int(psql(db, "SELECT count(*) FROM %s.lineorder" % SCHEMA)[0][0][0])
    heap = ["SET pg_warp.enabled = off", "SET max_parallel_workers_per_gather = %d" % args.workers]
    gpu = ["SET search_path = %s, public" % SCHEMA, "SET pg_warp.engine = %s" % args.engine,
           "SET max_parallel_workers_per_gather = 0"]
    res = {}
    print("reference answers: PostgreSQL heap, %d workers" % args.workers, flush=True)
    for name, sql in queries:
        ref, secs = psql(db, sql, heap)
        res[name] = {"sql": sql, "heap_s": secs, "ref": ref, "settings": {}}
    wrong = []
    for s in settings_list:
        n_dev = len([x for x in s.split(",") if x.strip()])
        psql(db, "ALTER SYSTEM SET pg_warp.gpus = '%s'" % s)
        subprocess.run(args.restart_cmd, shell=True, check=True, capture_output=True)
        wait_service(db, args.engine, n_dev)
        print("pg_warp.gpus = '%s': %d GPUs" % (s, n_dev), flush=True)
        for name, sql in queries:
            e = res[name]["settings"][s] = {"status": "ok"}
            try:
                # the first run (a new session, the GPU column cache cold), then
                # the warm runs in the same session
                done = psql_runs(db, sql, gpu, 1 + args.runs)
                got, first = done[0]
                runs = [secs for _, secs in done[1:]]
                last = done[-1][0]
                ok, plan = engine_ran(db, sql, gpu, args.engine)
            except RuntimeError as err:
                e.update(status="failed", error=str(err))
                continue
            if not ok:
                e.update(status="not the engine on the %s" % args.engine.upper(), plan=plan[-2000:])
            e["explain"] = plan_times(plan)
            ordered = re.search(r"\border\s+by\b", sql, re.I) is not None
            if not same_rows(res[name]["ref"], got, ordered) or \
                    not same_rows(res[name]["ref"], last, ordered):
                e["status"] = "WRONG ANSWER"
                wrong.append("%s with pg_warp.gpus = '%s'" % (name, s))
            e.update(first_s=first, runs_s=runs, warm_s=min(runs),
                     warm_rows_per_s=rows / min(runs), first_rows_per_s=rows / first)
            print("  %-5s first %.4f s  warm %.4f s  %s" % (name, first, min(runs), e["status"]),
                  flush=True)
            x = e["explain"]
            print("        explain analyze: planning %s ms, execution %s ms (request %s, round trip %s), "
                  "service %s ms, kernels %s ms" %
                  (x["planning_ms"], x["execution_ms"], x["request_ms"], x["round_trip_ms"],
                   x["service_wall_ms"], x["engine_ms"]), flush=True)
            for line in x["gpus"]:
                print("          " + line, flush=True)
    psql(db, "ALTER SYSTEM RESET pg_warp.gpus")
    subprocess.run(args.restart_cmd, shell=True, check=False, capture_output=True)
    base = settings_list[0]
    means = {}
    for s in settings_list:
        means[s] = {"warm_geomean_s": geomean([res[q]["settings"][s].get("warm_s") for q in res]),
                    "first_geomean_s": geomean([res[q]["settings"][s].get("first_s") for q in res])}
    for q in res:
        for s in settings_list:
            e, b = res[q]["settings"][s], res[q]["settings"][base]
            if e.get("warm_s") and b.get("warm_s"):
                e["warm_speedup_vs_%s" % base] = b["warm_s"] / e["warm_s"]
                e["first_speedup_vs_%s" % base] = b["first_s"] / e["first_s"]
        del res[q]["ref"]
    last = settings_list[-1]
    speedup = (means[base]["warm_geomean_s"] / means[last]["warm_geomean_s"]
               if means[base]["warm_geomean_s"] and means[last]["warm_geomean_s"] else None)
    goal = {"goal": "pg_warp.gpus = '%s' at least 1.7x '%s' on the warm geometric mean" % (last, base),
            "measured": speedup, "met": speedup is not None and speedup >= 1.7}
    print("\n%-6s %s" % ("query", "  ".join("%24s" % ("gpus " + s) for s in settings_list)))
    for q in res:
        print("%-6s %s" % (q, "  ".join(
            "%10s / %-11s" % ("%.4f" % e["first_s"] if e.get("first_s") else "-",
                              "%.4f" % e["warm_s"] if e.get("warm_s") else e["status"])
            for e in (res[q]["settings"][s] for s in settings_list))))
    for s in settings_list:
        print("geomean gpus %-6s first %s  warm %s" % (s, means[s]["first_geomean_s"],
                                                        means[s]["warm_geomean_s"]))
    print("goal: %s: %s (%s)" % (goal["goal"], "met" if goal["met"] else "not met",
                                  "%.2fx" % speedup if speedup else "not measured"))
    out = {"tag": args.tag, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": os.uname().nodename, "cpus": os.cpu_count(), "bench_commit": git_commit(),
           "lineorder_rows": rows, "arrow_file": args.arrow, "runs": args.runs,
           "settings": settings_list, "queries": res, "geomeans": means, "goal": goal,
           "wrong_answers": wrong}
    os.makedirs(args.outdir, exist_ok=True)
    path = os.path.join(args.outdir, "gpus_%s" % args.tag)
    with open(path + ".json", "w") as f:
        json.dump(out, f, indent=2)
    chart(path + ".png", res, list(res), settings_list)
    print("wrote %s.json and .png" % path)
    if wrong:
        print("*** WRONG ANSWERS: %s ***" % "; ".join(wrong))
        sys.exit(1)


if __name__ == "__main__":
    main()
