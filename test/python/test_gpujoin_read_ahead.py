"""GpuJoin's read-ahead (pg_warp.gpujoin_read_ahead_cost, src/engine/engine_scan.c):
while the backend builds a GpuPreAgg's inner table whose plan costs at
least the setting, the service reads the run's Arrow columns into the GPU
column cache (AGG_FILL), and the run finds them there.

Every query runs with pg_warp on and off: the rows, or the error, must be
equal, and the engine must have served the GpuPreAgg.  Each case reads a
file of its own (a new file is cold in the GPU cache).  On a GPU, EXPLAIN
ANALYZE must show the read-ahead's bytes, and the read-ahead and the run
must have read each referenced byte from the file once between them; on the
CPU engine (CI) it must say that nothing was read ahead.  With the setting
-1, an inner plan cheaper than it, or without a join, there is no
read-ahead.
"""
import itertools
import os
import shutil
import tempfile

import pyarrow as pa
import pytest

from engine_edge import picker, write
from pg_sql import DB, ON, find_nodes, json_plan, show
from pg_sql import psql as pg_psql

NODE = "GpuPreAgg"
N = 60000
ON_J = tuple(ON) + ("SET enable_hashjoin = off", "SET enable_mergejoin = off",
                    "SET enable_nestloop = off")
SETTINGS = ("SET pg_warp.enable_gpupreagg_heap = off", "SET pg_warp.gpujoin_cache = off",
            "SET pg_warp.gpujoin_read_ahead_cost = 0")
NEVER = ("SET pg_warp.gpujoin_read_ahead_cost = -1",)
CPU_NONE = "none (the CPU engine reads no columns ahead)"

DIMS = """
CREATE TABLE gjr.dim (d_key int8 PRIMARY KEY, d_text text, d_grp int4);
INSERT INTO gjr.dim SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 't' || (i % 41) END, i % 13
  FROM generate_series(1, 20000) i;
CREATE TABLE gjr.huge (h_key int8, h_num numeric(45,0));
INSERT INTO gjr.huge SELECT i, CASE WHEN i = 777 THEN 10::numeric ^ 40 ELSE i END
  FROM generate_series(1, 2000) i;
ANALYZE gjr.dim, gjr.huge;
"""

COLUMNS = "(id int8, k int8, g int4, v int4, z int4)"
SUM_BY_GROUP = ("SELECT d_grp, g, count(*), sum(v), count(d_text) FROM gjr.{t} JOIN gjr.dim "
                "ON k = d_key GROUP BY d_grp, g")

_names = itertools.count()


def fact_table(n, seed):
    pick = picker(seed, n)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "k": pa.array(pick(list(range(0, 20100))), pa.int64()),    # 0, 20001..: no match
        "g": pa.array(pick(list(range(0, 5))), pa.int32()),
        "v": pa.array(pick([0, 1, -1, 7, 100, 2**31 - 1, -2**31]), pa.int32()),
        "z": pa.array([0 if i == n // 2 else 1 for i in range(n)], pa.int32()),
    })


@pytest.fixture(scope="module")
def data_dir():
    d = tempfile.mkdtemp(prefix="pg_warp_gjr.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "fact.arrow"), fact_table(N, 5), 5000)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS gjr CASCADE; CREATE SCHEMA gjr")
    pg_psql(DIMS)
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gjr CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def fresh_table(data_dir):
    """A foreign table over a new copy of the fact file: its columns are in
    no GPU cache yet.  Returns its name."""
    name = "fact%d" % next(_names)
    path = os.path.join(data_dir, name + ".arrow")
    shutil.copyfile(os.path.join(data_dir, "fact.arrow"), path)
    pg_psql("CREATE FOREIGN TABLE gjr.%s %s SERVER arrow_fdw OPTIONS (file '%s')"
            % (name, COLUMNS, path))
    return name


