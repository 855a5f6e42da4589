"""GpuJoin as a plan node (src/engine/gpu_join_scan.c): joins without grouping
whose scan of the outer Arrow table, join depths and projection run in one
engine pass, the joined rows coming back through GpuScan's row path (a
projection run of the service's SCAN_RUN), against PostgreSQL as the oracle.

The tables are test_gpujoin.py's (an Arrow fact table with keys of several
types, NULL keys and keys that match no dimension row; heap dimensions with
primary keys and NULL payload values), in a schema of their own.  Every query
runs with pg_warp on (the plan must have a GpuJoin that the engine served,
with the expected join depths) and off; the rows must be equal.

An Arrow outer table's projection run takes the engine the service has
(pg_warp.engine auto): on a GPU host the GPU runs the quals and the join
depths (kern_join_scan.cu) and EXPLAIN ANALYZE must say "Engine: GPU", here
"Engine: CPU".  The tests at the end run the same path here on test/gpu's
stand-in driver (fake_cuda.c: the GPU kernel's per-row function on the
host), a cluster of their own whose service sees one "GPU".
"""
import os
import shutil
import tempfile

import pytest

from engine_edge import write
from pg_sql import DB, ON, find_nodes, show
from pg_sql import psql as pg_psql
from test_gpujoin import DIMS, FACT_COLUMNS, N, fact_table
from test_gpu_fault import fake_driver, stand_in_cluster  # noqa: F401 (a fixture)

NODE = "GpuJoin"
S = "gjs"


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_gjs.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "fact.arrow"), fact_table(N, 7), 700)
    write(os.path.join(d, "empty.arrow"), fact_table(0, 8), 700)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s" % (S, S))
    pg_psql(DIMS.replace("gj.", S + "."))
    for name in ("fact", "empty"):
        pg_psql("CREATE FOREIGN TABLE %s.%s (%s) SERVER arrow_fdw OPTIONS (file '%s/%s.arrow')"
                % (S, name, FACT_COLUMNS, d, name))
    pg_psql("CREATE TABLE %s.emptydim (e_key int4 PRIMARY KEY, e_name text); "
            "ANALYZE %s.emptydim" % (S, S))
    pg_psql("CREATE TABLE {s}.hfact AS SELECT * FROM {s}.fact; ANALYZE {s}.hfact".format(s=S))
    yield d
    pg_psql("DROP SCHEMA IF EXISTS %s CASCADE" % S)
    shutil.rmtree(d, ignore_errors=True)


# PostgreSQL's own joins cost more than anything: the engine's plan however small the input
NO_PG_JOINS = ("SET enable_hashjoin = off", "SET enable_mergejoin = off",
               "SET enable_nestloop = off")


def q(sql, fact="fact"):
    return sql.replace("{f}", "%s.%s" % (S, fact)).replace("gj.", S + ".")


_ENGINE = []


def service_engine(db=DB):
    """The engine a projection run of an Arrow outer table takes: "GPU"
    where the service has a GPU, else "CPU"."""
    if db is not DB:
        return "GPU" if db.status()["engine"] == "gpu" else "CPU"
    if not _ENGINE:
        _ENGINE.append("GPU" if DB.sql("SELECT engine FROM pgwarp.service_status()") == "gpu"
                       else "CPU")
    return _ENGINE[0]


def joined(sql, depths, settings=NO_PG_JOINS, fact="fact", ordered=False, db=DB):
    """sql (with {f} the fact table) returns PostgreSQL's rows through a
    GpuJoin whose engine run joined `depths` inner relations (on the
    service's engine where the outer table is Arrow)."""
    sql = q(sql, fact)
    engine = service_engine(db) if fact != "hfact" else None
    db.same(sql, NODE, settings=settings, ordered=ordered, rel_tol=1e-12, engine=engine)
    top = db.engine_ran(sql, NODE, tuple(ON) + tuple(settings), engine=engine)
    nodes = find_nodes(top, NODE)
    got = [k for k in nodes[0] if k.startswith("Join Depth")]
    assert len(got) == depths, (sql, show(top))
    assert "inner rows" in nodes[0]["Join Depth 1"], show(top)
    if engine == "GPU":
        # no batch's GPU run raised an error (the CPU engine would have run it)
        assert nodes[0]["Batches Run on the CPU Engine"] == 0, show(top)
    if engine is not None:
        # the rows into and out of each depth, counted by the engine that ran
        assert len(nodes[0].get("Join Rows", [])) == depths, show(top)
    return top


