"""GpuScan (src/engine/gpuscan.c, the service's SCAN_RUN in src/service/scan.c)
against PostgreSQL as the oracle.

Every query runs twice: with pg_warp.enabled on and the engine's costs at zero
(the plan must be a GpuScan: the warp service reads the files, filters the
batches and returns the passing rows of the referenced columns) and with
pg_warp.enabled off (arrow_fdw's plain scan, PostgreSQL evaluating every
qual); the rows, or the error's SQLSTATE and message, must be equal.  The
tables hold edge values and NULLs of every type the engine loads and of
types it only returns; batches are small, so that errors and fallbacks hit
some batches and not others.

Runs against the cluster that scripts/test.sh starts (pg_warp preloaded, so
the service runs; without a GPU it runs the CPU engine).
"""
import os
from functools import partial
import shutil
import tempfile
import threading
import time

import pyarrow as pa
import pytest

from engine_edge import ALL, check_every_clause, check_scan_errors, edge_table, psql, write
from engine_edge import parallel_rescan, rows_query as edge_rows_query
from pg_sql import DB, FILTER, unequal
from test_engine_filter import CLAUSES_NOT_IN_ENGINE, clauses_in_engine

ENGINE_SCAN = ("GpuScan", FILTER)
ON = ("SET pg_warp.engine_startup_cost = 0; SET pg_warp.engine_row_cost = 0; "
      "SET pg_warp.enable_gpupreagg = off; ")


COLS = ("id int4, i2 int2, i4 int4, i8 int8, z int4, f4 float4, f8 float8, n numeric(20,2), "
        "t text, d date, ts timestamp, tstz timestamptz, b bool, lt text, bin bytea, "
        "u4 int8, tm time, d64 date")
# rows_query(where, table=None, cols=ALL): engine_edge.rows_query in this schema
rows_query = partial(edge_rows_query, "gs")


