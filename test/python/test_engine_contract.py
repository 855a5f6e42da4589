"""The engine's contract (issue 27): a query gives PostgreSQL's answer or
PostgreSQL's error with the engine on, and where the engine stays out the
user can see why.

Each test runs the same SQL with pg_warp on (startup cost 0, so that the
planner takes the engine on small tables) and with pg_warp.enabled = off, and
checks in the same test that the engine really planned or ran (a silent
fallback must not pass).  Needs the test cluster of scripts/test.sh.
"""
import os
import shutil
import tempfile

import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import DB
from pg_sql import psql as pg_psql

ON = "SET pg_warp.engine_startup_cost = 0; SET pg_warp.engine_row_cost = 0; "
OFF = "SET pg_warp.enabled = off; "


def run(sql, settings=ON):
    """('ok', rows) or ('error', 'SQLSTATE: message') of sql after the
    settings (SQL)."""
    return DB.result(sql, (settings,))


def plan(sql, settings=ON):
    kind, out = run("EXPLAIN (COSTS OFF, VERBOSE) " + sql, settings)
    assert kind == "ok", out
    return out


def same(sql, node=None):
    """sql gives the same rows (sorted) or the same error on and off; node:
    the engine node that must have run with the engine on (or be in the plan
    of a query that raises: pg_sql.Db.same_answer)."""
    if node is not None:
        DB.same_answer(sql, node, on=(ON,), off=(OFF,))
    on, off = run(sql, ON), run(sql, OFF)
    if on[0] == "ok" and off[0] == "ok":
        assert sorted(on[1].splitlines()) == sorted(off[1].splitlines()), (sql, on, off)
    else:
        assert on == off, (sql, on, off)
    return on


@pytest.fixture(scope="module", autouse=True)
def schema():
    d = tempfile.mkdtemp(prefix="pg_warp_contract.")
    os.chmod(d, 0o755)
    n = 3000
    write(os.path.join(d, "qo.arrow"),
          pa.table({"a": pa.array([1 + i % 7 for i in range(n)], pa.int32()),
                    "z": pa.array([i % 5 for i in range(n)], pa.int32())}), 1000)
    # strings that fit varchar(3) and char(3) in the first rows only
    vals = ["ab", "abc", None, "x"] * 250 + ["abcdef", "ab", "éé", "abcd"] * 10
    # every value fits varchar(3), some only once PostgreSQL trims their
    # trailing spaces (fit.arrow: none of those)
    fits = ["ab", "abc", None, "é日本", "", "a"] * 300
    write(os.path.join(d, "fit.arrow"),
          pa.table({"id": pa.array(range(1, len(fits) + 1), pa.int32()),
                    "vc": pa.array(fits, pa.string()),
                    "n": pa.array([i % 10 for i in range(len(fits))], pa.int64())}),
          batch=256)
    # ASCII values of at most 3 bytes (the engine loads them without
    # counting characters), then the same with multibyte values of 3
    # characters and more bytes in the last batch only (counted there)
    ascii3 = ["ab", "abc", None, "", "a", "x"] * 300
    for name, rows in (("fita", ascii3), ("fitm", ascii3 + ["é日本", "éé", None] * 5)):
        write(os.path.join(d, name + ".arrow"),
              pa.table({"id": pa.array(range(1, len(rows) + 1), pa.int32()),
                        "vc": pa.array(rows, pa.string()),
                        "n": pa.array([i % 10 for i in range(len(rows))], pa.int64())}),
              batch=256)
    trim = fits + ["ab   ", "abc ", "é日本  "] * 5
    write(os.path.join(d, "trim.arrow"),
          pa.table({"id": pa.array(range(1, len(trim) + 1), pa.int32()),
                    "vc": pa.array(trim, pa.string()),
                    "n": pa.array([i % 10 for i in range(len(trim))], pa.int64())}),
          batch=256)
    write(os.path.join(d, "tm.arrow"),
          pa.table({"id": pa.array(range(1, len(vals) + 1), pa.int32()),
                    "vc": pa.array(vals, pa.string()),
                    "n": pa.array([i % 10 for i in range(len(vals))], pa.int64())}),
          batch=256)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS ct CASCADE; CREATE SCHEMA ct")
    pg_psql("CREATE TABLE ct.qo2 (a int4, z int4); INSERT INTO ct.qo2 VALUES (1, 0), (5, 1);"
            "CREATE TABLE ct.qo (a int4, z int4);"
            "INSERT INTO ct.qo SELECT 1 + i %% 7, i %% 5 FROM generate_series(0, %d) i;"
            "ANALYZE ct.qo2; ANALYZE ct.qo" % (n - 1))
    pg_psql("CREATE FOREIGN TABLE ct.qoa (a int4, z int4) SERVER arrow_fdw "
            "OPTIONS (file '%s/qo.arrow')" % d)
    for name, typ in (("tv", "varchar(3)"), ("tc", "char(3)"), ("tu", "varchar")):
        pg_psql("CREATE FOREIGN TABLE ct.%s (id int4, vc %s, n int8) SERVER arrow_fdw "
                "OPTIONS (file '%s/tm.arrow')" % (name, typ, d))
    for name in ("fit", "fita", "fitm", "trim"):
        pg_psql("CREATE FOREIGN TABLE ct.%s (id int4, vc varchar(3), n int8) SERVER arrow_fdw "
                "OPTIONS (file '%s/%s.arrow')" % (name, d, name))
    yield d
    pg_psql("DROP SCHEMA IF EXISTS ct CASCADE")
    shutil.rmtree(d, ignore_errors=True)