PROJECTIONS = [
    # one depth, inner and outer columns of every output type
    ("SELECT f.id, f.v, f.sk, f.pk, f.f, f.amt, f.tk, f.dk, d.d_year, d.d_month "
     "FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey", 1),
    # SSB-like: three depths, inner filters, the outer filtered
    ("SELECT f.id, d.d_year, p.p_brand, s.s_city, f.amt FROM {f} f, gj.date1 d, gj.part p, "
     "gj.supplier s WHERE f.dk = d.d_datekey AND f.pk = p.p_key AND f.sk = s.s_key "
     "AND p.p_size < 20 AND s.s_city = 'CITY1' AND f.q1 > 1", 3),
    # NULL inner payloads (c_region, c_bal numeric(10,3), m_cost), int8 and numeric payloads
    ("SELECT f.id, c.c_region, c.c_score, c.c_bal FROM {f} f, gj.customer c "
     "WHERE f.ck = c.c_key", 1),
    # a text key, a NULL payload
    ("SELECT f.id, m.m_name, m.m_cost FROM {f} f JOIN gj.mode m ON f.tk = m.m_name", 1),
    # a numeric key of another scale
    ("SELECT f.id, r.r_name, r.r_key FROM {f} f, gj.rate r WHERE f.nk = r.r_key", 1),
    # a composite key
    ("SELECT f.id, p.label FROM {f} f, gj.pair p WHERE f.q1 = p.a AND f.q2 = p.b", 1),
    # a snowflake: the nation depth keys on the supplier depth's payload
    ("SELECT f.id, s.s_city, n.n_name FROM {f} f, gj.supplier s, gj.nation n "
     "WHERE f.sk = s.s_key AND s.s_nation_key = n.n_key", 2),
    # a join qual beyond the keys, expressions over two depths in the target list
    ("SELECT f.id, c.c_key * s.s_nation_key, c.c_nation || '/' || s.s_city FROM {f} f "
     "JOIN gj.customer c ON f.ck = c.c_key JOIN gj.supplier s ON s.s_key = f.sk "
     "WHERE f.v > c.c_key", 2),
    # float8 keys (-0 meets 0, NaN meets NaN), float payloads with NaN
    ("SELECT f.id, d.f_name, p.p_price FROM {f} f, gj.fdim d, gj.part p "
     "WHERE f.f = d.f_key AND f.pk = p.p_key", 2),
    # a bool key of an outer expression
    ("SELECT f.id, g.b_name, g.b FROM {f} f, gj.flag g WHERE (f.v > 0) = g.b", 1),
]


@pytest.mark.parametrize("sql,depths", PROJECTIONS)
def test_projection(sql, depths):
    joined(sql, depths)


SEMI_ANTI_LEFT = [
    # EXISTS of a table without a unique key: a semi join
    ("SELECT f.id, f.q1 FROM {f} f WHERE EXISTS (SELECT 1 FROM gj.nokey n WHERE n.k = f.q1)", 1),
    # NOT EXISTS: rows with a NULL key or no match stay
    ("SELECT f.id, f.ck FROM {f} f WHERE NOT EXISTS "
     "(SELECT 1 FROM gj.customer c WHERE c.c_key = f.ck AND c.c_region = 'REGION2')", 1),
    # LEFT JOIN: NULL-extended rows, NULL keys
    ("SELECT f.id, f.ck, c.c_nation, c.c_score FROM {f} f LEFT JOIN gj.customer c "
     "ON f.ck = c.c_key", 1),
    # a WHERE clause over the left join's NULL-extended rows, then an inner depth
    ("SELECT f.id, m.m_cost, d.d_year FROM {f} f LEFT JOIN gj.mode m ON f.tk = m.m_name "
     "JOIN gj.date1 d ON f.dk = d.d_datekey WHERE m.m_cost IS NULL", 2),
    # an inner depth and an anti depth of a text key
    ("SELECT f.id, d.d_month FROM {f} f, gj.date1 d WHERE f.dk = d.d_datekey AND "
     "NOT EXISTS (SELECT 1 FROM gj.mode m WHERE m.m_name = f.tk)", 2),
]


