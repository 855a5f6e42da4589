"""The pytest suites' one way to reach PostgreSQL and to check the engine
against it (doc/testing.md, "Engine tests").

    Db                  psql access to one cluster: Db() is the cluster of
                        scripts/test.sh (the PG* environment variables name
                        it), Db(env) any other (Cluster is a Db).
    Cluster             a throwaway preloaded cluster of a module's own
                        (scripts/cluster.sh), for tests that kill, restart
                        or reconfigure it.
    db.same(sql, node)  the engine's answer is PostgreSQL's AND the engine
                        ran: sql runs with pg_warp on and off, the rows must
                        be equal, and EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON)
                        must show every `node` that executed served by the
                        engine (no fallback to PostgreSQL, no batch rechecked
                        by PostgreSQL), so a silent fallback cannot pass.
    db.same_error(sql, node)
                        both raise the same error (SQLSTATE and message),
                        and the plan with pg_warp on has `node`.
    db.same_answer(sql, node)
                        one of the two, whichever PostgreSQL gives.
    db.falls_back(sql, node), db.not_planned(sql, node)
                        what the engine hands back or does not take.
    db.create_run_function(schema), db.compare(schema, queries, node=...)
                        many queries on and off in one statement, each
                        plan checked as same() does.
    db.engine_ran(sql, node), db.plan(sql), db.result(sql), db.psql(sql)
    db.same_snapshot(sql, settings)
                        sql with pg_warp (its EXPLAIN ANALYZE too) and with it
                        off in one REPEATABLE READ transaction: (plan, on, off).
    with writers(db, rounds_of): ...
                        sessions changing tables while the body runs.

`node` is "GpuPreAgg", "GpuScan" (their Custom Scans), FILTER (arrow_fdw's
Foreign Scan with the engine's filter) or a tuple of them (any).  The
module-level psql() and sqlstate() work on DB, which is Db().
"""
import json
import math
import os
import shutil
import socket
import contextlib
import subprocess
import tempfile
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")

# engine plans whatever the costs of the tiny test tables; the oracle
ON = ("SET pg_warp.engine_startup_cost = 0",)
OFF = ("SET pg_warp.enabled = off",)
FILTER = "Engine Filter"        # node: arrow_fdw's scan with the engine's filter
ENGINES = ("CPU", "GPU")
# EXPLAIN ANALYZE counters of work PostgreSQL did in the engine's place, and
# of the work there was
# a GpuScan whose program no longer fits the plan leaves every qual to PostgreSQL
STALE = "Engine Filter Rechecked by PostgreSQL"
RECHECKED = {"Batches Rechecked by PostgreSQL": "Batches Read",
             "Chunks Rechecked by PostgreSQL": "Chunks",
             "Engine Fallback Batches": "Batches Read"}


