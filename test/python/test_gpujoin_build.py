"""GpuJoin's parallel build of an inner table (src/engine/gpu_join_build.c):
the participants of an inner plan's Gather convert the rows of their share
of the scan and build a share of the table, which the leader merges.

Every query runs with pg_warp on and off, and on with the parallel build off
(pg_warp.gpujoin_parallel_build): the rows, or the error, must be equal. The
plan must have the GpuJoinBuild node under the Gather of the inner plan (or
of the group whose Parallel Append runs several depths' scans at once,
checked against pg_warp.gpujoin_concurrent_build off), the Gather must have
launched workers, and the engine must have served the
GpuPreAgg with the inner rows PostgreSQL counts.  The dimensions hold NULL
keys and payloads, duplicate keys, texts, numerics, floats with NaN and
infinities; a value the engine cannot hold in one participant's share, a
table past its limit only once the shares are merged, and an error raised
in a worker's scan are each tried.
"""
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile

import pyarrow as pa
import pytest

from engine_edge import picker, write
from pg_sql import DB, OFF, ON, assert_rows_equal, find_nodes, show
from pg_sql import psql as pg_psql

NODE = "GpuPreAgg"
BUILD = "GpuJoinBuild"
N = 20000

# pg_warp on, PostgreSQL's joins out of its way (not PostgreSQL's: its answers
# come from its own plans)
ON_J = tuple(ON) + ("SET enable_hashjoin = off", "SET enable_mergejoin = off",
                    "SET enable_nestloop = off")

# parallel inner scans however small the tables; no table kept between queries
# (a kept table is found, not built); the Arrow fact table the outer side
# (not a larger heap dimension)
SETTINGS = ("SET pg_warp.enable_gpupreagg_heap = off", "SET parallel_setup_cost = 0",
            "SET parallel_tuple_cost = 0", "SET min_parallel_table_scan_size = 0",
            "SET max_parallel_workers_per_gather = 3", "SET pg_warp.gpujoin_cache = off")
SERIAL_BUILD = SETTINGS + ("SET pg_warp.gpujoin_parallel_build = off",)

DIMS = """
CREATE TABLE gjb.dim (d_key int8 PRIMARY KEY, d_text text, d_num numeric(12,3), d_grp int4,
                      d_f float8, d_flag bool);
INSERT INTO gjb.dim SELECT i, CASE WHEN i % 7 = 0 THEN NULL WHEN i % 5 = 0 THEN ''
       ELSE 'é' || (i % 97) END, CASE WHEN i % 11 = 0 THEN NULL ELSE i * 1.125 END, i % 13,
       CASE i % 9 WHEN 0 THEN 'NaN'::float8 WHEN 1 THEN '-Infinity' WHEN 2 THEN '-0'
       ELSE i * 0.5 END, CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 = 0 END
  FROM generate_series(1, 40000) i;
CREATE TABLE gjb.multi (m_key int4, m_label text);
INSERT INTO gjb.multi SELECT i % 500, 'L' || i FROM generate_series(1, 3000) i;
INSERT INTO gjb.multi VALUES (NULL, 'null key');
CREATE TABLE gjb.tdim (t_key text PRIMARY KEY, t_val int4);
INSERT INTO gjb.tdim SELECT 'k' || i, i FROM generate_series(0, 2999) i;
CREATE TABLE gjb.huge (h_key int8, h_num numeric(45,0));
INSERT INTO gjb.huge SELECT i, CASE WHEN i = 1777 THEN 10::numeric ^ 40 ELSE i END
  FROM generate_series(1, 4000) i;
CREATE TABLE gjb.wide (w_key int8 PRIMARY KEY, w_label text);
INSERT INTO gjb.wide SELECT i, repeat('w', 40) || i FROM generate_series(0, 99999) i;
ANALYZE gjb.dim, gjb.multi, gjb.tdim, gjb.huge, gjb.wide;
"""


def fact_table(n, seed):
    pick = picker(seed, n)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        # 0 and 40001.. match no dimension row
        "k": pa.array(pick(list(range(0, 40100))), pa.int64()),
        "mk": pa.array(pick(list(range(0, 520))), pa.int32()),
        "tk": pa.array(pick(["k%d" % i for i in range(0, 3100, 7)] + ["", "é"]), pa.string()),
        "g": pa.array(pick(list(range(0, 6))), pa.int32()),
        "v": pa.array(pick([0, 1, -1, 7, 100, 2**31 - 1, -2**31]), pa.int32()),
    })


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_gjb.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "fact.arrow"), fact_table(N, 11), 2000)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS gjb CASCADE; CREATE SCHEMA gjb")
    pg_psql(DIMS)
    pg_psql("CREATE FOREIGN TABLE gjb.fact (id int8, k int8, mk int4, tk text, g int4, v int4) "
            "SERVER arrow_fdw OPTIONS (file '%s/fact.arrow')" % d)
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gjb CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def builds(top):
    """the GpuJoinBuild nodes of plan top, each with its Gather: the node is
    asserted to be right under a Gather, or under the Parallel Append of a
    group's Gather (several depths' scans at once)"""
    found = []

    def walk(n, parents):
        if n.get("Custom Plan Provider") == BUILD:
            parent = parents[-1] if parents else None
            if parent is not None and parent["Node Type"] == "Append":
                assert parent.get("Parallel Aware") and len(parents) >= 2, show(top)
                parent = parents[-2]
            assert parent is not None and parent["Node Type"] == "Gather", show(top)
            found.append((parent, n))
        for c in n.get("Plans", []):
            walk(c, parents + [n])
    walk(top, [])
    return found