@pytest.mark.parametrize("sql,depths", SEMI_ANTI_LEFT)
def test_semi_anti_left(sql, depths):
    joined(sql, depths)


def test_empty_outer_and_inner():
    """No outer row, no inner row, an inner plan whose filter keeps nothing."""
    # no record batch to scan: the inner table is built, no run is sent
    sql = q("SELECT f.id, d.d_year FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey", "empty")
    assert DB.result(sql, tuple(ON) + NO_PG_JOINS) == ("ok", "")
    top = DB.plan(sql, tuple(ON) + NO_PG_JOINS, analyze=True)
    assert "inner rows 1096" in find_nodes(top, NODE)[0]["Join Depth 1"], show(top)
    joined("SELECT f.id, e.e_name FROM {f} f JOIN gj.emptydim e ON f.ck = e.e_key", 1)
    joined("SELECT f.id, e.e_name FROM {f} f LEFT JOIN gj.emptydim e ON f.ck = e.e_key", 1)
    joined("SELECT f.id FROM {f} f WHERE NOT EXISTS "
           "(SELECT 1 FROM gj.emptydim e WHERE e.e_key = f.ck)", 1)
    joined("SELECT f.id, c.c_key FROM {f} f JOIN gj.customer c ON f.ck = c.c_key "
           "WHERE c.c_nation = 'nowhere'", 1)


def test_order_by_limit_above():
    """ORDER BY and LIMIT above the node: PostgreSQL sorts its rows."""
    joined("SELECT f.id, d.d_year, f.amt FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey "
           "ORDER BY f.amt DESC NULLS LAST, f.id LIMIT 37", 1, ordered=True)
    joined("SELECT c.c_nation, f.id FROM {f} f JOIN gj.customer c ON f.ck = c.c_key "
           "ORDER BY 1, 2 LIMIT 100 OFFSET 50", 1, ordered=True)
    # a LIMIT without ORDER BY: only the count is deterministic
    sql = q("SELECT count(*) FROM (SELECT f.id, c.c_nation FROM {f} f JOIN gj.customer c "
            "ON f.ck = c.c_key LIMIT 10) s")
    assert DB.result(sql, tuple(ON) + NO_PG_JOINS) == DB.result(sql, NO_PG_JOINS)


PAR = ("SET max_parallel_workers_per_gather = 2", "SET parallel_setup_cost = 0",
       "SET parallel_tuple_cost = 0", "SET min_parallel_table_scan_size = 0")


def parallel_join(top):
    """The GpuJoin of plan top is parallel aware, under a Gather."""
    nodes = find_nodes(top, NODE)
    assert nodes and all(n.get("Parallel Aware") for n in nodes), show(top)
    assert top["Node Type"] in ("Gather", "Gather Merge"), show(top)


@pytest.mark.parametrize("sql,depths", [
    ("SELECT f.id, d.d_year, s.s_city FROM {f} f, gj.date1 d, gj.supplier s "
     "WHERE f.dk = d.d_datekey AND f.sk = s.s_key", 2),
    ("SELECT f.id, c.c_nation, c.c_bal FROM {f} f LEFT JOIN gj.customer c ON f.ck = c.c_key "
     "WHERE f.q1 > 1", 1),
    ("SELECT f.id, f.tk FROM {f} f WHERE NOT EXISTS "
     "(SELECT 1 FROM gj.mode m WHERE m.m_name = f.tk)", 1),
])
def test_parallel(sql, depths):
    """A parallel GpuJoin: each participant claims record batches and builds
    the inner tables; the rows are PostgreSQL's."""
    parallel_join(joined(sql, depths, settings=PAR + NO_PG_JOINS))


def test_parallel_heap_outer():
    parallel_join(joined("SELECT f.id, f.v FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey "
                         "WHERE d.d_year = 1993", 1, settings=PAR + HEAP, fact="hfact"))


