"""GpuJoin under GpuPreAgg (src/engine/gpu_join.c): star queries whose joins,
scan and grouping run in one engine pass, against PostgreSQL as the oracle.

The fact table is an Arrow file (and, where the engine reads heap tables, a
heap copy of it) with foreign keys of several types, NULL keys and keys that
match no dimension row; the dimensions are heap tables with primary keys
(what makes the engine's probe find at most one row), NULL payload values
and their own filters.  Every query runs with pg_warp on (the plan must be a
GpuPreAgg whose run the engine served, with the expected join depths) and
off; the rows, or the error, must be equal.  Joins the engine does not take
must stay in PostgreSQL's plan, and EXPLAIN (VERBOSE) must say why.
"""
import datetime
import decimal
import os
import random
import shutil
import tempfile

import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import DB, OFF, ON, find_nodes, show
from pg_sql import psql as pg_psql

NODE = "GpuPreAgg"
N = 5000
D = decimal.Decimal


def fact_table(n, seed):
    rnd = random.Random(seed)

    def pick(vals, null_frac=0.05):
        return [None if rnd.random() < null_frac else rnd.choice(vals) for _ in range(n)]

    base = datetime.date(1992, 1, 1)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        # 0 and 60..64 match no dimension row
        "ck": pa.array(pick(list(range(0, 65))), pa.int32()),
        "sk": pa.array(pick(list(range(1, 25))), pa.int16()),
        "pk": pa.array(pick(list(range(1, 210))), pa.int64()),
        "dk": pa.array(pick([base + datetime.timedelta(days=i) for i in range(0, 800, 3)]),
                       pa.date32()),
        "tk": pa.array(pick(["AIR", "MAIL", "SHIP", "TRUCK", "RAIL", "é", "", "nope"]),
                       pa.string()),
        "nk": pa.array(pick([D("1.50"), D("2.00"), D("-3.25"), D("7.77"), D("0.00")]),
                       pa.decimal128(12, 2)),
        "q1": pa.array(pick(list(range(1, 5))), pa.int32()),
        "q2": pa.array(pick(list(range(1, 4))), pa.int32()),
        "v": pa.array(pick([0, 1, -1, 7, 100, 2**31 - 1, -2**31]), pa.int32()),
        "f": pa.array(pick([0.5, -0.0, 1e300, 3.25, float("nan")]), pa.float64()),
        "amt": pa.array(pick([D("10.00"), D("0.01"), D("-5.50"), D("123456.78")]),
                        pa.decimal128(12, 2)),
    })


FACT_COLUMNS = ("id int8, ck int4, sk int2, pk int8, dk date, tk text, nk numeric(12,2), "
                "q1 int4, q2 int4, v int4, f float8, amt numeric(12,2)")