class Db:
    """psql against one cluster: env None is this process's environment (the
    cluster of scripts/test.sh), else the environment naming another one."""

    def __init__(self, env=None):
        self.env = env

    def psql(self, sql, settings=(), check=True, user=None, db=None, sep="|", rsep=None,
             verbose=True, timeout=300):
        """Runs the settings statements, then sql, in one psql session (-XAtq,
        fields separated by sep, rows by rsep (a newline), VERBOSITY verbose
        unless not verbose); returns (returncode, stdout stripped, stderr).
        check: it must succeed."""
        args = ["psql", "-XAtq", "-F", sep, "-v", "ON_ERROR_STOP=1"]
        args += ["-v", "VERBOSITY=verbose"] if verbose else []
        args += ["-R", rsep] if rsep else []
        if user:
            args += ["-U", user]
        if db:
            args += ["-d", db]
        for s in settings:
            args += ["-c", s]
        r = subprocess.run(args + ["-c", sql], env=self.env, capture_output=True,
                           text=True, timeout=timeout)
        if check:
            assert r.returncode == 0, (sql, r.stderr)
        return r.returncode, r.stdout.strip(), r.stderr

    def sql(self, sql, settings=()):
        """sql's output; it must succeed."""
        return self.psql(sql, settings)[1]

    def result(self, sql, settings=()):
        """("ok", output) or ("error", "SQLSTATE: message") of the first error."""
        rc, out, err = self.psql(sql, settings, check=False)
        if rc == 0:
            return ("ok", out)
        for line in err.splitlines():
            if line.startswith("ERROR:"):
                return ("error", line.split(None, 1)[1].strip())
        return ("error", err)

    def plan(self, sql, settings=ON, analyze=False):
        """EXPLAIN (VERBOSE, FORMAT JSON[, ANALYZE]) of sql: the top plan node."""
        opts = "ANALYZE, TIMING OFF, " if analyze else ""
        out = self.sql("EXPLAIN (%sVERBOSE, COSTS OFF, FORMAT JSON) %s" % (opts, sql),
                       settings)
        return json_plan(out)

    def engine_ran(self, sql, node, settings=ON, rechecked=False, engine=None):
        """EXPLAIN ANALYZE of sql has a `node` that executed, and the engine
        served each one that did (why_not_run).  Returns the plan (JSON)."""
        top = self.plan(sql, settings, analyze=True)
        why = why_not_run(top, node, rechecked, engine)
        assert why is None, "%s: %s\n%s" % (why, sql, show(top))
        return top

    def same(self, sql, node, settings=(), on=ON, off=OFF, ordered=False, rel_tol=0.0,
             rechecked=False, engine=None, fuzzy=None):
        """The rows of sql with pg_warp on equal PostgreSQL's (pg_warp off),
        and the engine ran every `node` (engine_ran).  ordered: compare in
        order, else as sorted lines; rel_tol: float fields (those numbered
        in fuzzy, from 0, if given) may differ by this relative amount
        (float sums in another order).  Returns the rows."""
        on, off = tuple(on) + tuple(settings), tuple(off) + tuple(settings)
        got, want = self.result(sql, on), self.result(sql, off)
        assert want[0] == "ok", ("PostgreSQL raised: use same_error", sql, want)
        assert got[0] == "ok", (sql, got, want)
        assert_rows_equal(sql, got[1], want[1], ordered, rel_tol, fuzzy)
        self.engine_ran(sql, node, on, rechecked, engine)
        return lines(got[1])

    def same_error(self, sql, node, settings=(), on=ON, off=OFF, message=True):
        """sql raises the same error with pg_warp on as off (SQLSTATE, and
        with message the text), and its plan with pg_warp on has `node`.
        Returns the error ("SQLSTATE: message")."""
        on, off = tuple(on) + tuple(settings), tuple(off) + tuple(settings)
        got, want = self.result(sql, on), self.result(sql, off)
        assert want[0] == "error", ("PostgreSQL raised no error", sql, want)
        assert got[0] == "error", (sql, got, want)
        if message:
            assert got == want, (sql, got, want)
        else:
            assert got[1].split(":")[0] == want[1].split(":")[0], (sql, got, want)
        top = self.plan(sql, on)
        assert find_nodes(top, node), "no %s in the plan of %s:\n%s" % (node, sql, show(top))
        return got[1]

    def same_answer(self, sql, node, settings=(), on=ON, off=OFF, rel_tol=0.0,
                    rechecked=False):
        """same() where PostgreSQL answers sql, same_error() where it raises."""
        if self.result(sql, tuple(off) + tuple(settings))[0] == "error":
            return self.same_error(sql, node, settings, on, off)
        return self.same(sql, node, settings, on, off, rel_tol=rel_tol, rechecked=rechecked)

    def falls_back(self, sql, node, settings=(), on=ON, off=OFF):
        """The plan of sql has `node`, which falls back to PostgreSQL's plan
        in at least one participant (EXPLAIN ANALYZE says "PostgreSQL
        (fallback)" for the node or a parallel worker of it, or that
        PostgreSQL rechecks its filter; unless the query raises), and the
        answer is PostgreSQL's.  Returns the plan (JSON) or
        None where it raises."""
        want = self.result(sql, tuple(off) + tuple(settings))
        if want[0] == "error":
            self.same_error(sql, node, settings, on, off)
            return None
        on = tuple(on) + tuple(settings)
        got = self.result(sql, on)
        assert got[0] == "ok", (sql, got, want)
        assert_rows_equal(sql, got[1], want[1])
        top = self.plan(sql, on, analyze=True)
        nodes = find_nodes(top, node)
        assert nodes, "no %s in the plan of %s:\n%s" % (node, sql, show(top))
        assert any(str(e).startswith("PostgreSQL") for n in nodes for e in engines_of(n)) or \
            any(STALE in n for n in nodes), show(top)
        return top

    def not_planned(self, sql, node, settings=ON):
        """The plan of sql (EXPLAIN) has no `node`."""
        top = self.plan(sql, settings)
        assert not find_nodes(top, node), "%s in the plan of %s:\n%s" % (node, sql, show(top))

    def same_snapshot(self, sql, settings=(), timeout=300):
        """sql with pg_warp (after settings; its EXPLAIN ANALYZE first) and with
        pg_warp.enabled off, in one REPEATABLE READ transaction (one snapshot):
        (the plan, the rows on, the rows off)."""
        script = ("".join(x + ";\n" for x in settings) +
                  "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
                  "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql + ";\n"
                  "\\echo ====\n" + sql + ";\n\\echo ====\n"
                  "SET LOCAL pg_warp.enabled = off;\n" + sql + ";\nCOMMIT;\n")
        r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-f", "-"], input=script,
                           env=self.env, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, r.stderr
        plan, on, off = r.stdout.split("====\n")
        return plan, on, off

    def sqlstate(self, sql, settings=(), db=None):
        """The SQLSTATE and text of the error sql raises."""
        rc, out, err = self.psql(sql, settings, check=False, db=db)
        assert rc != 0, "expected an error from: " + sql
        for line in err.splitlines():
            if line.startswith("ERROR:"):
                return line.split()[1].rstrip(":"), err
        raise AssertionError(err)

    # ------------------------------------------------ many queries in one statement

    def create_run_function(self, schema, settings=()):
        """Creates schema.run(q text, on_off bool): q's one value run with
        pg_warp.enabled = on_off and the (name, value) settings (all local to
        its transaction), as 'ok VALUE' ('-' for NULL) or 'error SQLSTATE
        MSG'; and schema.explain(q text): with pg_warp on and the settings,
        EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) of q, or where q raises, 'planned '
        and its EXPLAIN (VERBOSE, FORMAT JSON), or where that raises (q does
        not parse or plan), 'error ' and the error."""
        sets = "".join("PERFORM set_config('%s', '%s', true);\n              " % s
                       for s in settings)
        self.sql("""CREATE FUNCTION %s.run(q text, on_off bool) RETURNS text LANGUAGE plpgsql AS $f$
            DECLARE r text;
            BEGIN
              PERFORM set_config('pg_warp.enabled', on_off::text, true);
              %sEXECUTE q INTO r;
              RETURN 'ok ' || coalesce(r, '-');
            EXCEPTION WHEN others THEN
              RETURN 'error ' || SQLSTATE || ' ' || SQLERRM;
            END $f$""" % (schema, sets))
        self.sql("""CREATE FUNCTION %s.explain(q text) RETURNS text LANGUAGE plpgsql AS $f$
            DECLARE r text;
            BEGIN
              PERFORM set_config('pg_warp.enabled', 'on', true);
              %sBEGIN
                EXECUTE 'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, FORMAT JSON) ' || q
                  INTO r;
              EXCEPTION WHEN others THEN
                BEGIN
                  EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF, FORMAT JSON) ' || q INTO r;
                  r := 'planned ' || r;
                EXCEPTION WHEN others THEN
                  r := 'error ' || SQLSTATE || ' ' || SQLERRM;
                END;
              END;
              RETURN r;
            END $f$""" % (schema, sets))

    def compare(self, schema, queries, settings="", node=None, rechecked=False):
        """Runs each query with schema.run on and off (create_run_function),
        after settings (SQL run first in the same session); returns [(query,
        on, off)] in their order.  With node, each query's plan with pg_warp on
        has `node`, and where the query answers, the engine ran every such
        node (Db.engine_ran; rechecked as there); a query that raises before
        it is planned (parse errors) has no plan to check."""
        vals = ",".join("(%d, '%s')" % (k, q.replace("'", "''")) for k, q in enumerate(queries))
        ex = "%s.explain(q)" % schema if node else "'-'"
        out = self.psql(settings + "SELECT k, %s.run(q, true), %s.run(q, false), %s "
                        "FROM (VALUES %s) v(k, q) ORDER BY k" % (schema, schema, ex, vals),
                        sep="\x1f", rsep="\x1e")[1]
        rows = [r.split("\x1f") for r in out.split("\x1e")]
        assert len(rows) == len(queries)
        if node:
            bad = [engine_not_run(queries[int(k)], plan, node, rechecked)
                   for k, on, _, plan in rows if not (on.startswith("error ") and
                                                      plan.startswith("error "))]
            bad = [b for b in bad if b]
            assert not bad, "\n".join(bad)
        return [(queries[int(k)], on, off) for k, on, off, _ in rows]


