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

The database holds SSB (bench/ssb/load.sh) and the extension; the Arrow file is
lineorder exported with statistics (pg2arrow -t lineorder -S), readable by the
server.  Connection: the PG* environment variables and -d (PGOPTIONS sets
settings in every session, e.g. PGOPTIONS="-c pg_warp.engine_startup_cost=0").  DuckDB is a
benchmark dependency only (pip install duckdb); without it that side is
reported as unavailable.  bench/gpu-host.sh engine runs all of this on the GPU
host.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from decimal import Decimal, InvalidOperation

from canvas import Canvas

HERE = os.path.dirname(os.path.abspath(__file__))
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
LABELS = {
    "heap": "PostgreSQL heap",
    "arrow_pg": "PostgreSQL on arrow_fdw",
    "warp_gpu": "pg_warp GPU on Arrow",
    "warp_cpu": "pg_warp CPU engine on Arrow",
    "warp_cpu_heap": "pg_warp CPU engine on heap",
    "warp_gpu_heap": "pg_warp GPU on heap",
    "duckdb": "DuckDB",
    "h2d": "pinned host-to-GPU copy",
}
# what the plan of a pg_warp side must show (EXPLAIN ANALYZE's Engine)
WARP_ENGINE = {"warp_gpu": "GPU", "warp_cpu": "CPU", "warp_cpu_heap": "CPU", "warp_gpu_heap": "GPU"}
# the GpuPreAgg node's EXPLAIN ANALYZE figures that are kept
EXPLAIN_KEYS = ["Engine", "Engine Threads", "Rows Read", "Rows Passed", "Groups", "Bytes Read",
                "Bytes From GPU Cache",
                "I/O Time", "Engine Time", "Service Wall Time", "Fallback Reason",
                "Arrow Files", "Record Batches", "Batches Skipped by Statistics",
                "Heap Pages", "Pages Shipped", "Pages Read Directly", "Page Read Time",
                "Ring Wait Time", "Units Probed", "Units from GPU Cache", "Shared Run Groups"]
GPU_ROWS_GOAL = 2.5e9


# ---------------------------------------------------------------- PostgreSQL

class SessionLost(Exception):
    """The psql process ended (the backend died or the server went away)."""


