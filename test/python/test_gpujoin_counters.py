"""EXPLAIN ANALYZE's rows into and out of each GpuJoin depth
(src/engine/gpu_join_rows.c; the runners count them, xpu/protocol.h
WARP_JOIN_DEPTHS), against PostgreSQL's own counts.

Each query is built from join fragments (a FROM part and a WHERE part, with
the inner key that the depth's line in EXPLAIN names): the engine's plan (the
planner picks the depths' order) must show, for depth d, the rows in as
PostgreSQL counts the outer rows that pass the scan's filter joined with the
fragments of the depths before d, and the rows out as the same count with
depth d's fragment too (pg_warp.enabled = off).  INNER, LEFT (with a WHERE
clause over its NULL-extended rows), SEMI, ANTI, depths whose keys repeat
(every match: rows out beyond rows in), several depths, Arrow and heap
outers, parallel plans (the participants' sum), GpuJoin (no grouping), a
run that falls back (no counts shown), and a rescanned node.  The tables are
test_gpujoin_scan.py's (test_gpujoin.py's dimensions): NULL keys, keys
without a match, NULL payloads, an empty dimension and an empty fact table.
"""
import re

import pytest

from pg_sql import DB, OFF, ON, find_nodes, show
from pg_sql import psql as pg_psql
# the tables: test_gpujoin_scan.py's fixture (its schema, the fact table as Arrow and
# heap, an empty one, the dimensions and an empty dimension), for this module too
from test_gpujoin_scan import S, tables  # noqa: F401 (an autouse fixture)
NO_PG_JOINS = ("SET enable_hashjoin = off", "SET enable_mergejoin = off",
               "SET enable_nestloop = off")
HEAP = ("SET pg_warp.enable_gpupreagg_heap = on",)
PARALLEL = HEAP + NO_PG_JOINS + ("SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                                 "SET min_parallel_table_scan_size = 0",
                                 "SET max_parallel_workers_per_gather = 2")


def q(sql, fact):
    return sql.replace("{f}", "%s.%s" % (S, fact)).replace("gj.", S + ".")


class J:
    """One depth's fragment: key (the inner key column as the depth's line
    names it), the FROM part and the WHERE part it adds."""

    def __init__(self, key, frm="", where=None, col=None):
        self.key, self.frm, self.where, self.col = key, frm, where, col


def build(select, frags, filt, group):
    """the query of the outer table joined with frags, filtered by filt"""
    wheres = ([filt] if filt else []) + [j.where for j in frags if j.where]
    sql = "SELECT %s FROM {f} f %s" % (select, " ".join(j.frm for j in frags if j.frm))
    if wheres:
        sql += " WHERE " + " AND ".join(wheres)
    return sql + (" GROUP BY " + group if group else "")


def depth_rows(top, node):
    """[(rows in, rows out)] of each depth of the first `node` of plan top,
    and the depths' lines"""
    n = find_nodes(top, node)[0]
    lines = [n["Join Depth %d" % (d + 1)] for d in range(len(n.get("Join Rows", [])))]
    rows = n.get("Join Rows", [])
    assert [r["Depth"] for r in rows] == list(range(1, len(rows) + 1)), show(top)
    return [(r["Rows In"], r["Rows Out"]) for r in rows], lines, n


def frag_of(line, frags):
    """the fragment whose inner key the depth's line names"""
    keys = line.split(" (inner")[0]
    found = [j for j in frags if re.search(r"\b%s\b" % re.escape(j.key), keys)]
    assert len(found) == 1, (line, [j.key for j in found])
    return found[0]


def expected(frags_in_order, filt, fact, settings=()):
    """PostgreSQL's counts: the outer rows that pass filt, then joined with
    each fragment in turn"""
    parts = ["(%s)" % build("count(*)", frags_in_order[:k], filt, None)
             for k in range(len(frags_in_order) + 1)]
    res = DB.result(q("SELECT " + ", ".join(parts), fact), tuple(OFF) + tuple(settings))
    assert res[0] == "ok", res
    c = [int(x) for x in res[1].strip().split("|")]
    return [(c[k], c[k + 1]) for k in range(len(frags_in_order))]