def engine_not_run(sql, explain, node, rechecked):
    """Why schema.explain's answer explain does not show the engine serving
    `node` for sql, or None."""
    if explain.startswith("planned "):
        top = json_plan(explain[len("planned "):])
        return None if find_nodes(top, node) else "no %s in the plan of %s" % (node, sql)
    why = why_not_run(json_plan(explain), node, rechecked)
    return why and "%s: %s" % (why, sql)


def unequal(results):
    """The (query, on, off) results whose on and off differ, one message each."""
    return ["%s:\n  on:  %s\n  off: %s" % (q, on, off) for q, on, off in results if on != off]


def lines(out):
    return out.split("\n") if out else []


def merged_pairs(pairs):
    """A JSON object of pairs whose repeated keys' lists are joined: a
    parallel node has two "Workers" lists (PostgreSQL's figures of each
    worker, and the engine's)."""
    d = {}
    for k, v in pairs:
        d[k] = d[k] + v if k in d and isinstance(d[k], list) and isinstance(v, list) else v
    return d


def json_plan(text):
    """The top plan node of EXPLAIN (FORMAT JSON)'s output text."""
    return json.loads(text, object_pairs_hook=merged_pairs)[0]["Plan"]


def is_node(n, node):
    """Whether plan node n is `node` (a name, or a tuple of names: any of them)."""
    if isinstance(node, tuple):
        return any(is_node(n, x) for x in node)
    if node == FILTER:
        return n.get("Node Type") == "Foreign Scan" and FILTER in n
    return n.get("Custom Plan Provider") == node