DIMS = """
CREATE TABLE gj.customer (c_key int4 PRIMARY KEY, c_nation text, c_region text,
                          c_score int8, c_bal numeric(10,3));
INSERT INTO gj.customer SELECT i, 'NATION' || (i % 7), CASE WHEN i % 11 = 0 THEN NULL
       ELSE 'REGION' || (i % 3) END, i * 1000003, (i * 1.125)::numeric(10,3)
  FROM generate_series(1, 59) i;
CREATE TABLE gj.supplier (s_key int8 PRIMARY KEY, s_city varchar(20), s_nation_key int4);
INSERT INTO gj.supplier SELECT i, 'CITY' || (i % 5), 1 + i % 4 FROM generate_series(1, 20) i;
CREATE TABLE gj.nation (n_key int4 PRIMARY KEY, n_name text);
INSERT INTO gj.nation VALUES (1, 'ONE'), (2, 'TWO'), (3, NULL);
CREATE TABLE gj.part (p_key int4 PRIMARY KEY, p_brand text, p_size int2, p_price float8);
INSERT INTO gj.part SELECT i, 'BRAND#' || (i % 13), (i % 50)::int2,
       CASE WHEN i % 17 = 0 THEN 'NaN'::float8 ELSE i * 0.5 END
  FROM generate_series(1, 200) i;
CREATE TABLE gj.date1 (d_datekey date PRIMARY KEY, d_year int4, d_month text);
INSERT INTO gj.date1 SELECT d, extract(year from d)::int4, to_char(d, 'Mon')
  FROM generate_series('1992-01-01'::date, '1994-12-31'::date, '1 day') d;
CREATE TABLE gj.mode (m_name text PRIMARY KEY, m_cost int4);
INSERT INTO gj.mode VALUES ('AIR', 10), ('MAIL', 3), ('SHIP', 1), ('TRUCK', NULL), ('é', 99),
                           ('', 0);
CREATE TABLE gj.rate (r_key numeric(6,1) PRIMARY KEY, r_name text);
INSERT INTO gj.rate VALUES (1.5, 'one and a half'), (2.0, 'two'), (-3.3, 'no match'),
                           (0, 'zero');
CREATE TABLE gj.fdim (f_key float8 PRIMARY KEY, f_name text);
INSERT INTO gj.fdim VALUES ('-0', 'zero'), ('NaN', 'not a number'), (3.25, 'three'),
                           ('1e300', 'big'), ('Infinity', 'inf');
CREATE TABLE gj.flag (b bool PRIMARY KEY, b_name text);
INSERT INTO gj.flag VALUES (true, 'positive'), (false, 'not positive');
CREATE TABLE gj.huge (h_key numeric(45,0) PRIMARY KEY, h_name text);
INSERT INTO gj.huge VALUES (2, 'two'), (10::numeric ^ 40, 'beyond 38 digits');
CREATE TABLE gj.pair (a int4, b int4, label text, PRIMARY KEY (a, b));
INSERT INTO gj.pair SELECT a, b, a || '/' || b FROM generate_series(1, 4) a,
       generate_series(1, 2) b;
CREATE TABLE gj.big (b_key int8 PRIMARY KEY, b_label text);
INSERT INTO gj.big SELECT i, repeat('x', 20) || i FROM generate_series(0, 99999) i;
CREATE TABLE gj.tzfact AS SELECT (i % 3)::int4 k, i % 4 AS q,
       '2020-01-01 01:00+00'::timestamptz + (i % 2) * interval '1 hour' z, i v
  FROM generate_series(1, 3000) i;
CREATE TABLE gj.tzdim (k int4, z timestamptz, x int4, PRIMARY KEY (k, z));
INSERT INTO gj.tzdim VALUES (1, '2020-01-01 00:00+00', 100), (1, '2020-01-01 01:00+00', 101),
                            (2, '2020-01-01 02:00+00', 102), (0, '2020-01-01 01:00+00', 103);
CREATE TABLE gj.quad (a int4, b int4, c int4, e int4, x int4, UNIQUE (a, b, c, e));
INSERT INTO gj.quad VALUES (1, 1, 1, 0, 100), (1, 1, 1, 1, 101), (2, 1, 1, 2, 102),
                           (1, 1, 1, 7, 103);
CREATE TABLE gj.nokey (k int4, label text);
INSERT INTO gj.nokey SELECT i % 10, 'L' || i FROM generate_series(1, 30) i;
ANALYZE gj.customer, gj.supplier, gj.nation, gj.part, gj.date1, gj.mode, gj.rate, gj.pair,
        gj.nokey, gj.big, gj.huge, gj.fdim, gj.flag, gj.tzfact, gj.tzdim, gj.quad;
"""


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_gj.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "fact.arrow"), fact_table(N, 7), 700)
    write(os.path.join(d, "empty.arrow"), fact_table(0, 8), 700)
    # skewed: half of the rows have one customer key (one hot group, one hot inner row)
    skew = fact_table(N, 9)
    ck = [1 if i % 2 == 0 else v for i, v in enumerate(skew.column("ck").to_pylist())]
    write(os.path.join(d, "skew.arrow"),
          skew.set_column(skew.schema.get_field_index("ck"), "ck", pa.array(ck, pa.int32())), 700)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS gj CASCADE; CREATE SCHEMA gj")
    pg_psql(DIMS)
    for name in ("fact", "empty", "skew"):
        pg_psql("CREATE FOREIGN TABLE gj.%s (%s) SERVER arrow_fdw OPTIONS (file '%s/%s.arrow')"
                % (name, FACT_COLUMNS, d, name))
    pg_psql("CREATE TABLE gj.hfact AS SELECT * FROM gj.fact; ANALYZE gj.hfact")
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gj CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def joined(sql, depths, settings=(), fact="fact"):
    """sql (with {f} the fact table) answers as PostgreSQL does, in a
    GpuPreAgg whose engine run joined `depths` inner relations."""
    sql = sql.replace("{f}", "gj." + fact)
    DB.same_answer(sql, NODE, settings=settings, rel_tol=1e-9)
    if DB.result(sql, tuple(ON) + tuple(settings))[0] == "error":
        return
    top = DB.engine_ran(sql, NODE, tuple(ON) + tuple(settings))
    nodes = find_nodes(top, NODE)
    got = [k for k in nodes[0] if k.startswith("Join Depth")]
    assert len(got) == depths, (sql, show(top))
    assert "inner rows" in nodes[0]["Join Depth 1"], show(top)


