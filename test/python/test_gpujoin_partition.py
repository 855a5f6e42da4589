"""Partition-wise GpuPreAgg (src/engine/gpu_join_part.c): the grouping of a
partitioned fact table, alone or joined with dimension tables that are not
partitioned, runs as Finalize Aggregate -> Append -> a GpuPreAgg per
partition, each partition's node probing the same inner tables, which the
query builds and loads once (the first node to run builds them; EXPLAIN
ANALYZE says "shared with" for the others).

The fact tables: range partitioned over Arrow files, over heap tables, and
mixed (Arrow and heap partitions, an empty one, a default one), and list
partitioned with a NULL-key partition and a default partition; the fact
rows have NULL keys and keys that meet no dimension row.  Every query runs
with pg_warp on and off (pg_sql.DB.same_answer: the rows or the error must be
equal); with pg_warp on each partition that executed must have been served
by the engine, and the number of partition nodes must be that of the
partitions PostgreSQL did not prune.
"""
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
D = decimal.Decimal
HEAP = ("SET pg_warp.enable_gpupreagg_heap = on",)
N = 1200        # rows per partition file
COLUMNS = "id int8, ck int4, sk int2, g int4, v int4, amt numeric(12,2), tk text"


def part_rows(lo, n, seed):
    """n fact rows with ids lo .. lo + n - 1, NULL keys and keys without a match."""
    rnd = random.Random(seed)

    def pick(vals, null_frac=0.06):
        return [None if rnd.random() < null_frac else rnd.choice(vals) for _ in range(n)]

    return pa.table({
        "id": pa.array(range(lo, lo + n), pa.int64()),
        "ck": pa.array(pick(list(range(0, 45))), pa.int32()),     # 41..44 meet no customer
        "sk": pa.array(pick(list(range(1, 13))), pa.int16()),     # 11, 12 meet no supplier
        "g": pa.array(pick([1, 2, 3, 4]), pa.int32()),
        "v": pa.array(pick([0, 1, -1, 7, 100, 2**31 - 1, -2**31]), pa.int32()),
        "amt": pa.array(pick([D("10.00"), D("0.01"), D("-5.50"), D("123456.78")]),
                        pa.decimal128(12, 2)),
        "tk": pa.array(pick(["AIR", "MAIL", "SHIP", "é", "", "nope"]), pa.string()),
    })