def find_nodes(top, node):
    """Every plan node under top (inclusive) that is `node` (is_node)."""
    found, todo = [], [top]
    while todo:
        n = todo.pop()
        todo.extend(n.get("Plans", []))
        if is_node(n, node):
            found.append(n)
    return found


def engines_of(n):
    """The engines plan node n and its parallel workers ran on (EXPLAIN
    ANALYZE; a leader that does not participate reports none, one that came
    after the others had claimed every block "none (...)")."""
    own = [n["Engine"]] if "Engine" in n else []
    return [e for e in own + [w["Engine"] for w in n.get("Workers", []) if "Engine" in w]
            if not e.startswith("none")]


def why_not_run(top, node, rechecked=False, engine=None):
    """Why EXPLAIN ANALYZE's plan top does not show the engine serving `node`,
    or None: some `node` must have executed, and each one that did must have
    run in the engine (engine: "CPU" or "GPU", the one; rechecked:
    PostgreSQL may have evaluated some of its batches or chunks, as where a
    value leaves the engine's range, never all).  A node that never executed
    (as a GpuScan in the fallback plan of a GpuPreAgg that ran) does not count."""
    nodes = find_nodes(top, node)
    if not nodes:
        return "no %s in the plan" % (node,)
    ran = [n for n in nodes if n.get("Actual Loops", 0) > 0]
    if not ran:
        return "%s never executed" % (node,)
    for n in ran:
        why = not_served(n, rechecked, engine)
        if why:
            return "%s did not run in the engine (%s)" % (n.get("Custom Plan Provider",
                                                                n.get("Node Type")), why)
    return None


def not_served(n, rechecked, engine=None):
    """Why the engine did not serve plan node n (EXPLAIN ANALYZE), or None."""
    engines = engines_of(n)
    if not engines:
        return "no engine reported"
    bad = [e for e in engines if e not in ((engine,) if engine else ENGINES)]
    if bad:
        return "Engine: %s%s" % (bad[0], ", " + n["Fallback Reason"]
                                 if "Fallback Reason" in n else "")
    if is_node(n, FILTER) and "Engine Fallback Batches" not in n:
        return "the filter was not begun"
    if STALE in n:
        return "%s: %s" % (STALE, n[STALE])
    for k in RECHECKED:
        if n.get(k, 0) > 0 and not rechecked:
            return "%s: %d" % (k, n[k])
        # rechecked: some batches, never all of them
        total = n.get(RECHECKED[k], 0)
        if n.get(k, 0) > 0 and total and n[k] >= total:
            return "%s: %d of %d" % (k, n[k], total)
    return None


def show(top):
    return json.dumps(top, indent=1)[:6000]


def fields_close(a, b, rel_tol, fuzzy=None):
    """Two result lines equal, float fields (those numbered in fuzzy, if
    given) within rel_tol (NaN equals NaN)."""
    fa, fb = a.split("|"), b.split("|")
    if len(fa) != len(fb):
        return False
    for j, (x, y) in enumerate(zip(fa, fb)):
        if x == y:
            continue
        if fuzzy is not None and j not in fuzzy:
            return False
        # integers compare exactly (as numbers: -0 is 0)
        if x.lstrip("-").isdigit() and y.lstrip("-").isdigit():
            if int(x) != int(y):
                return False
            continue
        try:
            vx, vy = float(x), float(y)
        except ValueError:
            return False
        if not (math.isnan(vx) and math.isnan(vy)) and \
                not math.isclose(vx, vy, rel_tol=rel_tol, abs_tol=1e-300):
            return False
    return True