def test_parallel_fallback():
    """Under a Gather an inner value the engine cannot hold: every
    participant runs the fallback (PostgreSQL's partial plan), the rows once."""
    sql = q("SELECT f.id, h.h_name FROM {f} f, gj.huge h WHERE f.nk = h.h_key")
    top = DB.falls_back(sql, NODE, settings=PAR + NO_PG_JOINS)
    parallel_join(top)
    assert "does not hold exactly" in str(top), show(top)


def test_under_parallel_settings_default_costs():
    """Parallel plans allowed, default costs: GpuJoin or PostgreSQL's
    parallel plan, the same rows."""
    sql = q("SELECT f.id, d.d_year FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey")
    on, off = DB.result(sql, tuple(ON) + PAR), DB.result(sql, PAR)
    assert on[0] == "ok" and sorted(on[1].splitlines()) == sorted(off[1].splitlines())


def test_grouped_query_stays_gpupreagg():
    """A grouping over the same joins is GpuPreAgg's, one pass: no GpuJoin."""
    sql = q("SELECT d.d_year, count(*) FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey "
            "GROUP BY d.d_year")
    top = DB.plan(sql, tuple(ON) + NO_PG_JOINS)
    assert find_nodes(top, "GpuPreAgg"), show(top)
    assert not find_nodes(top, NODE), show(top)


def test_not_unique_stays_in_postgres():
    """An inner join whose keys are not known unique could multiply rows:
    PostgreSQL joins, and EXPLAIN VERBOSE says why."""
    sql = q("SELECT f.id, n.label FROM {f} f JOIN gj.nokey n ON f.q1 = n.k")
    DB.not_planned(sql, NODE, tuple(ON) + NO_PG_JOINS)
    out = DB.sql("EXPLAIN (VERBOSE) " + sql, tuple(ON) + NO_PG_JOINS)
    assert "not known to be unique" in out, out
    assert DB.result(sql, ON)[1].count("\n") == DB.result(sql, ())[1].count("\n")


def test_inner_table_over_the_limit_falls_back():
    """An inner table beyond pg_warp.gpujoin_inner_limit: the fallback child
    (PostgreSQL's plan of the join) runs, with PostgreSQL's answer."""
    sql = q("SELECT f.id, b.b_label FROM {f} f, gj.big b WHERE f.id = b.b_key")
    top = DB.falls_back(sql, NODE, settings=("SET pg_warp.gpujoin_inner_limit = '1MB'",))
    assert "pg_warp.gpujoin_inner_limit" in str(top), show(top)
    joined("SELECT f.id, b.b_label FROM {f} f, gj.big b WHERE f.id = b.b_key", 1)


def test_inner_value_beyond_the_engine_falls_back():
    top = DB.falls_back(q("SELECT f.id, h.h_name FROM {f} f, gj.huge h WHERE f.nk = h.h_key"),
                        NODE, settings=NO_PG_JOINS)
    assert "does not hold exactly" in str(top), show(top)


def test_costs_prefer_hash_join_for_a_tiny_outer():
    """Costs: over an empty outer table PostgreSQL's hash join is cheaper."""
    DB.not_planned(q("SELECT f.id, d.d_year FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey",
                     fact="empty"), NODE)


def test_ssb_like_projection_default_costs():
    """An SSB-like projection query with PostgreSQL's default costs: GpuJoin
    is chosen for the fact table of 5000 rows and returns PostgreSQL's rows."""
    joined("SELECT f.id, f.amt, d.d_year, c.c_nation, s.s_city FROM {f} f, gj.date1 d, "
           "gj.customer c, gj.supplier s WHERE f.dk = d.d_datekey AND f.ck = c.c_key "
           "AND f.sk = s.s_key AND c.c_region = 'REGION1' AND d.d_year = 1993", 3,
           settings=())


def test_error_is_postgres_own():
    """An overflow in a qual of the outer table (v holds 2^31 - 1), a division
    by zero in the target list: PostgreSQL's error, the engine's plan."""
    settings = NO_PG_JOINS
    DB.same_error(q("SELECT f.id, d.d_year FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey "
                    "WHERE f.v * 2 > 0"), NODE, settings=settings)
    DB.same_error(q("SELECT f.id, f.v / (d.d_year - d.d_year) FROM {f} f "
                    "JOIN gj.date1 d ON f.dk = d.d_datekey"), NODE, settings=settings)


