"""RIGHT and FULL OUTER joins in GpuPreAgg's join depths (src/engine/gpu_join.c,
xpu_join.h "RIGHT and FULL OUTER depths"): the fact table stays the outer
(probe) side, the dimension of the top RIGHT or FULL join is the last depth,
whose probes mark the inner rows they meet; after the pass, the inner rows
no outer row met run through the rest of the program with every outer
column NULL (a serial run at its end, a parallel query's shared run at its
finish).  Every query runs with pg_warp on (a GpuPreAgg whose engine run
joined the expected depths, the last a Right or Full Join) and off; the
rows must be equal.  What stays in PostgreSQL says why (EXPLAIN VERBOSE).

Data: NULL keys on both sides (NULL never matches: such inner rows come out
unmatched, such outer rows too in a FULL join), outer keys without an inner
row, inner rows without an outer row, repeating inner keys, an empty inner
side, an empty outer side, a skewed outer side; Arrow and heap fact tables.
"""
import decimal
import os
import random
import shutil
import tempfile

import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import DB, ON, find_nodes, show
from pg_sql import psql as pg_psql

NODE = "GpuPreAgg"
N = 4000
D = decimal.Decimal
KEPT = "kept from an earlier query"


def fact_table(n, seed, hot=None):
    rnd = random.Random(seed)

    def pick(vals, null_frac=0.05):
        return [None if rnd.random() < null_frac else rnd.choice(vals) for _ in range(n)]

    # k: 0 .. 99, the dimension holds 0 .. 79 and a few NULL-key rows
    k = pick(list(range(0, 100)))
    if hot is not None:
        k = [hot if i % 2 == 0 else v for i, v in enumerate(k)]
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "k": pa.array(k, pa.int32()),
        "ck": pa.array(pick(list(range(1, 30))), pa.int32()),
        "v": pa.array(pick([0, 1, -1, 7, 100, 2**31 - 1, -2**31]), pa.int32()),
        "amt": pa.array(pick([D("10.00"), D("0.01"), D("-5.50"), D("123456.78")]),
                        pa.decimal128(12, 2)),
        "tk": pa.array(pick(["AIR", "MAIL", "", "é"]), pa.string()),
    })


FACT_COLUMNS = "id int8, k int4, ck int4, v int4, amt numeric(12,2), tk text"

DIMS = """
CREATE TABLE gjo.dim (k int4 PRIMARY KEY, grp int4, name text);
INSERT INTO gjo.dim SELECT i, i % 6, CASE WHEN i % 9 = 0 THEN NULL ELSE 'name' || i END
  FROM generate_series(0, 79) i;
-- no unique key: repeating keys, and NULL keys (never matched)
CREATE TABLE gjo.dimn (k int4, grp int4, name text);
INSERT INTO gjo.dimn SELECT i % 40, i % 5, 'n' || i FROM generate_series(0, 59) i;
INSERT INTO gjo.dimn VALUES (NULL, 1, 'null key a'), (NULL, 7, 'null key b'), (95, NULL, NULL);
CREATE TABLE gjo.cust (c_key int4 PRIMARY KEY, c_nation text);
INSERT INTO gjo.cust SELECT i, 'NATION' || (i % 4) FROM generate_series(1, 25) i;
CREATE TABLE gjo.mode (m_name text PRIMARY KEY, m_cost int4);
INSERT INTO gjo.mode VALUES ('AIR', 10), ('MAIL', NULL), ('', 0);
CREATE TABLE gjo.nodim (k int4 PRIMARY KEY, grp int4);
ANALYZE gjo.dim, gjo.dimn, gjo.cust, gjo.mode, gjo.nodim;
"""


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_gjo.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "fact.arrow"), fact_table(N, 11), 500)
    write(os.path.join(d, "empty.arrow"), fact_table(0, 12), 500)
    write(os.path.join(d, "skew.arrow"), fact_table(N, 13, hot=3), 500)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS gjo CASCADE; CREATE SCHEMA gjo")
    pg_psql(DIMS)
    for name in ("fact", "empty", "skew"):
        pg_psql("CREATE FOREIGN TABLE gjo.%s (%s) SERVER arrow_fdw OPTIONS (file '%s/%s.arrow')"
                % (name, FACT_COLUMNS, d, name))
    pg_psql("CREATE TABLE gjo.hfact AS SELECT * FROM gjo.fact; ANALYZE gjo.hfact")
    pg_psql("CREATE TABLE gjo.hempty AS SELECT * FROM gjo.empty; ANALYZE gjo.hempty")
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gjo CASCADE")
    shutil.rmtree(d, ignore_errors=True)


