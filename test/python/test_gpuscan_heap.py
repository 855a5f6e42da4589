"""GpuScan over heap tables (src/engine/gpuscan.c's heap half, shm_chunk.c's
heap_scan_*, the service's HEAP_RUN with WARP_HEAP_SCAN in heap_chunk.c)
against PostgreSQL as the oracle.

Every query runs twice: with pg_warp on, pg_warp.enable_gpuscan_heap on and
the engine's costs at zero (the plan must be a GpuScan: the backend ships the
table's pages, the service filters their visible tuples and answers with a
bitmap of the ones that pass, the backend returns those tuples) and with
pg_warp.enabled off (PostgreSQL's sequential scan); the rows, or the error's
SQLSTATE and message, must be equal.  The heap table holds the edge values
and NULLs of engine_edge.py at fillfactor 10, a few rows per page, and the
chunks are one page each, so that errors and fallbacks hit some chunks and
not others.

Runs against the cluster that scripts/test.sh starts (pg_warp preloaded, so
the service runs; without a GPU it runs the CPU engine).
"""
import os
from functools import partial
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from engine_edge import ALL, check_every_clause, check_scan_errors, edge_table, psql, write
from engine_edge import parallel_rescan, rows_query as edge_rows_query
from pg_sql import DB, Cluster, unequal
from test_engine_filter import CLAUSES_NOT_IN_ENGINE, clauses_in_engine

SETTINGS = (("pg_warp.engine_startup_cost", "0"), ("pg_warp.engine_row_cost", "0"),
            ("pg_warp.enable_gpupreagg", "off"), ("pg_warp.enable_gpuscan_heap", "on"),
            ("pg_warp.heap_chunk_pages", "1"), ("max_parallel_workers_per_gather", "0"))
ON = "".join("SET %s = %s; " % s for s in SETTINGS)
OFF = "SET pg_warp.enabled = off; "
NOSEQ = "SET enable_seqscan = off; "

# rows_query(where, table=None, cols=ALL): engine_edge.rows_query in this schema
rows_query = partial(edge_rows_query, "gsh")


