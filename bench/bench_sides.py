"""What the engine benchmarks share (bench/engine_bench.py, bench/ssb_engine_bench.py).

The sides (PostgreSQL sessions with their settings, DuckDB in this process, a
pinned host-to-GPU copy), warm psql sessions, the answer comparison against
PostgreSQL heap, the summary of an EXPLAIN ANALYZE of a pg_warp side (GpuPreAgg on
the asked engine, its join depths, or PostgreSQL's own plan and pg_warp's reason),
the unmeasured and measured runs, times (median and best), goals, and the chart.

A side's result for one query (entry) is a dict: status ("ok", "not the engine",
"wrong answer", "failed", "unavailable"), note, runs_s, warm_up_s, answer_check,
explain; summarise adds median_s, best_s, time_s (the one the runner reports),
rows_per_s, speedup_vs_heap and speedup_vs_duckdb.
"""
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal, InvalidOperation

from canvas import Canvas

HERE = os.path.dirname(os.path.abspath(__file__))

LABELS = {
    "heap": "PostgreSQL heap",
    "arrow_pg": "PostgreSQL on arrow_fdw",
    "warp_gpu_first": "pg_warp GPU on Arrow, first run",
    "warp_gpu": "pg_warp GPU on Arrow",
    "warp_cpu": "pg_warp CPU engine on Arrow",
    "warp_cpu_heap": "pg_warp CPU engine on heap",
    "warp_gpu_heap": "pg_warp GPU on heap",
    "duckdb": "DuckDB",
    "h2d": "pinned host-to-GPU copy",
}
COLORS = {"heap": (120, 120, 120), "arrow_pg": (170, 170, 170), "warp_gpu_first": (150, 210, 150),
          "warp_gpu": (40, 160, 60), "warp_cpu": (40, 110, 200), "warp_cpu_heap": (120, 150, 230),
          "warp_gpu_heap": (100, 200, 100), "duckdb": (230, 170, 20), "h2d": (200, 60, 60)}
# what the plan of a pg_warp side must show (EXPLAIN ANALYZE's Engine)
WARP_ENGINE = {"warp_gpu": "GPU", "warp_cpu": "CPU", "warp_cpu_heap": "CPU", "warp_gpu_heap": "GPU"}
PG_SIDES = ("heap", "arrow_pg", "warp_cpu", "warp_gpu", "warp_cpu_heap", "warp_gpu_heap")
# the GpuPreAgg node's EXPLAIN ANALYZE figures that are kept
EXPLAIN_KEYS = ["Engine", "Engine Threads", "Rows Read", "Rows Passed", "Groups", "Bytes Read",
                "Bytes From GPU Cache", "Bytes From Pinned File Pages", "Bytes Read With pread",
                "Bytes Read With cuFile", "File Pages Queued To Pin",
                "I/O Time", "Engine Time", "Service Wall Time", "Service Round Trip", "Request Time",
                "Fallback Reason",
                "Arrow Files", "Record Batches", "Batches Skipped by Statistics",
                "Heap Pages", "Pages Shipped", "Pages Read Directly", "Page Read Time",
                "Ring Wait Time", "Units Probed", "Units from GPU Cache", "Units Read by the Service",
                "Shared Run Groups", "Read Ahead", "Read Ahead Time", "Read Ahead Bytes",
                "Read Ahead Bytes Cached", "GPU 0"]


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
        marker = "@@bench_sides %d@@" % self.count
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
        sys.exit("%s: setup failed: %s\n%s" % (os.path.basename(sys.argv[0]), script.strip()[:300],
                                               r.stderr.strip()))
    return r.stdout