DIMS = """
CREATE TABLE gp.customer (c_key int4 PRIMARY KEY, c_nation text, c_region text);
INSERT INTO gp.customer SELECT i, 'NATION' || (i % 7),
       CASE WHEN i % 11 = 0 THEN NULL ELSE 'REGION' || (i % 3) END
  FROM generate_series(1, 40) i;
CREATE TABLE gp.supplier (s_key int8 PRIMARY KEY, s_city text, s_nation int4);
INSERT INTO gp.supplier SELECT i, 'CITY' || (i % 4), 1 + i % 3 FROM generate_series(1, 10) i;
CREATE TABLE gp.nation (n_key int4 PRIMARY KEY, n_name text);
INSERT INTO gp.nation VALUES (1, 'ONE'), (2, 'TWO'), (3, NULL);
CREATE TABLE gp.mode (m_name text PRIMARY KEY, m_cost int4);
INSERT INTO gp.mode VALUES ('AIR', 10), ('MAIL', 3), ('SHIP', NULL), ('é', 99);
CREATE TABLE gp.nokey (k int4, label text);
INSERT INTO gp.nokey SELECT i % 3, 'L' || i FROM generate_series(1, 9) i;
CREATE TABLE gp.huge (h_key numeric(45,0) PRIMARY KEY, h_name text);
INSERT INTO gp.huge VALUES (2, 'two'), (10::numeric ^ 40, 'beyond 38 digits');
ANALYZE gp.customer, gp.supplier, gp.nation, gp.mode, gp.nokey, gp.huge;
"""


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_gp.")
    os.chmod(d, 0o755)
    for i in range(3):
        write(os.path.join(d, "a%d.arrow" % i), part_rows(i * N, N, 10 + i), 500)
    write(os.path.join(d, "m0.arrow"), part_rows(0, N, 20), 500)
    write(os.path.join(d, "empty.arrow"), part_rows(0, 0, 21), 500)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS gp CASCADE; CREATE SCHEMA gp")
    pg_psql(DIMS)
    ddl = []
    # range partitioned over Arrow files
    ddl.append("CREATE TABLE gp.arange (%s) PARTITION BY RANGE (id)" % COLUMNS)
    for i in range(3):
        ddl.append("CREATE FOREIGN TABLE gp.arange%d PARTITION OF gp.arange "
                   "FOR VALUES FROM (%d) TO (%d) SERVER arrow_fdw OPTIONS (file '%s/a%d.arrow')"
                   % (i, i * N, (i + 1) * N, d, i))
    # the same rows, range partitioned over heap tables
    ddl.append("CREATE TABLE gp.hrange (%s) PARTITION BY RANGE (id)" % COLUMNS)
    for i in range(3):
        ddl.append("CREATE TABLE gp.hrange%d PARTITION OF gp.hrange FOR VALUES FROM (%d) TO (%d)"
                   % (i, i * N, (i + 1) * N))
    ddl.append("INSERT INTO gp.hrange SELECT * FROM gp.arange")
    # mixed: an Arrow partition, a heap one, an empty Arrow one, an empty heap one, a default
    ddl.append("CREATE TABLE gp.mixed (%s) PARTITION BY RANGE (id)" % COLUMNS)
    ddl.append("CREATE FOREIGN TABLE gp.mixed_a PARTITION OF gp.mixed FOR VALUES FROM (0) TO "
               "(%d) SERVER arrow_fdw OPTIONS (file '%s/m0.arrow')" % (N, d))
    ddl.append("CREATE TABLE gp.mixed_h PARTITION OF gp.mixed FOR VALUES FROM (%d) TO (%d)"
               % (N, 3 * N))
    ddl.append("CREATE FOREIGN TABLE gp.mixed_e PARTITION OF gp.mixed FOR VALUES FROM (%d) TO "
               "(%d) SERVER arrow_fdw OPTIONS (file '%s/empty.arrow')" % (3 * N, 4 * N, d))
    ddl.append("CREATE TABLE gp.mixed_eh PARTITION OF gp.mixed FOR VALUES FROM (%d) TO (%d)"
               % (4 * N, 5 * N))
    ddl.append("CREATE TABLE gp.mixed_d PARTITION OF gp.mixed DEFAULT")
    ddl.append("INSERT INTO gp.mixed SELECT id + %d, ck, sk, g, v, amt, tk FROM gp.arange "
               "WHERE id < %d" % (N, 2 * N))
    ddl.append("INSERT INTO gp.mixed SELECT id + %d, ck, sk, g, v, amt, tk FROM gp.arange "
               "WHERE id < 300" % (10 * N))
    # list partitioned by g (NULL keys in a partition of their own, a default one)
    ddl.append("CREATE TABLE gp.glist (%s) PARTITION BY LIST (g)" % COLUMNS)
    ddl.append("CREATE TABLE gp.glist12 PARTITION OF gp.glist FOR VALUES IN (1, 2)")
    ddl.append("CREATE TABLE gp.glist3 PARTITION OF gp.glist FOR VALUES IN (3)")
    ddl.append("CREATE TABLE gp.glistn PARTITION OF gp.glist FOR VALUES IN (NULL)")
    ddl.append("CREATE TABLE gp.glistd PARTITION OF gp.glist DEFAULT")
    ddl.append("INSERT INTO gp.glist SELECT * FROM gp.hrange")
    ddl.append("ANALYZE gp.arange, gp.hrange, gp.mixed, gp.glist")
    pg_psql(";\n".join(ddl))
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gp CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def plan_types(top, node_type, key=None, value=None):
    """The plan nodes under top (inclusive) of node_type (with key = value)."""
    found, todo = [], [top]
    while todo:
        n = todo.pop()
        todo.extend(n.get("Plans", []))
        if n.get("Node Type") == node_type and (key is None or n.get(key) == value):
            found.append(n)
    return found