@pytest.fixture(scope="module", autouse=True)
def edge():
    d = tempfile.mkdtemp(prefix="pg_warp_gs.")
    os.chmod(d, 0o755)
    table = edge_table(returned_only=True)
    write(os.path.join(d, "edge.arrow"), table)
    os.mkdir(os.path.join(d, "dir"))
    os.chmod(os.path.join(d, "dir"), 0o755)
    for k in range(3):
        write(os.path.join(d, "dir", "part%d.arrow" % k), table.slice(k * 20, 20), 6)
    write(os.path.join(d, "empty.arrow"), table.slice(0, 0))
    write(os.path.join(d, "one.arrow"), table.slice(4, 1))
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS gs CASCADE; CREATE SCHEMA gs")
    psql("CREATE COLLATION gs.nd (provider = icu, locale = 'und-u-ks-level2', "
         "deterministic = false)")
    for name, opt in (("edge", "file '%s/edge.arrow'" % d), ("dir", "dir '%s/dir'" % d),
                      ("empty", "file '%s/empty.arrow'" % d),
                      ("one", "file '%s/one.arrow'" % d)):
        psql("CREATE FOREIGN TABLE gs.%s (%s) SERVER arrow_fdw OPTIONS (%s)" % (name, COLS, opt))
    DB.create_run_function("gs", (("pg_warp.engine_startup_cost", "0"),
                               ("pg_warp.engine_row_cost", "0"),
                               ("pg_warp.enable_gpupreagg", "off")))
    yield d
    psql("DROP SCHEMA IF EXISTS gs CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def compare(queries, rechecked=False):
    """DB.compare of the queries: equal on and off, and the engine ran (a
    GpuScan, or arrow_fdw's scan with the engine's filter, which the planner
    prefers where their costs tie: IS NOT NULL quals, empty tables)."""
    return DB.compare("gs", queries, node=ENGINE_SCAN, rechecked=rechecked)


def assert_equal(queries, rechecked=False):
    bad = unequal(compare(queries, rechecked))
    assert not bad, "\n".join(bad)


def plan(sql, opts="COSTS OFF", settings=ON):
    return psql(settings + "EXPLAIN (%s) %s" % (opts, sql))


def test_every_clause_all_columns():
    """Every clause of the engine filter's suite, every column returned: the
    engine evaluates those it compiles (PostgreSQL rechecks the batches where
    values leave its range), the others stay in PostgreSQL's plan."""
    check_every_clause("gs", rows_query, ENGINE_SCAN, clauses_in_engine(False),
                       clauses_in_engine(True), CLAUSES_NOT_IN_ENGINE, (ON,))


def test_plans_are_gpuscan():
    for where in ("i4 > 0", "t LIKE 'a%' AND f8 > 0", "n * n > 0", "b IS NOT TRUE",
                  "d < 'infinity' AND ts > '2000-01-01'", "i4 > 0 AND random() >= 0"):
        p = plan("SELECT %s FROM gs.edge WHERE %s" % (ALL, where))
        assert "Custom Scan (GpuScan) on edge" in p and "Engine Filter:" in p, p


def test_errors_are_postgresql_errors():
    check_scan_errors("gs", rows_query, ENGINE_SCAN)


def test_rechecked_batches_in_explain():
    p = plan(rows_query("n * n * n > 0"), "ANALYZE, COSTS OFF, TIMING OFF")
    assert "GpuScan" in p, p
    line = [ln for ln in p.split("\n") if "Batches Rechecked by PostgreSQL:" in ln][0]
    assert int(line.split(":")[1]) > 0, p


def test_projections_few_and_many():
    qs = []
    for cols in ("id", "t", "lt", "bin", "u4, tm, d64", "i2, b", ALL, "id, f4, f4, f4"):
        for where in ("i4 > 0", "t < 'b'", "b", "i8 IS NULL", "f8 = 'NaN'"):
            qs.append(rows_query(where, cols="id, " + cols.replace("lt", "md5(lt)")
                                 .replace("bin", "encode(bin, 'hex')")))
    qs.append("SELECT count(*) FROM gs.edge WHERE i4 > 0")
    qs.append("SELECT sum(length(lt)) FROM gs.edge WHERE i2 > 0 AND lt LIKE '%ü%'")
    assert_equal(qs)


def test_only_referenced_columns_returned():
    p = plan("SELECT t FROM gs.edge WHERE i4 > 0 AND f8 < 1", "VERBOSE, COSTS OFF")
    assert "Columns Returned: t" in p and "Columns Only Filtered:" in p, p


def test_directory_empty_and_one_row_tables():
    qs = []
    for table in ("gs.dir", "gs.empty", "gs.one"):
        for where in ("i4 > 0", "i4 / z > 1", "t LIKE '%b'", "i8 IS NOT NULL"):
            qs.append(rows_query(where, table))
        qs.append("SELECT count(*) FROM %s WHERE i2 < 1000" % table)
    assert_equal(qs)
    assert "GpuScan" in plan("SELECT id FROM gs.dir WHERE i4 > 0")


def test_limit():
    # LIMIT 0 never runs the scan
    assert not unequal(DB.compare("gs", ["SELECT string_agg(id::text, ',') FROM (SELECT id "
                                         "FROM gs.edge WHERE i4 > 0 LIMIT 0) s"]))
    assert_equal(["SELECT string_agg(id::text, ',') FROM (SELECT id FROM gs.edge "
                  "WHERE i4 > 0 LIMIT %d) s" % k for k in (1, 3, 8, 100)] +
                 ["SELECT string_agg(id::text, ',') FROM (SELECT id FROM gs.dir "
                  "WHERE i2 <> 0 ORDER BY id LIMIT 5) s"])


def test_rescan_nested_loop_inner():
    s = ("SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off; "
         "SET enable_memoize = off; ")
    q = ("SELECT string_agg(v.x || ':' || e.id, ',' ORDER BY v.x, e.id) FROM "
         "(VALUES (1), (2), (3)) v(x) JOIN gs.edge e ON e.id % 3 = v.x - 1 "
         "WHERE e.i2 > 0")
    p = plan(q, "ANALYZE, COSTS OFF, TIMING OFF", ON + s)
    assert "Nested Loop" in p and "GpuScan" in p and "loops=3" in p, p
    assert DB.same(q, "GpuScan", on=(ON + s,), off=(s + "SET pg_warp.enabled = off",))


@pytest.fixture(scope="module")
def big(edge):
    """A table of 200 000 rows in 200 batches, for parallel plans and cancels."""
    import pyarrow.compute as pc
    n = 200000
    t = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "a": pc.cast(pc.floor(pc.multiply(pc.random(n, initializer=7), 1000)), pa.int32()),
        "s": pa.array(["s%d" % (i % 977) if i % 11 else None for i in range(n)]),
    })
    write(os.path.join(edge, "big.arrow"), t, 1000)
    psql("CREATE FOREIGN TABLE gs.big (id int8, a int4, s text) SERVER arrow_fdw "
         "OPTIONS (file '%s/big.arrow', parallel_workers '2')" % edge)
    return "gs.big"


PAR = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
       "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; ")


def test_parallel_plan_equals_serial(big):
    q = ("SELECT count(*), sum(id), count(s), md5(string_agg(s, ',' ORDER BY id)) "
         "FROM gs.big WHERE a < 100 AND s LIKE 's1%'")
    p = plan(q, "ANALYZE, COSTS OFF, TIMING OFF", ON + PAR)
    assert "Parallel Custom Scan (GpuScan)" in p and "Gather" in p, p
    rows_read = [ln for ln in p.split("\n") if "Rows Read:" in ln][0]
    assert int(rows_read.split(":")[1]) == 200000, p
    par = DB.same(q, "GpuScan", on=(ON + PAR,))
    assert par == DB.same(q, "GpuScan", on=(ON,))