def built_in_parallel(sql, settings=SETTINGS, depth_rows=None):
    """sql answers as PostgreSQL does, and as with the serial build; its
    GpuPreAgg ran in the engine with its inner tables built by GpuJoinBuild
    nodes whose Gathers launched workers; depth_rows: the inner rows
    EXPLAIN ANALYZE must give each depth"""
    DB.same_answer(sql, NODE, settings=settings, on=ON_J, rel_tol=1e-9)
    serial = DB.result(sql, ON_J + SERIAL_BUILD)
    parallel = DB.result(sql, ON_J + tuple(settings))
    assert parallel[0] == serial[0], (sql, parallel, serial)
    if serial[0] == "ok":
        assert_rows_equal(sql, parallel[1], serial[1], rel_tol=1e-9)
    else:
        assert parallel == serial, sql
    assert not builds(DB.plan(sql, ON_J + SERIAL_BUILD)), sql
    if serial[0] == "error":
        return None
    top = DB.engine_ran(sql, NODE, ON_J + tuple(settings))
    found = builds(top)
    assert found, show(top)
    for gather, node in found:
        assert gather["Workers Launched"] >= 1, show(top)
        assert node["Actual Rows"] == 0, show(top)
    pre = find_nodes(top, NODE)[0]
    for d, rows in enumerate(depth_rows or [], 1):
        assert "inner rows %d," % rows in pre["Join Depth %d" % d], show(top)
    return top


def count(sql):
    return int(DB.sql(sql, OFF).strip())


def test_unique_key_payloads():
    """A unique int8 key with text, numeric, float and bool payloads, some
    NULL, over a filter on the dimension."""
    sql = ("SELECT f.g % 2, d.d_flag, d.d_text, count(*), sum(f.v), sum(d.d_num), "
           "min(d.d_f), max(d.d_f), count(d.d_f) "
           "FROM gjb.fact f, gjb.dim d WHERE f.k = d.d_key AND d.d_grp <> 3 "
           "GROUP BY f.g % 2, d.d_flag, d.d_text")
    built_in_parallel(sql, depth_rows=[count("SELECT count(*) FROM gjb.dim WHERE d_grp <> 3")])


def test_duplicate_keys_and_null_key():
    """Keys that repeat (a probe of every match) and a NULL inner key."""
    sql = ("SELECT f.g, count(*), sum(f.v), min(m.m_label), max(m.m_label) "
           "FROM gjb.fact f, gjb.multi m WHERE f.mk = m.m_key GROUP BY f.g")
    built_in_parallel(sql, depth_rows=[3001])


def test_text_key():
    sql = ("SELECT f.g, count(*), sum(t.t_val) FROM gjb.fact f, gjb.tdim t "
           "WHERE f.tk = t.t_key GROUP BY f.g")
    built_in_parallel(sql, depth_rows=[3000])


def test_two_depths_left_semi_anti():
    """Two depths of one query, each its own parallel build; then a left
    join, a semi join and an anti join."""
    two = ("SELECT d.d_grp, count(*), max(t.t_val) FROM gjb.fact f, gjb.dim d, gjb.tdim t "
           "WHERE f.k = d.d_key AND f.tk = t.t_key GROUP BY d.d_grp")
    top = built_in_parallel(two)
    assert len(builds(top)) == 2, show(top)
    for sql in ("SELECT f.g, count(*), count(d.d_text), sum(d.d_num) FROM gjb.fact f "
                "LEFT JOIN gjb.dim d ON f.k = d.d_key GROUP BY f.g",
                "SELECT f.g, count(*) FROM gjb.fact f WHERE EXISTS (SELECT 1 FROM gjb.dim d "
                "WHERE d.d_key = f.k AND d.d_grp = 5) GROUP BY f.g",
                "SELECT f.g, count(*) FROM gjb.fact f WHERE NOT EXISTS (SELECT 1 FROM gjb.dim d "
                "WHERE d.d_key = f.k AND d.d_grp = 5) GROUP BY f.g"):
        built_in_parallel(sql)