HEAP = ("SET pg_warp.enable_gpupreagg_heap = on",)
# PostgreSQL's own joins cost more than anything: the engine's plan however small the input
NO_PG_JOINS = ("SET enable_hashjoin = off", "SET enable_mergejoin = off",
               "SET enable_nestloop = off")


def joined(sql, depths, kind, settings=(), fact="fact"):
    """sql (with {f} the fact table) answers as PostgreSQL does, in a
    GpuPreAgg whose engine run joined `depths` inner relations, the last a
    `kind` ("Right" or "Full") join; returns that node"""
    sql = sql.replace("{f}", "gjo." + fact)
    DB.same(sql, NODE, settings=settings, rel_tol=1e-9)
    top = DB.engine_ran(sql, NODE, tuple(ON) + tuple(settings))
    node = find_nodes(top, NODE)[0]
    got = sorted(k for k in node if k.startswith("Join Depth"))
    assert len(got) == depths, (sql, show(top))
    assert node[got[-1]].startswith(kind + " Join on"), show(top)
    return node


RIGHT = [
    # the query: every dimension row's group, with or without fact rows;
    # count(*) counts an unmatched inner row, count/sum/min/avg of outer columns
    # see NULLs there
    ("SELECT d.grp, count(*), count(f.v), sum(f.v), min(f.amt), max(f.id), avg(f.v) "
     "FROM {f} f RIGHT JOIN gjo.dim d ON f.k = d.k GROUP BY d.grp", 1),
    # a text group key with NULLs (inner payload)
    ("SELECT d.name, count(*), sum(f.amt) FROM {f} f RIGHT JOIN gjo.dim d ON f.k = d.k "
     "GROUP BY d.name", 1),
    # no GROUP BY: one group
    ("SELECT count(*), count(f.id), sum(f.v), count(d.k) FROM {f} f "
     "RIGHT JOIN gjo.dim d ON f.k = d.k", 1),
    # group by an outer column: the unmatched inner rows group under NULL
    ("SELECT f.v, count(*), count(d.name) FROM {f} f RIGHT JOIN gjo.dim d ON f.k = d.k "
     "GROUP BY f.v", 1),
    # repeating inner keys, NULL inner keys (emitted unmatched), every match joined
    ("SELECT n.grp, count(*), count(f.id), sum(f.v), max(n.name) FROM {f} f "
     "RIGHT JOIN gjo.dimn n ON f.k = n.k GROUP BY n.grp", 1),
    # depths below: an inner and a left join, then the right join over them all
    ("SELECT d.grp, c.c_nation, count(*), sum(f.v), max(m.m_cost) FROM {f} f "
     "JOIN gjo.cust c ON f.ck = c.c_key LEFT JOIN gjo.mode m ON f.tk = m.m_name "
     "RIGHT JOIN gjo.dim d ON f.k = d.k GROUP BY d.grp, c.c_nation", 3),
    # a WHERE clause above the join over outer columns (true for unmatched rows)
    ("SELECT d.grp, count(*) FROM {f} f RIGHT JOIN gjo.dim d ON f.k = d.k "
     "WHERE f.v IS NULL GROUP BY d.grp", 1),
    # a WHERE clause above the join over both sides
    ("SELECT d.grp, count(*) FROM {f} f RIGHT JOIN gjo.dim d ON f.k = d.k "
     "WHERE coalesce(f.v, d.grp) > 2 GROUP BY d.grp", 1),
    # a filter of the kept side (the inner scan's) and one of the outer side in ON
    # (the outer scan's: its rows that fail it match nothing)
    ("SELECT d.grp, count(*), sum(f.v) FROM {f} f RIGHT JOIN gjo.dim d "
     "ON f.k = d.k AND f.v > 0 WHERE d.grp < 4 GROUP BY d.grp", 1),
    # every inner row matched
    ("SELECT d.grp, count(*), sum(f.v) FROM {f} f RIGHT JOIN gjo.dim d ON f.k = d.k "
     "WHERE d.k BETWEEN 1 AND 10 GROUP BY d.grp", 1),
    # an empty inner side: no row at all
    ("SELECT n.grp, count(*), sum(f.v) FROM {f} f RIGHT JOIN gjo.nodim n ON f.k = n.k "
     "GROUP BY n.grp", 1),
    ("SELECT count(*), sum(f.v) FROM {f} f RIGHT JOIN gjo.nodim n ON f.k = n.k", 1),
]