class PgSession:
    """One psql process kept open, driven statement by statement through pipes.

    Errors do not end it (ON_ERROR_STOP off): run() returns them.  Standard
    output is line-buffered (stdbuf) and standard error goes to the same pipe,
    so a statement's rows, its timing and its messages arrive in order before
    the marker that run() echoes after it.
    """

    def __init__(self, db, settings):
        args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=0", "-P", "pager=off"]
        args += ["-d", db] if db else []
        if shutil.which("stdbuf"):
            args = ["stdbuf", "-oL", "-eL"] + args
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.count = 0
        _, _, err = self.run(settings)
        if err:
            self.close()
            raise SessionLost("session settings failed: " + err)

    def run(self, sql):
        """Runs sql (statements or psql commands); returns (rows, seconds, error).

        rows: the output lines that are neither messages nor timing; seconds:
        the last psql \\timing figure (None without one); error: the first
        ERROR/FATAL message with its detail lines, else None.
        """
        self.count += 1
        marker = "@@engine_bench %d@@" % self.count
        sql = sql.strip()
        if not sql.endswith(";") and not sql.split("\n")[-1].startswith("\\"):
            sql += ";"
        try:
            self.proc.stdin.write(sql + "\n\\echo " + marker + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise SessionLost("psql is gone: %s" % e)
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if line == "":
                raise SessionLost("psql ended: " + " ".join(lines[-5:]))
            line = line.rstrip("\n")
            if line == marker:
                break
            lines.append(line)
        rows, seconds, error = [], None, None
        in_error = False
        for line in lines:
            m = re.match(r"^Time: ([0-9.]+) ms", line)
            if m:
                seconds = float(m.group(1)) / 1000
                in_error = False
            elif re.match(r"^psql:.*?: (ERROR|FATAL|PANIC): ", line) or \
                    re.match(r"^(ERROR|FATAL|PANIC): ", line):
                if error is None:
                    error = re.sub(r"\s+", " ", re.sub(r"^psql:[^ ]*: ", "", line))
                    in_error = True
            elif re.match(r"^(psql:.*?: )?(NOTICE|WARNING|INFO|DEBUG|LOG): ", line):
                in_error = False
            elif re.match(r"^(DETAIL|HINT|CONTEXT|LINE \d+):", line) or \
                    re.match(r"^\s*\^\s*$", line) or line.startswith("server closed") or \
                    line.startswith("connection to server"):
                if in_error and re.match(r"^(DETAIL|HINT|server|connection)", line):
                    error += " " + re.sub(r"\s+", " ", line.strip())
            else:
                rows.append(line)
        return rows, seconds, error

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def psql_script(db, script):
    """Runs a setup script in its own psql; exits the benchmark if it fails."""
    args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"] + (["-d", db] if db else [])
    r = subprocess.run(args, input=script, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("engine_bench: setup failed: %s\n%s" % (script.strip()[:300], r.stderr.strip()))
    return r.stdout


def side_settings(side, args):
    """The session settings of a PostgreSQL side."""
    s = ["SET jit = off", "SET max_parallel_workers_per_gather = %d" % args.workers,
         "SET statement_timeout = '%ds'" % args.timeout]
    if side == "heap":
        s.append("SET search_path = public")
        s.append("SET pg_warp.enabled = off")
    elif side in ("warp_cpu_heap", "warp_gpu_heap"):
        s.append("SET search_path = public")
        s.append("SET pg_warp.engine = %s" % WARP_ENGINE[side].lower())
    else:
        s.append("SET search_path = %s, public" % SCHEMA)
        s.append("SET pg_warp.enable_gpupreagg = %s" % ("off" if side == "arrow_pg" else "on"))
        if side in WARP_ENGINE:
            s.append("SET pg_warp.engine = %s" % WARP_ENGINE[side].lower())
    return ";\n".join(s) + ";\n\\timing on"


def walk(plan, out):
    """Every node of an EXPLAIN JSON plan, depth first, appended to out."""
    out.append(plan)
    for p in plan.get("Plans", []):
        walk(p, out)
    return out


def explain_summary(side, rows):
    """What one EXPLAIN (ANALYZE, FORMAT JSON) says: node types, workers,
    the GpuPreAgg node's figures, and whether the side ran what it claims.

    Returns (summary, problem): problem is None when the plan is what the side
    stands for, else why not (a fallback, PostgreSQL's plan, the wrong engine).
    """
    doc = json.loads("\n".join(rows))[0]
    nodes = walk(doc["Plan"], [])
    gpa = [n for n in nodes if n.get("Custom Plan Provider") == "GpuPreAgg"]
    summary = {"nodes": [n.get("Custom Plan Provider") or n["Node Type"] for n in nodes],
               "workers_launched": sum(n.get("Workers Launched", 0) for n in nodes),
               "execution_ms": doc.get("Execution Time")}
    if gpa:
        summary["gpupreagg"] = {k: gpa[0][k] for k in EXPLAIN_KEYS if k in gpa[0]}
    problem = None
    if side in WARP_ENGINE:
        want = WARP_ENGINE[side]
        if not gpa:
            problem = "PostgreSQL's own plan was chosen (no GpuPreAgg node): %s" % \
                " > ".join(summary["nodes"])
        else:
            engine = gpa[0].get("Engine")
            if engine == "PostgreSQL (fallback)":
                problem = "GpuPreAgg fell back to PostgreSQL: %s" % gpa[0].get("Fallback Reason")
            elif engine != want:
                problem = "GpuPreAgg ran on engine %s, not %s" % (engine, want)
    elif gpa:
        problem = "the plan has a GpuPreAgg node although this side is PostgreSQL alone"
    return summary, problem


# ---------------------------------------------------------------- answers

def as_decimal(v):
    """v (psql text or a Python number) as a Decimal, None when it is no number."""
    try:
        return Decimal(v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v))
    except (InvalidOperation, ValueError):
        return None


def same_value(ref, val, rel=Decimal("1e-9")):
    """ref (psql text) against val (text or a Python value): equal, or both
    numbers that are equal, or within rel relative when either is not an
    integer (floats, averages)."""
    if val is None:
        return ref == ""
    s = val if isinstance(val, str) else str(val)
    if s == ref:
        return True
    a, b = as_decimal(ref), as_decimal(val)
    if a is None or b is None or not a.is_finite() or not b.is_finite():
        return False
    if a == b:
        return True
    if a == a.to_integral_value() and b == b.to_integral_value() and \
            "." not in ref and "." not in s and "e" not in s.lower():
        return False          # integers must be exact
    return abs(a - b) <= rel * max(abs(a), abs(b))


def psql_rows(lines):
    """psql's unaligned rows as sorted tuples of text."""
    return sorted(tuple(line.split("|")) for line in lines)


def compare_answers(ref, rows):
    """None when rows (tuples, any order) equal ref (sorted tuples of psql
    text), else a description of the first difference."""
    got = sorted(rows, key=lambda r: tuple("" if v is None else str(v) for v in r))
    if len(got) != len(ref):
        return "%d rows, PostgreSQL heap has %d" % (len(got), len(ref))
    for r, g in zip(ref, got):
        if len(r) != len(g) or not all(same_value(a, b) for a, b in zip(r, g)):
            return "row %s, PostgreSQL heap has %s" % ("|".join(map(str, g)), "|".join(r))
    return None


# ---------------------------------------------------------------- the sides

class PgSide:
    """A PostgreSQL side: its settings in one warm session, reopened when lost."""

    def __init__(self, side, args):
        self.side, self.args, self.session = side, args, None

    def _session(self):
        if self.session is None:
            self.session = PgSession(self.args.dbname, side_settings(self.side, self.args))
        return self.session

    def run(self, sql):
        """(rows, seconds, error) of one run; a lost session becomes an error
        (the next run opens a new one)."""
        try:
            return self._session().run(sql + ";")
        except SessionLost as e:
            self.session = None
            return [], None, str(e)

    def close(self):
        if self.session:
            self.session.close()


class DuckSide:
    """DuckDB in this process: lineorder as a native table of the needed columns."""

    def __init__(self, arrow, columns, threads):
        import duckdb
        import pyarrow as pa
        t0 = time.perf_counter()
        with pa.memory_map(arrow) as src:
            table = pa.ipc.open_file(src).read_all().select(columns)
            self.con = duckdb.connect()
            self.con.execute("SET threads = %d" % threads)
            self.con.register("lineorder_arrow", table)
            self.con.execute("CREATE TABLE lineorder AS SELECT * FROM lineorder_arrow")
            self.con.unregister("lineorder_arrow")
            del table
        self.load_s = time.perf_counter() - t0
        self.version = duckdb.__version__
        self.threads = self.con.execute("SELECT current_setting('threads')").fetchone()[0]

    def run(self, sql):
        try:
            t0 = time.perf_counter()
            rows = self.con.execute(sql).fetchall()
            return rows, time.perf_counter() - t0, None
        except Exception as e:          # duckdb raises its own error classes
            return [], None, "%s: %s" % (type(e).__name__, e)


class CopySide:
    """bench/h2d_copy: pinned host-to-GPU copies of a given number of bytes."""

    def __init__(self, path):
        self.path = path

    def run(self, nbytes, reps=1):
        r = subprocess.run([self.path, str(nbytes), "-r", str(reps)], capture_output=True, text=True)
        if r.returncode != 0:
            return None, r.stderr.strip() or "h2d_copy exited with %d" % r.returncode
        out = json.loads(r.stdout)
        return out, None


def referenced_bytes(arrow, columns):
    """Sum of the buffer sizes of the given columns over every record batch of
    the Arrow file, from its metadata (memory-mapped: no column data is read)."""
    import pyarrow as pa
    total = 0
    rows = 0
    with pa.memory_map(arrow) as src:
        reader = pa.ipc.open_file(src)
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            rows += batch.num_rows
            for name in columns:
                total += sum(b.size for b in batch.column(name).buffers() if b is not None)
    return total, rows


def find_h2d(args):
    """The h2d_copy binary, built with make when it is missing; (path, error)."""
    path = args.h2d or os.path.join(HERE, "h2d_copy")
    if not os.path.exists(path) and not args.h2d:
        r = subprocess.run(["make", "-s", "-C", HERE, "h2d_copy"], capture_output=True, text=True)
        if r.returncode != 0:
            return None, "bench/h2d_copy could not be built: %s" % r.stderr.strip()[-300:]
    if not os.access(path, os.X_OK):
        return None, "%s is not an executable (make -C bench h2d_copy)" % path
    return path, None


# ---------------------------------------------------------------- the run

def entry(status, note=None):
    """A side's result for one query, before its runs."""
    return {"status": status, "note": note, "runs_s": []}


def open_sides(args, res, columns):
    """The runner of every selected side that can run; the others get their
    status (unavailable, not implemented) in res for every query."""
    runners = {}
    info = service_status(args)
    for side in args.sides:
        why = None
        if side in ("heap", "arrow_pg", "warp_cpu", "warp_gpu", "warp_cpu_heap", "warp_gpu_heap"):
            if side in ("warp_gpu", "warp_gpu_heap") and not info.get("gpu"):
                why = "the pg_warp service has no GPU: %s" % info.get("service_note")
            else:
                runners[side] = PgSide(side, args)
        elif side == "duckdb":
            try:
                runners[side] = DuckSide(args.arrow, columns, args.workers)
                info["duckdb"] = {"version": runners[side].version, "threads": runners[side].threads,
                                  "load_s": round(runners[side].load_s, 3)}
            except ImportError as e:
                why = "python package duckdb is not installed (%s): pip install duckdb, " \
                      "or on the GPU host WHEELS=DIR with its wheel" % e
            except Exception as e:
                why = "DuckDB could not load the Arrow file: %s: %s" % (type(e).__name__, e)
        elif side == "h2d":
            path, why = find_h2d(args)
            if path:
                probe, why = CopySide(path).run(1 << 20, 1)
                if probe:
                    runners[side] = CopySide(path)
                    info["gpu_device"] = probe["device"]
        if why:
            for q in res:
                res[q][side] = entry("unavailable", why)
    return runners, info


def service_status(args):
    """What pgwarp.service_status() says: whether the service has a GPU, and a note."""
    try:
        s = PgSession(args.dbname, "SET statement_timeout = '30s'")
    except SessionLost as e:
        return {"gpu": False, "service_note": str(e)}
    rows, _, err = s.run("SELECT engine, engine_detail, device_count, devices "
                         "FROM pgwarp.service_status();")
    s.close()
    if err or not rows:
        return {"gpu": False, "service_note": "pgwarp.service_status() failed: %s" % (err or "no row")}
    engine, detail, count, devices = (rows[0].split("|") + ["", "", "", ""])[:4]
    return {"gpu": engine == "gpu", "service_engine": engine, "service_devices": devices,
            "service_note": "engine %s%s, %s device(s) %s" % (
                engine, " (%s)" % detail if detail else "", count or "0", devices)}


def warm_up(q, sql, nbytes, side, runner, ref, res):
    """The unmeasured run of one side and query: answer check, then EXPLAIN
    ANALYZE for PostgreSQL sides.  Sets res[q][side]."""
    e = entry("ok")
    res[q][side] = e
    if side == "h2d":
        out, err = runner.run(nbytes, 1)
        if err:
            e.update(status="failed", note=err)
        return
    rows, secs, err = runner.run(sql)
    if err:
        e.update(status="failed", note=err)
        return
    # the first run's time: for pg_warp GPU sides the one that fills the GPU column cache
    e["warm_up_s"] = secs
    if secs is None and isinstance(runner, PgSide):
        e.update(status="failed", note="psql printed no timing: %s" % " ".join(rows[-3:]))
        return
    check(e, ref, rows if side == "duckdb" else psql_rows(rows))
    if isinstance(runner, PgSide):
        xrows, _, err = runner.run("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
        if err:
            e.update(status="failed", note="EXPLAIN ANALYZE: %s" % err)
            return
        e["explain"], problem = explain_summary(side, xrows)
        if problem and e["status"] == "ok":
            e.update(status="not the engine", note=problem)


def check(e, ref, rows):
    """Compares an answer with PostgreSQL heap's; a difference marks e loudly."""
    if ref is None:
        e["answer_check"] = "not checked: PostgreSQL heap gave no answer"
        return
    diff = compare_answers(ref, rows)
    if diff:
        e["answer_check"] = "DIFFERS: " + diff
        e["status"] = "wrong answer"
        e["note"] = "WRONG ANSWER: " + diff
    elif "answer_check" not in e:
        e["answer_check"] = "equal to PostgreSQL heap"


def measured_runs(args, runners, res, ref, nbytes):
    """R rounds; in each, every query on every side still running, in an order
    that rotates by one side per round."""
    for r in range(args.runs):
        for q, sql, _ in QUERIES:
            live = [s for s in args.sides if s in runners and
                    res[q][s]["status"] in ("ok", "not the engine", "wrong answer")]
            k = r % len(live) if live else 0
            for side in live[k:] + live[:k]:
                e = res[q][side]
                if side == "h2d":
                    out, err = runners[side].run(nbytes[q], 1)
                    secs = out["seconds"][0] if out else None
                else:
                    rows, secs, err = runners[side].run(sql)
                    if not err:
                        check(e, ref[q], rows if side == "duckdb" else psql_rows(rows))
                if err or secs is None:
                    e.update(status="failed", note="measured run %d: %s" % (r + 1, err or "no timing"))
                    continue
                e["runs_s"].append(secs)
        print("  round %d of %d done" % (r + 1, args.runs), flush=True)


def summarise(res, rows, nbytes):
    """Medians, rows/s, referenced bytes/s (copy and engine sides) and the
    speed-up over PostgreSQL heap of every side with measured runs."""
    for q in res:
        for side, e in res[q].items():
            if e["runs_s"] and e["status"] != "failed":
                e["median_s"] = statistics.median(e["runs_s"])
                e["rows_per_s"] = rows / e["median_s"]
                if side in ("h2d", "warp_gpu", "warp_cpu"):
                    e["referenced_bytes_per_s"] = nbytes[q] / e["median_s"]
        heap = res[q].get("heap", {}).get("median_s")
        for side, e in res[q].items():
            if heap and "median_s" in e and side != "h2d":
                e["speedup_vs_heap"] = heap / e["median_s"]


def goal_of(name, res, value_fn, passes, fmt):
    """One goal over both queries: met when every query is measured and
    passes, not met when a measured one fails, else not measured."""
    per_query, verdicts = {}, []
    for q in res:
        value, why = value_fn(res[q])
        if value is None:
            per_query[q] = {"value": None, "why": why}
            verdicts.append(None)
        else:
            per_query[q] = {"value": value, "shown": fmt(value), "passes": passes(value)}
            verdicts.append(passes(value))
    if False in verdicts:
        status = "not met"
    elif None in verdicts:
        status = "not measured"
    else:
        status = "met"
    return {"goal": name, "status": status, "per_query": per_query}


def median_of(qres, side):
    """(median seconds, None) of a side that ran what it stands for, else (None, why)."""
    e = qres.get(side)
    if e is None:
        return None, "%s not selected (--sides)" % LABELS[side]
    if e["status"] == "ok" and "median_s" in e:
        return e["median_s"], None
    return None, "%s: %s%s" % (LABELS[side], e["status"], (" (%s)" % e["note"]) if e.get("note") else "")


def ratio(qres, num, den):
    """(median of num / median of den, None), or (None, why not)."""
    a, why_a = median_of(qres, num)
    b, why_b = median_of(qres, den)
    if a is None or b is None:
        return None, "; ".join(w for w in (why_a, why_b) if w)
    return a / b, None


def goals(res, rows):
    """The goals of issue 11 item 8, each over Q1 and Q2 (those of them that ran)."""
    res = {q: res[q] for q in GOAL_QUERIES if q in res}

    def gpu_rows(qres):
        t, why = median_of(qres, "warp_gpu")
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

def fmt_rate(v):
    """Rows per second, readable."""
    return "%.1f M" % (v / 1e6) if v < 1e9 else "%.2f G" % (v / 1e9)


def hash_comparison(res):
    """For Q3 and Q4: the CPU engine on Arrow, DuckDB and PostgreSQL heap
    (medians), and the ratios DuckDB / CPU engine and heap / CPU engine."""
    out = []
    for q in HASH_QUERIES:
        if q not in res:
            continue
        row = {"query": q}
        for side in ("warp_cpu", "duckdb", "heap"):
            row[side], row[side + "_why"] = median_of(res[q], side)
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


def png_chart(path, res, rows, title):
    """Per query, a horizontal bar of M rows/s per side (linear; the figure is
    written beside it), or the side's status where it has no number."""
    shown = [s for s in SIDES if any(s in res[q] for q in res)]
    bar_h, gap, left, width = 18, 6, 250, 1000
    panel = 30 + len(shown) * (bar_h + gap)
    c = Canvas(width, 40 + panel * len(res))
    c.text(10, 10, title)
    top = max([e.get("rows_per_s", 0) for q in res for e in res[q].values()] + [1])
    colors = {"heap": (120, 120, 120), "arrow_pg": (170, 170, 170), "warp_gpu": (40, 160, 60),
              "warp_cpu": (40, 110, 200), "warp_cpu_heap": (120, 150, 230), "warp_gpu_heap": (100, 200, 100), "duckdb": (230, 170, 20),
              "h2d": (200, 60, 60)}
    y = 40
    for q, sql, _ in QUERIES:
        c.text(10, y, "%s    M ROWS/S" % q.upper(), scale=3)
        y += 26
        for side in shown:
            e = res[q].get(side)
            c.text(10, y + 4, LABELS[side])
            if e and "rows_per_s" in e:
                w = max(1, int((width - left - 200) * e["rows_per_s"] / top))
                c.rect(left, y, left + w, y + bar_h, colors[side])
                label = "%.1f" % (e["rows_per_s"] / 1e6)
                if e["status"] != "ok":
                    label += " (%s)" % e["status"]
                c.text(left + w + 6, y + 4, label)
            else:
                c.text(left, y + 4, e["status"] if e else "not selected", rgb=(150, 0, 0))
            y += bar_h + gap
        y += 4
    c.save(path)


def git_commit():
    """The benchmark's own checkout (not necessarily the server's pg_warp build)."""
    r = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return r.stdout.strip() or None


def setup_database(args):
    """The extension, the foreign table over the Arrow file, and the workers
    on both lineorder tables; returns the heap table's row count."""
    psql_script(args.dbname, """
        SET client_min_messages = warning;
        CREATE EXTENSION IF NOT EXISTS pg_warp;
        DROP SCHEMA IF EXISTS {s} CASCADE;
        CREATE SCHEMA {s};
        IMPORT FOREIGN SCHEMA lineorder FROM SERVER arrow_fdw INTO {s} OPTIONS (file '{f}');
        ALTER FOREIGN TABLE {s}.lineorder OPTIONS (ADD parallel_workers '{w}');
        ALTER TABLE public.lineorder SET (parallel_workers = {w});
        """.format(s=SCHEMA, f=args.arrow.replace("'", "''"), w=args.workers))
    out = psql_script(args.dbname, "SET max_parallel_workers_per_gather = %d; "
                      "SELECT count(*) FROM public.lineorder; SELECT version(); "
                      "SELECT extversion FROM pg_extension WHERE extname = 'pg_warp';" % args.workers)
    count, version, ext_version = out.strip().split("\n")[:3]
    return int(count), version, ext_version


def warm_up_heap(q, sql, session, measured, res):
    """PostgreSQL heap's unmeasured run of one query: returns its answer (the
    reference; None if it failed).  When heap is a measured side, its result
    entry and EXPLAIN ANALYZE go to res."""
    rows, _, err = session.run(sql)
    if not measured:
        if err:
            print("WARNING: PostgreSQL heap failed on %s: %s" % (q, err))
        return None if err else psql_rows(rows)
    e = res[q]["heap"] = entry("failed", err) if err else entry("ok")
    if err:
        return None
    e["answer_check"] = "the reference"
    xrows, _, xerr = session.run("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
    if xerr:
        e.update(status="failed", note="EXPLAIN ANALYZE: %s" % xerr)
    else:
        e["explain"] = explain_summary("heap", xrows)[0]
    return psql_rows(rows)


def warm_up_all(args, runners, res, nbytes):
    """The unmeasured run of every side and query, PostgreSQL heap's first:
    its answers are the reference (computed also when heap is not measured).
    Returns them per query (None where heap failed)."""
    ref_side = runners.get("heap") or PgSide("heap", args)
    ref = {}
    for q, sql, _ in QUERIES:
        ref[q] = warm_up_heap(q, sql, ref_side, "heap" in runners, res)
        for side in args.sides:
            if side in runners and side != "heap":
                warm_up(q, sql, nbytes[q], side, runners[side], ref[q], res)
        print("  %s: warm-up done (%s)" % (q, ", ".join(
            "%s %s%s" % (s, res[q][s]["status"],
                         " %.3f s" % res[q][s]["warm_up_s"] if res[q][s].get("warm_up_s") else "")
            for s in args.sides if s in res[q])), flush=True)
    if "heap" not in runners:
        ref_side.close()
    return ref


def main():
    """Options, setup, warm-up, measured rounds, report, JSON and PNG."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="sides: " + ", ".join(SIDES))
    ap.add_argument("-d", "--dbname", default=os.environ.get("PGDATABASE"))
    ap.add_argument("-a", "--arrow", required=True, help="lineorder as an Arrow file with statistics")
    ap.add_argument("-w", "--workers", type=int, default=16,
                    help="PostgreSQL parallel workers and DuckDB threads (default 16)")
    ap.add_argument("-r", "--runs", type=int, default=5, help="measured runs per side and query")
    ap.add_argument("--sides", default=",".join(SIDES), help="a comma-separated subset (default: all)")
    ap.add_argument("--queries", default=",".join(q for q, _, _ in QUERIES),
                    help="a comma-separated subset of q1,q2,q3,q4 (default: all)")
    ap.add_argument("--tag", help="result name (default: sfSF_Nworkers)")
    ap.add_argument("--timeout", type=int, default=600, help="statement_timeout, seconds")
    ap.add_argument("--h2d", help="the h2d_copy binary (default: bench/h2d_copy, built if missing)")
    ap.add_argument("--note", help="free text kept in the JSON, e.g. which pg_warp build the server runs")
    ap.add_argument("-o", "--outdir", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    args.arrow = os.path.abspath(args.arrow)
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    bad = [s for s in args.sides if s not in SIDES]
    if bad or not args.sides:
        ap.error("unknown side(s) %s; sides: %s" % (", ".join(bad), ", ".join(SIDES)))
    wanted = [q.strip().lower() for q in args.queries.split(",") if q.strip()]
    bad = [q for q in wanted if q not in [name for name, _, _ in QUERIES]]
    if bad or not wanted:
        ap.error("unknown query(ies) %s; queries: %s" % (", ".join(bad),
                                                         ", ".join(q for q, _, _ in QUERIES)))
    QUERIES[:] = [q for q in QUERIES if q[0] in wanted]
    if args.runs < 1 or args.workers < 0:
        ap.error("-r wants at least 1 run, -w at least 0 workers")
    if not os.path.isfile(args.arrow):
        ap.error("no Arrow file %s" % args.arrow)

    columns = sorted({c for _, _, cols in QUERIES for c in cols})
    nbytes = {q: referenced_bytes(args.arrow, cols)[0] for q, _, cols in QUERIES}
    _, arrow_rows = referenced_bytes(args.arrow, [])
    heap_rows, version, ext_version = setup_database(args)
    print("lineorder: heap %d rows, Arrow file %d rows (%s, %.2f GB); %d workers/threads; %d runs"
          % (heap_rows, arrow_rows, args.arrow, os.path.getsize(args.arrow) / 1e9, args.workers, args.runs))
    if heap_rows != arrow_rows:
        print("WARNING: the Arrow file does not hold the heap table's rows: answers will differ")

    res = {q: {} for q, _, _ in QUERIES}
    runners, info = open_sides(args, res, columns)
    print("service: %s" % info.get("service_note"))
    if "duckdb" in info:
        print("duckdb %(version)s, %(threads)s threads, native table loaded in %(load_s)s s" % info["duckdb"])

    ref = warm_up_all(args, runners, res, nbytes)
    measured_runs(args, runners, res, ref, nbytes)
    for r in runners.values():
        if isinstance(r, PgSide):
            r.close()
    summarise(res, heap_rows, nbytes)
    goal_list = goals(res, heap_rows)
    print_report(res, goal_list, heap_rows, nbytes, info)

    wrong = ["%s %s" % (q.upper(), LABELS[s]) for q in res for s, e in res[q].items()
             if e["status"] == "wrong answer"]
    tag = args.tag or "sf%g_%dworkers" % (round(heap_rows / 6e6, 2), args.workers)
    os.makedirs(args.outdir, exist_ok=True)
    summary = {
        "tag": tag, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": os.uname().nodename, "cpus": os.cpu_count(), "bench_commit": git_commit(),
        "note": args.note, "server": version, "pg_warp_version": ext_version, "lineorder_rows": heap_rows, "arrow_rows": arrow_rows,
        "arrow_file": args.arrow, "arrow_file_bytes": os.path.getsize(args.arrow),
        "workers": args.workers, "runs": args.runs, "sides": args.sides, "info": info,
        "queries": {q: {"sql": sql, "referenced_columns": cols, "referenced_bytes": nbytes[q],
                        "sides": res[q]} for q, sql, cols in QUERIES},
        "goals": goal_list, "hash_aggregation": hash_comparison(res), "wrong_answers": wrong,
    }
    jpath = os.path.join(args.outdir, "engine_bench_%s.json" % tag)
    with open(jpath, "w") as f:
        json.dump(summary, f, indent=2)
    png_chart(os.path.join(args.outdir, "engine_bench_%s.png" % tag), res, heap_rows,
              "ENGINE BENCH %s: LINEORDER %.1fM ROWS, %d WORKERS" % (tag.upper(), heap_rows / 1e6, args.workers))
    print("\nwrote %s and .png" % jpath)
    if wrong:
        print("\n*** WRONG ANSWERS: %s ***" % "; ".join(wrong))
        sys.exit(1)


if __name__ == "__main__":
    main()