def test_no_worker_launched():
    """No worker to be had (max_parallel_workers = 0): the leader alone
    runs the GpuJoinBuild node and builds the whole table."""
    sql = ("SELECT f.g, count(*), sum(d.d_num) FROM gjb.fact f, gjb.dim d "
           "WHERE f.k = d.d_key GROUP BY f.g")
    settings = SETTINGS + ("SET max_parallel_workers = 0",)
    DB.same(sql, NODE, settings=settings, on=ON_J)
    top = DB.engine_ran(sql, NODE, ON_J + settings)
    found = builds(top)
    assert found and found[0][0]["Workers Launched"] == 0, show(top)
    assert "inner rows 40000," in find_nodes(top, NODE)[0]["Join Depth 1"], show(top)


def test_value_the_engine_cannot_hold():
    """One row of one participant's share holds a numeric beyond 38 digits:
    the table is refused, the join stays with PostgreSQL (same answer), and
    EXPLAIN ANALYZE says why."""
    sql = ("SELECT f.g, count(*), count(h.h_num) FROM gjb.fact f, gjb.huge h "
           "WHERE f.k = h.h_key GROUP BY f.g")
    top = DB.falls_back(sql, NODE, settings=SETTINGS, on=ON)
    assert builds(top), show(top)
    assert "an inner value the engine does not hold exactly" in str(top), show(top)
    # without the row the same query is the engine's
    built_in_parallel(sql.replace("WHERE f.k", "WHERE h.h_key <> 1777 AND f.k"))


def test_limit_passed_only_by_the_merged_shares():
    """Each share of gjb.wide is under 4 MB, the whole table is not: the
    leader's merge finds it past pg_warp.gpujoin_inner_limit, and the join
    stays with PostgreSQL."""
    sql = ("SELECT f.g, count(*), max(w.w_label) FROM gjb.fact f, gjb.wide w "
           "WHERE f.k = w.w_key GROUP BY f.g")
    top = DB.plan(sql, ON_J + SETTINGS)
    assert builds(top) and builds(top)[0][0]["Workers Planned"] >= 2, show(top)
    settings = SETTINGS + ("SET pg_warp.gpujoin_inner_limit = '4MB'",
                           "SET parallel_leader_participation = off")
    top = DB.falls_back(sql, NODE, settings=settings, on=ON_J)
    assert "pg_warp.gpujoin_inner_limit" in str(top), show(top)
    built_in_parallel(sql, settings=SETTINGS + ("SET pg_warp.gpujoin_inner_limit = '64MB'",))


def test_error_in_a_worker():
    """A worker's scan raises (division by zero in the dimension's filter):
    the query fails as PostgreSQL's does."""
    sql = ("SELECT f.g, count(*) FROM gjb.fact f, gjb.dim d "
           "WHERE f.k = d.d_key AND 100 / (d.d_grp - 12) < 0 GROUP BY f.g")
    err = DB.same_error(sql, NODE, settings=SETTINGS, on=ON_J)
    assert "22012" in err, err
    assert DB.result(sql, ON_J + SERIAL_BUILD)[0] == "error"


def test_kept_table_found_after_a_parallel_build():
    """With the join cache on, the first query's parallel build is kept by
    the service and the next query finds it; both answer as PostgreSQL."""
    sql = ("SELECT f.g, count(*), sum(d.d_num) FROM gjb.fact f, gjb.dim d "
           "WHERE f.k = d.d_key AND d.d_grp < 9 GROUP BY f.g")
    settings = tuple(s for s in SETTINGS if "gpujoin_cache" not in s) + \
        ("SET pg_warp.gpujoin_cache = on",)
    pg_psql("VACUUM (FREEZE) gjb.dim")     # all-visible: a table that may be kept
    DB.same(sql, NODE, settings=settings, on=ON_J)
    top = DB.engine_ran(sql, NODE, ON_J + settings)
    assert "kept from an earlier query" in find_nodes(top, NODE)[0]["Join Depth 1"], show(top)