FULL = [
    ("SELECT d.grp, count(*), count(f.id), count(d.k), sum(f.v), min(f.amt) FROM {f} f "
     "FULL JOIN gjo.dim d ON f.k = d.k GROUP BY d.grp", 1),
    # no GROUP BY
    ("SELECT count(*), count(f.id), count(d.k), sum(f.v) FROM {f} f "
     "FULL JOIN gjo.dim d ON f.k = d.k", 1),
    # NULL keys on both sides, repeating inner keys
    ("SELECT n.grp, f.v, count(*), count(f.id), count(n.k), sum(f.amt) FROM {f} f "
     "FULL JOIN gjo.dimn n ON f.k = n.k GROUP BY n.grp, f.v", 1),
    # depths below, group keys of both sides
    ("SELECT c.c_nation, d.grp, count(*), sum(f.v), count(d.name) FROM {f} f "
     "JOIN gjo.cust c ON f.ck = c.c_key FULL JOIN gjo.dim d ON f.k = d.k "
     "GROUP BY c.c_nation, d.grp", 2),
    # a WHERE clause above the full join
    ("SELECT d.grp, count(*) FROM {f} f FULL JOIN gjo.dim d ON f.k = d.k "
     "WHERE f.id IS NULL OR d.k IS NULL GROUP BY d.grp", 1),
    # an empty inner side: every outer row, NULL inner columns
    ("SELECT n.grp, count(*), sum(f.v) FROM {f} f FULL JOIN gjo.nodim n ON f.k = n.k "
     "GROUP BY n.grp", 1),
]


@pytest.mark.parametrize("sql,depths", RIGHT)
def test_right_arrow(sql, depths):
    joined(sql, depths, "Right")


@pytest.mark.parametrize("sql,depths", FULL)
def test_full_arrow(sql, depths):
    joined(sql, depths, "Full")


@pytest.mark.parametrize("sql,depths", RIGHT[:6])
def test_right_heap(sql, depths):
    joined(sql, depths, "Right", settings=HEAP, fact="hfact")


@pytest.mark.parametrize("sql,depths", FULL[:4])
def test_full_heap(sql, depths):
    joined(sql, depths, "Full", settings=HEAP, fact="hfact")


@pytest.mark.parametrize("fact,settings", [("empty", ()), ("hempty", HEAP)])
def test_empty_outer(fact, settings):
    """No outer row: every inner row is unmatched (RIGHT and FULL alike).
    (Over a dimension of unique keys: where both sides' keys may repeat,
    the larger side, here the dimension, is the outer one, a LEFT join.)"""
    for sql in (RIGHT[0][0], RIGHT[2][0]):
        joined(sql, 1, "Right", settings=settings, fact=fact)
    for sql in (FULL[0][0], FULL[1][0]):
        joined(sql, 1, "Full", settings=settings, fact=fact)


@pytest.mark.parametrize("sql,kind", [(RIGHT[0][0], "Right"), (FULL[0][0], "Full")])
def test_skewed(sql, kind):
    """Half of the outer rows meet one inner row."""
    joined(sql, 1, kind, fact="skew")


# a parallel plan however small the tables: Gather over the parallel GpuPreAgg, whose
# fallback is PostgreSQL's parallel plan of the join (PostgreSQL 15 makes one of a
# right join only with the kept side's scan parallel: a left join of it; with its joins
# disabled it makes none, and the node no parallel path)
PARALLEL = HEAP + ("SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                   "SET min_parallel_table_scan_size = 0",
                   "SET max_parallel_workers_per_gather = 2")


