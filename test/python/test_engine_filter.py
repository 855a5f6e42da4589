"""The engine filter of arrow_fdw scans (src/engine/filter.c, codegen.c)
against PostgreSQL as the oracle.

Every WHERE clause runs over an Arrow table of edge values and NULLs with
pg_warp.enabled on (the engine evaluates the quals it compiles) and off
(PostgreSQL evaluates every qual); the rows, or the error's SQLSTATE and
message, must be equal.  EXPLAIN must show which quals the engine evaluates
and keep the others (a non-C collation, a volatile function, ...) in
PostgreSQL.

Runs against the cluster that scripts/test.sh starts (PGHOST, PGPORT, PGUSER
in the environment, pg_warp installed).
"""
import os
import shutil
import tempfile

import pyarrow as pa
import pytest

from engine_edge import compare as compare_queries
from engine_edge import create_run_function, edge_table, psql, unequal, write


@pytest.fixture(scope="module", autouse=True)
def edge():
    d = tempfile.mkdtemp(prefix="pg_warp_engf.")
    os.chmod(d, 0o755)
    path = os.path.join(d, "edge.arrow")
    write(path, edge_table())
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS engf CASCADE; CREATE SCHEMA engf")
    psql("CREATE FOREIGN TABLE engf.edge (id int4, i2 int2, i4 int4, i8 int8, z int4, "
         "f4 float4, f8 float8, n numeric(20,2), t text, d date, ts timestamp, "
         "tstz timestamptz, b bool) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    psql("CREATE COLLATION engf.nd (provider = icu, locale = 'und-u-ks-level2', "
         "deterministic = false)")
    create_run_function("engf")
    yield
    psql("DROP SCHEMA IF EXISTS engf CASCADE")
    shutil.rmtree(d, ignore_errors=True)


CLAUSES = [
    # integers: edges, overflow, division by zero, conditional evaluation
    "i2 < 0", "i2 = 32767", "i2 + 1 > 0", "i2 + 1::int2 > 0", "i4 * i4 > 0", "i4 * 2 > 0",
    "-i4 < 0", "abs(i2) > 0", "abs(i8) > 0", "i8 * 2 > 0", "i8 - 1 < 0", "i8 + i4 > 0",
    "i4 / z > 1", "z <> 0 AND i4 / z > 1", "z = 0 OR i4 / z > 1", "NOT (z = 0 OR i4 / z > 1)",
    "CASE WHEN z <> 0 THEN i4 / z ELSE -1 END > 1", "i4 % z = 0", "z <> 0 AND i4 % z = 0",
    "mod(i8, 3) = 1", "i8 / -1 > 0", "i2 / z::int2 < 0",
    "i4 BETWEEN -1 AND 42", "i4 NOT BETWEEN -1 AND 42", "i8 BETWEEN SYMMETRIC 42 AND -1",
    "i8 IN (0, 42, -9223372036854775808)", "i4 IN (1, NULL)", "i4 NOT IN (1, 2)",
    "(i2 IN (1, 42)) IS NULL", "i2 IN (1::int8, 3000000000)", "i2::int8 * 100000 > 0",
    "i8::int4 > 0", "i8::int2 = 0", "i4::int2 = 0", "i4::float4 > 0", "i8::float8 > 1e18",
    "i2 < i8", "i4 = i2", "i8 >= i4",
    # floats: NaN, infinities, -0, overflow, division by zero
    "f8 > 0", "f8 = 'NaN'", "f8 < 'Infinity'", "f8 = -0.0", "f8 = 0", "f4 > 1",
    "f4 = 'NaN'::float4", "f4 < f8", "f8 * 1e300 > 0", "f8 / 0 > 0", "f8 / z > 0",
    "f4 * 2 > 0", "f4 / 0::float4 > 0", "f8 IN (1.5, 'NaN', 0)", "f4 IN (1.5, 'NaN')",
    "abs(f8) > 1", "-f4 < 0", "f8 + f4 > 0", "f8::int4 > 0", "f4::int8 > 0", "f8::float4 > 0",
    "f4::float8 = 1.5", "f8 > 'NaN'", "f8 <= '-Infinity'",
    # numeric: exact, fallback beyond 38 digits, casts
    "n > 0", "n = 1.5", "n * n > 0", "n * n * n > 0", "n + 1 > 0", "n - 0.001 < 0",
    "abs(n) > 1", "-n > 0", "n > 1e30", "n < 1e40", "n::int4 > 0", "n::int8 > 0",
    "n::int2 <> 0", "i4::numeric + n > 0", "n IN (1.5, 42)", "n / 2 > 0", "i8::numeric * 10 > 0",
    # text: C collation, other collations, LIKE, functions
    "t = 'a'", "t <> 'a'", "t < 'b'", "t < 'b' COLLATE \"C\"", "t > 'ab' COLLATE \"POSIX\"",
    "t < 'b' COLLATE \"und-x-icu\"", "t = 'a' COLLATE \"und-x-icu\"", "t = 'A' COLLATE engf.nd",
    "t LIKE 'a%'", "t LIKE '%b'", "t LIKE '%b%'", "t LIKE 'ab'", "t LIKE 'a\\%b'",
    "t LIKE 'a_b'", "t LIKE '%'", "t LIKE ''", "t NOT LIKE 'a%'", "t LIKE '%é%'",
    "t LIKE 'ab\\\\%'", "t IN ('a', 'é', NULL)", "t IN ('a', 'zz')", "length(t) > 1",
    "char_length(t) = 3", "substring(t from 2) = 'b'", "substring(t from 2 for 1) = 'b'",
    "substr(t, 0, 2) = 'a'", "substring(t, 1, -1) = ''", "t ILIKE 'A%'", "t || 'x' = 'ax'",
    "t >= ''", "t > '日本'",
    # dates and timestamps
    "d > '2000-01-01'", "d < 'infinity'", "d > '-infinity'", "d = '2024-02-29'",
    "d + 1 > '2000-01-01'", "d - 1 < '1970-01-01'", "d - 2140000000 < '2000-01-01'",
    "d - d = 0", "d - '2000-01-01'::date > 0", "d::timestamp < '2000-01-01'",
    "ts > '2000-01-01'", "ts < 'infinity'", "ts = '-infinity'", "ts::date = '1970-01-01'",
    "date_part('year', ts) > 2000", "date_part('epoch', ts) < 0", "date_part('dow', ts) = 3",
    "date_trunc('month', ts) = '2024-02-01'", "date_trunc('year', ts) < '1971-01-01'",
    "tstz > '2000-01-01 00:00+00'", "tstz < 'infinity'", "ts - ts = interval '0'",
    "ts - ts > ts - '2000-01-01'::timestamp", "extract(year from ts) > 2000",
    # bool, null tests, conditionals
    "b", "NOT b", "b IS TRUE", "b IS NOT FALSE", "b IS UNKNOWN", "b IS NOT UNKNOWN",
    "b = true", "b <> (i4 > 0)", "b AND i4 > 0", "b OR i4 > 0", "NOT (b OR i4 > 0)",
    "i4 IS NULL", "t IS NOT NULL", "n IS NULL", "(i4 > 0) IS NOT TRUE",
    "COALESCE(i2, i4::int2) > 0", "COALESCE(i4, 0) = 0", "COALESCE(t, 'x') = 'x'",
    "NULLIF(i4, 0) IS NULL", "NULLIF(i2, 42) > 0", "NULLIF(t, 'a') IS NULL",
    "CASE i2 WHEN 42 THEN true WHEN 0 THEN NULL ELSE false END",
    "CASE WHEN b THEN t ELSE 'zz' END = 'zz'", "CASE WHEN i2 > 0 THEN i2 * 1000::int2 END > 0",
    "random() >= 0 AND i4 > 0", "i4 > 0 AND random() >= 0", "i4 > 0 AND z <> 0 AND i4 / z > 2",
    # several conjuncts, some compiled
    "i4 > 0 AND t < 'b' COLLATE \"und-x-icu\"", "t < 'b' COLLATE \"und-x-icu\" AND i4 / z > 0",
]


def compare(clauses):
    """[(clause, on, off)]: the ids of the rows where each clause holds."""
    return [(c, on, off) for c, (_, on, off) in zip(clauses, compare_queries("engf", [
        "SELECT string_agg(id::text, ',' ORDER BY id) FROM engf.edge WHERE " + c
        for c in clauses]))]


def test_results_equal_postgresql():
    bad = unequal(compare(CLAUSES))
    assert not bad, "\n".join(bad)


def test_errors_are_postgresql_errors():
    """The errors of the suite are PostgreSQL's (overflow, division by zero,
    out of range, substring), and conditional evaluation raises none."""
    res = {c: on for c, on, off in compare([
        "i4 * i4 > 0", "i4 / z > 1", "f8 / 0 > 0", "d - 2140000000 < '2000-01-01'",
        "substring(t, 1, -1) = ''", "z <> 0 AND i4 / z > 1",
        "CASE WHEN z <> 0 THEN i4 / z ELSE -1 END > 1", "z = 0 OR i4 / z > 1"])}
    assert res["i4 * i4 > 0"].startswith("error 22003 integer out of range")
    assert res["i4 / z > 1"].startswith("error 22012 division by zero")
    assert res["f8 / 0 > 0"].startswith("error 22012")
    assert res["d - 2140000000 < '2000-01-01'"].startswith("error 22008")
    assert res["substring(t, 1, -1) = ''"].startswith("error 22011")
    for c in ("z <> 0 AND i4 / z > 1", "CASE WHEN z <> 0 THEN i4 / z ELSE -1 END > 1",
              "z = 0 OR i4 / z > 1"):
        assert res[c].startswith("ok "), (c, res[c])


def explain(where, opts="COSTS OFF"):
    return psql("EXPLAIN (%s) SELECT id FROM engf.edge WHERE %s" % (opts, where))


def engine_filter(plan):
    for ln in plan.split("\n"):
        if "Engine Filter:" in ln:
            return ln.split("Engine Filter:", 1)[1].strip()
    return None


@pytest.mark.parametrize("where", [
    "i4 > 0 AND i2 < 5", "f8 = 'NaN'", "n * n > 0", "t < 'b'", "t LIKE 'ab%'",
    "d < 'infinity' AND ts > '2000-01-01'", "b IS NOT TRUE",
    "CASE WHEN z <> 0 THEN i4 / z ELSE -1 END > 1", "COALESCE(i4, 0) = 0",
    "i8 IN (1, 2, 3)", "t IN ('a', 'b')", "t = 'a' COLLATE \"und-x-icu\"",
    "date_part('year', ts) > 2000", "substring(t from 2 for 1) = 'b'",
])
def test_engine_evaluates(where):
    plan = explain(where)
    assert "Engine: CPU" in plan and engine_filter(plan) is not None, plan
    # the engine's quals are all of them: nothing left for PostgreSQL
    assert "Rows Removed by Filter" not in explain(where, "ANALYZE, COSTS OFF, TIMING OFF")


@pytest.mark.parametrize("where", [
    "t < 'b' COLLATE \"und-x-icu\"", "t = 'A' COLLATE engf.nd", "random() > 2",
    "t LIKE 'a_b'", "t ILIKE 'a%'", "n / 2 > 0", "n < 1e40", "i4 NOT IN (1, 2)",
    "ts - ts = interval '0'", "extract(year from ts) > 2000", "tstz::date > '2000-01-01'",
])
def test_stays_in_postgresql(where):
    plan = explain(where)
    assert engine_filter(plan) is None, plan
    assert "Filter: " in plan


def test_prefix_only():
    """Conjuncts after one that stays in PostgreSQL stay too (ExecQual's order)."""
    plan = explain("i2 > 0 AND random() > 2 AND i4 > 0")
    filt = [ln for ln in plan.split("\n") if ln.strip().startswith("Filter:")][0]
    ef = engine_filter(plan)
    order = filt.index("random()") < filt.index("i4 > 0")
    assert ef is not None and "random" not in ef
    if order:
        assert "i4" not in ef, plan


def test_explain_verbose_and_fallback():
    plan = explain("i4 > 0 AND t LIKE 'a%'", "VERBOSE, COSTS OFF")
    assert "Engine Program:" in plan and "LOAD_COL" in plan and "LIKE_PREFIX" in plan, plan
    # products beyond 38 digits: those batches go to PostgreSQL
    plan = explain("n * n * n > 0", "ANALYZE, COSTS OFF, TIMING OFF")
    assert "Engine Fallback Batches:" in plan, plan


def test_switched_off():
    plan = psql("SET pg_warp.enabled = off; EXPLAIN (COSTS OFF) SELECT id FROM engf.edge "
                "WHERE i4 > 0")
    assert "Engine" not in plan and "Filter: (i4 > 0)" in plan, plan


def test_parallel_scan_equal():
    """Workers compile the same filter: a parallel count equals PostgreSQL's."""
    q = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
         "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; "
         "ALTER FOREIGN TABLE engf.edge OPTIONS (ADD parallel_workers '2'); "
         "SET pg_warp.enabled = %s; SELECT count(*), sum(i8::numeric) FROM engf.edge "
         "WHERE i4 > 0 OR f8 = 'NaN'; ALTER FOREIGN TABLE engf.edge OPTIONS (DROP parallel_workers)")
    assert psql(q % "on") == psql(q % "off")