def partitioned(sql, parts, depths=0, fact="arange", settings=()):
    """sql ({f}: the fact table) answers as PostgreSQL does; with pg_warp on
    its plan has `parts` GpuPreAgg nodes (one per partition not pruned) under
    an Append, each of which the engine served, joining `depths` inner
    relations; each depth's inner table built by one node and shared by the
    others.  Returns the plan (JSON)."""
    sql = sql.replace("{f}", "gp." + fact)
    settings = tuple(settings) + HEAP
    DB.same_answer(sql, NODE, settings=settings)
    top = DB.engine_ran(sql, NODE, tuple(ON) + settings)
    nodes = find_nodes(top, NODE)
    assert len(nodes) == parts, (sql, show(top))
    # (PostgreSQL drops an Append of one node)
    assert plan_types(top, "Append") or parts == 1, show(top)
    assert plan_types(top, "Aggregate", "Partial Mode", "Finalize"), show(top)
    for n in nodes:
        assert n.get("Aggregate States") == "partial", show(top)
    for k in range(1, depths + 1):
        lines = [n["Join Depth %d" % k] for n in nodes if n.get("Actual Loops", 0) > 0]
        built = [x for x in lines if "inner rows" in x]
        shared = [x for x in lines if "shared with" in x]
        assert len(built) == 1 and len(shared) == len(lines) - 1, (sql, k, lines)
    for n in nodes:
        assert "Join Depth %d" % (depths + 1) not in n, show(top)
    return top


NO_JOIN = [
    "SELECT g, count(*), sum(v), min(amt), max(tk), avg(v) FROM {f} GROUP BY g",
    "SELECT count(*), sum(v::int8), sum(amt) FROM {f}",
    "SELECT g, sk, count(v) FROM {f} WHERE v > 0 GROUP BY g, sk HAVING count(*) > 3",
]


@pytest.mark.parametrize("fact", ["arange", "hrange"])
@pytest.mark.parametrize("sql", NO_JOIN)
def test_no_join(sql, fact):
    """A partitioned table alone: a GpuPreAgg per partition, no join depth."""
    partitioned(sql, 3, fact=fact)


STAR = [
    ("SELECT c.c_nation, count(*), sum(f.v), min(f.amt) FROM {f} f "
     "JOIN gp.customer c ON f.ck = c.c_key GROUP BY c.c_nation", 1),
    # two depths, an inner filter, a text payload key
    ("SELECT c.c_region, s.s_city, count(*), sum(f.amt) FROM {f} f, gp.customer c, "
     "gp.supplier s WHERE f.ck = c.c_key AND f.sk = s.s_key AND s.s_city <> 'CITY1' "
     "GROUP BY c.c_region, s.s_city", 2),
    # three depths, a snowflake (nation keyed by the supplier's payload), the outer filtered
    ("SELECT n.n_name, m.m_cost, count(*), sum(f.v) FROM {f} f, gp.supplier s, gp.nation n, "
     "gp.mode m WHERE f.sk = s.s_key AND s.s_nation = n.n_key AND f.tk = m.m_name "
     "AND f.g > 1 GROUP BY n.n_name, m.m_cost", 3),
    # no GROUP BY
    ("SELECT count(*), sum(f.v), max(c.c_nation) FROM {f} f, gp.customer c "
     "WHERE f.ck = c.c_key", 1),
]


@pytest.mark.parametrize("fact", ["arange", "hrange"])
@pytest.mark.parametrize("sql,depths", STAR)
def test_star(sql, depths, fact):
    """The partitions join the same inner tables, built once for the query."""
    partitioned(sql, 3, depths, fact=fact)


SEMI_ANTI = [
    ("SELECT f.g, count(*), sum(f.v) FROM {f} f WHERE EXISTS "
     "(SELECT 1 FROM gp.nokey n WHERE n.k = f.g) GROUP BY f.g", 1),
    ("SELECT f.g, count(*) FROM {f} f WHERE NOT EXISTS "
     "(SELECT 1 FROM gp.customer c WHERE c.c_key = f.ck AND c.c_region = 'REGION2') "
     "GROUP BY f.g", 1),
    ("SELECT c.c_nation, count(*), sum(f.v) FROM {f} f LEFT JOIN gp.customer c "
     "ON f.ck = c.c_key GROUP BY c.c_nation", 1),
    ("SELECT s.s_city, count(*) FROM {f} f JOIN gp.supplier s ON f.sk = s.s_key WHERE "
     "NOT EXISTS (SELECT 1 FROM gp.mode m WHERE m.m_name = f.tk) GROUP BY s.s_city", 2),
]