@pytest.mark.parametrize("sql", [RIGHT[0][0], RIGHT[1][0], RIGHT[4][0], RIGHT[6][0]])
@pytest.mark.parametrize("leader", ["on", "off"])
def test_parallel_heap(sql, leader):
    """A parallel GpuPreAgg: every participant's part of the query's shared
    run marks the run's one set of flags, the finish emits the inner rows
    none of them met (once)."""
    settings = PARALLEL + ("SET parallel_leader_participation = " + leader,)
    top = DB.plan(sql.replace("{f}", "gjo.hfact"), tuple(ON) + settings)
    assert [n for n in find_nodes(top, NODE) if n.get("Parallel Aware")], show(top)
    joined(sql, 1, "Right", settings=settings, fact="hfact")


@pytest.mark.parametrize("sql", [FULL[0][0], FULL[3][0]])
def test_full_under_parallel_settings(sql):
    """PostgreSQL 15 makes no parallel plan of a full join (none for the
    participants to fall back to): the GpuPreAgg is a serial one."""
    top = DB.plan(sql.replace("{f}", "gjo.hfact"), tuple(ON) + PARALLEL)
    assert not [n for n in find_nodes(top, NODE) if n.get("Parallel Aware")], show(top)
    joined(sql, sql.count(" JOIN "), "Full", settings=PARALLEL, fact="hfact")


def test_kept_inner_table_run_twice():
    """A kept inner table (gpu_join_cache.c) is probed by a later query:
    the flags are the run's, so the second run emits the same unmatched rows."""
    # committed synchronously: with synchronous_commit off (the benchmark
    # cluster's setting) the rows' commit is not flushed when VACUUM looks, so
    # it cannot set their hint bits nor mark the pages all-visible, and a table
    # that is not all-visible is rightly never kept (gj_cache_version)
    pg_psql("SET synchronous_commit = on; DROP TABLE IF EXISTS gjo.kdim; "
            "CREATE TABLE gjo.kdim AS SELECT * FROM gjo.dim; "
            "ALTER TABLE gjo.kdim ADD PRIMARY KEY (k)")
    pg_psql("VACUUM (FREEZE, ANALYZE) gjo.kdim")
    sql = ("SELECT d.grp, count(*), count(f.v), sum(f.v) FROM {f} f "
           "RIGHT JOIN gjo.kdim d ON f.k = d.k GROUP BY d.grp")
    joined(sql, 1, "Right")
    node = joined(sql, 1, "Right")
    assert KEPT in node["Join Depth 1"], node["Join Depth 1"]
    node = joined(sql.replace("RIGHT", "FULL"), 1, "Full")
    assert KEPT in node["Join Depth 1"], node["Join Depth 1"]


NOT_JOINED = [
    # a right join with a clause beyond its keys
    ("SELECT d.grp, count(*) FROM gjo.fact f RIGHT JOIN gjo.dim d ON f.k = d.k AND f.v > d.grp "
     "GROUP BY d.grp", 'the right join of "dim" has clauses beyond equal keys'),
    ("SELECT d.grp, count(*) FROM gjo.fact f FULL JOIN gjo.dim d ON f.k = d.k AND f.v > d.grp "
     "GROUP BY d.grp", 'the full join of "dim" has clauses beyond equal keys'),
    # a full join below another join (not the top of the tree)
    ("SELECT c.c_nation, count(*) FROM gjo.fact f FULL JOIN gjo.dim d ON f.k = d.k "
     "JOIN gjo.cust c ON coalesce(f.ck, d.k) = c.c_key GROUP BY c.c_nation",
     "a right or full join below another join"),
    # a right join of several tables below another join
    ("SELECT m.m_cost, count(*) FROM gjo.fact f JOIN gjo.cust c ON f.ck = c.c_key "
     "RIGHT JOIN gjo.dim d ON f.k = d.k JOIN gjo.mode m ON coalesce(f.tk, d.name) = m.m_name "
     "GROUP BY m.m_cost", "a right or full join below another join"),
]


def test_right_join_below_another_join():
    """A right join of one table below another join: PostgreSQL keeps it
    as a left join, the dimension the outer relation, the fact table a LEFT
    depth (what the engine ran before right joins: no Right Join depth)."""
    sql = ("SELECT c.c_nation, count(*), sum(f.v) FROM gjo.fact f RIGHT JOIN gjo.dim d "
           "ON f.k = d.k JOIN gjo.cust c ON coalesce(f.ck, d.k) = c.c_key GROUP BY c.c_nation")
    DB.same(sql, NODE, settings=NO_PG_JOINS)
    top = DB.engine_ran(sql, NODE, tuple(ON) + NO_PG_JOINS)
    node = find_nodes(top, NODE)[0]
    assert node["Join Depth 1"].startswith("Left Join on"), show(top)