def side_settings(side, args, schema):
    """The session settings of a PostgreSQL side (schema: where the Arrow
    side's foreign lineorder is)."""
    s = ["SET jit = off", "SET max_parallel_workers_per_gather = %d" % args.workers,
         "SET statement_timeout = '%ds'" % args.timeout]
    if side == "heap":
        s.append("SET search_path = public")
        s.append("SET pg_warp.enabled = off")
    elif side in ("warp_cpu_heap", "warp_gpu_heap"):
        s.append("SET search_path = public")
        s.append("SET pg_warp.engine = %s" % WARP_ENGINE[side].lower())
    else:
        s.append("SET search_path = %s, public" % schema)
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


def explain_summary(side, rows, depths=None):
    """What one EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) says: node types,
    workers, the GpuPreAgg node's figures and join depths, pg_warp's line
    (why a query stays in PostgreSQL), and whether the side ran what it claims.

    depths: the joins the query has (None: do not check them); a pg_warp side
    that runs GpuPreAgg must show a Join Depth line for each.
    Returns (summary, problem): problem is None when the plan is what the side
    stands for, else why not (a fallback, PostgreSQL's plan, the wrong engine,
    joins left to PostgreSQL).  summary["plan"] says it in one line.
    """
    doc = json.loads("\n".join(rows))[0]
    nodes = walk(doc["Plan"], [])
    gpa = [n for n in nodes if n.get("Custom Plan Provider") == "GpuPreAgg"]
    summary = {"nodes": [n.get("Custom Plan Provider") or n["Node Type"] for n in nodes],
               "workers_launched": sum(n.get("Workers Launched", 0) for n in nodes),
               "planning_ms": doc.get("Planning Time"), "execution_ms": doc.get("Execution Time")}
    if doc.get("pg_warp"):
        summary["pg_warp"] = doc["pg_warp"]
    joins = []
    if gpa:
        summary["gpupreagg"] = {k: gpa[0][k] for k in EXPLAIN_KEYS if k in gpa[0]}
        if "Actual Total Time" in gpa[0] and "Actual Startup Time" in gpa[0]:
            # after the node's first row: its last rows, then its shutdown (and its children's)
            summary["gpupreagg"]["end_ms"] = round(gpa[0]["Actual Total Time"] -
                                                   gpa[0]["Actual Startup Time"], 3)
        joins = [gpa[0][k] for k in sorted((k for k in gpa[0] if re.match(r"^Join Depth \d+$", k)),
                                           key=lambda k: int(k.split()[-1]))]
        summary["join_depths"] = joins
        engine = gpa[0].get("Engine")
        summary["plan"] = "GpuPreAgg, engine %s, %d join depth%s" % (engine, len(joins),
                                                                   "" if len(joins) == 1 else "s")
    else:
        summary["plan"] = "PostgreSQL's plan: %s" % " > ".join(summary["nodes"])
        if summary.get("pg_warp"):
            summary["plan"] += " (pg_warp: %s)" % summary["pg_warp"]
    problem = None
    if side in WARP_ENGINE:
        want = WARP_ENGINE[side]
        if not gpa:
            if summary.get("pg_warp"):
                problem = "PostgreSQL's own plan was chosen (no GpuPreAgg node; pg_warp: %s)" % \
                    summary["pg_warp"]
            else:
                problem = "PostgreSQL's own plan was chosen (no GpuPreAgg node): %s" % \
                    " > ".join(summary["nodes"])
        else:
            # a parallel node: the leader's engine (if it took part) and each worker's
            engines = [e for e in [gpa[0].get("Engine")] +
                       [w.get("Engine") for w in gpa[0].get("Workers", [])]
                       if e is not None and not e.startswith("none")]
            if "PostgreSQL (fallback)" in engines:
                problem = "GpuPreAgg fell back to PostgreSQL: %s" % gpa[0].get("Fallback Reason")
            elif not engines or set(engines) != {want}:
                problem = "GpuPreAgg ran on engine %s, not %s" % ("/".join(engines) or "none", want)
            elif depths is not None and len(joins) != depths:
                problem = "GpuPreAgg has %d join depths, the query %d joins" % (len(joins), depths)
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

    def __init__(self, side, args, schema):
        self.side, self.args, self.schema, self.session = side, args, schema, None

    def _session(self):
        if self.session is None:
            self.session = PgSession(self.args.dbname, side_settings(self.side, self.args, self.schema))
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
            self.session = None