STAR = [
    # one depth, group by an inner column
    ("SELECT d.d_year, count(*), sum(f.v) FROM {f} f, gj.date1 d "
     "WHERE f.dk = d.d_datekey GROUP BY d.d_year", 1),
    # SSB Q2-like: three depths, inner filters, text payload keys
    ("SELECT d.d_year, p.p_brand, sum(f.amt), count(f.v) FROM {f} f, gj.date1 d, gj.part p, "
     "gj.supplier s WHERE f.dk = d.d_datekey AND f.pk = p.p_key AND f.sk = s.s_key "
     "AND p.p_size < 20 AND s.s_city = 'CITY1' GROUP BY d.d_year, p.p_brand", 3),
    # SSB Q3-like: four depths, the outer filtered too
    ("SELECT c.c_nation, s.s_city, d.d_year, sum(f.v), min(f.amt), max(c.c_score) "
     "FROM {f} f, gj.customer c, gj.supplier s, gj.date1 d "
     "WHERE f.ck = c.c_key AND f.sk = s.s_key AND f.dk = d.d_datekey "
     "AND c.c_region = 'REGION1' AND d.d_year BETWEEN 1992 AND 1993 AND f.q1 > 1 "
     "GROUP BY c.c_nation, s.s_city, d.d_year", 3 + 0),
    # no GROUP BY: one group, also over no joined row
    ("SELECT count(*), sum(f.v), avg(c.c_bal) FROM {f} f, gj.customer c "
     "WHERE f.ck = c.c_key", 1),
    ("SELECT count(*), sum(f.v) FROM {f} f, gj.customer c "
     "WHERE f.ck = c.c_key AND c.c_nation = 'nowhere'", 1),
    # a text key (bytes, a deterministic collation) and a NULL inner payload
    ("SELECT m.m_cost, count(*), sum(f.v) FROM {f} f, gj.mode m WHERE f.tk = m.m_name "
     "GROUP BY m.m_cost", 1),
    # a numeric key of another scale (numeric(12,2) against numeric(6,1))
    ("SELECT r.r_name, count(*) FROM {f} f, gj.rate r WHERE f.nk = r.r_key GROUP BY r.r_name", 1),
    # a composite key
    ("SELECT p.label, count(*), sum(f.id) FROM {f} f, gj.pair p "
     "WHERE f.q1 = p.a AND f.q2 = p.b GROUP BY p.label", 1),
    # a snowflake: the nation depth's key is the supplier depth's payload
    ("SELECT n.n_name, count(*), sum(f.v) FROM {f} f, gj.supplier s, gj.nation n "
     "WHERE f.sk = s.s_key AND s.s_nation_key = n.n_key GROUP BY n.n_name", 2),
    # a join qual beyond the keys, and an aggregate of an inner expression
    ("SELECT c.c_region, count(*), sum(f.v::int8 + c.c_key) FROM {f} f, gj.customer c "
     "WHERE f.ck = c.c_key AND f.v > c.c_key GROUP BY c.c_region", 1),
    # JOIN ... ON, an expression of two depths as the group key
    ("SELECT s.s_city, c.c_nation, count(*), sum(c.c_key * s.s_nation_key) FROM {f} f "
     "JOIN gj.customer c ON f.ck = c.c_key JOIN gj.supplier s ON s.s_key = f.sk "
     "GROUP BY 1, 2", 2),
    # a float8 key: -0 meets 0, NaN meets NaN (PostgreSQL's float equality)
    ("SELECT d.f_name, count(*), sum(f.v) FROM {f} f, gj.fdim d WHERE f.f = d.f_key "
     "GROUP BY d.f_name", 1),
    # an expression of the outer row as the key, of type bool
    ("SELECT g.b_name, count(*) FROM {f} f, gj.flag g WHERE (f.v > 0) = g.b "
     "GROUP BY g.b_name", 1),
    # float payloads with NaN; group keys from two depths
    ("SELECT p.p_brand, d.d_month, sum(p.p_price), max(p.p_price), count(*) "
     "FROM {f} f, gj.part p, gj.date1 d WHERE f.pk = p.p_key AND f.dk = d.d_datekey "
     "GROUP BY p.p_brand, d.d_month", 2),
]