# ---- item 1: conjuncts run in PostgreSQL's order (order_qual_clauses) ----

ORDER_QUALS = [
    # the costlier conjunct written first: PostgreSQL runs a / z first
    "z + 0 + 0 <> 0 AND a / z > 0",
    "z * 1 * 1 * 1 <> 0 AND a % z = 0",
    "(z + 0) IS NOT NULL AND z + 0 + 0 <> 0 AND 100 / z > 1",
    # the cheap guard first: no error on either side
    "z <> 0 AND a / (z + 0 + 0) > 0",
]


@pytest.mark.parametrize("qual", ORDER_QUALS)
@pytest.mark.parametrize("table", ["qo2", "qo", "qoa"])
def test_quals_in_postgresql_order_gpupreagg(table, qual):
    same("SELECT count(*), sum(a) FROM ct.%s WHERE %s" % (table, qual), "GpuPreAgg")
    same("SELECT z, count(*) FROM ct.%s WHERE %s GROUP BY z" % (table, qual), "GpuPreAgg")


@pytest.mark.parametrize("qual", ORDER_QUALS)
def test_quals_in_postgresql_order_scans(qual):
    # GpuScan over Arrow and the Arrow filter of a plain ForeignScan
    same("SELECT a, z FROM ct.qoa WHERE %s" % qual, "GpuScan")
    off_scan = "SET pg_warp.enable_gpuscan = off; SET pg_warp.enable_gpupreagg = off; "
    p = plan("SELECT a FROM ct.qoa WHERE %s" % qual, ON + off_scan)
    assert "Engine Filter" in p, p
    assert run("SELECT a FROM ct.qoa WHERE %s" % qual, ON + off_scan) == \
        run("SELECT a FROM ct.qoa WHERE %s" % qual, OFF)


def test_division_by_zero_of_the_issue():
    assert run("SELECT count(*) FROM ct.qo2 WHERE z + 0 + 0 <> 0 AND a / z > 0") == \
        ("error", "22012: division by zero")


# ---- item 2: typmods the FDW enforces (varchar(n), char(n)) ----

TYPMOD_QUERIES = [
    "SELECT vc, count(*) FROM ct.{t} GROUP BY vc",
    "SELECT max(vc), min(vc) FROM ct.{t}",
    "SELECT count(*) FILTER (WHERE vc = 'abc') FROM ct.{t}",
    "SELECT count(*) FROM ct.{t} WHERE vc = 'abc'",
    "SELECT n, count(vc) FROM ct.{t} GROUP BY n",
    "SELECT id, vc FROM ct.{t} WHERE n = 3",
    "SELECT vc FROM ct.{t} WHERE id > 900",
    # the long strings are only in rows the filter rejects: PostgreSQL
    # converts them all the same
    "SELECT vc FROM ct.{t} WHERE id < 10",
    "SELECT id FROM ct.{t} WHERE id < 10 AND vc IS NOT NULL",
]


@pytest.mark.parametrize("sql", TYPMOD_QUERIES)
@pytest.mark.parametrize("table", ["tv", "tc"])
def test_typmod_enforced(table, sql):
    on = same(sql.replace("{t}", table))
    if "id < 10" not in sql:
        assert on[0] == "error" and on[1].startswith("22001:"), on