@pytest.fixture(scope="module", autouse=True)
def edge():
    d = tempfile.mkdtemp(prefix="pg_warp_gsh.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "edge.arrow"), edge_table(returned_only=True))
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS gsh CASCADE; CREATE SCHEMA gsh")
    psql("CREATE COLLATION gsh.nd (provider = icu, locale = 'und-u-ks-level2', "
         "deterministic = false)")
    psql("CREATE FOREIGN TABLE gsh.edge_arrow (id int4, i2 int2, i4 int4, i8 int8, z int4, "
         "f4 float4, f8 float8, n numeric(20,2), t text, d date, ts timestamp, "
         "tstz timestamptz, b bool, lt text, bin bytea, u4 int8, tm time, d64 date) "
         "SERVER arrow_fdw OPTIONS (file '%s/edge.arrow')" % d)
    psql("CREATE TABLE gsh.edge WITH (fillfactor = 10) AS SELECT * FROM gsh.edge_arrow; "
         "CREATE TABLE gsh.empty (LIKE gsh.edge); "
         "CREATE TABLE gsh.one AS SELECT * FROM gsh.edge WHERE id = 5")
    psql("VACUUM ANALYZE gsh.edge, gsh.empty, gsh.one")
    DB.create_run_function("gsh", SETTINGS)
    yield d
    psql("DROP SCHEMA IF EXISTS gsh CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def assert_equal(queries, node="GpuScan", rechecked=False):
    """DB.compare of the queries: equal on and off, and the GpuScan ran."""
    bad = unequal(DB.compare("gsh", queries, node=node, rechecked=rechecked))
    assert not bad, "\n".join(bad)


def plan(sql, opts="COSTS OFF", settings=ON):
    return psql(settings + "EXPLAIN (%s) %s" % (opts, sql))


def counter(p, name):
    return int([ln for ln in p.split("\n") if name + ":" in ln][0].split(":")[1].split()[0])


def test_table_spans_pages():
    """The table is several pages, so that chunks of one page differ."""
    assert int(psql("SELECT pg_relation_size('gsh.edge') / 8192")) >= 5


def test_every_clause_all_columns():
    """Every clause of the engine filter's suite, every column returned: the
    engine evaluates those it compiles (PostgreSQL rechecks the chunks where
    values leave its range), the others stay in PostgreSQL's plan."""
    # without a sequential scan to choose (where the quals reject nothing, as
    # t IS NOT NULL, its cost is the lower one)
    check_every_clause("gsh", rows_query, "GpuScan", clauses_in_engine(False),
                       clauses_in_engine(True), CLAUSES_NOT_IN_ENGINE, (ON + NOSEQ,), NOSEQ)


def test_plans_are_gpuscan():
    for where in ("i4 > 0", "t LIKE 'a%' AND f8 > 0", "n * n > 0", "b IS NOT TRUE",
                  "d < 'infinity' AND ts > '2000-01-01'", "i4 > 0 AND random() >= 0"):
        p = plan("SELECT %s FROM gsh.edge WHERE %s" % (ALL, where))
        assert "Custom Scan (GpuScan) on edge" in p and "Engine Filter:" in p, p
        assert "Heap Table: edge" in p, p


def test_off_by_default():
    p = psql("SET pg_warp.engine_startup_cost = 0; SET pg_warp.engine_row_cost = 0; "
             "EXPLAIN (COSTS OFF) SELECT id FROM gsh.edge WHERE i4 > 0")
    assert "GpuScan" not in p, p


def test_errors_are_postgresql_errors():
    check_scan_errors("gsh", rows_query, "GpuScan")


def test_rechecked_chunks_in_explain():
    """A chunk whose values the engine does not hold exactly (a numeric
    product past its fixed point) is filtered by PostgreSQL; the others by
    the engine."""
    p = plan(rows_query("n * n * n > 0"), "ANALYZE, COSTS OFF, TIMING OFF")
    assert "GpuScan" in p, p
    assert counter(p, "Chunks Rechecked by PostgreSQL") > 0, p
    assert counter(p, "Chunks") > counter(p, "Chunks Rechecked by PostgreSQL"), p
    assert counter(p, "Tuples Read") == int(psql("SELECT count(*) FROM gsh.edge")), p


def test_explain_analyze_counters():
    p = plan("SELECT id FROM gsh.edge WHERE i4 > 0", "ANALYZE, COSTS OFF, TIMING OFF")
    passed = int(psql(OFF + "SELECT count(*) FROM gsh.edge WHERE i4 > 0"))
    assert counter(p, "Tuples Passed by Engine") == passed, p
    assert "rows=%d " % passed in p, p
    assert counter(p, "Chunks") == int(psql("SELECT pg_relation_size('gsh.edge') / 8192")), p
    assert "Engine: CPU" in p or "Engine: GPU" in p, p
    assert "Columns Filtered: i4" in p, p


def test_explain_verbose_program():
    p = plan("SELECT id FROM gsh.edge WHERE i4 > 0 AND t < 'b'", "VERBOSE, COSTS OFF")
    assert "GpuScan" in p and "Program" in p, p


def test_projections_system_columns_and_whole_rows():
    """The tuples come from the shipped pages: ctid, xmin, tableoid and whole
    rows are those of PostgreSQL's scan."""
    qs = []
    for cols in ("id", "t", "md5(lt)", "encode(bin, 'hex')", "u4, tm, d64", ALL,
                 "ctid", "xmin", "tableoid::regclass", "e", "e.*", "row_to_json(e)"):
        for where in ("i4 > 0", "t < 'b'", "b", "i8 IS NULL", "f8 = 'NaN'"):
            qs.append("SELECT string_agg(concat_ws('|', id, %s), ',' ORDER BY id) "
                      "FROM gsh.edge e WHERE %s" % (cols, where))
    qs.append("SELECT count(*) FROM gsh.edge WHERE i4 > 0")
    assert_equal(qs)
    assert "GpuScan" in plan("SELECT ctid, e FROM gsh.edge e WHERE i4 > 0")


def test_empty_and_one_row_tables():
    qs = []
    for table in ("gsh.empty", "gsh.one"):
        for where in ("i4 > 0", "i4 / z > 1", "t LIKE '%b'", "i8 IS NOT NULL"):
            qs.append(rows_query(where, table))
        qs.append("SELECT count(*) FROM %s WHERE i2 < 1000" % table)
    # their sequential scans cost next to nothing: this takes the GpuScan
    noseq = "SET enable_seqscan = off; "
    bad = unequal(DB.compare("gsh", qs, noseq, node="GpuScan"))
    assert not bad, "\n".join(bad)
    for table in ("gsh.empty", "gsh.one"):
        assert "GpuScan" in plan("SELECT id FROM %s WHERE i4 > 0" % table, settings=ON + noseq)


def test_limit():
    # LIMIT 0 never runs the scan
    assert_equal(["SELECT string_agg(id::text, ',') FROM (SELECT id FROM gsh.edge "
                  "WHERE i4 > 0 ORDER BY id LIMIT 0) s"], node=None)
    assert_equal(["SELECT string_agg(id::text, ',') FROM (SELECT id FROM gsh.edge "
                  "WHERE i4 > 0 ORDER BY id LIMIT %d) s" % k for k in (1, 3, 8, 100)])


def test_rescan_nested_loop_inner():
    s = ("SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off; "
         "SET enable_memoize = off; ")
    q = ("SELECT string_agg(v.x || ':' || e.id, ',' ORDER BY v.x, e.id) FROM "
         "(VALUES (1), (2), (3)) v(x) JOIN gsh.edge e ON e.id % 3 = v.x - 1 "
         "WHERE e.i2 > 0")
    p = plan(q, "ANALYZE, COSTS OFF, TIMING OFF", ON + s)
    assert "Nested Loop" in p and "GpuScan" in p and "loops=3" in p, p
    on = psql(ON + s + q)
    assert on == psql(s + OFF + q) and on


def test_domain_and_other_types_stay_correct():
    """A column of a domain type, a varchar and a bpchar: the quals the
    engine does not take stay PostgreSQL's, the result is the same."""
    psql("DROP TABLE IF EXISTS gsh.dom; DROP DOMAIN IF EXISTS gsh.pos; "
         "CREATE DOMAIN gsh.pos AS int4 CHECK (VALUE > 0); "
         "CREATE TABLE gsh.dom AS SELECT i::gsh.pos AS p, ('v' || i)::varchar(5) AS v, "
         "('c' || i % 3)::char(3) AS c, i AS id FROM generate_series(1, 500) i")
    # the plans may or may not be GpuScans: not checked
    assert_equal(["SELECT string_agg(id::text, ',' ORDER BY id) FROM gsh.dom WHERE %s" % w
                  for w in ("p > 250", "v < 'v3'", "c = 'c1'", "id % 7 = 0 AND p < 100",
                            "v LIKE 'v1%' AND id > 3")], node=None)


@pytest.fixture(scope="module")
def big():
    psql("CREATE TABLE gsh.big AS SELECT i::int8 AS id, (i * 7919 % 1000)::int4 AS a, "
         "CASE WHEN i % 11 = 0 THEN NULL ELSE 's' || (i % 977) END AS s "
         "FROM generate_series(1, 200000) i")
    psql("VACUUM ANALYZE gsh.big")
    return "gsh.big"


PAR = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
       "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; ")


def test_parallel_plan_equals_serial(big):
    q = ("SELECT count(*), sum(id), count(s), md5(string_agg(s, ',' ORDER BY id)) "
         "FROM gsh.big WHERE a < 100 AND s LIKE 's1%'")
    p = plan(q, "ANALYZE, COSTS OFF, TIMING OFF", ON + PAR)
    assert "Parallel Custom Scan (GpuScan)" in p and "Gather" in p, p
    assert counter(p, "Tuples Read") == 200000, p
    par = psql(ON + PAR + q)
    assert par == psql(ON + "SET pg_warp.heap_chunk_pages = 4096; " + q) == psql(OFF + q)


def test_parallel_rescan(big):
    """A Gather over the parallel GpuScan rescanned in a SubPlan: ReInitializeDSM
    starts the block counter over, so each rerun reads every block once; a
    rescan that lost or doubled blocks changes the answer"""
    s = "SET enable_material = off; "
    q, last = parallel_rescan(
        "SELECT count(*) + sum(id) % 1000 FROM gsh.big WHERE a < 100 AND s LIKE 's1%'",
        lambda q: plan(q, "ANALYZE, COSTS OFF, TIMING OFF", ON + PAR + s), "Tuples Read", 200000)
    on = psql(ON + PAR + s + q)
    assert on == psql(PAR + s + OFF + q) and on.split("\n")[-1] == last, on


def test_visibility_follows_the_snapshot(big):
    """Rows deleted, updated and inserted by this transaction, and by one
    that has not committed, are seen as PostgreSQL's scan sees them."""
    q = "SELECT count(*), sum(id), sum(a) FROM gsh.big WHERE a < 500"
    psql("CREATE TABLE gsh.vis AS SELECT * FROM gsh.big")
    psql("VACUUM gsh.vis")
    qv = q.replace("gsh.big", "gsh.vis")
    other = subprocess.Popen(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        other.stdin.write("BEGIN; DELETE FROM gsh.vis WHERE id % 2 = 0; "
                          "INSERT INTO gsh.vis SELECT -i, 1, 'x' FROM generate_series(1, 999) i; "
                          "SELECT pg_sleep(30);\n")
        other.stdin.flush()
        time.sleep(1.5)
        mine = ("BEGIN; UPDATE gsh.vis SET a = a + 1 WHERE id % 10 = 5; "
                "DELETE FROM gsh.vis WHERE id % 14 = 7; "
                "INSERT INTO gsh.vis VALUES (-5, 3, 'y'); ")
        on = psql(mine + ON + qv + "; ROLLBACK")
        off = psql(mine + OFF + qv + "; ROLLBACK")
        assert on == off, (on, off)
        assert "GpuScan" in psql(mine + ON + "EXPLAIN (COSTS OFF) " + qv + "; ROLLBACK")
        # repeatable read: the snapshot of the transaction's first query
        rr = psql("BEGIN ISOLATION LEVEL REPEATABLE READ; " + ON + q + "; " + q + "; COMMIT")
        assert len(set(rr.split("\n"))) == 1, rr
    finally:
        other.kill()
        other.wait()


def test_serializable_takes_predicate_locks(big):
    q = "SELECT count(*) FROM gsh.big WHERE a < 100"
    out = psql("BEGIN ISOLATION LEVEL SERIALIZABLE; " + ON + q + "; "
               "SELECT count(*) FROM pg_locks WHERE mode = 'SIReadLock' "
               "AND relation = 'gsh.big'::regclass AND pid = pg_backend_pid(); COMMIT")
    got, locks = out.split("\n")
    assert got == psql(OFF + q)
    assert int(locks) >= 1, out
    assert "GpuScan" in psql("BEGIN ISOLATION LEVEL SERIALIZABLE; " + ON +
                             "EXPLAIN (COSTS OFF) " + q + "; COMMIT")


@pytest.mark.parametrize("sql", [
    "UPDATE gsh.big SET a = a WHERE a < 0",
    "DELETE FROM gsh.big WHERE a < 0",
    "SELECT id FROM gsh.big WHERE a < 0 FOR UPDATE",
    "SELECT id FROM gsh.big WHERE a < 0 FOR SHARE",
])
def test_locking_and_modifying_scans_stay_postgresql(big, sql):
    p = plan(sql)
    assert "GpuScan" not in p, p


def test_row_level_security_stays_postgresql(big):
    psql("DROP ROLE IF EXISTS gsh_user; CREATE ROLE gsh_user LOGIN; "
         "GRANT USAGE ON SCHEMA gsh TO gsh_user; GRANT SELECT ON gsh.big, gsh.edge TO gsh_user; "
         "CREATE TABLE gsh.rls AS SELECT * FROM gsh.big WHERE id <= 1000; "
         "GRANT SELECT ON gsh.rls TO gsh_user; ALTER TABLE gsh.rls ENABLE ROW LEVEL SECURITY; "
         "CREATE POLICY p ON gsh.rls USING (id % 2 = 0)")
    try:
        q = "SELECT count(*), sum(id) FROM gsh.rls WHERE a < 500"
        assert "GpuScan" not in psql(ON + "EXPLAIN (COSTS OFF) " + q, user="gsh_user")
        assert psql(ON + q, user="gsh_user") == psql(OFF + q, user="gsh_user")
        # a plain user's GpuScan over a table it may read
        q = "SELECT string_agg(id::text, ',' ORDER BY id) FROM gsh.edge WHERE i4 > 0"
        assert "GpuScan" in psql(ON + "EXPLAIN (COSTS OFF) " + q, user="gsh_user")
        assert psql(ON + q, user="gsh_user") == psql(OFF + q)
        rc, _, err = psql("SELECT count(*) FROM gsh.empty WHERE i4 > 0", check=False,
                          user="gsh_user")
        assert rc != 0 and "permission denied" in err, err
    finally:
        psql("DROP TABLE IF EXISTS gsh.rls; DROP OWNED BY gsh_user; DROP ROLE gsh_user")


@pytest.fixture(scope="module")
def huge():
    psql("CREATE TABLE gsh.huge AS SELECT i::int8 AS id, (i % 1000)::int4 AS a "
         "FROM generate_series(1, 3000000) i")
    return "gsh.huge"


def test_statement_timeout_then_next_query(huge):
    q = "SELECT count(*) FROM gsh.huge WHERE a < 10"
    rc, _, err = psql(ON + "SET statement_timeout = '30ms'; " + q, check=False)
    assert rc != 0 and "statement timeout" in err, err
    assert psql(ON + q) == psql(OFF + q) == "30000"


def test_cancel_from_another_session(huge):
    """A cancel while the run is in flight (PostgreSQL's own qual sleeps on
    each row the engine passes) ends the query; the next one works."""
    out = {}

    def victim():
        out["r"] = psql(ON + "SET application_name = 'gsh_victim'; "
                        "SELECT count(*) FROM gsh.huge WHERE a < 1000 "
                        "AND pg_sleep(0.0001) IS NOT NULL", check=False)

    th = threading.Thread(target=victim)
    th.start()
    deadline = time.time() + 20
    while time.time() < deadline:
        if psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'gsh_victim' "
                "AND state = 'active'") == "1":
            break
        time.sleep(0.05)
    time.sleep(0.3)
    psql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
         "WHERE application_name = 'gsh_victim'")
    th.join(60)
    assert not th.is_alive()
    rc, _, err = out["r"]
    assert rc != 0 and "canceling statement" in err, err
    assert psql(ON + "SELECT count(*) FROM gsh.huge WHERE a < 10") == "30000"