SEMI_ANTI = [
    # EXISTS of a table without a unique key: a semi join, any match decides
    ("SELECT f.q1, count(*), sum(f.v) FROM {f} f WHERE EXISTS "
     "(SELECT 1 FROM gj.nokey n WHERE n.k = f.q1) GROUP BY f.q1", 1),
    # NOT EXISTS: an anti join; rows with a NULL key or no match stay
    ("SELECT f.q2, count(*), sum(f.v) FROM {f} f WHERE NOT EXISTS "
     "(SELECT 1 FROM gj.customer c WHERE c.c_key = f.ck AND c.c_region = 'REGION2') "
     "GROUP BY f.q2", 1),
    # an inner depth and an anti depth of a text key
    ("SELECT d.d_year, count(*) FROM {f} f, gj.date1 d WHERE f.dk = d.d_datekey AND "
     "NOT EXISTS (SELECT 1 FROM gj.mode m WHERE m.m_name = f.tk) GROUP BY d.d_year", 2),
    # LEFT JOIN: a fact row without its dimension row groups under NULL
    ("SELECT c.c_nation, count(*), sum(f.v), max(c.c_score) FROM {f} f "
     "LEFT JOIN gj.customer c ON f.ck = c.c_key GROUP BY c.c_nation", 1),
    # a WHERE clause over the left join's NULL-extended rows, a later inner depth
    ("SELECT d.d_year, count(*), sum(f.v) FROM {f} f LEFT JOIN gj.mode m ON f.tk = m.m_name "
     "JOIN gj.date1 d ON f.dk = d.d_datekey WHERE m.m_cost IS NULL GROUP BY d.d_year", 2),
    # IN (subquery): a semi join, or an inner join where the keys are unique
    ("SELECT count(*), sum(f.amt) FROM {f} f WHERE f.pk IN "
     "(SELECT p_key FROM gj.part WHERE p_size < 10)", 1),
]


@pytest.mark.parametrize("sql,depths", SEMI_ANTI)
def test_semi_anti(sql, depths):
    joined(sql, depths)


@pytest.mark.parametrize("sql,depths", STAR)
def test_star_arrow(sql, depths):
    joined(sql, depths)


# PostgreSQL's own joins cost more than anything: the engine's plan however small the input
NO_PG_JOINS = ("SET enable_hashjoin = off", "SET enable_mergejoin = off",
               "SET enable_nestloop = off")