HEAP = ("SET pg_warp.enable_gpuscan_heap = on",) + NO_PG_JOINS

HEAP_QUERIES = [
    # the joins as filters of a heap table: its tuples come back
    ("SELECT f.id, f.v, f.tk, f.amt, f.dk FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey "
     "WHERE d.d_year = 1993", 1),
    ("SELECT f.* FROM {f} f, gj.customer c, gj.supplier s WHERE f.ck = c.c_key "
     "AND f.sk = s.s_key AND c.c_region = 'REGION1' AND f.q1 > 1", 2),
    ("SELECT f.id, f.q1 FROM {f} f WHERE EXISTS (SELECT 1 FROM gj.nokey n WHERE n.k = f.q1)", 1),
    ("SELECT f.id, f.tk FROM {f} f WHERE NOT EXISTS "
     "(SELECT 1 FROM gj.mode m WHERE m.m_name = f.tk)", 1),
    # a snowflake: the second depth keys on the first's payload, which is not returned
    ("SELECT f.id, f.nk FROM {f} f, gj.supplier s, gj.nation n WHERE f.sk = s.s_key "
     "AND s.s_nation_key = n.n_key AND n.n_name = 'ONE'", 2),
    ("SELECT f.id FROM {f} f JOIN gj.emptydim e ON f.ck = e.e_key", 1),
]


@pytest.mark.parametrize("sql,depths", HEAP_QUERIES)
def test_heap_outer(sql, depths):
    top = joined(sql, depths, settings=HEAP, fact="hfact")
    assert "Heap" in show(top) or "heap" in show(top), show(top)


def test_heap_outer_reading_inner_columns_stays_in_postgres():
    """A heap outer table's tuples are what comes back: a query reading a
    dimension's columns above the join is PostgreSQL's, EXPLAIN VERBOSE says why."""
    sql = q("SELECT f.id, d.d_year FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey", "hfact")
    DB.not_planned(sql, NODE, tuple(ON) + HEAP)
    out = DB.sql("EXPLAIN (VERBOSE) " + sql, tuple(ON) + HEAP)
    assert "heap table" in out, out
    DB.same("SELECT count(*) FROM (%s) s" % sql, "GpuPreAgg", settings=HEAP)


def test_heap_outer_error_is_postgres_own():
    DB.same_error(q("SELECT f.id FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey "
                    "WHERE f.v * 2 > 0", "hfact"), NODE, settings=HEAP)


# ---------------------------------------------------------------- the stand-in GPU

def stand_in_with_tables(driver, tables, fallback=False):
    """A cluster whose service runs on test/gpu's stand-in driver (one
    "GPU", pg_warp.engine auto: GPU), with this module's tables; fallback:
    each GPU launch of a projection run raises FALLBACK."""
    if fallback:
        os.environ["PG_WARP_FAKE_JOIN_SCAN_FALLBACK"] = "1"
    try:
        c = stand_in_cluster(driver, None)
    finally:
        os.environ.pop("PG_WARP_FAKE_JOIN_SCAN_FALLBACK", None)
    try:
        c.sql("CREATE SCHEMA " + S)
        c.sql(DIMS.replace("gj.", S + "."))
        for name in ("fact", "empty"):
            c.sql("CREATE FOREIGN TABLE %s.%s (%s) SERVER arrow_fdw OPTIONS "
                  "(file '%s/%s.arrow')" % (S, name, FACT_COLUMNS, tables, name))
        c.sql("CREATE TABLE %s.emptydim (e_key int4 PRIMARY KEY, e_name text); "
              "ANALYZE %s.emptydim" % (S, S))
        assert c.status()["engine"] == "gpu", c.status()
    except BaseException:
        c.destroy()
        raise
    return c


@pytest.fixture(scope="module")
def fake_gpu(tables, fake_driver):
    c = stand_in_with_tables(fake_driver, tables)
    yield c
    c.destroy()