@pytest.mark.parametrize("sql,why", NOT_JOINED)
def test_left_to_postgres(sql, why):
    """PostgreSQL's answer and plan, and EXPLAIN (VERBOSE) says why."""
    DB.not_planned(sql, NODE, ON)
    out = DB.sql("EXPLAIN (VERBOSE) " + sql, ON)
    assert why in out, out


def test_gpujoin_projection_refuses():
    """Without grouping (GpuJoin, one output row an outer row) a right join
    stays in PostgreSQL: its unmatched inner rows come after the pass."""
    sql = "SELECT f.id, d.name FROM gjo.fact f RIGHT JOIN gjo.dim d ON f.k = d.k"
    DB.not_planned(sql, "GpuJoin", tuple(ON) + NO_PG_JOINS)
    out = DB.sql("EXPLAIN (VERBOSE) " + sql, tuple(ON) + NO_PG_JOINS)
    assert "only GpuPreAgg takes them" in out, out


def test_partitioned_outer_refuses():
    """Partition-wise GpuPreAgg runs each partition apart: each run would
    emit the unmatched inner rows, so a right or full join over a
    partitioned fact table stays in PostgreSQL, with the reason."""
    pg_psql("CREATE TABLE gjo.pf (k int4, v int4) PARTITION BY RANGE (k); "
            "CREATE TABLE gjo.pf1 PARTITION OF gjo.pf FOR VALUES FROM (0) TO (40); "
            "CREATE TABLE gjo.pf2 PARTITION OF gjo.pf FOR VALUES FROM (40) TO (1000); "
            "INSERT INTO gjo.pf SELECT i % 90, i FROM generate_series(1, 3000) i; "
            "ANALYZE gjo.pf")
    for kind, why in (("RIGHT", "the partitioned table is the inner side of an outer"),
                      ("FULL", "a right or full join over a partitioned table")):
        sql = ("SELECT d.grp, count(*), sum(f.v) FROM gjo.pf f %s JOIN gjo.dim d ON f.k = d.k "
               "GROUP BY d.grp" % kind)
        DB.not_planned(sql, NODE, tuple(ON) + HEAP)
        out = DB.sql("EXPLAIN (VERBOSE) " + sql, tuple(ON) + HEAP)
        assert why in out, out


def gpu_count():
    return int(DB.sql("SELECT count(*) FROM pgwarp.gpu_devices()").strip())


GPU = ("SET pg_warp.engine = gpu",)
# RIGHT[4] less max(n.name): pg_warp.engine = gpu computes no min/max of text
# (shippable.c), which would leave the whole grouping to PostgreSQL
RIGHT_DIMN_GPU = RIGHT[4][0].replace(", max(n.name)", "")


@pytest.mark.parametrize("sql,kind,settings,fact", [
    (RIGHT[0][0], "Right", (), "fact"),
    (RIGHT_DIMN_GPU, "Right", (), "fact"),
    (RIGHT[5][0], "Right", (), "skew"),
    (FULL[2][0], "Full", (), "fact"),
    (FULL[3][0], "Full", HEAP, "hfact"),
    (RIGHT[0][0], "Right", PARALLEL, "hfact"),
    (RIGHT_DIMN_GPU, "Right", PARALLEL + ("SET parallel_leader_participation = off",), "hfact"),
    (RIGHT[0][0], "Right", (), "empty"),
])
def test_on_the_gpu(sql, kind, settings, fact):
    """On a GPU host (skipped elsewhere): the GPU kernel's probes mark the
    run's flags in device memory, read back at the end of the pass (every
    participant's and device's ORed together), and the CPU emits the inner
    rows none marked; the same answers as PostgreSQL's, with Engine: GPU."""
    if gpu_count() == 0:
        pytest.skip("no GPU")
    q = sql.replace("{f}", "gjo." + fact)
    settings = tuple(settings) + GPU
    DB.same(q, NODE, settings=settings, rel_tol=1e-9, engine="GPU")
    joined(sql, sql.count(" JOIN "), kind, settings=settings, fact=fact)