def test_missing_and_dropped_attributes():
    """Tuples written before an ADD COLUMN ... DEFAULT (the attribute is
    missing from them) and a dropped column before the filtered ones."""
    psql("DROP TABLE IF EXISTS gsh.alt; "
         "CREATE TABLE gsh.alt AS SELECT i AS id, i % 7 AS a, 'x' || i AS gone "
         "FROM generate_series(1, 3000) i; "
         "ALTER TABLE gsh.alt ADD COLUMN m int4 DEFAULT 42, ADD COLUMN mt text DEFAULT 'dflt'; "
         "ALTER TABLE gsh.alt DROP COLUMN gone; "
         "INSERT INTO gsh.alt SELECT i, i % 5, i % 50, 'v' || i FROM generate_series(3001, 4000) i")
    qs = ["SELECT count(*), sum(id) FROM gsh.alt WHERE %s" % w
          for w in ("m = 42", "m < 10 AND a = 3", "mt = 'dflt'", "mt LIKE 'v1%'", "a > 4",
                    "m IS NULL", "mt IS NOT NULL AND a = 0")]
    assert_equal(qs)
    assert "GpuScan" in plan("SELECT id FROM gsh.alt WHERE m = 42 AND mt = 'dflt'")


def test_external_and_compressed_values_are_rechecked():
    """Values the service does not decode (out of line, compressed) send
    their chunks to PostgreSQL's recheck; the rows are the same."""
    psql("DROP TABLE IF EXISTS gsh.toast; CREATE TABLE gsh.toast (id int, t text); "
         "ALTER TABLE gsh.toast ALTER COLUMN t SET STORAGE EXTERNAL; "
         "INSERT INTO gsh.toast SELECT i, CASE WHEN i % 97 = 0 THEN repeat(md5(i::text), 200) "
         "WHEN i % 89 = 0 THEN repeat('z', 5000) ELSE 'v' || i END "
         "FROM generate_series(1, 5000) i")
    qs = ["SELECT count(*), sum(id), sum(length(t)) FROM gsh.toast WHERE %s" % w
          for w in ("t LIKE 'v1%'", "t > 'x'", "length(t) > 100", "t = 'v7' OR id % 97 = 0")]
    assert_equal(qs, rechecked=True)
    p = plan(qs[0], "ANALYZE, COSTS OFF, TIMING OFF")
    assert counter(p, "Chunks Rechecked by PostgreSQL") > 0, p
    assert counter(p, "Chunks") > counter(p, "Chunks Rechecked by PostgreSQL"), p


