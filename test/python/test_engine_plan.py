"""The engine's program is compiled when the plan is made and carried in it
(src/engine/executor.c): a cached plan runs the program it was made with,
and where that program no longer fits what the query runs on (the Arrow
files were replaced by files of another layout, the session's time zone
changed), the node leaves the program's work to PostgreSQL and says why.

Each case runs a prepared statement with a generic plan, changes what the
plan depends on, and checks that the next EXECUTE gives PostgreSQL's answer
(the same SQL with pg_warp.enabled = off) and that EXPLAIN ANALYZE EXECUTE
shows the engine node and the reason.  Needs the test cluster of
scripts/test.sh.
"""
import os
import shutil
import subprocess
import tempfile

import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import psql

ON = ("SET pg_warp.engine_startup_cost = 0; SET pg_warp.engine_row_cost = 0; "
      "SET plan_cache_mode = force_generic_plan;\n")


def script(sql):
    """The output lines of a psql session that runs sql (one statement a line)."""
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-f", "-"],
                       input=sql, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def ints(n, typ):
    return pa.table({"id": pa.array(range(n), pa.int32()),
                     "v": pa.array([None if i % 11 == 0 else i % 97 - 40 for i in range(n)],
                                   typ)})


@pytest.fixture(scope="module")
def d():
    d = tempfile.mkdtemp(prefix="pg_warp_plan.")
    os.chmod(d, 0o755)
    n = 4000
    write(os.path.join(d, "v.arrow"), ints(n, pa.int64()), 500)
    base = pa.scalar(1577836800, pa.int64()).as_py()        # 2020-01-01 00:00:00
    ts = [None if i % 13 == 0 else (base + i * 3607) * 1000000 for i in range(n)]
    write(os.path.join(d, "ts.arrow"),
          pa.table({"id": pa.array(range(n), pa.int32()),
                    "ts": pa.array(ts, pa.timestamp("us", tz="UTC"))}), 500)
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS ep CASCADE; CREATE SCHEMA ep")
    psql("CREATE FOREIGN TABLE ep.v (id int4, v int8) SERVER arrow_fdw "
         "OPTIONS (file '%s/v.arrow')" % d)
    psql("CREATE FOREIGN TABLE ep.ts (id int4, ts timestamptz) SERVER arrow_fdw "
         "OPTIONS (file '%s/ts.arrow')" % d)
    psql("CREATE TABLE ep.h AS SELECT id, ts FROM ep.ts; ANALYZE ep.h")
    yield d
    psql("DROP SCHEMA IF EXISTS ep CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def off(sql, settings=""):
    return sorted(script("SET pg_warp.enabled = off; " + settings + "\n" + sql + ";\n"))


# date_trunc of a timestamptz computes with the session's UTC offset
TZ_AGG = ("SELECT date_trunc('day', ts) AS d, count(*), min(id) "
          "FROM ep.ts GROUP BY 1")
TZ_SCAN = ("SELECT id, ts FROM ep.ts "
           "WHERE date_trunc('day', ts) < '2020-01-08 00:00:00+00' AND id % 3 = 0")


@pytest.mark.parametrize("query,node,why_line", [
    (TZ_AGG, "GpuPreAgg", "Fallback Reason: the time zone is not the one the plan was made under"),
    (TZ_SCAN, "GpuScan", "Engine Filter Rechecked by PostgreSQL: the time zone is not the one "
                         "the plan was made under"),
])
def test_cached_plan_under_another_time_zone(d, query, node, why_line):
    """The program holds the session's UTC offset: a cached plan executed
    under another offset must not use it, and gives PostgreSQL's answer."""
    first = script(ON + "SET timezone = 'UTC+3';\nPREPARE q AS " + query + ";\n"
                   "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q;\n")
    assert any("Custom Scan (%s)" % node in l for l in first), first
    assert not any("time zone is not" in l for l in first), first
    out = script(ON + "SET timezone = 'UTC+3';\nPREPARE q AS " + query + ";\n"
                 "EXECUTE q;\nSELECT '--';\nSET timezone = 'UTC-5';\nEXECUTE q;\nSELECT '--';\n"
                 "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q;\n")
    a = out.index("--")
    b = out.index("--", a + 1)
    assert sorted(out[:a]) == off(query, "SET timezone = 'UTC+3';")
    assert sorted(out[a + 1:b]) == off(query, "SET timezone = 'UTC-5';")
    assert sorted(out[a + 1:b]) != sorted(out[:a])       # the offset matters here
    explain = out[b + 1:]
    assert any("Custom Scan (%s)" % node in l for l in explain), explain
    assert any(why_line in l for l in explain), explain


def test_cached_plan_same_offset_runs_the_engine(d):
    """Another zone name of the same fixed offset keeps the program."""
    out = script(ON + "SET timezone = 'UTC+3';\nPREPARE q AS " + TZ_AGG + ";\n"
                 "EXECUTE q;\nSET timezone = 'Etc/GMT+3';\n"
                 "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q;\n")
    assert any("Custom Scan (GpuPreAgg)" in l for l in out), out
    assert any(l.strip().startswith("Engine: ") and "PostgreSQL" not in l for l in out), out


V_AGG = "SELECT v % 5 AS k, count(*), sum(v), min(id) FROM ep.v WHERE v > -30 GROUP BY 1"
V_SCAN = "SELECT id, v FROM ep.v WHERE v % 7 = 1"


@pytest.mark.parametrize("query,node,why_line", [
    (V_AGG, "GpuPreAgg", "Fallback Reason: the table's files changed since the plan was made"),
    (V_SCAN, "GpuScan", "Engine Filter Rechecked by PostgreSQL: the table's files changed "
                        "since the plan was made"),
])
def test_cached_plan_after_files_replaced(d, query, node, why_line):
    """A file replaced by one whose column has another layout (int64 ->
    int32 under an int8 column, which arrow_fdw reads and the plan's
    program does not): PostgreSQL's answer, and EXPLAIN says why."""
    path = os.path.join(d, "v.arrow")
    write(path, ints(4000, pa.int64()), 500)
    write(path + ".new", ints(4100, pa.int32()), 500)
    try:
        # the session caches the plan, runs it, then the file is replaced
        # (psql's \! runs the rename between two EXECUTEs of the same plan)
        out = script(ON + "PREPARE q AS " + query + ";\n"
                     "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q;\nSELECT '--';\n"
                     "\\! mv -f %s.new %s\n" % (path, path) +
                     "EXECUTE q;\nSELECT '--';\n"
                     "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q;\n")
        a = out.index("--")
        b = out.index("--", a + 1)
        first = out[:a]
        assert any("Custom Scan (%s)" % node in l for l in first), first
        assert not any("changed since the plan" in l for l in first), first
        assert sorted(out[a + 1:b]) == off(query)
        explain = out[b + 1:]
        assert any("Custom Scan (%s)" % node in l for l in explain), explain
        assert any(why_line in l for l in explain), explain
    finally:
        write(path, ints(4000, pa.int64()), 500)


def test_parallel_workers_run_the_plans_program(d):
    """Parallel GpuScan: the workers get the program with the plan."""
    out = script(ON + "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
                 "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;\n"
                 "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + V_SCAN + ";\n")
    assert any("Parallel Custom Scan (GpuScan)" in l or "Custom Scan (GpuScan)" in l
               for l in out), out
    assert any("Gather" in l for l in out), out
    got = script(ON + "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
                 "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;\n"
                 + V_SCAN + ";\n")
    assert sorted(got) == off(V_SCAN)


def test_heap_scan_under_another_time_zone(d):
    """GpuScan over a heap table: the same rule (its program is the plan's)."""
    q = ("SELECT id FROM ep.h WHERE date_trunc('day', ts) < '2020-01-08 00:00:00+00' "
         "AND id % 3 = 0")
    out = script(ON + "SET pg_warp.enable_gpuscan_heap = on;\nSET timezone = 'UTC+3';\n"
                 "PREPARE q AS " + q + ";\nEXECUTE q;\nSELECT '--';\nSET timezone = 'UTC-5';\n"
                 "EXECUTE q;\nSELECT '--';\nEXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q;\n")
    a = out.index("--")
    b = out.index("--", a + 1)
    assert sorted(out[:a]) == off(q, "SET timezone = 'UTC+3';")
    assert sorted(out[a + 1:b]) == off(q, "SET timezone = 'UTC-5';")
    explain = out[b + 1:]
    assert any("Custom Scan (GpuScan)" in l for l in explain), explain
    assert any("time zone is not the one the plan was made under" in l for l in explain), explain


# ---- shippability: where the engine does not take a query, EXPLAIN says why ----

@pytest.fixture(scope="module")
def nested(d):
    t = pa.table({"id": pa.array(range(300), pa.int32()),
                  "l": pa.array([[i, i + 1] if i % 4 else None for i in range(300)],
                                pa.list_(pa.int32())),
                  "iv": pa.array([i % 17 for i in range(300)], pa.int64())})
    write(os.path.join(d, "l.arrow"), t, 500)
    psql("CREATE FOREIGN TABLE ep.l (id int4, l int4[], iv int8) SERVER arrow_fdw "
         "OPTIONS (file '%s/l.arrow')" % d)
    psql("CREATE TABLE ep.rls (id int4, v int8); INSERT INTO ep.rls "
         "SELECT i, i % 7 FROM generate_series(1, 500) i; ANALYZE ep.rls; "
         "ALTER TABLE ep.rls ENABLE ROW LEVEL SECURITY; ALTER TABLE ep.rls FORCE ROW LEVEL "
         "SECURITY; CREATE POLICY p ON ep.rls USING (id % 2 = 0)")
    # superusers bypass row level security: the query runs as a plain role
    psql("DROP ROLE IF EXISTS ep_reader; CREATE ROLE ep_reader; "
         "GRANT USAGE ON SCHEMA ep TO ep_reader; GRANT SELECT ON ALL TABLES IN SCHEMA ep "
         "TO ep_reader")
    yield d
    psql("DROP OWNED BY ep_reader; DROP ROLE ep_reader")


MANY_KEYS = ", ".join("iv + %d" % i for i in range(33))

WHY = [
    ("SELECT count(DISTINCT id) FROM ep.l",
     "pg_warp: GpuPreAgg: count() with DISTINCT, ORDER BY or FILTER"),
    ("SELECT sum(iv) FILTER (WHERE id > 3) FROM ep.l",
     "pg_warp: GpuPreAgg: sum() with DISTINCT, ORDER BY or FILTER"),
    ("SELECT bool_and(id > 1) FROM ep.l",
     "pg_warp: GpuPreAgg: bool_and(boolean) is not an aggregate the engine computes"),
    ("SELECT string_agg(id::text, ',' ORDER BY id) FROM ep.l",
     "pg_warp: GpuPreAgg: string_agg() with DISTINCT, ORDER BY or FILTER"),
    ("SELECT string_agg(id::text, ',') FROM ep.l",
     "pg_warp: GpuPreAgg: string_agg(text,text) is not an aggregate the engine computes"),
    ("SELECT make_interval(secs => iv), count(*) FROM ep.l GROUP BY 1",
     "pg_warp: GpuPreAgg: a group key of type interval"),
    ("SELECT iv, count(*) FROM ep.l GROUP BY CUBE (iv)",
     "pg_warp: GpuPreAgg: GROUPING SETS, ROLLUP or CUBE"),
    # (an equality join runs in the engine: GpuJoin, every match where keys repeat)
    ("SELECT sum(l.iv) FROM ep.l l, ep.v v WHERE l.id < v.id",
     "pg_warp: GpuPreAgg: the grouping reads a join of 2 relations"),
    ("SELECT count(*) FROM ep.l GROUP BY " + MANY_KEYS,
     "pg_warp: GpuPreAgg: 33 group keys (the engine holds 32)"),
    ("SET ROLE ep_reader; SELECT v, count(*) FROM ep.rls GROUP BY v",
     "pg_warp: GpuPreAgg: \"rls\" has row level security"),
    ("SELECT iv, count(*) FROM ep.l GROUP BY iv HAVING count(*) > (SELECT 1)",
     None),
]


@pytest.mark.parametrize("query,why", WHY)
def test_why_not_in_engine(nested, query, why):
    """The reason is the shippability check's own (shippable.c), and the
    query gives PostgreSQL's answer."""
    role, _, query = query.rpartition("; ")
    role = role + ";\n" if role else ""
    plan = "\n".join(script(ON + "SET pg_warp.enable_gpupreagg_heap = on;\n" + role +
                            "EXPLAIN (VERBOSE, COSTS OFF) " + query + ";\n"))
    if why is None:
        # a subquery in HAVING is PostgreSQL's; the grouping itself is the engine's
        assert "Custom Scan (GpuPreAgg)" in plan, plan
    else:
        assert "Custom Scan (GpuPreAgg)" not in plan, plan
        assert why in plan, plan
    got = script(ON + "SET pg_warp.enable_gpupreagg_heap = on;\n" + role + query + ";\n")
    assert sorted(got) == off(query, role)


def test_why_gpuscan_leaves_a_nested_column(nested):
    plan = "\n".join(script(ON + "EXPLAIN (VERBOSE, COSTS OFF) SELECT id, l FROM ep.l "
                            "WHERE id > 100;\n"))
    assert "Custom Scan (GpuScan)" not in plan, plan
    assert ("Not in engine: GpuScan: column l is of a layout the service does not return"
            in plan), plan