def gpu():
    return DB.sql("SELECT engine FROM pgwarp.service_status()").strip() == "gpu"


def preagg(sql, settings):
    """The GpuPreAgg of sql's EXPLAIN ANALYZE (JSON) under settings"""
    top = DB.plan(sql, tuple(settings), analyze=True)
    nodes = find_nodes(top, NODE)
    assert len(nodes) == 1, show(top)
    return nodes[0]


def test_read_ahead_while_tables_are_built(data_dir):
    """A cold file: the answer is PostgreSQL's; on a GPU the read-ahead
    read columns into the cache, the run took them from there, and the
    two read every referenced byte once between them"""
    on = ON_J + SETTINGS
    sql = SUM_BY_GROUP.format(t=fresh_table(data_dir))
    DB.same_answer(sql, NODE, on=on)
    n = preagg(SUM_BY_GROUP.format(t=fresh_table(data_dir)), on)
    total = preagg(SUM_BY_GROUP.format(t=fresh_table(data_dir)),
                   on + NEVER)
    assert "Read Ahead" not in total and "Read Ahead Bytes" not in total, total
    if not gpu():
        assert n["Read Ahead"] == CPU_NONE, n
        return
    assert n["Engine"] == "GPU" and n["Read Ahead Bytes"] > 0, n
    assert n["Read Ahead Bytes"] + n["Bytes Read"] == total["Bytes Read"], (n, total)
    assert n["Bytes From GPU Cache"] >= n["Read Ahead Bytes"], n


def test_no_read_ahead_for_a_cheap_inner_plan(data_dir):
    """The default threshold (1000) is above the small dimension's plan
    cost: its table is built without a read-ahead"""
    on = ON_J + SETTINGS + ("RESET pg_warp.gpujoin_read_ahead_cost",)
    sql = SUM_BY_GROUP.format(t=fresh_table(data_dir))
    top = json_plan(DB.sql("EXPLAIN (FORMAT JSON) " + sql, on))
    inner, todo = [], [top]
    while todo:
        n = todo.pop()
        todo.extend(n.get("Plans", []))
        inner += [n] if n.get("Relation Name") == "dim" else []
    assert inner and all(n["Total Cost"] < 1000 for n in inner), show(top)
    DB.same_answer(sql, NODE, on=on)
    n = preagg(sql, on)
    assert "Read Ahead" not in n and "Read Ahead Bytes" not in n, n


def test_no_read_ahead_without_a_join(data_dir):
    """Nothing to build: no read-ahead"""
    t = fresh_table(data_dir)
    sql = "SELECT g, count(*), sum(v) FROM gjr.%s GROUP BY g" % t
    DB.same_answer(sql, NODE, on=ON_J + SETTINGS)
    n = preagg(sql, ON_J + SETTINGS)
    assert "Read Ahead" not in n and "Read Ahead Bytes" not in n, n


def test_error_after_read_ahead(data_dir):
    """A division by zero in the run that follows a read-ahead: the same
    error as PostgreSQL's"""
    sql = ("SELECT d_grp, sum(v / z) FROM gjr.%s JOIN gjr.dim ON k = d_key GROUP BY d_grp"
           % fresh_table(data_dir))
    assert "division by zero" in DB.same_answer(sql, NODE, on=ON_J + SETTINGS)


def test_inner_table_refused_after_read_ahead(data_dir):
    """An inner value the engine cannot hold: the join falls back to
    PostgreSQL (its read-ahead cancelled) with PostgreSQL's answer, and the
    next query reads the same file in the engine"""
    t = fresh_table(data_dir)
    sql = ("SELECT g, count(*), sum(h_num) FROM gjr.%s JOIN gjr.huge ON k = h_key GROUP BY g"
           % t)
    DB.falls_back(sql, NODE, on=ON_J + SETTINGS)
    DB.same_answer(SUM_BY_GROUP.format(t=t), NODE, on=ON_J + SETTINGS)