def test_cursor_closed_mid_scan_then_next_query(big):
    q = "SELECT id, s FROM gsh.big WHERE a < 900 ORDER BY id"
    out = psql(ON + "BEGIN; DECLARE c CURSOR FOR SELECT id FROM gsh.big WHERE a < 900; "
               "FETCH 3 FROM c; CLOSE c; "
               "DECLARE d CURSOR FOR SELECT id FROM gsh.big WHERE a < 900; "
               "FETCH 2 FROM d; COMMIT; "
               "SELECT count(*) FROM gsh.big WHERE a < 900")
    lines = out.split("\n")
    assert len(lines) == 6, out
    assert lines[-1] == psql(OFF + "SELECT count(*) FROM gsh.big WHERE a < 900")
    assert psql(ON + "SELECT md5(string_agg(id || s, ',')) FROM (%s) x" % q) == \
        psql(OFF + "SELECT md5(string_agg(id || s, ',')) FROM (%s) x" % q)


def test_parallel_limit_then_next_query(big):
    """A LIMIT that stops a parallel scan with runs in flight; the next
    queries of the session work and are right."""
    q = "SELECT count(*) FROM (SELECT id FROM gsh.big WHERE a < 999 LIMIT 5) x"
    p = plan(q, "ANALYZE, COSTS OFF, TIMING OFF", ON + PAR)
    assert "GpuScan" in p, p
    out = psql(ON + PAR + q + "; " + q + "; SELECT count(*), sum(id) FROM gsh.big WHERE a < 500")
    assert out.split("\n") == ["5", "5", psql(OFF + "SELECT count(*), sum(id) FROM gsh.big "
                                                    "WHERE a < 500")], out


