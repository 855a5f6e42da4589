"""The forms of doc/engine.md's "What the engine evaluates" that the engine
filter tests (test_engine_filter.py, CLAUSES_TYPES) check in the backend's
filter, run in the warp service: as GpuScan quals, and as GpuPreAgg filters,
group keys and aggregate arguments (extract() as numeric keys, interval
constants in filters, date/timestamp comparisons, numeric mod, NOT IN).
Every result, or error, must be PostgreSQL's (pg_warp.enabled = off).

Runs against the cluster that scripts/test.sh starts (PGHOST, PGPORT, PGUSER
in the environment, pg_warp installed).
"""
import os
import shutil
import tempfile

import pytest

from engine_edge import psql, write
from pg_sql import DB, FILTER, find_nodes, unequal
from test_engine_filter import (CLAUSES_TYPES, TYPES_NOT_IN_ENGINE, TYPES_RECHECKED_EVERYWHERE,
                                edge_table_types)

COLS = ("id int4, i2 int2, i4 int4, i8 int8, z int4, f4 float4, f8 float8, n numeric(20,2), "
        "t text, d date, ts timestamp, tstz timestamptz, b bool, iv interval, dd date")
ENGINE = (("pg_warp.engine_startup_cost", "0"), ("pg_warp.engine_row_cost", "0"))