SKEWED = [
    ("SELECT c.c_nation, count(*), sum(f.v) FROM {f} f, gj.customer c WHERE f.ck = c.c_key "
     "GROUP BY c.c_nation", 1),
    ("SELECT c.c_key, d.d_year, count(*), sum(f.amt) FROM {f} f, gj.customer c, gj.date1 d "
     "WHERE f.ck = c.c_key AND f.dk = d.d_datekey GROUP BY c.c_key, d.d_year", 2),
]


@pytest.mark.parametrize("sql,depths", SKEWED)
def test_star_skewed(sql, depths):
    """Half of the fact rows meet one customer row (a hot inner row and group)."""
    joined(sql, depths, fact="skew")


def test_keys_not_unique():
    """No unique key over the probed columns: the depth probes every match
    (row expansion, test_gpujoin_dup.py has the cases), here the inner
    tables of this file: one without any key, and a unique index of four
    columns of which the probe compares three (the fourth a join qual)."""
    joined("SELECT n.label, count(*) FROM {f} f, gj.nokey n WHERE f.q1 = n.k "
           "GROUP BY n.label", 1)
    joined("SELECT d.x, count(*) FROM {f} f JOIN gj.quad d ON f.q1 = d.a AND f.q2 = d.b "
           "AND f.ck = d.c AND f.v = d.e GROUP BY d.x", 1)


def test_timestamptz_composite_key():
    """A timestamptz key in a composite primary key: both columns are probed."""
    joined("SELECT d.x, count(*), sum(f.v) FROM {f} f JOIN gj.tzdim d "
           "ON f.k = d.k AND f.z = d.z GROUP BY d.x", 1, settings=HEAP, fact="tzfact")


def test_group_by_primary_key_and_dependent_columns():
    """GROUP BY a dimension's primary key and its other columns: PostgreSQL
    groups by the key alone, the others depend on it (and the same over a
    heap table's own primary key)."""
    joined("SELECT c.c_key, c.c_nation, c.c_region, count(*), sum(f.v) FROM {f} f "
           "JOIN gj.customer c ON f.ck = c.c_key GROUP BY c.c_key, c.c_nation, c.c_region", 1)
    joined("SELECT c.c_nation, count(*) FROM {f} f JOIN gj.customer c ON f.ck = c.c_key "
           "GROUP BY c.c_key HAVING max(f.v) > 0 AND c.c_nation <> 'NATION3'", 1)
    DB.same("SELECT c_nation, count(*), sum(c_score) FROM gj.customer GROUP BY c_key",
            NODE, settings=HEAP)


def test_empty_fact():
    joined("SELECT d.d_year, count(*) FROM {f} f, gj.date1 d WHERE f.dk = d.d_datekey "
           "GROUP BY d.d_year", 1, settings=NO_PG_JOINS, fact="empty")
    joined("SELECT count(*), sum(f.v) FROM {f} f, gj.date1 d WHERE f.dk = d.d_datekey",
           1, settings=NO_PG_JOINS, fact="empty")


def test_inner_table_over_the_limit_falls_back():
    """An inner table beyond pg_warp.gpujoin_inner_limit: PostgreSQL's plan
    runs (EXPLAIN ANALYZE says so), with PostgreSQL's answer; under the
    limit the engine joins it."""
    sql = ("SELECT b.b_key % 3, count(*), sum(f.v) FROM gj.fact f, gj.big b "
           "WHERE f.id = b.b_key AND b.b_label > 'x' GROUP BY 1")
    top = DB.falls_back(sql, NODE, settings=("SET pg_warp.gpujoin_inner_limit = '1MB'",))
    assert "pg_warp.gpujoin_inner_limit" in str(top), show(top)
    joined(sql, 1)


def test_inner_value_beyond_the_engine_falls_back():
    """An inner key the engine's 38 digits cannot hold: PostgreSQL's plan and answer."""
    top = DB.falls_back("SELECT h.h_name, count(*) FROM gj.fact f, gj.huge h "
                        "WHERE f.nk = h.h_key GROUP BY h.h_name", NODE)
    assert "does not hold exactly" in str(top), show(top)