@pytest.mark.parametrize("sql", [q for q in TYPMOD_QUERIES if "FILTER" not in q])
def test_unconstrained_varchar_runs_in_the_engine(sql):
    sql = sql.replace("{t}", "tu")
    p = plan(sql)
    assert "Custom Scan (GpuPreAgg)" in p or "Custom Scan (GpuScan)" in p or "Engine Filter" in p, p
    assert same(sql)[0] == "ok"


VARCHAR_AGGS = [
    "SELECT vc, count(*), sum(id) FROM ct.{t} GROUP BY vc",
    "SELECT n, max(vc COLLATE \"C\"), min(vc COLLATE \"C\"), count(vc) FROM ct.{t} GROUP BY n",
    "SELECT count(*) FROM ct.{t} WHERE vc = 'ab'",
    "SELECT vc, count(*) FROM ct.{t} WHERE id < 100 GROUP BY vc",
    "SELECT length(vc), count(*) FROM ct.{t} GROUP BY 1",
]


@pytest.mark.parametrize("sql", VARCHAR_AGGS)
@pytest.mark.parametrize("table", ["fit", "fita", "fitm"])
def test_varchar_values_that_fit(table, sql):
    # values that fit: the engine runs them all and agrees
    q = sql.replace("{t}", table)
    kind, out = run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + q)
    assert kind == "ok" and ("Engine: CPU" in out or "Engine: GPU" in out), out
    assert "PostgreSQL (fallback)" not in out, out
    assert same(q)[0] == "ok"


@pytest.mark.parametrize("sql", VARCHAR_AGGS)
def test_varchar_length_checked_by_engine(sql):
    # values PostgreSQL trims (longer than 3 before): the engine leaves
    # them to PostgreSQL's reader, whichever rows the quals keep
    q = sql.replace("{t}", "trim")
    kind, out = run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + q)
    assert kind == "ok" and "Custom Scan (GpuPreAgg)" in out, out
    assert "PostgreSQL (fallback)" in out, out
    assert same(q)[0] == "ok"


def test_typmod_table_still_in_engine_without_the_column():
    assert same("SELECT n, count(*), sum(id) FROM ct.tv GROUP BY n", "GpuPreAgg")[0] == "ok"


# ---- item 4: pg_warp.engine = gpu only gets what the GPU runs ----

def gpu_count():
    return int(run("SELECT count(*) FROM pgwarp.gpu_devices()", "")[1])


@pytest.mark.parametrize("sql", [
    "SELECT n, max(vc), min(vc) FROM ct.tu GROUP BY n",
    "SELECT max(vc) FROM ct.tu WHERE id > 3",
    "SELECT n, max(vc COLLATE \"C\"), count(*) FROM ct.tu GROUP BY n",
])
def test_engine_gpu_min_max_text(sql):
    # (GpuScan left out: on a host without a GPU it fails as it should)
    gpu = ON + "SET pg_warp.engine = gpu; SET pg_warp.enable_gpuscan = off; "
    # auto: the engine (its CPU engine) computes min/max of text
    assert "Custom Scan (GpuPreAgg)" in plan(sql, ON + "SET pg_warp.engine = auto; ")
    assert "Custom Scan (GpuPreAgg)" not in plan(sql, gpu)
    on, off = run(sql, gpu), run(sql, OFF)
    assert on[0] == "ok" and sorted(on[1].splitlines()) == sorted(off[1].splitlines()), (on, off)


def test_engine_gpu_without_gpu_says_so():
    sql = "SELECT n, count(*) FROM ct.tu GROUP BY n"
    gpu = ON + "SET pg_warp.engine = gpu; "
    assert "Custom Scan (GpuPreAgg)" in plan(sql, gpu)
    rc, out, err = pg_psql(gpu + sql, check=False)
    if gpu_count() > 0:
        assert rc == 0, err
        assert sorted(out.splitlines()) == sorted(run(sql, OFF)[1].splitlines())
    else:
        assert rc != 0 and "no GPU" in err, err
        assert "HINT:" in err and "pg_warp.engine = auto" in err, err


# ---- item 12: tables with no columns ----