@pytest.mark.parametrize("sql,depths", PROJECTIONS + SEMI_ANTI_LEFT)
def test_stand_in_gpu_projection(fake_gpu, sql, depths):
    """The GPU path of a projection run (gpu_scan.c's kern_join_scan_exec,
    the workers' replay of the probes' rows): PostgreSQL's rows, Engine: GPU,
    and the rows into and out of each depth the CPU engine counts."""
    gpu = joined(sql, depths, db=fake_gpu)
    cpu = fake_gpu.engine_ran(q(sql), NODE, tuple(ON) + NO_PG_JOINS + ("SET pg_warp.engine = cpu",),
                              engine="CPU")
    assert (find_nodes(gpu, NODE)[0]["Join Rows"] == find_nodes(cpu, NODE)[0]["Join Rows"]), \
        (show(gpu), show(cpu))


def test_stand_in_gpu_parallel_empty_limit(fake_gpu):
    joined("SELECT f.id, d.d_year, s.s_city FROM {f} f, gj.date1 d, gj.supplier s "
           "WHERE f.dk = d.d_datekey AND f.sk = s.s_key", 2, settings=PAR + NO_PG_JOINS,
           db=fake_gpu)
    joined("SELECT f.id, e.e_name FROM {f} f LEFT JOIN gj.emptydim e ON f.ck = e.e_key", 1,
           db=fake_gpu)
    joined("SELECT f.id, c.c_key FROM {f} f JOIN gj.customer c ON f.ck = c.c_key "
           "WHERE c.c_nation = 'nowhere'", 1, db=fake_gpu)
    sql = q("SELECT f.id, d.d_year FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey", "empty")
    assert fake_gpu.result(sql, tuple(ON) + NO_PG_JOINS) == ("ok", "")
    # ORDER BY and LIMIT above the node (the run may be stopped early)
    joined("SELECT f.id, d.d_year, f.amt FROM {f} f JOIN gj.date1 d ON f.dk = d.d_datekey "
           "ORDER BY f.amt DESC NULLS LAST, f.id LIMIT 37", 1, ordered=True, db=fake_gpu)
    sql = q("SELECT count(*) FROM (SELECT f.id, c.c_nation FROM {f} f JOIN gj.customer c "
            "ON f.ck = c.c_key LIMIT 10) s")
    assert fake_gpu.result(sql, tuple(ON) + NO_PG_JOINS) == fake_gpu.result(sql, NO_PG_JOINS)


def test_stand_in_gpu_error_is_postgres_own(fake_gpu):
    """An overflow in a qual raised on the GPU, a division by zero in the
    target list raised by the host's replay: the batch runs on the CPU
    engine, which raises it too; PostgreSQL's error."""
    fake_gpu.same_error(q("SELECT f.id, d.d_year FROM {f} f JOIN gj.date1 d "
                          "ON f.dk = d.d_datekey WHERE f.v * 2 > 0"), NODE, settings=NO_PG_JOINS)
    fake_gpu.same_error(q("SELECT f.id, f.v / (d.d_year - d.d_year) FROM {f} f "
                          "JOIN gj.date1 d ON f.dk = d.d_datekey"), NODE, settings=NO_PG_JOINS)


def test_stand_in_gpu_fallback_runs_batches_on_the_cpu_engine(tables, fake_driver):
    """Every GPU launch raises FALLBACK: each batch runs on the CPU engine in
    the service's workers, PostgreSQL's rows; EXPLAIN ANALYZE says GPU and
    counts those batches."""
    c = stand_in_with_tables(fake_driver, tables, fallback=True)
    try:
        sql = q("SELECT f.id, d.d_year, c.c_nation FROM {f} f, gj.date1 d, gj.customer c "
                "WHERE f.dk = d.d_datekey AND f.ck = c.c_key AND f.q1 > 1")
        c.same(sql, NODE, settings=NO_PG_JOINS, engine="GPU")
        top = c.engine_ran(sql, NODE, tuple(ON) + NO_PG_JOINS, engine="GPU")
        node = find_nodes(top, NODE)[0]
        assert node["Batches Run on the CPU Engine"] == node["Batches Read"] > 0, show(top)
    finally:
        c.destroy()