def test_prepared_statement_executed_again(big):
    out = psql(ON + "PREPARE q(int) AS SELECT count(*), sum(id) FROM gsh.big WHERE a < $1; "
               "EXECUTE q(10); EXECUTE q(500); EXECUTE q(10); EXECUTE q(0)")
    want = [psql(OFF + "SELECT count(*), sum(id) FROM gsh.big WHERE a < %d" % k)
            for k in (10, 500, 10, 0)]
    assert out.split("\n") == want, out


@pytest.fixture(scope="module")
def own_cluster():
    """A cluster of this module's own, whose service may be killed."""
    c = Cluster()
    try:
        c.sql("CREATE TABLE slow AS SELECT i % 1000 AS a, i::int8 AS b "
              "FROM generate_series(1, 2000000) i")
        yield c
    finally:
        c.destroy()


def test_service_killed_mid_scan(own_cluster):
    """SIGKILL of the service while a heap GpuScan's run is in it: the query
    fails with 08006 and a clear message, a new service comes up, the
    cluster does not restart, and the next scan is right."""
    from engine_interrupt import kill_service_mid_run
    c = own_cluster
    sets = tuple("SET %s = %s" % s for s in SETTINGS) + ("SET pg_warp.heap_chunk_pages = 64",)
    kill_service_mid_run(c, "gsh_kill", sets, "SELECT count(*) FROM slow WHERE a < 999 "
                         "AND pg_sleep(0.0001) IS NOT NULL",
                         "the heap scan's run to start in the service")
    q = "SELECT count(*), sum(b) FROM slow WHERE a < 10"
    on = c.run(q, settings=sets)
    off = c.run(q, settings=("SET pg_warp.enabled = off",))
    assert on.returncode == 0 and on.stdout == off.stdout, (on.stderr, off.stdout)
    p = c.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + q, settings=sets)
    assert "GpuScan" in p.stdout and ("Engine: CPU" in p.stdout or "Engine: GPU" in p.stdout), \
        p.stdout + p.stderr