@pytest.mark.parametrize("sql,depths", SEMI_ANTI)
def test_semi_anti_left(sql, depths):
    partitioned(sql, 3, depths)


def test_mixed_empty_and_default_partitions():
    """Arrow and heap partitions in one table, an empty Arrow file, an empty
    heap partition, rows in the default partition."""
    partitioned("SELECT c.c_region, count(*), sum(f.v) FROM {f} f JOIN gp.customer c "
                "ON f.ck = c.c_key GROUP BY c.c_region", 5, 1, fact="mixed")
    partitioned("SELECT g, count(*), sum(amt) FROM {f} GROUP BY g", 5, fact="mixed")


def test_pruned_partitions_are_not_scanned():
    """Partitions PostgreSQL prunes have no node; the others' answer is PostgreSQL's."""
    partitioned("SELECT c.c_nation, count(*) FROM {f} f JOIN gp.customer c ON f.ck = c.c_key "
                "WHERE f.id >= %d GROUP BY c.c_nation" % (2 * N), 1, 1)
    partitioned("SELECT count(*), sum(f.v) FROM {f} f JOIN gp.supplier s ON f.sk = s.s_key "
                "WHERE f.id < %d" % (2 * N - 5), 2, 1, fact="hrange")


def test_list_partitions_null_keys_default():
    """List partitions by the group key: NULL keys in their own partition."""
    partitioned("SELECT f.g, c.c_region, count(*), sum(f.v) FROM {f} f JOIN gp.customer c "
                "ON f.ck = c.c_key GROUP BY f.g, c.c_region", 4, 1, fact="glist")
    partitioned("SELECT count(*), sum(v) FROM {f} WHERE g IS NULL", 1, fact="glist")


def test_inner_table_built_once():
    """EXPLAIN ANALYZE: the first partition's node builds each depth's
    table, read once from its inner plan; the others' inner plans never run."""
    top = partitioned("SELECT c.c_region, s.s_city, count(*) FROM {f} f, gp.customer c, "
                      "gp.supplier s WHERE f.ck = c.c_key AND f.sk = s.s_key "
                      "GROUP BY 1, 2", 3, 2)
    scans = [n for n in plan_types(top, "Seq Scan")
             if n.get("Relation Name") in ("customer", "supplier")]
    ran = [n for n in scans if n.get("Actual Loops", 0) > 0]
    # each dimension read once (by the building node's inner plan)
    assert sorted(n["Relation Name"] for n in ran) == ["customer", "supplier"], show(top)


FALLBACK = [
    ("SELECT h.h_name, count(*), sum(f.v) FROM {f} f JOIN gp.huge h "
     "ON f.g = h.h_key GROUP BY h.h_name"),
    ("SELECT h.h_name, f.g, count(*), sum(f.v) FROM {f} f LEFT JOIN gp.huge h "
     "ON f.g = h.h_key GROUP BY h.h_name, f.g"),
    ("SELECT f.g, count(*), sum(f.amt) FROM {f} f WHERE EXISTS "
     "(SELECT 1 FROM gp.huge h WHERE h.h_key = f.g) GROUP BY f.g"),
    ("SELECT f.g, count(*), sum(f.amt) FROM {f} f WHERE NOT EXISTS "
     "(SELECT 1 FROM gp.huge h WHERE h.h_key = f.g) GROUP BY f.g"),
    # the second depth's table cannot be built; the first one's was
    ("SELECT c.c_region, h.h_name, count(*) FROM {f} f JOIN gp.customer c ON f.ck = c.c_key "
     "JOIN gp.huge h ON f.g = h.h_key GROUP BY 1, 2"),
]


@pytest.mark.parametrize("fact", ["hrange", "arange"])
@pytest.mark.parametrize("sql", FALLBACK)
def test_fallback_is_per_partition_and_postgres_answer(sql, fact):
    """An inner key beyond the engine's numeric range: every partition's
    node runs PostgreSQL's partial aggregation of its own rows (hash joins
    of the partition with the inner relations: inner, left, semi, anti), the
    answer is PostgreSQL's; the table is tried once, not once per partition."""
    sql = sql.replace("{f}", "gp." + fact)
    top = DB.falls_back(sql, NODE, settings=HEAP)
    nodes = find_nodes(top, NODE)
    assert len(nodes) == 3, show(top)
    assert all(n.get("Engine") == "PostgreSQL (fallback)" for n in nodes), show(top)
    assert "does not hold exactly" in str(top), show(top)
    huge = [n for n in plan_types(top, "Seq Scan")
            if n.get("Relation Name") == "huge" and n.get("Actual Loops", 0) > 0]
    # read by the one node that tried to build it, then by each partition's hash join
    assert len(huge) == 1 + 3, show(top)