def check(frags, filt="", fact="fact", settings=(), node="GpuPreAgg", group="f.q2",
          select=None, engine=None):
    """the query's answer is PostgreSQL's, the engine ran it (engine: that
    one, "CPU" or "GPU"), and each depth's rows in and out are PostgreSQL's
    counts; returns the node"""
    if select is None:
        cols = [j.col for j in frags if j.col]
        select = ", ".join((["f.q2", "count(*)", "sum(f.v)"] if group else ["f.id", "f.v"]) +
                           [("count(%s)" if group else "%s") % c for c in cols])
    sql = q(build(select, frags, filt, group), fact)
    DB.same(sql, node, settings=settings, rel_tol=1e-12, engine=engine)
    top = DB.engine_ran(sql, node, tuple(ON) + tuple(settings), engine=engine)
    got, lines, n = depth_rows(top, node)
    assert len(got) == len(frags), ("a depth without its rows", show(top))
    order = [frag_of(line, frags) for line in lines]
    want = expected(order, filt, fact, settings)
    assert got == want, (sql, got, want, show(top))
    # text: the same figures on each depth's line
    text = DB.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql,
                  tuple(ON) + tuple(settings))
    for d, (i, o) in enumerate(want):
        assert re.search(r"Join Depth %d: .*; rows in %d, out %d\)" % (d + 1, i, o), text), text
    return n


DATE = J("d.d_datekey", "JOIN gj.date1 d ON f.dk = d.d_datekey")
CUST = J("c.c_key", "JOIN gj.customer c ON f.ck = c.c_key AND c.c_region = 'REGION1'")
SUPP = J("s.s_key", "JOIN gj.supplier s ON f.sk = s.s_key")
NATION = J("n.n_key", "JOIN gj.nation n ON s.s_nation_key = n.n_key")
CUST_QUAL = J("c.c_key", "JOIN gj.customer c ON f.ck = c.c_key", "f.v > c.c_key")
# (the query reads the left join's inner columns, or PostgreSQL removes the join)
LEFT_CUST = J("c.c_key", "LEFT JOIN gj.customer c ON f.ck = c.c_key", col="c.c_nation")
LEFT_MODE_NULL = J("m.m_name", "LEFT JOIN gj.mode m ON f.tk = m.m_name", "m.m_cost IS NULL")
SEMI = J("n.k", "", "EXISTS (SELECT 1 FROM gj.nokey n WHERE n.k = f.q1)")
ANTI = J("c2.c_key", "", "NOT EXISTS (SELECT 1 FROM gj.customer c2 WHERE c2.c_key = f.ck "
         "AND c2.c_region = 'REGION2')")
EACH = J("n.k", "JOIN gj.nokey n ON f.q1 = n.k")
EMPTY = J("e.e_key", "JOIN gj.emptydim e ON f.ck = e.e_key")
LEFT_EMPTY = J("e.e_key", "LEFT JOIN gj.emptydim e ON f.ck = e.e_key", col="e.e_name")

CASES = [
    ("inner", [DATE], "f.q1 > 1"),
    ("inner_three", [DATE, CUST, SUPP], "f.v <> 7"),
    ("snowflake", [SUPP, NATION], ""),
    ("join_qual", [CUST_QUAL], ""),
    ("left", [LEFT_CUST], "f.q1 IS NOT NULL"),
    ("left_filtered_then_inner", [LEFT_MODE_NULL, DATE], ""),
    ("semi", [SEMI], ""),
    ("anti", [ANTI], "f.q2 > 1"),
    ("inner_and_anti", [DATE, ANTI], ""),
    ("each", [EACH], ""),
    ("each_then_unique", [EACH, DATE, SUPP], "f.q2 < 3"),
    ("empty_inner", [EMPTY], ""),
    ("left_empty_inner", [LEFT_EMPTY, DATE], ""),
]