# PostgreSQL's types (format_type) as DuckDB's
DUCK_TYPES = [(r"^character varying(\(\d+\))?$|^character(\(\d+\))?$|^text$", "VARCHAR"),
              (r"^double precision$", "DOUBLE"), (r"^numeric(\(\d+,\d+\))$", r"DECIMAL\1"),
              (r"^timestamp without time zone$", "TIMESTAMP")]


class DuckSide:
    """DuckDB in this process, with native tables (load_arrow, load_pg)."""

    def __init__(self, threads):
        import duckdb
        self.con = duckdb.connect()
        self.con.execute("SET threads = %d" % threads)
        self.load_s = 0.0
        self.version = duckdb.__version__
        self.threads = self.con.execute("SELECT current_setting('threads')").fetchall()[0][0]

    def load_arrow(self, name, arrow, columns):
        """Table name from the given columns of an Arrow file."""
        import pyarrow as pa
        t0 = time.perf_counter()
        with pa.memory_map(arrow) as src:
            table = pa.ipc.open_file(src).read_all().select(columns)
            self.con.register("arrow_source", table)
            self.con.execute("CREATE TABLE %s AS SELECT * FROM arrow_source" % name)
            self.con.unregister("arrow_source")
            del table
        self.load_s += time.perf_counter() - t0

    def load_pg(self, db, name):
        """Table name from PostgreSQL's table of that name (public schema), its
        columns' types mapped to DuckDB's, its rows through COPY ... CSV."""
        t0 = time.perf_counter()
        cols = psql_script(db, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                               "WHERE attrelid = 'public.%s'::regclass AND attnum > 0 AND NOT attisdropped "
                               "ORDER BY attnum" % name).strip().split("\n")
        types = {}
        for line in cols:
            col, typ = line.split("|")
            for pat, duck in DUCK_TYPES:
                if re.match(pat, typ):
                    typ = re.sub(pat, duck, typ)
                    break
            types[col] = typ
        with tempfile.TemporaryDirectory(prefix="bench_duck_") as d:
            path = os.path.join(d, name + ".csv")
            args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"] + (["-d", db] if db else [])
            with open(path, "w") as f:
                r = subprocess.run(args + ["-c", "COPY public.%s TO STDOUT (FORMAT csv)" % name],
                                   stdout=f, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                raise RuntimeError("COPY %s: %s" % (name, r.stderr.strip()))
            self.con.execute("CREATE TABLE %s AS SELECT * FROM read_csv(?, header = false, delim = ',', "
                             "quote = '\"', escape = '\"', columns = %s)"
                             % (name, "{%s}" % ", ".join("'%s': '%s'" % kv for kv in types.items())), [path])
        self.load_s += time.perf_counter() - t0

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


def find_tool(name, given=None):
    """A bench/ program (given: a path the user named instead), built with
    make when it is missing; (path, error)."""
    path = given or os.path.join(HERE, name)
    if not os.path.exists(path) and not given:
        r = subprocess.run(["make", "-s", "-C", HERE, name], capture_output=True, text=True)
        if r.returncode != 0:
            return None, "bench/%s could not be built: %s" % (name, r.stderr.strip()[-300:])
    if not os.access(path, os.X_OK):
        return None, "%s is not an executable (make -C bench %s)" % (path, name)
    return path, None


def find_h2d(args):
    """The h2d_copy binary, built with make when it is missing; (path, error)."""
    return find_tool("h2d_copy", args.h2d)


# ---------------------------------------------------------------- the run

def entry(status, note=None):
    """A side's result for one query, before its runs."""
    return {"status": status, "note": note, "runs_s": []}


def open_sides(args, res, schema, make_duck):
    """The runner of every selected side that can run; the others get their
    status (unavailable, not implemented) in res for every query.
    make_duck(): a DuckSide with the benchmark's tables."""
    runners = {}
    info = service_status(args)
    for side in args.sides:
        why = None
        if side in PG_SIDES:
            if side in ("warp_gpu", "warp_gpu_heap") and not info.get("gpu"):
                why = "the pg_warp service has no GPU: %s" % info.get("service_note")
            else:
                runners[side] = PgSide(side, args, schema)
        elif side == "duckdb":
            try:
                runners[side] = make_duck()
                info["duckdb"] = {"version": runners[side].version, "threads": runners[side].threads,
                                  "load_s": round(runners[side].load_s, 3)}
            except ImportError as e:
                why = "python package duckdb is not installed (%s): pip install duckdb, " \
                      "or on the GPU host WHEELS=DIR with its wheel" % e
            except Exception as e:
                why = "DuckDB could not load its tables: %s: %s" % (type(e).__name__, e)
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


def explain_run(e, side, runner, sql, depths=None):
    """EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) of sql on a PostgreSQL side into
    e["explain"]; a plan that is not what the side stands for marks e."""
    xrows, _, err = runner.run("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " + sql)
    if err:
        e.update(status="failed", note="EXPLAIN ANALYZE: %s" % err)
        return
    e["explain"], problem = explain_summary(side, xrows, depths)
    if problem and e["status"] == "ok":
        e.update(status="not the engine", note=problem)


def warm_up(q, sql, nbytes, side, runner, ref, res, depths=None):
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
        explain_run(e, side, runner, sql, depths)


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
    xrows, _, xerr = session.run("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " + sql)
    if xerr:
        e.update(status="failed", note="EXPLAIN ANALYZE: %s" % xerr)
    else:
        e["explain"] = explain_summary("heap", xrows)[0]
    return psql_rows(rows)


def warm_up_all(args, queries, runners, res, nbytes, schema, depths=None):
    """The unmeasured run of every side and query (queries: (name, sql, ...)),
    PostgreSQL heap's first: its answers are the reference (computed also when
    heap is not measured).  Returns them per query (None where heap failed).
    depths: per query, the joins a pg_warp side's GpuPreAgg must show."""
    ref_side = runners.get("heap") or PgSide("heap", args, schema)
    ref = {}
    for q, sql, *_ in queries:
        ref[q] = warm_up_heap(q, sql, ref_side, "heap" in runners, res)
        for side in args.sides:
            if side in runners and side != "heap":
                warm_up(q, sql, nbytes[q], side, runners[side], ref[q], res,
                        depths[q] if depths else None)
        print("  %s: warm-up done (%s)" % (q, ", ".join(
            "%s %s%s" % (s, res[q][s]["status"],
                         " %.3f s" % res[q][s]["warm_up_s"] if res[q][s].get("warm_up_s") else "")
            for s in args.sides if s in res[q])), flush=True)
    if "heap" not in runners:
        ref_side.close()
    return ref


def measured_runs(args, queries, runners, res, ref, nbytes):
    """R rounds; in each, every query on every side still running, in an order
    that rotates by one side per round."""
    for r in range(args.runs):
        for q, sql, *_ in queries:
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


def summarise(res, rows, nbytes, best=False):
    """Medians and bests; time_s (the best when best, else the median),
    rows/s, referenced bytes/s (copy and engine sides) and the speed-up over
    PostgreSQL heap and over DuckDB of every side with measured runs."""
    for q in res:
        for side, e in res[q].items():
            if e["runs_s"] and e["status"] != "failed":
                e["median_s"] = statistics.median(e["runs_s"])
                e["best_s"] = min(e["runs_s"])
                e["time_s"] = e["best_s"] if best else e["median_s"]
                e["rows_per_s"] = rows / e["time_s"]
                if side in ("h2d", "warp_gpu", "warp_cpu", "warp_gpu_first"):
                    e["referenced_bytes_per_s"] = nbytes[q] / e["time_s"]
        for base in ("heap", "duckdb"):
            t = res[q].get(base, {}).get("time_s")
            for side, e in res[q].items():
                if t and "time_s" in e and side != "h2d":
                    e["speedup_vs_" + base] = t / e["time_s"]


# ---------------------------------------------------------------- goals

def goal_of(name, res, value_fn, passes, fmt):
    """One goal over the queries of res: met when every query is measured and
    passes, not met when a measured one fails, else not measured (also when
    res has none of the goal's queries: a run of other queries meets nothing)."""
    per_query, verdicts = {}, [] if res else [None]
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


def time_of(qres, side):
    """(time_s, None) of a side that ran what it stands for, else (None, why)."""
    e = qres.get(side)
    if e is None:
        return None, "%s not selected (--sides)" % LABELS[side]
    if e["status"] == "ok" and "time_s" in e:
        return e["time_s"], None
    return None, "%s: %s%s" % (LABELS[side], e["status"], (" (%s)" % e["note"]) if e.get("note") else "")


def ratio(qres, num, den):
    """(time of num / time of den, None), or (None, why not)."""
    a, why_a = time_of(qres, num)
    b, why_b = time_of(qres, den)
    if a is None or b is None:
        return None, "; ".join(w for w in (why_a, why_b) if w)
    return a / b, None


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


# ---------------------------------------------------------------- output

def fmt_rate(v):
    """Rows per second, readable."""
    return "%.1f M" % (v / 1e6) if v < 1e9 else "%.2f G" % (v / 1e9)


def png_chart(path, res, queries, sides, title, extra=None):
    """Per query, a horizontal bar of M rows/s per side (linear over the whole
    chart; the figure is written beside it), or the side's status where it
    has no number.  extra: per query, a note printed after its name."""
    shown = [s for s in sides if any(s in res[q] for q in res)]
    bar_h, gap, width = 18, 6, 1000
    left = 20 + 8 * max([len(LABELS[s]) for s in shown] + [28])
    panel = 30 + len(shown) * (bar_h + gap)
    c = Canvas(width, 40 + panel * len(res))
    c.text(10, 10, title)
    top = max([e.get("rows_per_s", 0) for q in res for e in res[q].values()] + [1])
    y = 40
    for q in queries:
        c.text(10, y, "%s    M ROWS/S%s" % (q.upper(), (extra or {}).get(q, "")), scale=3)
        y += 26
        for side in shown:
            e = res[q].get(side)
            c.text(10, y + 4, LABELS[side])
            if e and "rows_per_s" in e:
                w = max(1, int((width - left - 200) * e["rows_per_s"] / top))
                c.rect(left, y, left + w, y + bar_h, COLORS[side])
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


def setup_database(args, schema):
    """The extension, the foreign table schema.lineorder over the Arrow file,
    and the workers on both lineorder tables; returns the heap table's row
    count, the server's version and pg_warp's."""
    psql_script(args.dbname, """
        SET client_min_messages = warning;
        CREATE EXTENSION IF NOT EXISTS pg_warp;
        DROP SCHEMA IF EXISTS {s} CASCADE;
        CREATE SCHEMA {s};
        IMPORT FOREIGN SCHEMA lineorder FROM SERVER arrow_fdw INTO {s} OPTIONS (file '{f}');
        ALTER FOREIGN TABLE {s}.lineorder OPTIONS (ADD parallel_workers '{w}');
        ALTER TABLE public.lineorder SET (parallel_workers = {w});
        """.format(s=schema, f=args.arrow.replace("'", "''"), w=args.workers))
    out = psql_script(args.dbname, "SET max_parallel_workers_per_gather = %d; "
                      "SELECT count(*) FROM public.lineorder; SELECT version(); "
                      "SELECT extversion FROM pg_extension WHERE extname = 'pg_warp';" % args.workers)
    count, version, ext_version = out.strip().split("\n")[:3]
    return int(count), version, ext_version


# ---------------------------------------------------------------- a runner's frame

def add_common_args(ap, runs, runs_help):
    """The options every lineorder runner takes (connection, Arrow file,
    workers, runs, tag, timeout, h2d, note, output folder)."""
    ap.add_argument("-d", "--dbname", default=os.environ.get("PGDATABASE"))
    ap.add_argument("-a", "--arrow", required=True, help="lineorder as an Arrow file with statistics")
    ap.add_argument("-w", "--workers", type=int, default=16,
                    help="PostgreSQL parallel workers and DuckDB threads (default 16)")
    ap.add_argument("-r", "--runs", type=int, default=runs, help=runs_help)
    ap.add_argument("--tag", help="result name (default: sfSF_Nworkers)")
    ap.add_argument("--timeout", type=int, default=600, help="statement_timeout, seconds")
    ap.add_argument("--h2d", help="the h2d_copy binary (default: bench/h2d_copy, built if missing)")
    ap.add_argument("--note", help="free text kept in the JSON, e.g. which pg_warp build the server runs")
    ap.add_argument("-o", "--outdir", default=os.path.join(HERE, "results"))


def check_common_args(ap, args, sides):
    """Validates add_common_args' options and --sides (a comma-separated
    subset of sides; becomes a list)."""
    args.arrow = os.path.abspath(args.arrow)
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    bad = [s for s in args.sides if s not in sides]
    if bad or not args.sides:
        ap.error("unknown side(s) %s; sides: %s" % (", ".join(bad), ", ".join(sides)))
    if args.runs < 1 or args.workers < 0:
        ap.error("-r wants at least 1 run, -w at least 0 workers")
    if not os.path.isfile(args.arrow):
        ap.error("no Arrow file %s" % args.arrow)


def open_data(args, schema, queries):
    """setup_database, and the queries' (name, sql, columns, ...) referenced
    bytes in the Arrow file; returns a dict: columns (all of them), nbytes
    (per query), arrow_rows, heap_rows, version, ext_version."""
    d = {"columns": sorted({c for _, _, cols, *_ in queries for c in cols}),
         "nbytes": {q: referenced_bytes(args.arrow, cols)[0] for q, _, cols, *_ in queries}}
    d["arrow_rows"] = referenced_bytes(args.arrow, [])[1]
    d["heap_rows"], d["version"], d["ext_version"] = setup_database(args, schema)
    print("lineorder: heap %d rows, Arrow file %d rows (%s, %.2f GB); %d workers/threads; %d runs"
          % (d["heap_rows"], d["arrow_rows"], args.arrow, os.path.getsize(args.arrow) / 1e9,
             args.workers, args.runs))
    if d["heap_rows"] != d["arrow_rows"]:
        print("WARNING: the Arrow file does not hold the heap table's rows: answers will differ")
    return d


def result_head(args, tag, data, info):
    """The JSON fields that every runner's result starts with."""
    return {"tag": tag, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": os.uname().nodename, "cpus": os.cpu_count(), "bench_commit": git_commit(),
            "note": args.note, "server": data["version"], "pg_warp_version": data["ext_version"],
            "lineorder_rows": data["heap_rows"], "arrow_rows": data["arrow_rows"],
            "arrow_file": args.arrow, "arrow_file_bytes": os.path.getsize(args.arrow),
            "workers": args.workers, "runs": args.runs, "sides": args.sides, "info": info}


def write_results(args, name, summary, chart, wrong, what="WRONG ANSWERS"):
    """bench/results/NAME.json (summary) and NAME.png (chart(path)); exit
    status 1, after saying so, when wrong lists anything."""
    os.makedirs(args.outdir, exist_ok=True)
    jpath = os.path.join(args.outdir, name + ".json")
    with open(jpath, "w") as f:
        json.dump(summary, f, indent=2)
    chart(os.path.join(args.outdir, name + ".png"))
    print("\nwrote %s and .png" % jpath)
    if wrong:
        print("\n*** %s: %s ***" % (what, "; ".join(wrong)))
        sys.exit(1)