def test_error_is_postgres_own():
    DB.same_error("SELECT c.c_nation, sum(f.v / (c.c_key - c.c_key)) FROM gp.arange f, "
                  "gp.customer c WHERE f.ck = c.c_key GROUP BY c.c_nation", NODE,
                  settings=HEAP)


def test_setting_off():
    """pg_warp.enable_partitionwise_gpujoin = off: no GpuPreAgg over a
    partitioned table, and EXPLAIN VERBOSE says why."""
    sql = "SELECT g, count(*) FROM gp.arange GROUP BY g"
    off = ("SET pg_warp.enable_partitionwise_gpujoin = off",)
    top = DB.plan(sql, tuple(ON) + off + HEAP)
    assert not find_nodes(top, NODE), show(top)
    out = DB.sql("EXPLAIN (VERBOSE, COSTS OFF) " + sql, tuple(ON) + off + HEAP)
    assert "enable_partitionwise_gpujoin is off" in out, out
    assert DB.result(sql, tuple(ON) + off + HEAP) == DB.result(sql, OFF), sql


def test_partition_of_another_wrapper_or_heap_off_runs_in_postgres():
    """A heap partition where pg_warp.enable_gpupreagg_heap is off: that
    partition runs PostgreSQL's partial aggregation in the Append, the Arrow
    one the engine's."""
    sql = "SELECT g, count(*), sum(v) FROM gp.mixed GROUP BY g"
    settings = ("SET pg_warp.enable_gpupreagg_heap = off",)
    on = tuple(ON) + settings
    DB.same_answer(sql, NODE, settings=settings)
    top = DB.engine_ran(sql, NODE, on)
    assert len(find_nodes(top, NODE)) == 2, show(top)      # mixed_a, mixed_e
    assert plan_types(top, "Aggregate", "Partial Mode", "Partial"), show(top)


def test_partition_columns_in_another_order_and_subpartitions():
    """A partition attached with its columns in another order (and a dropped
    one): expressions are translated to its columns; a partition that is
    partitioned itself runs PostgreSQL's partial aggregation in the Append.
    GROUP BY an expression of the fact table and a dimension's primary key
    (its other columns depend on it)."""
    pg_psql("""
        CREATE TABLE gp.odd (%s) PARTITION BY RANGE (id);
        CREATE TABLE gp.odd0 PARTITION OF gp.odd FOR VALUES FROM (0) TO (%d);
        CREATE TABLE gp.odd1 (junk int, tk text, v int4, g int4, amt numeric(12,2),
                              sk int2, ck int4, id int8);
        ALTER TABLE gp.odd1 DROP COLUMN junk;
        ALTER TABLE gp.odd ATTACH PARTITION gp.odd1 FOR VALUES FROM (%d) TO (%d);
        CREATE TABLE gp.odd2 PARTITION OF gp.odd FOR VALUES FROM (%d) TO (%d)
            PARTITION BY LIST (g);
        CREATE TABLE gp.odd2a PARTITION OF gp.odd2 FOR VALUES IN (1, 2);
        CREATE TABLE gp.odd2b PARTITION OF gp.odd2 DEFAULT;
        INSERT INTO gp.odd SELECT * FROM gp.hrange;
        ANALYZE gp.odd;
    """ % (COLUMNS, N, N, 2 * N, 2 * N, 3 * N))
    top = partitioned("SELECT c.c_key, c.c_nation, f.g %% 2, count(*), sum(f.amt) "
                      "FROM {f} f JOIN gp.customer c ON f.ck = c.c_key "
                      "GROUP BY c.c_key, f.g %% 2" % (), 2, 1, fact="odd")
    assert plan_types(top, "Aggregate", "Partial Mode", "Partial"), show(top)
    partitioned("SELECT tk, count(*), sum(v), max(amt) FROM {f} WHERE v <> 0 GROUP BY tk",
                2, fact="odd")