def test_tables_dropped_when_the_node_ends():
    """A loop of star queries in one transaction (a plpgsql loop) holds one
    query's inner tables at a time in the service, not one set per query
    (the node drops its tables when it ends, not at the transaction's end)."""
    settings = tuple(ON) + NO_PG_JOINS + ("SET pg_warp.gpujoin_cache = off",)
    sql = "SELECT count(*) FROM gj.fact f JOIN gj.big b ON f.id = b.b_key"
    top = DB.engine_ran(sql, NODE, settings)
    line = find_nodes(top, NODE)[0]["Join Depth 1"]
    table = int(line.split("table ")[1].split(" kB")[0]) * 1024
    _, _, err = DB.psql("""
DO $$
DECLARE r bigint; m bigint; peak bigint := 0; base bigint;
BEGIN
  -- (the service may hold tables other tests had kept: count from what it holds now)
  SELECT memory_in_use INTO base FROM pgwarp.service_status();
  FOR i IN 1..30 LOOP
    SELECT count(*) INTO r FROM gj.fact f JOIN gj.big b ON f.id = b.b_key;
    SELECT memory_in_use INTO m FROM pgwarp.service_status();
    peak := greatest(peak, m - base);
  END LOOP;
  RAISE NOTICE 'peak %', peak;
END $$""", settings + ("SET client_min_messages = notice",))
    peak = int(err.split("peak ")[1].split()[0])
    assert table > 100 * 1024 and peak < 3 * table, (peak, table, err)


def test_error_is_postgres_own():
    """A division by zero in an aggregate over joined rows: PostgreSQL's error."""
    DB.same_error("SELECT c.c_nation, sum(f.v / (c.c_key - c.c_key)) FROM gj.fact f, "
                  "gj.customer c WHERE f.ck = c.c_key GROUP BY c.c_nation", NODE)


HEAP = ("SET pg_warp.enable_gpupreagg_heap = on",)


@pytest.mark.parametrize("sql,depths", STAR[:3])
def test_star_heap(sql, depths):
    joined(sql, depths, settings=HEAP, fact="hfact")


# a parallel plan however small the tables: Gather over the parallel GpuPreAgg
# (PostgreSQL's own parallel hash joins would cost less on tables this small)
PARALLEL = HEAP + NO_PG_JOINS + ("SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                   "SET min_parallel_table_scan_size = 0",
                   "SET max_parallel_workers_per_gather = 2",
                   "SET parallel_leader_participation = on")


def parallel_node(sql, settings):
    """the parallel GpuPreAgg of sql's plan, asserted to be one whose
    participants read the fact table's blocks"""
    top = DB.plan(sql.replace("{f}", "gj.hfact"), tuple(ON) + tuple(settings))
    nodes = [n for n in find_nodes(top, NODE) if n.get("Parallel Aware")]
    assert nodes, show(top)
    return nodes[0]


@pytest.mark.parametrize("sql,depths", STAR[:4] + SEMI_ANTI[1:2] + SEMI_ANTI[3:4])
@pytest.mark.parametrize("leader", ["on", "off"])
def test_star_heap_parallel(sql, depths, leader):
    """A parallel GpuPreAgg with join depths over a heap fact table: the
    leader builds the inner tables once, before the workers start, and every
    participant's part of the query's shared run probes them; with or
    without the leader as a participant."""
    settings = PARALLEL + ("SET parallel_leader_participation = " + leader,)
    parallel_node(sql, settings)
    joined(sql, depths, settings=settings, fact="hfact")


def test_parallel_inner_table_over_the_limit_falls_back():
    """The leader's build refused (over pg_warp.gpujoin_inner_limit): every
    participant runs PostgreSQL's parallel plan of the join instead, with
    PostgreSQL's answer, and EXPLAIN ANALYZE says why."""
    sql = ("SELECT f.q1, count(*), sum(f.v), max(b.b_key) FROM {f} f, gj.big b "
           "WHERE f.id = b.b_key AND b.b_label > 'x' GROUP BY 1")
    settings = PARALLEL + ("SET pg_warp.gpujoin_inner_limit = '1MB'",)
    # (a serial GpuPreAgg would read gj.big through a Gather of its own, and cost less)
    pg_psql("ALTER TABLE gj.big SET (parallel_workers = 0)")
    try:
        parallel_node(sql, settings)
        top = DB.falls_back(sql.replace("{f}", "gj.hfact"), NODE, settings=settings)
        assert "pg_warp.gpujoin_inner_limit" in str(top), show(top)
        joined(sql, 1, settings=PARALLEL, fact="hfact")
    finally:
        pg_psql("ALTER TABLE gj.big RESET (parallel_workers)")