@pytest.mark.parametrize("name,frags,filt", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("fact", ["fact", "hfact"])
def test_preagg(name, frags, filt, fact):
    check(frags, filt, fact, settings=NO_PG_JOINS + (HEAP if fact == "hfact" else ()))


def gpu_service():
    """does the service run the GPU engine (a GPU host)"""
    return DB.sql("SELECT engine FROM pgwarp.service_status()").strip() == "gpu"


GPU = ("SET pg_warp.engine = gpu",)


@pytest.mark.parametrize("name,frags,filt", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("fact", ["fact", "hfact"])
def test_preagg_gpu(name, frags, filt, fact):
    """On a GPU host: the GPU kernel's counts (kern_agg.cu, per block)."""
    if not gpu_service():
        pytest.skip("the service has no GPU")
    check(frags, filt, fact, settings=NO_PG_JOINS + GPU + (HEAP if fact == "hfact" else ()),
          engine="GPU")


@pytest.mark.parametrize("leader", ["on", "off"])
def test_parallel_gpu(leader):
    """On a GPU host: a parallel GpuPreAgg's participants on the GPU, summed."""
    if not gpu_service():
        pytest.skip("the service has no GPU")
    check([DATE, CUST], "f.q1 > 1", "hfact",
          settings=PARALLEL + GPU + ("SET parallel_leader_participation = " + leader,),
          engine="GPU")


def test_each_rows_out_beyond_rows_in():
    """A depth whose keys repeat counts each combination of matches."""
    n = check([EACH], "")
    (i, o), = [(r["Rows In"], r["Rows Out"]) for r in n["Join Rows"]]
    assert o > i, n


def test_empty_outer():
    """No outer row: the engine has no batch to read, every count is 0 or
    none is shown, never a wrong one."""
    sql = q(build("count(*)", [DATE], "", None), "empty")
    top = DB.engine_ran(sql, "GpuPreAgg", tuple(ON) + NO_PG_JOINS)
    n = find_nodes(top, "GpuPreAgg")[0]
    assert all(r["Rows In"] == 0 and r["Rows Out"] == 0 for r in n.get("Join Rows", [])), n


@pytest.mark.parametrize("leader", ["on", "off"])
@pytest.mark.parametrize("frags,filt", [([DATE, CUST], "f.q1 > 1"), ([SUPP, NATION], ""),
                                        ([ANTI], ""), ([LEFT_CUST], "")])
def test_parallel(frags, filt, leader):
    """A parallel GpuPreAgg: the participants' parts of the shared run, summed."""
    settings = PARALLEL + ("SET parallel_leader_participation = " + leader,)
    top = DB.plan(q(build("f.q2, count(*)", frags, filt, "f.q2"), "hfact"),
                  tuple(ON) + settings)
    assert [n for n in find_nodes(top, "GpuPreAgg") if n.get("Parallel Aware")], show(top)
    check(frags, filt, "hfact", settings=settings)


GJ_CASES = [
    ("inner", [DATE, SUPP], "f.q1 > 1"),
    ("left", [LEFT_CUST], ""),
    ("left_filtered_then_inner", [LEFT_MODE_NULL, DATE], ""),
    ("anti", [DATE, ANTI], ""),
    ("empty_inner", [EMPTY], ""),
]


@pytest.mark.parametrize("name,frags,filt", GJ_CASES, ids=[c[0] for c in GJ_CASES])
def test_gpujoin(name, frags, filt):
    """GpuJoin (joins without grouping, a projection run)."""
    check(frags, filt, "fact", settings=NO_PG_JOINS, node="GpuJoin", group=None)


def test_gpujoin_heap_outer():
    """GpuJoin over a heap outer table (the heap scan run's pass bitmaps),
    serial and parallel, on the CPU engine (the GPU's filter kernel,
    kern_warp.cu, does not count the rows of the depths: no counts shown)."""
    date93 = J("d.d_datekey", "JOIN gj.date1 d ON f.dk = d.d_datekey AND d.d_year = 1993")
    heap = ("SET pg_warp.enable_gpuscan_heap = on", "SET pg_warp.engine = cpu") + NO_PG_JOINS
    check([date93], "f.q1 > 1", "hfact", settings=heap, node="GpuJoin", group=None)
    n = check([date93, ANTI], "", "hfact", node="GpuJoin", group=None,
              settings=heap + PARALLEL[len(HEAP + NO_PG_JOINS):])
    assert n.get("Parallel Aware"), n


def test_gpujoin_parallel():
    settings = NO_PG_JOINS + ("SET max_parallel_workers_per_gather = 2",
                              "SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                              "SET min_parallel_table_scan_size = 0")
    n = check([DATE, SUPP], "", "fact", settings=settings, node="GpuJoin", group=None)
    assert n.get("Parallel Aware"), n


def test_partition_wise():
    """Partition-wise GpuPreAgg (gpu_join_part.c): each partition's node
    counts its own rows; over the partitions, PostgreSQL's counts of the
    whole table (the depths in the same order in every partition)."""
    pg_psql("""DROP TABLE IF EXISTS {s}.pfact;
CREATE TABLE {s}.pfact (LIKE {s}.hfact) PARTITION BY RANGE (id);
CREATE TABLE {s}.pfact0 PARTITION OF {s}.pfact FOR VALUES FROM (MINVALUE) TO (2000);
CREATE TABLE {s}.pfact1 PARTITION OF {s}.pfact FOR VALUES FROM (2000) TO (MAXVALUE);
INSERT INTO {s}.pfact SELECT * FROM {s}.hfact; ANALYZE {s}.pfact""".format(s=S))
    try:
        frags = [DATE, SUPP, ANTI]
        settings = NO_PG_JOINS + HEAP
        sql = q(build("f.q2, count(*), sum(f.v)", frags, "f.q1 > 1", "f.q2"), "pfact")
        DB.same(sql, "GpuPreAgg", settings=settings)
        top = DB.engine_ran(sql, "GpuPreAgg", tuple(ON) + settings)
        nodes = find_nodes(top, "GpuPreAgg")
        assert len(nodes) == 2, show(top)
        total = [[0, 0] for _ in frags]
        orders = []
        for n in nodes:
            rows = n.get("Join Rows", [])
            assert len(rows) == len(frags), show(top)
            lines = [n["Join Depth %d" % (d + 1)] for d in range(len(frags))]
            orders.append([frag_of(line, frags).key for line in lines])
            for d, r in enumerate(rows):
                total[d][0] += r["Rows In"]
                total[d][1] += r["Rows Out"]
        assert orders[0] == orders[1], orders
        order = [frag_of(line, frags) for line in
                 [nodes[0]["Join Depth %d" % (d + 1)] for d in range(len(frags))]]
        want = expected(order, "f.q1 > 1", "pfact")
        assert [tuple(t) for t in total] == want, (total, want, show(top))
    finally:
        pg_psql("DROP TABLE IF EXISTS %s.pfact" % S)


def test_fallback_shows_no_counts():
    """A run that falls back (an inner table over pg_warp.gpujoin_inner_limit;
    an inner key beyond the engine's numeric): PostgreSQL's answer, and no
    rows in or out on the depths (nor a crash)."""
    sql = q("SELECT b.b_key % 3, count(*), sum(f.v) FROM {f} f, gj.big b "
            "WHERE f.id = b.b_key AND b.b_label > 'x' GROUP BY 1", "fact")
    top = DB.falls_back(sql, "GpuPreAgg", settings=("SET pg_warp.gpujoin_inner_limit = '1MB'",))
    n = find_nodes(top, "GpuPreAgg")[0]
    assert "Join Rows" not in n and "rows in" not in str(n), show(top)
    sql = q("SELECT h.h_name, count(*) FROM {f} f, gj.huge h WHERE f.nk = h.h_key "
            "GROUP BY h.h_name", "fact")
    top = DB.falls_back(sql, "GpuPreAgg")
    n = find_nodes(top, "GpuPreAgg")[0]
    assert "Join Rows" not in n and "rows in" not in str(n), show(top)
    text = DB.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, ON)
    assert "rows in" not in text, text


def test_parallel_run_falls_back_midway():
    """One participant's run falls back in a shared run: the whole join runs
    in PostgreSQL, and no depth shows counts."""
    pg_psql("DROP TABLE IF EXISTS {s}.hbig; CREATE TABLE {s}.hbig AS SELECT f.*, "
            "CASE WHEN f.id BETWEEN 4000 AND 4003 THEN 9e37 ELSE f.id END::numeric(38, 0) "
            "AS big FROM {s}.hfact f ORDER BY f.id; ANALYZE {s}.hbig".format(s=S))
    try:
        sql = q("SELECT d.d_year, count(*), sum(f.big) FROM gj.hbig f, gj.date1 d "
                "WHERE f.dk = d.d_datekey GROUP BY d.d_year", "hfact")
        top = DB.falls_back(sql, "GpuPreAgg", settings=PARALLEL)
        for n in find_nodes(top, "GpuPreAgg"):
            assert "Join Rows" not in n and "rows in" not in str(n), show(top)
    finally:
        pg_psql("DROP TABLE IF EXISTS %s.hbig" % S)


def test_rescan():
    """A GpuPreAgg under a correlated subquery, rescanned for every outer
    row (loops 3): its groups are the one run's, and so are the counts."""
    sub = build("count(*) + x", [DATE, CUST], "f.q1 > 1", None)
    sql = q("SELECT x, (%s) FROM generate_series(1, 3) x" % sub, "fact")
    DB.same(sql, "GpuPreAgg", settings=NO_PG_JOINS)
    top = DB.engine_ran(sql, "GpuPreAgg", tuple(ON) + NO_PG_JOINS)
    got, lines, n = depth_rows(top, "GpuPreAgg")
    assert n["Actual Loops"] == 3, show(top)
    order = [frag_of(line, [DATE, CUST]) for line in lines]
    assert got == expected(order, "f.q1 > 1", "fact"), (got, show(top))


def test_formats():
    """YAML and XML carry the same list; text the figures in the line."""
    sql = q(build("f.q2, count(*)", [DATE, SUPP], "", "f.q2"), "fact")
    top = DB.engine_ran(sql, "GpuPreAgg", tuple(ON) + NO_PG_JOINS)
    got, _, _ = depth_rows(top, "GpuPreAgg")
    yaml = DB.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT YAML) " + sql,
                  tuple(ON) + NO_PG_JOINS)
    for i, o in got:
        assert re.search(r"Rows In: %d\s+.*Rows Out: %d" % (i, o), yaml), yaml
    xml = DB.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT XML) " + sql,
                 tuple(ON) + NO_PG_JOINS)
    for i, o in got:
        assert "<Rows-In>%d</Rows-In>" % i in xml and "<Rows-Out>%d</Rows-Out>" % o in xml, xml
    # EXPLAIN without ANALYZE: no counts
    plain = DB.sql("EXPLAIN (COSTS OFF) " + sql, tuple(ON) + NO_PG_JOINS)
    assert "rows in" not in plain and "Join Depth 1" in plain, plain