def depth_lines(sql):
    """sql answers as PostgreSQL does and the engine ran it; the first join
    depth's line of each GpuPreAgg node (EXPLAIN ANALYZE)."""
    DB.same_answer(sql, NODE, settings=HEAP)
    top = DB.engine_ran(sql, NODE, tuple(ON) + HEAP)
    return [x["Join Depth 1"] for x in find_nodes(top, NODE)]


def test_second_grouping_of_the_query_shares_the_inner_table():
    """Two groupings of one query (UNION ALL) joining one dimension the same
    way: one inner table for both, whether they are partition-wise (six
    partition nodes) or one node each (two partitions read directly); not
    with another filter on the dimension, nor with a volatile one."""
    union = ("SELECT c.c_region, count(*), sum(f.v) FROM gp.%s f JOIN gp.customer c "
             "ON f.ck = c.c_key %s GROUP BY 1 UNION ALL SELECT c.c_region, count(*), sum(f.v) "
             "FROM gp.%s f JOIN gp.customer c ON f.ck = c.c_key %s GROUP BY 1")
    volatile = "WHERE c.c_nation || timeofday() <> ''"
    for facts, wheres, n, built in [
            (("arange", "hrange"), ("", ""), 6, 1),
            (("arange0", "hrange1"), ("", ""), 2, 1),
            (("arange0", "arange1"), ("", "WHERE c.c_nation <> 'NATION1'"), 2, 2),
            (("arange0", "arange1"), (volatile, volatile), 2, 2)]:
        lines = depth_lines(union % (facts[0], wheres[0], facts[1], wheres[1]))
        assert len(lines) == n, lines
        assert len([x for x in lines if "inner rows" in x]) == built, lines
        assert len([x for x in lines if "shared with" in x]) == n - built, lines


def test_partitioned_dimension():
    """A partitioned dimension: PostgreSQL keeps no unique index of a
    partitioned table for the planner to prove its keys unique with, so a
    depth over it probes every match (the fact table's rows repeat for
    nothing: the keys are unique in fact), or a partition-wise plan over it
    probes the fact table's rows for each of its rows; either way the
    answer is PostgreSQL's."""
    pg_psql("CREATE TABLE gp.pdim (k int4 PRIMARY KEY, name text) PARTITION BY RANGE (k); "
            "CREATE TABLE gp.pdim1 PARTITION OF gp.pdim FOR VALUES FROM (0) TO (20); "
            "CREATE TABLE gp.pdim2 PARTITION OF gp.pdim FOR VALUES FROM (20) TO (100); "
            "INSERT INTO gp.pdim SELECT i, 'P' || (i % 4) FROM generate_series(1, 40) i; "
            "ANALYZE gp.pdim")
    sql = "SELECT d.name, count(*) FROM gp.arange0 f JOIN gp.pdim d ON f.ck = d.k GROUP BY 1"
    out = DB.sql("EXPLAIN (VERBOSE, COSTS OFF) " + sql, tuple(ON) + HEAP)
    assert "every match" in out, out
    DB.same(sql, NODE, settings=HEAP)


def test_kept_inner_table_is_the_one_with_the_payload_read():
    """An inner table the service keeps for later queries (pg_warp.gpujoin_cache)
    is found only by a depth that reads the same columns: a query that groups
    by another column of the same dimension gets its own table (the key names
    the payload), over partitions and over one table."""
    pg_psql("CREATE TABLE gp.cdim (k int4 PRIMARY KEY, a text, b text); "
            "INSERT INTO gp.cdim SELECT i, 'A' || (i % 3), 'B' || (i % 5) "
            "FROM generate_series(0, 50) i")
    pg_psql("VACUUM ANALYZE gp.cdim")
    for fact, parts in (("arange", 3), ("arange0", 1)):
        for col in ("a", "b", "a", "b"):
            sql = ("SELECT d.%s, count(*), sum(f.v) FROM gp.%s f JOIN gp.cdim d ON f.ck = d.k "
                   "GROUP BY 1" % (col, fact))
            DB.same(sql, NODE, settings=HEAP)
            assert len(find_nodes(DB.engine_ran(sql, NODE, tuple(ON) + HEAP), NODE)) == parts
