"""The 13 Star Schema Benchmark queries (bench/ssb/queries) in the engine end to
end: scan, every join depth and the aggregation in one GpuPreAgg run (GpuJoin,
src/engine/gpu_join.c), on an arrow_fdw lineorder and on the heap lineorder,
against PostgreSQL's own answers (pg_warp off, heap tables).

The data is a small SSB (SF 0.05, about 300,000 lineorder rows) loaded with the
benchmark's kit (bench/ssb/load.sh: ssbgen, primary keys on the dimensions,
pg2arrow for the Arrow file) into a database of its own.  Each query must be
planned as a GpuPreAgg that the engine ran, with one Join Depth per dimension it
joins; its rows must equal PostgreSQL's.
"""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from pg_sql import DB, Db, find_nodes, show

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUERIES = os.path.join(ROOT, "bench", "ssb", "queries")
DBNAME = "pg_warp_ssb_test"
NODE = "GpuPreAgg"
ON = ("SET pg_warp.engine_startup_cost = 0", "SET max_parallel_workers_per_gather = 0")
OFF = ("SET pg_warp.enabled = off",)
HEAP = ("SET pg_warp.enable_gpupreagg_heap = on",)
SSB = Db(dict(os.environ, PGDATABASE=DBNAME))


def queries():
    return sorted(f[:-4] for f in os.listdir(QUERIES) if re.match(r"q\d\.\d\.sql$", f))


@pytest.fixture(scope="module", autouse=True)
def ssb():
    d = tempfile.mkdtemp(prefix="pg_warp_ssb.")
    os.chmod(d, 0o755)
    DB.sql("DROP DATABASE IF EXISTS %s" % DBNAME)
    DB.sql("CREATE DATABASE %s" % DBNAME)
    env = dict(os.environ, PGDATABASE=DBNAME)
    tools = os.environ.get("PG_WARP_TOOLS")
    if tools:
        env["PG2ARROW"] = os.path.join(tools, "pg2arrow")
    subprocess.run([os.path.join(ROOT, "bench", "ssb", "load.sh"), "-d", DBNAME, "-s", "0.05",
                    "-j", "2", "-a", d], check=True, env=env, capture_output=True)
    cols = SSB.sql("SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' "
                   "ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'lineorder'::regclass "
                   "AND attnum > 0 AND NOT attisdropped")
    SSB.sql("CREATE EXTENSION IF NOT EXISTS pg_warp; CREATE SCHEMA ssb_arrow; "
            "CREATE FOREIGN TABLE ssb_arrow.lineorder (%s) SERVER arrow_fdw "
            "OPTIONS (file '%s/lineorder.arrow')" % (cols, d))
    yield d
    DB.sql("DROP DATABASE IF EXISTS %s" % DBNAME)
    shutil.rmtree(d, ignore_errors=True)


def dimensions(sql):
    return sum(1 for t in ("date1", "customer", "supplier", "part") if re.search(r"\b%s\b" % t, sql))


def in_engine(sql, side):
    """sql (an SSB query) on `side` answers as PostgreSQL's heap plan does, from
    a GpuPreAgg the engine ran with a Join Depth per dimension."""
    path = ("SET search_path = ssb_arrow, public",) if side == "arrow" else HEAP
    want = SSB.result(sql, OFF)
    got = SSB.result(sql, ON + path)
    assert want[0] == "ok" and got == want, (sql, got, want)
    top = SSB.engine_ran(sql, NODE, ON + path)
    node = find_nodes(top, NODE)[0]
    depths = [k for k in node if k.startswith("Join Depth")]
    assert len(depths) == dimensions(sql), show(top)


@pytest.mark.parametrize("q", queries())
def test_ssb_arrow(q):
    with open(os.path.join(QUERIES, q + ".sql")) as f:
        in_engine(f.read(), "arrow")


@pytest.mark.parametrize("q", queries())
def test_ssb_heap(q):
    with open(os.path.join(QUERIES, q + ".sql")) as f:
        in_engine(f.read(), "heap")