# ---------------------------------------------------------------- the GPU engine

def test_gpu_engine_equal():
    """pg_warp.engine = gpu: the chunks decoded and filtered on the GPU give
    PostgreSQL's rows and errors (runs only where the service has a GPU)."""
    if psql("SELECT engine FROM pgwarp.service_status()") != "gpu":
        pytest.skip("the service has no GPU")
    gpu = NOSEQ + "SET pg_warp.engine = gpu; "
    check_every_clause("gsh", rows_query, "GpuScan", clauses_in_engine(False),
                       clauses_in_engine(True), CLAUSES_NOT_IN_ENGINE, (ON + gpu,), gpu)
    for engine in ("gpu", "auto"):
        p = plan(rows_query("i4 > 0"), "ANALYZE, COSTS OFF, TIMING OFF",
                 ON + "SET pg_warp.engine = %s; " % engine)
        assert "Engine: GPU" in p, (engine, p)


FAKE_WHERES = ["i4 > 0", "i2 < 0 AND t LIKE 'k%'", "f8 > 1.5 OR f4 IS NULL", "n > 1.00",
               "d < '2001-01-01' AND ts > '2000-01-01'", "b", "NOT b", "t IS NULL",
               "vc LIKE '%é%'", "tz > '2020-06-01 03:00+00'", "iv > '1 day'",
               "i8 % 7 = 3", "id > 19990", "i4 / (id % 5) > 0", "n * n * n * n > 1"]