@pytest.fixture(scope="module")
def no_columns(schema):
    d = schema
    write(os.path.join(d, "nc.arrow"),
          pa.table({"a": pa.array(range(50000), pa.int32())}), batch=4096)
    pg_psql("CREATE TABLE ct.z (); INSERT INTO ct.z SELECT FROM generate_series(1, 300000);"
            "CREATE TABLE ct.zd (a int, b text);"
            "INSERT INTO ct.zd SELECT i, 'x' FROM generate_series(1, 200000) i;"
            "ALTER TABLE ct.zd DROP COLUMN a; ALTER TABLE ct.zd DROP COLUMN b;"
            "ANALYZE ct.z; ANALYZE ct.zd")
    pg_psql("VACUUM ct.z")
    pg_psql("VACUUM ct.zd")
    pg_psql("CREATE FOREIGN TABLE ct.za () SERVER arrow_fdw OPTIONS (file '%s/nc.arrow')" % d)


@pytest.mark.parametrize("table", ["z", "zd", "za"])
@pytest.mark.parametrize("workers", [0, 2])
def test_no_columns(no_columns, table, workers):
    settings = "SET max_parallel_workers_per_gather = %d; " % workers
    sql = "SELECT count(*) FROM ct.%s" % table
    p = plan(sql, ON + settings)
    assert "Custom Scan (GpuPreAgg)" in p, p
    kind, out = run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, ON + settings)
    assert kind == "ok", out
    assert "Engine: CPU" in out or "Engine: GPU" in out, out
    on, off = run(sql, ON + settings), run(sql, OFF)
    assert on == off and on[0] == "ok", (on, off)
    assert on[1] == {"z": "300000", "zd": "200000", "za": "50000"}[table]


# ---- item 5: GpuPreAgg's fallback child is PostgreSQL's own plan ----

def child_plan(p):
    """The subtree under the plan's first GpuPreAgg node, dedented."""
    lines = p.splitlines()
    top = next(i for i, l in enumerate(lines) if "Custom Scan (GpuPreAgg)" in l)
    ind = len(lines[top]) - len(lines[top].lstrip())
    sub = []
    for l in lines[top + 1:]:
        if l.strip() and len(l) - len(l.lstrip()) <= ind:
            break
        sub.append(l)
    first = next(i for i, l in enumerate(sub) if "->  " in l)
    cut = sub[first].index("->  ")
    out = [sub[first][cut + 4:]]
    for l in sub[first + 1:]:
        out.append(l[cut + 4:] if len(l) > cut + 4 else l.strip())
    return [l for l in out if l.strip()]


@pytest.fixture(scope="module")
def grouped(schema):
    pg_psql("CREATE TABLE ct.gk (k int, v int, t text);"
            "INSERT INTO ct.gk SELECT i / 2, i, (i %% 97)::text FROM generate_series(1, 100000) i;"
            "CREATE INDEX ON ct.gk (k); ANALYZE ct.gk" .replace("%%", "%"))


@pytest.mark.parametrize("work_mem", ["64kB", "4MB", "1GB"])
@pytest.mark.parametrize("sql", [
    "SELECT k, sum(v) FROM ct.gk GROUP BY k",
    "SELECT t, count(*), max(v) FROM ct.gk GROUP BY t",
    "SELECT k, count(*) FROM ct.gk GROUP BY k HAVING count(*) > 1",
    "SELECT sum(v) FROM ct.gk",
])
def test_fallback_is_postgresql_plan(grouped, work_mem, sql):
    s = "SET work_mem = '%s'; SET max_parallel_workers_per_gather = 0; " % work_mem
    p_on = plan(sql.replace("VERBOSE", ""), ON + s)
    assert "Custom Scan (GpuPreAgg)" in p_on, p_on
    p_off = plan(sql, OFF + s)
    # (EXPLAIN VERBOSE's last line says why pg_warp is not used)
    assert child_plan(p_on) == [l for l in p_off.splitlines()
                                if l.strip() and not l.startswith("pg_warp:")], (p_on, p_off)


# ---- item 13: the backend keeps a run's groups within hash memory ----

@pytest.fixture(scope="module")
def many_groups(schema):
    pg_psql("CREATE TABLE ct.mg AS SELECT i AS k, i %% 7 AS v FROM generate_series(1, 1000000) i;"
            "ANALYZE ct.mg".replace("%%", "%"))