def assert_rows_equal(sql, got, want, ordered=False, rel_tol=0.0, fuzzy=None):
    """psql outputs got and want hold the same rows (in order if ordered);
    with rel_tol, float fields (those numbered in fuzzy, if given) may differ
    by that much."""
    g, w = lines(got), lines(want)
    if not ordered:
        g, w = sorted(g), sorted(w)
    assert len(g) == len(w), (sql, got, want)
    if g == w:
        return
    assert rel_tol > 0, (sql, got, want)
    if ordered:
        for a, b in zip(g, w):
            assert fields_close(a, b, rel_tol, fuzzy), (sql, a, b)
        return
    # rows with float fields may sort differently in their last digits
    left = list(w)
    for r in g:
        m = next((x for x in left if fields_close(r, x, rel_tol, fuzzy)), None)
        assert m is not None, (sql, r, want)
        left.remove(m)


DB = Db()


def psql(sql, check=True, db=None):
    """Runs sql on the cluster of scripts/test.sh; returns (rc, stdout, stderr)."""
    return DB.psql(sql, check=check, db=db)


def sqlstate(sql, db=None):
    """The SQLSTATE and text of the error sql raises (VERBOSITY=verbose prints it)."""
    return DB.sqlstate(sql, db=db)


# ---------------------------------------------------------------- own clusters

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(cond, timeout=15.0, what="condition"):
    """Polls cond() until it returns a true value; fails after timeout s."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            pytest.fail("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(0.05)


def alive(pid):
    """Whether pid is a running process: one of its threads has not exited
    (a zombie counts as gone; after a SIGKILL the leader can be one while
    other threads still exit, and until the last does the process keeps its
    files, a listening socket too)."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except (FileNotFoundError, ProcessLookupError):
        return False
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):
            pass
    return False


@contextlib.contextmanager
def writers(db, rounds_of, n=2, timeout=300):
    """n sessions, writer k running the statements of rounds_of(i, k), its
    i-th round (i from 1), over and over while the body runs; none of them
    may fail (asserted once they stopped)."""
    stop = threading.Event()
    errors = []

    def write(k):
        i = 0
        while not stop.is_set():
            i += 1
            for sql in rounds_of(i, k):
                rc, _, err = db.psql(sql, check=False, timeout=timeout)
                if rc != 0:
                    errors.append(err)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]


class Cluster(Db):
    """A throwaway preloaded cluster: env for psql, its directory and log."""

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="pg_warp_svc.")
        os.chmod(self.base, 0o755)
        self.dir = os.path.join(self.base, "c")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.sock = os.path.join(self.data, "pg_warp.sock")
        env = dict(os.environ, PGPORT=str(free_port()), PG_WARP_PRELOAD="1")
        out = subprocess.run(["bash", CLUSTER, "start", self.dir], env=env,
                             check=True, capture_output=True, text=True).stdout
        for word in out.split():
            if "=" in word and word.startswith("PG"):
                k, v = word.split("=", 1)
                env[k] = v
        Db.__init__(self, env)
        self.sql("CREATE EXTENSION IF NOT EXISTS pg_warp")

    def run(self, sql, timeout=30, settings=()):
        """psql's CompletedProcess of sql after the settings statements."""
        args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"]
        for s in settings:
            args += ["-c", s]
        return subprocess.run(args + ["-c", sql], env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def status(self):
        cols = ("pid", "started_at", "uptime", "protocol_version", "engine",
                "engine_detail", "device_count", "devices", "memory_in_use",
                "running_tasks", "connections", "pinned_file_bytes",
                "pinned_file_bytes_queued")
        row = self.sql("SELECT %s FROM pgwarp.service_status()" % ", ".join(cols))
        return dict(zip(cols, row.split("|")))

    def service_pid(self):
        return int(self.sql("SELECT pid FROM pgwarp.service_status()"))

    def new_service(self, old_pid, timeout=15.0):
        """Waits until status works again with a service other than old_pid."""
        def ok():
            r = self.run("SELECT pid FROM pgwarp.service_status()")
            return r.returncode == 0 and int(r.stdout) != old_pid and int(r.stdout)
        return wait_until(ok, timeout, "the service to come back")

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        subprocess.run(["bash", CLUSTER, "stop", self.dir], env=self.env, check=True)

    def start(self):
        """Starts the stopped cluster again (same data directory and settings)."""
        subprocess.run(["bash", CLUSTER, "start", self.dir], env=self.env, check=True,
                       capture_output=True)

    def restart(self):
        self.stop()
        self.start()

    def destroy(self):
        subprocess.run(["bash", CLUSTER, "destroy", self.dir], env=self.env, check=False)
        shutil.rmtree(self.base, ignore_errors=True)