@pytest.fixture(scope="module")
def fake_gpu_cluster():
    """A cluster whose service runs test/gpu's stand-in driver (one "GPU"
    whose memory is host memory, kernels run on the host with the same
    per-tuple code): the GPU half of the service's heap scan (staging,
    decode, kern_warp_exec's mask, the slots handed back) runs for real."""
    from test_gpu_fault import TOP
    from test_gpupreagg_heap import TYPES_TABLE
    lib = os.path.join(TOP, "test", "gpu", "bin", "fake", "libcuda.so.1")
    if os.path.exists(os.path.join(TOP, "test", "gpu", "fake_cuda.c")):
        r = subprocess.run(["make", "-s", "-C", os.path.join(TOP, "test", "gpu"),
                            "bin/fake/libcuda.so.1"], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
    d = tempfile.mkdtemp(prefix="pg_warp_gsh_fake.")
    os.chmod(d, 0o755)
    shutil.copy(lib, d)
    saved = os.environ.get("LD_LIBRARY_PATH")
    os.environ["LD_LIBRARY_PATH"] = d
    c = None
    try:
        c = Cluster()
        c.sql(TYPES_TABLE)
        yield c
    finally:
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
        if c is not None:
            c.destroy()
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("chunk_pages", [1, 7, 4096])
def test_stand_in_gpu_equals_postgresql(fake_gpu_cluster, chunk_pages):
    c = fake_gpu_cluster
    assert c.status()["engine"] == "gpu", c.status()
    sets = tuple("SET %s = %s" % s for s in SETTINGS if s[0] != "pg_warp.heap_chunk_pages")
    sets += ("SET pg_warp.heap_chunk_pages = %d" % chunk_pages, "SET pg_warp.engine = gpu")
    for where in FAKE_WHERES:
        q = ("SELECT count(*), sum(id), md5(string_agg(t.*::text, ',' ORDER BY id)) "
             "FROM types t WHERE " + where)
        on = c.run(q, settings=sets, timeout=120)
        off = c.run(q, settings=("SET pg_warp.enabled = off",), timeout=120)
        assert (on.returncode, on.stdout, on.stderr.split("\n")[0]) == \
            (off.returncode, off.stdout, off.stderr.split("\n")[0]), where
        p = c.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + q, settings=sets, timeout=120)
        if off.returncode == 0:
            assert "GpuScan" in p.stdout and "Engine: GPU" in p.stdout, (where, p.stdout)
    # compressed values the GPU does not decode: their chunks rechecked by PostgreSQL
    if chunk_pages != 1:
        return
    c.sql("CREATE TABLE IF NOT EXISTS toasty AS SELECT i AS id, CASE WHEN i % 1000 = 0 "
          "THEN repeat('ab', 5000) ELSE 'v' || i END AS t FROM generate_series(1, 3000) i")
    q = "SELECT count(*), sum(id), sum(length(t)) FROM toasty WHERE t LIKE 'v1%' OR id % 200 = 0"
    on = c.run(q, settings=sets, timeout=120)
    assert on.returncode == 0 and on.stdout.strip() == c.sql("SET pg_warp.enabled = off; " + q)
    p = c.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + q, settings=sets, timeout=120).stdout
    assert "Engine: GPU" in p and counter(p, "Chunks Rechecked by PostgreSQL") > 0, p
    assert counter(p, "Chunks") > counter(p, "Chunks Rechecked by PostgreSQL"), p