def test_groups_spill_past_hash_memory(many_groups):
    s = ("SET work_mem = '1MB'; SET hash_mem_multiplier = 2; "
         "SET max_parallel_workers_per_gather = 0; ")
    agg = "SELECT k, sum(v) AS s FROM ct.mg GROUP BY k"
    kind, out = run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + agg, ON + s)
    assert kind == "ok" and ("Engine: CPU" in out or "Engine: GPU" in out), out
    assert "Groups: 1000000" in out and "Groups Spilled to Disk:" in out, out
    # the backend's memory while the plan above reads the groups (the
    # initplan runs at the first row, once the run's groups are all in)
    mem = ("SELECT max(m), count(*), sum(s) FROM (SELECT s, (SELECT sum(total_bytes) "
           "FROM pg_backend_memory_contexts) AS m FROM (%s) g) x" % agg)
    kind, out = run(mem, ON + s)
    assert kind == "ok", out
    m, n, total = out.split("|")
    # the groups take some 44 MB as the service sends them
    assert int(m) < 16 * 1024 * 1024, out
    assert "%s|%s" % (n, total) == run("SELECT count(*), sum(s) FROM (%s) g" % agg, OFF)[1], out
    same(agg, None)
    assert sorted(run(agg + " ORDER BY k DESC LIMIT 5", ON + s)[1].splitlines()) == \
        sorted(run(agg + " ORDER BY k DESC LIMIT 5", OFF)[1].splitlines())


def test_spilled_groups_rescanned(many_groups):
    # a GpuPreAgg under a nested loop is rescanned: its spilled groups are read again
    s = ("SET work_mem = '1MB'; SET max_parallel_workers_per_gather = 0; "
         "SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off; ")
    sql = ("SELECT x, count(*), sum(g.s) FROM (VALUES (1), (2), (3)) v(x), "
           "(SELECT k, sum(v) AS s FROM ct.mg GROUP BY k) g WHERE g.k %% 100000 = x GROUP BY x"
           .replace("%%", "%"))
    p = plan(sql, ON + s)
    assert "Custom Scan (GpuPreAgg)" in p and "Nested Loop" in p, p
    on, off = run(sql, ON + s), run(sql, OFF + s)
    assert on == off and on[0] == "ok", (on, off)


# ---- item 9: EXPLAIN says which plan is the fallback ----

def test_explain_marks_the_fallback_child():
    sql = "SELECT z, count(*) FROM ct.qo GROUP BY z"
    p = plan(sql)
    assert "Custom Scan (GpuPreAgg)" in p and "Fallback Plan: the plan below, run only where the engine" in p, p
    kind, out = run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql)
    assert kind == "ok" and "Fallback Plan" not in out and "(never executed)" in out, out


# ---- item 11: heap tables have their own switch; auto: only on a GPU ----

@pytest.mark.parametrize("setting, engine, expect", [
    ("auto", "auto", None),   # None: GpuPreAgg where the service has a GPU
    ("auto", "cpu", False),
    ("auto", "gpu", True),
    ("on", "cpu", True),
    ("on", "auto", True),
    ("off", "gpu", False),
])
def test_heap_switch(setting, engine, expect):
    sql = "SELECT z, count(*), sum(a) FROM ct.qo GROUP BY z"
    s = ON + "SET pg_warp.enable_gpupreagg_heap = %s; SET pg_warp.engine = %s; " % (setting, engine)
    if expect is None:
        expect = gpu_count() > 0
    assert ("Custom Scan (GpuPreAgg)" in plan(sql, s)) == expect, plan(sql, s)
    # Arrow tables do not depend on it
    assert "Custom Scan (GpuPreAgg)" in plan("SELECT z, count(*) FROM ct.qoa GROUP BY z", s)


# ---- a plan compiled in one time zone and run in another ----