def test_batches_of_many_tiles():
    """Record batches of growing sizes (one row to many 1024-row tiles) under
    an aggregate and a sort: the filter's buffers outlive every per-row
    context of the executor."""
    import pyarrow.compute as pc
    d = tempfile.mkdtemp(prefix="pg_warp_engf.")
    os.chmod(d, 0o755)
    path = os.path.join(d, "tiles.arrow")
    n = 0
    schema = pa.schema([("a", pa.int32()), ("b", pa.int64())])
    with pa.ipc.new_file(path, schema) as w:
        for size in (1, 1023, 1025, 5000, 70001, 3):
            a = pc.cast(pc.floor(pc.multiply(pc.random(size, initializer=size), 100)), pa.int32())
            w.write_batch(pa.record_batch([a, pa.array(range(n, n + size), pa.int64())],
                                          schema=schema))
            n += size
    os.chmod(path, 0o644)
    try:
        psql("CREATE FOREIGN TABLE engf.tiles (a int4, b int8) SERVER arrow_fdw "
             "OPTIONS (file '%s')" % path)
        for c in ("a < 3", "a BETWEEN 10 AND 12 AND b % 2 = 0", "a = 99 OR b < 5"):
            res = compare_queries("engf", ["SELECT count(*) || ':' || sum(b) FROM engf.tiles WHERE " + c,
                              "SELECT string_agg(b::text, ',' ORDER BY a, b) FROM "
                              "(SELECT * FROM engf.tiles WHERE %s ORDER BY b DESC LIMIT 50) s" % c])
            for q, on, off in res:
                assert on == off and on.startswith("ok "), (q, on, off)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_many_conjuncts():
    """Qual lists longer than the masks codegen nests (16), each conjunct on
    columns first loaded under the masks of the ones before: results and
    errors as PostgreSQL's, and all of them evaluated by the engine."""
    cols = ["i2", "i4", "i8", "z", "f8", "n", "d"]
    long_true = " AND ".join("%s IS NOT NULL OR id %% %d = 0" % (cols[k % len(cols)], k + 2)
                             for k in range(40))
    narrowing = " AND ".join("id > %d" % k for k in range(20)) + " AND i4 / z > 0"
    guarded = " AND ".join(["z <> 0"] + ["id >= %d" % k for k in range(30)] + ["i4 / z > 1"])
    unguarded = " AND ".join(["id >= %d" % k for k in range(30)] + ["i4 / z > 1"])
    clauses = [long_true, narrowing, guarded, unguarded,
               "(%s) AND t < 'b'" % long_true, "i4 > 0 AND " + " AND ".join(["b"] * 35)]
    res = compare(clauses)
    bad = unequal(res)
    assert not bad, "\n".join(bad)
    errors = {c: on for c, on, off in res}
    assert errors[guarded].startswith("ok "), errors[guarded]
    assert errors[unguarded].startswith("error 22012"), errors[unguarded]
    for c in (long_true, guarded):
        plan = explain(c, "ANALYZE, COSTS OFF, TIMING OFF")
        assert engine_filter(plan) is not None and "Rows Removed by Filter" not in plan, plan