def test_more_workers_for_a_larger_dimension():
    """A parallel build plans a worker for each 131072 rows of the relation
    (within max_parallel_workers_per_gather), more than PostgreSQL's own
    count for a table of this size; with the parallel build off, PostgreSQL's."""
    pg_psql("CREATE TABLE gjb.big AS SELECT i AS b_key, i % 10 AS b_grp "
            "FROM generate_series(1, 600000) i; ANALYZE gjb.big")
    try:
        sql = ("SELECT f.g, count(*), sum(b.b_grp) FROM gjb.fact f, gjb.big b "
               "WHERE f.k = b.b_key GROUP BY f.g")
        settings = tuple(s for s in SETTINGS if "min_parallel_table_scan_size" not in s) + \
            ("SET max_parallel_workers_per_gather = 8",)
        top = DB.plan(sql, ON_J + settings)
        found = builds(top)
        assert found and found[0][0]["Workers Planned"] == 600000 // 131072, show(top)
        serial = DB.plan(sql, ON_J + settings + ("SET pg_warp.gpujoin_parallel_build = off",))
        gathers = []

        def walk(n):
            if n["Node Type"] == "Gather":
                gathers.append(n)
            for c in n.get("Plans", []):
                walk(c)
        walk(serial)
        assert gathers and all(g["Workers Planned"] < 600000 // 131072 for g in gathers), \
            show(serial)
        built_in_parallel(sql, settings=settings)
    finally:
        pg_psql("DROP TABLE gjb.big")


def groups(top):
    """the groups of plan top: each a Gather over a Parallel Append whose
    children are GpuJoinBuild nodes (several depths' scans at once), as
    (gather, [build nodes])"""
    found = []

    def walk(n):
        kids = n.get("Plans", [])
        if n["Node Type"] == "Gather" and len(kids) == 1 and kids[0]["Node Type"] == "Append":
            members = kids[0].get("Plans", [])
            assert kids[0].get("Parallel Aware"), show(top)
            assert members and all(m.get("Custom Plan Provider") == BUILD for m in members), \
                show(top)
            found.append((n, members))
        for c in kids:
            walk(c)
    walk(top)
    return found


# three depths: dim's parallel scan, tdim's serial one (no partial path: no
# workers for it) beside it, and multi's keys that repeat
GROUP_SQL = ("SELECT d.d_grp, count(*), max(t.t_val), min(m.m_label), sum(d.d_num) "
             "FROM gjb.fact f, gjb.dim d, gjb.tdim t, gjb.multi m "
             "WHERE f.k = d.d_key AND f.tk = t.t_key AND f.mk = m.m_key AND d.d_grp <> 4 "
             "GROUP BY d.d_grp")
NOT_AT_ONCE = ("SET pg_warp.gpujoin_concurrent_build = off",)


@pytest.fixture
def serial_tdim():
    pg_psql("ALTER TABLE gjb.tdim SET (parallel_workers = 0)")
    yield
    pg_psql("ALTER TABLE gjb.tdim RESET (parallel_workers)")


def test_group_runs_the_depths_scans_at_once(serial_tdim):
    """The scans of a query's depths run under one Gather: a Parallel
    Append of their GpuJoinBuild nodes, dim's parallel scan shared by the
    participants and tdim's serial scan run by one of them.  The answer is
    PostgreSQL's and the one with the scans one after the other
    (pg_warp.gpujoin_concurrent_build off, whose plan has no group); every
    depth has PostgreSQL's inner rows."""
    rows = [count("SELECT count(*) FROM gjb.dim WHERE d_grp <> 4"), 3000, 3001]
    top = built_in_parallel(GROUP_SQL, depth_rows=rows)
    found = groups(top)
    assert len(found) == 1 and len(found[0][1]) == 3, show(top)
    gather, members = found[0]
    assert gather["Workers Launched"] >= 1, show(top)
    scans = {m["Plans"][0]["Relation Name"]: m["Plans"][0] for m in members}
    assert sorted(scans) == ["dim", "multi", "tdim"], show(top)
    assert scans["dim"]["Parallel Aware"] and not scans["tdim"]["Parallel Aware"], show(top)
    one_by_one = DB.result(GROUP_SQL, ON_J + SETTINGS + NOT_AT_ONCE)
    together = DB.result(GROUP_SQL, ON_J + SETTINGS)
    assert one_by_one[0] == together[0] == "ok", (one_by_one, together)
    assert_rows_equal(GROUP_SQL, together[1], one_by_one[1], rel_tol=1e-9)
    apart = DB.engine_ran(GROUP_SQL, NODE, ON_J + SETTINGS + NOT_AT_ONCE)
    assert not groups(apart) and len(builds(apart)) >= 1, show(apart)
    # EXPLAIN VERBOSE: where each build's time went; the group's scans are
    # every member's, its tables made at once (gpu_join_table.c)
    for plan, scans in ((top, "group scans"), (apart, "scan")):
        pre = find_nodes(plan, NODE)[0]
        parts = [re.search(r"built in ([0-9.]+) ms: %s ([0-9.]+), table ([0-9.]+), load ([0-9.]+)"
                           % scans, pre["Join Depth %d" % d]) for d in (1, 2, 3)]
        assert all(parts), show(plan)
        built, scan, table, load = ([float(p.group(i)) for p in parts] for i in (1, 2, 3, 4))
        assert all(b + 0.003 >= s + t and b + 0.003 >= s + lo and min(t, lo) >= 0
                   for b, s, t, lo in zip(built, scan, table, load)), show(plan)
        assert scans == "scan" or len(set(scan)) == 1, show(plan)


def test_group_with_a_kept_table(serial_tdim):
    """With the join cache on, a second run finds the tables the first
    kept; after a row of one dimension changed, that depth's table is built
    again in its group while the others, found kept, skip their scans: the
    answer is PostgreSQL's with the changed row."""
    settings = tuple(s for s in SETTINGS if "gpujoin_cache" not in s) + \
        ("SET pg_warp.gpujoin_cache = on",)
    pg_psql("VACUUM (FREEZE) gjb.dim, gjb.tdim, gjb.multi")
    try:
        DB.same(GROUP_SQL, NODE, settings=settings, on=ON_J, rel_tol=1e-9)
        top = DB.engine_ran(GROUP_SQL, NODE, ON_J + settings)
        pre = find_nodes(top, NODE)[0]
        assert all("kept from an earlier query" in pre["Join Depth %d" % d]
                   for d in (1, 2, 3)), show(top)
        pg_psql("UPDATE gjb.tdim SET t_val = t_val + 1000000 WHERE t_key = 'k7'")
        pg_psql("VACUUM (FREEZE) gjb.tdim")
        top = DB.engine_ran(GROUP_SQL, NODE, ON_J + settings)
        pre = find_nodes(top, NODE)[0]
        depth = {d: pre["Join Depth %d" % d] for d in (1, 2, 3)}
        tdim = [d for d, line in depth.items() if "t.t_key" in line or "t_key" in line]
        assert len(tdim) == 1 and "built in" in depth[tdim[0]], show(top)
        assert all("kept from an earlier query" in line for d, line in depth.items()
                   if d != tdim[0]), show(top)
        DB.same(GROUP_SQL, NODE, settings=settings, on=ON_J, rel_tol=1e-9)
    finally:
        pg_psql("UPDATE gjb.tdim SET t_val = t_val - 1000000 WHERE t_key = 'k7'")


def test_group_kept_tables_shared_by_another_node(serial_tdim):
    """Two GpuPreAgg nodes of one query over the same group of depths, the
    tables kept by an earlier query: the node that runs first finds them
    kept (no scan) and records them among the query's tables, and the other
    takes them from there ("inner table shared with"), not from the service
    again; both answers PostgreSQL's."""
    settings = tuple(s for s in SETTINGS if "gpujoin_cache" not in s) + \
        ("SET pg_warp.gpujoin_cache = on",)
    other = GROUP_SQL.replace("sum(d.d_num)", "avg(d.d_num)")
    sql = ("WITH a AS MATERIALIZED (%s), b AS MATERIALIZED (%s) "
           "SELECT 'a', * FROM a UNION ALL SELECT 'b', * FROM b ORDER BY 1, 2" % (GROUP_SQL, other))
    pg_psql("VACUUM (FREEZE) gjb.dim, gjb.tdim, gjb.multi")
    DB.same(GROUP_SQL, NODE, settings=settings, on=ON_J, rel_tol=1e-9)
    DB.same(sql, NODE, settings=settings, on=ON_J, ordered=True, rel_tol=1e-9)
    top = DB.engine_ran(sql, NODE, ON_J + settings)
    nodes = find_nodes(top, NODE)
    assert len(nodes) == 2 and all(groups(top) for _ in nodes), show(top)
    lines = [[n["Join Depth %d" % d] for d in (1, 2, 3)] for n in nodes]
    kept = [ls for ls in lines if all("kept from an earlier query" in x for x in ls)]
    shared = [ls for ls in lines if all("inner table shared with" in x for x in ls)]
    assert len(kept) == 1 and len(shared) == 1, show(top)


def test_group_same_table_twice(serial_tdim):
    """Two depths of a group that build the same table (one dimension, the
    same rows, payload and key types, probed by two fact columns): the
    later skips its scan (never executed) and probes the earlier's table;
    PostgreSQL's answer."""
    sql = ("SELECT f.g, count(*), max(d1.d_grp), min(d2.d_grp), max(t.t_val) "
           "FROM gjb.fact f, gjb.dim d1, gjb.dim d2, gjb.tdim t "
           "WHERE f.k = d1.d_key AND f.id = d2.d_key AND f.tk = t.t_key GROUP BY f.g")
    DB.same(sql, NODE, settings=SETTINGS, on=ON_J)
    top = DB.engine_ran(sql, NODE, ON_J + SETTINGS)
    found = groups(top)
    assert len(found) == 1 and len(found[0][1]) == 3, show(top)
    dims = [m for m in found[0][1] if m["Plans"][0]["Relation Name"] == "dim"]
    assert sorted(m["Plans"][0]["Actual Loops"] == 0 for m in dims) == [False, True], show(top)
    pre = find_nodes(top, NODE)[0]
    assert sum("inner table shared with" in pre["Join Depth %d" % d] for d in (1, 2, 3)) == 1, \
        show(top)


def test_group_member_refused(serial_tdim):
    """One depth of a group holds a value the engine cannot hold: the join
    stays with PostgreSQL (same answer), and EXPLAIN ANALYZE says why."""
    sql = ("SELECT f.g, count(*), count(h.h_num), max(t.t_val) "
           "FROM gjb.fact f, gjb.huge h, gjb.tdim t WHERE f.k = h.h_key AND f.tk = t.t_key "
           "GROUP BY f.g")
    top = DB.falls_back(sql, NODE, settings=SETTINGS, on=ON_J)
    assert groups(top), show(top)
    assert "an inner value the engine does not hold exactly" in str(top), show(top)
    built_in_parallel(sql.replace("WHERE f.k", "WHERE h.h_key <> 1777 AND f.k"))


def test_group_error_in_the_serial_scan(serial_tdim):
    """The serial member's scan raises in the worker that runs it (division
    by zero in tdim's filter): the query fails as PostgreSQL's does."""
    sql = ("SELECT f.g, count(*) FROM gjb.fact f, gjb.dim d, gjb.tdim t "
           "WHERE f.k = d.d_key AND f.tk = t.t_key AND 100 / (t.t_val - 2999) < 1000 "
           "GROUP BY f.g")
    top = DB.plan(sql, ON_J + SETTINGS)
    assert groups(top), show(top)
    err = DB.same_error(sql, NODE, settings=SETTINGS, on=ON_J)
    assert "22012" in err, err


# EXPLAIN VERBOSE's account of a depth's table: its size, and the memory
# made for it while its rows were scanned (gpu_join_table.c, gj_table_prepare)
TABLE_KB = re.compile(r"table (\d+) kB, built in ")
MADE_KB = re.compile(r"; memory made during the scan (\d+) kB(, not used)?")


def table_memory(top, d=1):
    """(the table's kB, the kB of memory made during its scan or None,
    whether the table was written into it) of depth d of plan top's GpuPreAgg"""
    depth = find_nodes(top, NODE)[0]["Join Depth %d" % d]
    made = MADE_KB.search(depth)
    return (int(TABLE_KB.search(depth).group(1)), made and int(made.group(1)),
            bool(made) and made.group(2) is None)


WIDE_SQL = ("SELECT f.g, count(*), max(w.w_label), min(w.w_label), sum(w.w_key) "
            "FROM gjb.fact f, gjb.wide w WHERE f.k = w.w_key AND %s GROUP BY f.g")


@pytest.mark.parametrize("build", ["parallel", "serial"])
@pytest.mark.parametrize("where, made", [
    # the planner's rows about the scan's: memory made for a table of about that size
    ("w.w_label > 'w'", "about"),
    # 10,600 rows expected, 55,000 read: the memory made grows into the table
    ("(w.w_key % 2 = 0 OR w.w_key < 10000)", "less"),
    # 33,000 rows expected (a third: an expression's default), 25,000 read: shrunk
    ("w.w_key + 0 < 25000", "more"),
    # 33,000 expected, 50 read: more than twice the table, not used
    ("w.w_key + 0 < 50", "far more")])
def test_table_memory_made_during_the_scan(build, where, made):
    """A table's memory is made by a thread while its inner rows are
    scanned, of the size the planner's rows give: the table written into it
    (grown where the rows were more, shrunk where they were fewer; a fresh
    memfd where they were under half) is the one made after the scan, and
    the answers PostgreSQL's"""
    sql = WIDE_SQL % where
    settings = SETTINGS if build == "parallel" else SERIAL_BUILD
    if build == "parallel":
        top = built_in_parallel(sql, settings=settings)
    else:
        DB.same(sql, NODE, settings=settings, on=ON_J, rel_tol=1e-9)
        top = DB.engine_ran(sql, NODE, ON_J + settings)
        assert not builds(top), show(top)
    table, ahead, used = table_memory(top)
    assert ahead is not None and used == (made != "far more"), show(top)
    if made == "about":
        assert table / 2 < ahead < table * 2, (table, ahead)
    elif made == "less":
        assert ahead * 2 < table, (table, ahead)
    elif made == "more":
        assert table < ahead <= 2 * table + 256, (table, ahead)
    else:
        assert table * 100 < ahead, (table, ahead)


def test_table_memory_of_a_group():
    """The depths of a group have their memory made before the group's
    scans run; each table written into its own"""
    sql = ("SELECT d.d_grp, count(*), max(w.w_label), sum(d.d_num) "
           "FROM gjb.fact f, gjb.dim d, gjb.wide w "
           "WHERE f.k = d.d_key AND f.k = w.w_key AND w.w_key + 0 < 35000 GROUP BY d.d_grp")
    top = built_in_parallel(sql)
    assert groups(top), show(top)
    for d in (1, 2):
        assert table_memory(top, d)[2], show(top)


def test_small_table_memory_not_made_ahead():
    """A table the planner expects small (tdim: 3,000 rows) is made after
    its scan as before"""
    top = built_in_parallel("SELECT f.g, count(*), sum(t.t_val) FROM gjb.fact f, gjb.tdim t "
                            "WHERE f.tk = t.t_key GROUP BY f.g")
    assert table_memory(top)[1] is None, show(top)


def test_table_memory_let_go_after_an_error():
    """A query that fails in its inner scan (division by zero) after its
    table's memory was made ahead leaves none of it behind: no memfd of a
    join table mapped in the backend, and no descriptor more after three
    failures than after one"""
    ok = WIDE_SQL % "100 / (w.w_key % 1000 - 1000) < 1000"
    top = built_in_parallel(ok)
    assert table_memory(top)[2], show(top)
    bad = WIDE_SQL % "100 / (w.w_key % 1000 - 999) < 1000"
    # PostgreSQL's own error, from a plan with the GpuJoin
    assert DB.same_error(bad, NODE, settings=SETTINGS, on=ON_J).startswith("22012")
    fds = "SELECT count(*) FROM pg_ls_dir('/proc/self/fd');\n"
    maps = ("SELECT count(*) FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), "
            "E'\\n') l WHERE l LIKE '%pg_warp_join%';\n")
    # one session that goes on after an error (psql's script without ON_ERROR_STOP)
    script = "".join(x + ";\n" for x in ON_J + SETTINGS) + \
        bad + ";\n" + fds + (bad + ";\n") * 3 + fds + maps
    r = subprocess.run(["psql", "-XAtq"], input=script, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout.split()
    assert r.stderr.count("division by zero") == 4 and len(out) == 3, (r.stdout, r.stderr)
    assert out[0] == out[1] and out[2] == "0", out


class Wire:
    """A PostgreSQL session over the v3 protocol on the cluster's socket
    (trust authentication), for what psql cannot do: execute a portal a few
    rows at a time (Execute with a row limit), as JDBC's fetch size does.
    PostgreSQL then runs the plan without parallel mode: a Gather starts no
    worker and sets up no dynamic shared memory."""

    def __init__(self):
        path = os.path.join(os.environ.get("PGHOST", "/tmp"),
                            ".s.PGSQL.%s" % os.environ.get("PGPORT", "5432"))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(path)
        self.notices = []
        params = b"".join(k + b"\0" + v.encode() + b"\0" for k, v in (
            (b"user", os.environ.get("PGUSER", "postgres")),
            (b"database", os.environ.get("PGDATABASE", "postgres")))) + b"\0"
        self.sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
        self.until(b"Z")

    def recv(self):
        head = self._exact(5)
        body = self._exact(struct.unpack("!i", head[1:])[0] - 4)
        kind = head[:1]
        if kind == b"R":
            assert struct.unpack("!i", body[:4])[0] == 0, "only trust authentication"
        elif kind == b"N":
            self.notices.append(self._fields(body).get("M", ""))
        elif kind == b"E":
            raise AssertionError("server error: %s" % self._fields(body))
        return kind, body

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            more = self.sock.recv(n - len(buf))
            assert more, "the server closed the connection"
            buf += more
        return buf

    @staticmethod
    def _fields(body):
        return {f[:1].decode(): f[1:].decode() for f in body.split(b"\0") if f}

    def until(self, *kinds):
        while True:
            kind, body = self.recv()
            if kind in kinds:
                return kind, body

    def send(self, kind, body=b""):
        self.sock.sendall(kind + struct.pack("!i", 4 + len(body)) + body)

    def simple(self, sql):
        self.send(b"Q", sql.encode() + b"\0")
        self.until(b"Z")

    def fetch_in_parts(self, sql, rows_per_fetch):
        """sql's rows (text), fetched rows_per_fetch at a time from one portal"""
        self.send(b"P", b"\0" + sql.encode() + b"\0" + struct.pack("!h", 0))
        self.send(b"B", b"\0\0" + struct.pack("!hhh", 0, 0, 0))
        rows = []
        while True:
            self.send(b"E", b"\0" + struct.pack("!i", rows_per_fetch))
            self.send(b"H")
            while True:
                kind, body = self.recv()
                if kind == b"D":
                    n, pos, row = struct.unpack("!h", body[:2])[0], 2, []
                    for _ in range(n):
                        ln = struct.unpack("!i", body[pos:pos + 4])[0]
                        row.append(None if ln < 0 else body[pos + 4:pos + 4 + ln].decode())
                        pos += 4 + max(ln, 0)
                    rows.append(row)
                elif kind in (b"s", b"C"):
                    break
            if kind == b"C":
                self.send(b"S")
                self.until(b"Z")
                return rows

    def close(self):
        self.send(b"X")
        self.sock.close()


def fetched_in_parts(sql):
    """sql's rows fetched two at a time from one portal (Wire), pg_warp on
    with SETTINGS, and the plan auto_explain sent (JSON, ANALYZE)"""
    w = Wire()
    try:
        for s in ON_J + SETTINGS + (
                "LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                "SET auto_explain.log_analyze = on", "SET auto_explain.log_timing = off",
                "SET auto_explain.log_format = json", "SET auto_explain.log_level = notice"):
            w.simple(s)
        got = w.fetch_in_parts(sql, 2)
    finally:
        w.close()
    plans = [json.loads(n[n.index("{"):]) for n in w.notices if '"Plan"' in n]
    assert len(plans) == 1, w.notices
    return got, plans[0]["Plan"]


def test_portal_fetched_in_parts():
    """A portal executed a few rows at a time runs without parallel mode:
    the inner plan's Gather has no dynamic shared memory, and the leader
    alone runs the GpuJoinBuild node, keeping its share in its own memory.
    The engine still serves the query (auto_explain's plan, sent to the
    client, shows it) with PostgreSQL's rows."""
    sql = ("SELECT f.g, count(*), sum(d.d_num), count(d.d_text) FROM gjb.fact f, gjb.dim d "
           "WHERE f.k = d.d_key GROUP BY f.g ORDER BY f.g")
    top = DB.engine_ran(sql, NODE, ON_J + SETTINGS)
    assert builds(top), show(top)
    want = [line.split("|") for line in DB.sql(sql, OFF).splitlines()]
    got, top = fetched_in_parts(sql)
    assert [[v if v is not None else "" for v in r] for r in got] == want, (got, want)
    found = builds(top)
    assert found, show(top)
    for gather, node in found:
        assert gather["Workers Launched"] == 0 and node["Actual Loops"] == 1, show(top)
    pre = find_nodes(top, NODE)[0]
    assert pre.get("Engine") in ("CPU", "GPU"), show(top)
    assert "inner rows 40000," in pre["Join Depth 1"], show(top)


def test_group_portal_fetched_in_parts(serial_tdim):
    """A group's Gather without dynamic shared memory (a portal executed a
    few rows at a time): its Append runs each member in the leader, one
    after the other, and the engine serves the query with PostgreSQL's
    rows."""
    sql = GROUP_SQL + " ORDER BY d.d_grp"
    got, top = fetched_in_parts(sql)
    assert_rows_equal(sql, "\n".join("|".join(v if v is not None else "" for v in r)
                                      for r in got), DB.sql(sql, OFF), ordered=True,
                      rel_tol=1e-9)
    found = groups(top)
    assert len(found) == 1 and len(found[0][1]) == 3, show(top)
    gather, members = found[0]
    assert gather["Workers Launched"] == 0, show(top)
    assert all(m["Actual Loops"] == 1 for m in members), show(top)
    pre = find_nodes(top, NODE)[0]
    assert pre.get("Engine") in ("CPU", "GPU"), show(top)
    assert "inner rows 3000," in str(pre), show(top)


def test_gpujoin_rows_over_a_parallel_build():
    """A GpuJoin that returns rows (not a GpuPreAgg) over an inner table
    built by a Gather's workers: the Gather lets its workers go once the
    node asks the service for its first batches (gj_exec_shutdown), and the
    rows are PostgreSQL's; so are those of a LIMIT that stops the node
    early (its Gather shut down again at the end) and of a cursor read in
    parts, rewound and read again (the table stays loaded, the Gather is
    not run again)."""
    sql = ("SELECT f.id, d.d_text, d.d_num FROM gjb.fact f, gjb.dim d "
           "WHERE f.k = d.d_key AND f.g = 3")
    top = DB.engine_ran(sql, "GpuJoin", ON_J + SETTINGS)
    found = builds(top)
    assert found and all(g["Workers Launched"] >= 1 for g, _ in found), show(top)
    DB.same(sql, "GpuJoin", settings=SETTINGS, on=ON_J)
    limited = "SELECT count(*) FROM (%s LIMIT 7) s" % sql
    assert DB.sql(limited, ON_J + SETTINGS) == "7"
    want = DB.sql(sql + " ORDER BY 1", OFF).splitlines()
    rows = DB.sql("BEGIN; DECLARE c SCROLL CURSOR FOR %s; FETCH 3 FROM c; MOVE ABSOLUTE 0 IN c; "
                  "FETCH ALL FROM c; COMMIT" % sql, ON_J + SETTINGS).splitlines()
    assert sorted(rows[3:]) == sorted(want) and len(rows[:3]) == 3, (rows[:5], want[:5])