def test_parallel_run_falls_back_midway():
    """One participant's run meets a value the engine does not hold (a sum
    beyond 38 digits in the rows it reads) while the others' parts are in
    the shared run: the last to leave drops the run's groups and runs
    PostgreSQL's plan of the whole join, so no row counts twice or not at all."""
    pg_psql("DROP TABLE IF EXISTS gj.hbig; CREATE TABLE gj.hbig AS SELECT f.*, "
            "CASE WHEN f.id BETWEEN 4000 AND 4003 THEN 9e37 ELSE f.id END::numeric(38, 0) AS big "
            "FROM gj.hfact f ORDER BY f.id; ANALYZE gj.hbig")
    sql = ("SELECT d.d_year, count(*), sum(f.big) FROM gj.hbig f, gj.date1 d "
           "WHERE f.dk = d.d_datekey GROUP BY d.d_year")
    top = DB.falls_back(sql, NODE, settings=PARALLEL)
    assert [n for n in find_nodes(top, NODE) if n.get("Parallel Aware")], show(top)
    pg_psql("DROP TABLE gj.hbig")


NOT_JOINED = [
    # a full join below another join (a full join at the top: test_gpujoin_outer.py)
    ("SELECT d.d_year, count(*) FROM gj.fact f FULL JOIN gj.customer c ON f.ck = c.c_key "
     "JOIN gj.date1 d ON coalesce(f.dk, '1992-01-01') = d.d_datekey GROUP BY d.d_year",
     "a right or full join below another join"),
    # a left join with a clause beyond its keys
    ("SELECT c.c_nation, count(*) FROM gj.fact f LEFT JOIN gj.customer c "
     "ON f.ck = c.c_key AND c.c_score > f.v GROUP BY c.c_nation", "clauses beyond equal keys"),
    # a semi join with a clause beyond its keys
    ("SELECT count(*) FROM gj.fact f WHERE EXISTS (SELECT 1 FROM gj.nokey n "
     "WHERE n.k = f.q1 AND n.label > f.tk)", "clauses beyond equal keys"),
    # NOT IN (subquery) over the fact table: the subquery is named, not an outer query
    ("SELECT c.c_nation, count(*) FROM gj.fact f JOIN gj.customer c ON f.ck = c.c_key "
     "WHERE f.q1 NOT IN (SELECT k FROM gj.nokey) GROUP BY c.c_nation",
     '"fact" is filtered by a subquery'),
    # a join by an inequality only
    ("SELECT count(*) FROM gj.fact f, gj.customer c WHERE f.ck < c.c_key",
     "no equality"),
]


@pytest.mark.parametrize("sql,why", NOT_JOINED)
def test_joins_left_to_postgres(sql, why):
    """PostgreSQL's answer and plan, and EXPLAIN (VERBOSE) says why."""
    assert DB.result(sql, ON) == DB.result(sql, OFF)
    top = DB.plan(sql, ON)
    assert not find_nodes(top, NODE), show(top)
    out = DB.sql("EXPLAIN (VERBOSE) " + sql, ON)
    assert why in out, out


def test_setting_turns_it_off():
    sql = ("SELECT d.d_year, count(*) FROM gj.fact f, gj.date1 d WHERE f.dk = d.d_datekey "
           "GROUP BY d.d_year")
    top = DB.plan(sql, tuple(ON) + ("SET pg_warp.enable_gpujoin = off",))
    assert not find_nodes(top, NODE), show(top)