@pytest.mark.parametrize("table", ["tz", "tza"])
def test_gpuscan_time_zone_changed_after_planning(schema, table):
    pg_psql("DROP TABLE IF EXISTS ct.tz; CREATE TABLE ct.tz (t timestamptz, v int);"
            "INSERT INTO ct.tz SELECT '2024-03-09 12:00+00'::timestamptz + i * interval '1 hour', i "
            "FROM generate_series(0, 5000) i; ANALYZE ct.tz")
    pg_psql("DROP FOREIGN TABLE IF EXISTS ct.tza")
    import datetime
    t0 = datetime.datetime(2024, 3, 9, 12, tzinfo=datetime.timezone.utc)
    write(os.path.join(schema, "tz.arrow"), pa.table({
        "t": pa.array([t0 + datetime.timedelta(hours=i) for i in range(5001)],
                      pa.timestamp("us", tz="UTC")),
        "v": pa.array(range(5001), pa.int32())}), batch=700)
    pg_psql("CREATE FOREIGN TABLE ct.tza (t timestamptz, v int) SERVER arrow_fdw "
            "OPTIONS (file '%s/tz.arrow')" % schema)
    q = ("SELECT count(*), sum(v) FROM ct.%s " % table +
         "WHERE date_trunc('day', t) = '2024-03-10 00:00+00' AND v %% 3 <> 7" .replace("%%", "%"))
    s = (ON + "SET pg_warp.enable_gpuscan_heap = on; SET pg_warp.enable_gpupreagg = off; "
         "SET plan_cache_mode = force_generic_plan; SET TimeZone = 'UTC'; ")
    p = plan(q, s)
    assert "Custom Scan (GpuScan)" in p, p
    sql = s + "PREPARE p AS " + q + "; EXECUTE p; SET TimeZone = 'America/New_York'; EXECUTE p;"
    rc, out, err = pg_psql(sql, check=False)
    assert rc == 0, err
    first, second = out.splitlines()
    assert first == run(q, OFF + "SET TimeZone = 'UTC'; ")[1]
    assert second == run(q, OFF + "SET TimeZone = 'America/New_York'; ")[1]
    assert first != second


# ---- values arrow_fdw cannot convert, in rows an earlier conjunct rejects ----

@pytest.fixture(scope="module")
def bad_values(schema):
    import datetime
    n = 3000
    # row 2999: a date past PostgreSQL's range, a timestamp with nanoseconds
    days = [18000 + i for i in range(n - 1)] + [2**31 - 2]
    ns = [1_600_000_000_000_000_000 + 1000 * i for i in range(n - 1)] + [1_600_000_000_000_000_001]
    write(os.path.join(schema, "bad.arrow"), pa.table({
        "id": pa.array(range(n), pa.int32()),
        "d": pa.array(days, pa.date32()),
        "ts": pa.array(ns, pa.timestamp("ns")),
        "k": pa.array([i % 5 for i in range(n)], pa.int32())}), batch=512)
    pg_psql("CREATE FOREIGN TABLE ct.bad (id int4, d date, ts timestamp, k int4) "
            "SERVER arrow_fdw OPTIONS (file '%s/bad.arrow')" % schema)


@pytest.mark.parametrize("sql", [
    "SELECT count(*), max(d) FROM ct.bad WHERE id < 10",
    "SELECT k, min(d) FROM ct.bad WHERE id < 10 GROUP BY k",
    "SELECT k, count(*) FROM ct.bad WHERE id < 10 AND d > '2000-01-01' GROUP BY k",
    "SELECT max(ts) FROM ct.bad WHERE k = 1 AND id < 100",
    "SELECT d, count(*) FROM ct.bad GROUP BY d",
])
def test_unconvertible_values_in_rejected_rows(bad_values, sql):
    # PostgreSQL's reader converts every row's columns: its error, whichever
    # rows the WHERE clause keeps
    assert "Custom Scan (GpuPreAgg)" in plan(sql), plan(sql)
    on = same(sql)
    assert on[0] == "error" and on[1].startswith("22008:"), on
    # without the bad row's columns the engine answers
    ok = sql.replace("max(d)", "max(id)").replace("min(d)", "min(id)")
    if ok != sql:
        assert same(ok)[0] == "ok"


@pytest.mark.parametrize("settings, node", [
    ("", "Custom Scan (GpuScan)"),
    ("SET pg_warp.enable_gpuscan = off; ", "Engine Filter"),
])
@pytest.mark.parametrize("sql, fails", [
    ("SELECT id, d FROM ct.bad WHERE id < 10", True),
    ("SELECT id FROM ct.bad WHERE id < 10 AND k = 1", False),  # d and ts are not read
    ("SELECT id, ts FROM ct.bad WHERE k = 2 AND id < 50", True),
    ("SELECT id, k FROM ct.bad WHERE id < 10", False),
])
def test_unconvertible_values_in_rows_scans_reject(bad_values, settings, node, sql, fails):
    s = ON + "SET pg_warp.enable_gpupreagg = off; " + settings
    p = plan(sql, s)
    assert node in p, p
    on, off = run(sql, s), run(sql, OFF)
    if on[0] == "ok":
        on = (on[0], sorted(on[1].splitlines()))
        off = (off[0], sorted(off[1].splitlines())) if off[0] == "ok" else off
    assert on == off, (on, off)
    assert (on[0] == "error") == fails, on