def test_parallel_rescan(big):
    """A Gather over the parallel GpuScan rescanned in a SubPlan: ReInitializeDSM
    starts the claims of record batches over, so each rerun reads every batch
    once; a rescan that lost or doubled batches changes the answer"""
    s = "SET enable_material = off; "
    q, last = parallel_rescan(
        "SELECT count(*) + sum(id) % 1000 FROM gs.big WHERE a < 100 AND s LIKE 's1%'",
        lambda q: plan(q, "ANALYZE, COSTS OFF, TIMING OFF", ON + PAR + s), "Rows Read", 200000)
    rows = DB.same(q, "GpuScan", on=(ON + PAR + s,), off=(PAR + s + "SET pg_warp.enabled = off",))
    assert rows[-1] == last, rows


def test_non_superuser():
    psql("DROP ROLE IF EXISTS gs_user; CREATE ROLE gs_user LOGIN; "
         "GRANT USAGE ON SCHEMA gs TO gs_user; GRANT SELECT ON gs.edge TO gs_user")
    try:
        q = "SELECT string_agg(id::text, ',' ORDER BY id) FROM gs.edge WHERE i4 > 0"
        p = psql(ON + "EXPLAIN (COSTS OFF) " + q, user="gs_user")
        assert "GpuScan" in p, p
        assert psql(ON + q, user="gs_user") == psql("SET pg_warp.enabled = off; " + q)
        rc, _, err = psql(ON + "SELECT count(*) FROM gs.one WHERE i4 > 0", check=False,
                          user="gs_user")
        assert rc != 0 and "permission denied" in err, err
    finally:
        psql("DROP OWNED BY gs_user; DROP ROLE gs_user")


def test_statement_timeout_and_cancel(big):
    slow = ("SELECT count(*) FROM gs.big WHERE a >= 0 AND pg_sleep(0.0002) IS NOT NULL")
    p = plan(slow)
    assert "GpuScan" in p, p
    rc, _, err = psql(ON + "SET statement_timeout = '300ms'; " + slow, check=False)
    assert rc != 0 and "statement timeout" in err, err
    # a cancel from another session
    out = {}

    def victim():
        out["r"] = psql(ON + "SET application_name = 'gs_victim'; " + slow, check=False)

    th = threading.Thread(target=victim)
    th.start()
    deadline = time.time() + 20
    while time.time() < deadline:
        if psql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'gs_victim' AND state = 'active'") == "t":
            break
        time.sleep(0.05)
    th.join(60)
    rc, _, err = out["r"]
    assert rc != 0 and "canceling statement due to user request" in err, err
    # the service serves the next query
    assert psql(ON + "SELECT count(*) FROM gs.big WHERE a < 10") == \
        psql("SET pg_warp.enabled = off; SELECT count(*) FROM gs.big WHERE a < 10")


@pytest.mark.parametrize("settings,where", [
    ("SET pg_warp.enable_gpuscan = off; ", "i4 > 0"),
    ("SET pg_warp.enabled = off; ", "i4 > 0"),
    ("", "random() > 2"),
    ("", "t < 'b' COLLATE \"und-x-icu\""),
    ("", "true"),
])
def test_plans_that_stay_plain(settings, where):
    p = plan("SELECT id FROM gs.edge WHERE %s" % where, settings=ON + settings)
    assert "GpuScan" not in p and "Foreign Scan" in p, p


def test_whole_row_and_system_columns_stay_plain():
    for q in ("SELECT e FROM gs.edge e WHERE i4 > 0",
              "SELECT tableoid, id FROM gs.edge WHERE i4 > 0"):
        p = plan(q)
        assert "GpuScan" not in p, p


def test_engine_costs_choose():
    """With its default costs GpuScan does not take a tiny table."""
    p = plan("SELECT id FROM gs.edge WHERE i4 > 0", settings="")
    assert "GpuScan" not in p, p


def test_explain_verbose_program():
    p = plan("SELECT id FROM gs.edge WHERE i4 > 0 AND t LIKE 'a%'", "VERBOSE, COSTS OFF")
    assert "Engine Program:" in p and "LIKE_PREFIX" in p and "Engine: auto" in p, p
    p = plan("SELECT id FROM gs.edge WHERE i4 > 0", "ANALYZE, COSTS OFF, TIMING OFF",
             ON + "SET pg_warp.engine = cpu; ")
    assert "Engine: CPU" in p and "Engine Threads:" in p, p


def test_gpu_engine_equal():
    """pg_warp.engine = gpu: the GPU filter's rows and errors are PostgreSQL's
    (runs only where the service has a GPU)."""
    if psql("SELECT engine FROM pgwarp.service_status()") != "gpu":
        pytest.skip("the service has no GPU")
    check_every_clause("gs", rows_query, ENGINE_SCAN, clauses_in_engine(False),
                       clauses_in_engine(True),
                       CLAUSES_NOT_IN_ENGINE, (ON, "SET pg_warp.engine = gpu"),
                       "SET pg_warp.engine = gpu; ")
    for engine in ("gpu", "auto"):
        p = plan(rows_query("i4 > 0"), "ANALYZE, COSTS OFF, TIMING OFF",
                 ON + "SET pg_warp.engine = %s; " % engine)
        assert "Engine: GPU" in p, (engine, p)