@pytest.fixture(scope="module", autouse=True)
def edge():
    d = tempfile.mkdtemp(prefix="pg_warp_engt.")
    os.chmod(d, 0o755)
    path = os.path.join(d, "edge.arrow")
    write(path, edge_table_types())
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS engt CASCADE; CREATE SCHEMA engt; "
         "CREATE SCHEMA engt_agg")
    psql("CREATE FOREIGN TABLE engt.edge (%s) SERVER arrow_fdw OPTIONS (file '%s')"
         % (COLS, path))
    DB.create_run_function("engt", ENGINE + (("pg_warp.enable_gpupreagg", "off"),))
    DB.create_run_function("engt_agg", ENGINE)
    # the same runs with the file's buffers copied instead of mapped (on by default)
    psql("CREATE SCHEMA engt_copy; CREATE SCHEMA engt_agg_copy")
    DB.create_run_function("engt_copy", ENGINE + (("pg_warp.enable_gpupreagg", "off"),
                                               ("pg_warp.map_arrow_files", "off")))
    DB.create_run_function("engt_agg_copy", ENGINE + (("pg_warp.map_arrow_files", "off"),))
    yield
    psql("DROP SCHEMA IF EXISTS engt CASCADE; DROP SCHEMA IF EXISTS engt_agg CASCADE; "
         "DROP SCHEMA IF EXISTS engt_copy CASCADE; DROP SCHEMA IF EXISTS engt_agg_copy CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def plan(sql, agg=False):
    sets = "".join("SET %s = %s; " % s for s in ENGINE)
    if not agg:
        sets += "SET pg_warp.enable_gpupreagg = off; "
    return psql(sets + "EXPLAIN (COSTS OFF) " + sql)


@pytest.mark.parametrize("schema", ["engt", "engt_copy"])
def test_gpuscan_equal_postgresql(schema):
    """Each added form as a GpuScan qual: rows or error as PostgreSQL's
    (the file mapped by the service, and read into its own buffers)."""
    q = "SELECT string_agg(id::text, ',' ORDER BY id) FROM engt.edge WHERE "
    in_engine = [c for c in CLAUSES_TYPES if c not in TYPES_NOT_IN_ENGINE + TYPES_RECHECKED_EVERYWHERE]
    bad = unequal(DB.compare(schema, [q + c for c in in_engine], node=("GpuScan", FILTER),
                             rechecked=True))
    bad += unequal(DB.compare(schema, [q + c for c in TYPES_NOT_IN_ENGINE + TYPES_RECHECKED_EVERYWHERE]))
    assert not bad, "\n".join(bad)
    sets = tuple("SET %s = %s" % x for x in ENGINE) + ("SET pg_warp.enable_gpupreagg = off",)
    for c in TYPES_NOT_IN_ENGINE:
        DB.not_planned(q + c, ("GpuScan", FILTER), sets)
    for c in TYPES_RECHECKED_EVERYWHERE:
        n = find_nodes(DB.plan(q + c, sets, analyze=True), "GpuScan")
        assert len(n) == 1 and n[0]["Batches Rechecked by PostgreSQL"] == n[0]["Batches Read"], n


@pytest.mark.parametrize("where", [
    "iv > interval '1 day'", "ts - interval '1 mon' < '1970-01-01'", "dd > ts",
    "extract(isoyear from d) < 2000", "n NOT IN (1.5, 42)", "tstz - tstz > interval '1 day'",
])
def test_gpuscan_plans(where):
    p = plan("SELECT id FROM engt.edge WHERE " + where)
    assert "Custom Scan (GpuScan)" in p and "Engine Filter:" in p, p


GROUPINGS = [
    # (key, aggregates, where)
    ("extract(year from ts)", "count(*)", "iv > interval '1 day'"),
    ("extract(second from ts)", "count(*), sum(extract(epoch from d))",
     "ts + interval '1 hour' > '1971-01-01'"),
    ("date_trunc('decade', ts)", "count(*), min(ts - interval '1 day')", "d < ts"),
    ("n % 1.5", "count(*), sum(n % 7)", "n NOT IN (1.5, 42)"),
    ("extract(year from d)", "count(*), max(extract(doy from d))", "NULL IS NULL"),
    ("extract(millennium from dd)", "count(*)", "dd < 'infinity'::timestamp"),
    ("extract(epoch from ts)", "count(*)", "tstz - interval '1 hour' < '2000-01-01 00:00+00'"),
    ("date_part('week', ts)", "count(*), max(date_part('julian', ts))", "iv IS NOT NULL"),
    ("extract(dow from dd)", "count(*)", "iv - iv = '0'"),
    ("b", "count(*)", "-iv > '0'"),
    ("b", "count(*), sum(n)", "COALESCE(n, 0) > 1"),
    # a numeric CASE as an aggregate argument stays in PostgreSQL (each
    # value's own scale decides the sum's)
    ("b", "count(*), sum(CASE WHEN i4 > 0 THEN n ELSE 0 END)", "true"),
]


@pytest.mark.parametrize("schema", ["engt_agg", "engt_agg_copy"])
def test_gpupreagg_equal_postgresql(schema):
    """Keys, aggregate arguments and filters of the added forms in
    GpuPreAgg: groups as PostgreSQL's, fallbacks (infinities that extract()
    returns as numeric) and errors included (the file mapped by the service,
    and read into its own buffers)."""
    queries = ["SELECT string_agg(s::text, ';' ORDER BY s::text) FROM (SELECT %s AS k, %s "
               "FROM engt.edge WHERE %s GROUP BY 1) s" % g for g in GROUPINGS]
    # the engine runs every grouping but two: extract(millennium) of dd's
    # infinities is numeric infinity (a fallback), and the last stays in PostgreSQL
    bad = unequal(DB.compare(schema, queries[:5] + queries[6:-1], node="GpuPreAgg"))
    bad += unequal(DB.compare(schema, queries[5:6] + queries[-1:]))
    assert not bad, "\n".join(bad)
    sets = tuple("SET %s = %s" % x for x in ENGINE)
    DB.falls_back("SELECT %s, %s FROM engt.edge WHERE %s GROUP BY 1" % GROUPINGS[5], "GpuPreAgg",
                  on=sets)
    for key, aggs, where in GROUPINGS[:4]:
        p = plan("SELECT %s, %s FROM engt.edge WHERE %s GROUP BY 1" % (key, aggs, where), True)
        assert "Custom Scan (GpuPreAgg)" in p and "Engine Filter:" in p, p
    p = plan("SELECT %s, %s FROM engt.edge WHERE %s GROUP BY 1" % GROUPINGS[-1], True)
    assert "GpuPreAgg" not in p, p
