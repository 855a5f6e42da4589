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

from engine_edge import column, edge_table, psql, write
from pg_sql import DB, FILTER, find_nodes, unequal


def edge_table_types():
    """The edge table and two columns of this suite's own: iv (intervals:
    months, days, microseconds at their edges) and dd (dates up to past the
    timestamp range, and the infinities)."""
    import datetime
    t = edge_table()
    hour = 3600 * 10**9
    ivs = [(0, 0, 0), (1, 0, 0), (0, 30, 0), (0, 0, 720 * hour), (-1, 0, 0), (0, -1, 1000),
           None, (12, 0, 0), (2**31 - 1, 0, 0), (-2**31, 0, 0), (0, 2**31 - 1, 0),
           (0, 0, 2**62 // 1000 * 1000), (1, -30, 0), (-24000, 5, -3 * hour), (0, -2**31, -1000)]
    big = datetime.date(9999, 12, 31)
    # arrow_fdw reads date32 as days since 1970: past 9999 only as numbers
    dds = pa.array([(x if x is None or isinstance(x, int) else (x - datetime.date(1970, 1, 1)).days)
                    for x in [datetime.date(2000, 1, 1), None, big, 106762939, 106762940,
                              106762941, 2147483494 - 2440588 - 1, datetime.date(1, 1, 1),
                              -2**31, 2**31 - 1, datetime.date(1999, 12, 31)]], pa.int32())
    t = t.append_column("iv", pa.array(column(ivs, 4), pa.month_day_nano_interval()))
    return t.append_column("dd", pa.array(column(dds.to_pylist(), 3), pa.date32()))


def clean_rows(t):
    """The rows of the edge table t where neither dd is infinite nor b true:
    the clauses that PostgreSQL rechecks in every batch of the edge table
    (TYPES_RECHECKED_EVERYWHERE) run in the engine over these."""
    import pyarrow.compute as pc
    finite = pc.and_(pc.not_equal(pc.cast(t["dd"], pa.int32()), -2**31),
                     pc.not_equal(pc.cast(t["dd"], pa.int32()), 2**31 - 1))
    keep = pc.and_kleene(pc.fill_null(finite, True), pc.invert(pc.fill_null(t["b"], False)))
    return t.filter(keep)


@pytest.fixture(scope="module", autouse=True)
def edge():
    d = tempfile.mkdtemp(prefix="pg_warp_engf.")
    os.chmod(d, 0o755)
    path = os.path.join(d, "edge.arrow")
    write(path, edge_table_types())
    write(os.path.join(d, "clean.arrow"), clean_rows(edge_table_types()))
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS engf CASCADE; CREATE SCHEMA engf")
    psql("CREATE FOREIGN TABLE engf.edge (id int4, i2 int2, i4 int4, i8 int8, z int4, "
         "f4 float4, f8 float8, n numeric(20,2), t text, d date, ts timestamp, "
         "tstz timestamptz, b bool, iv interval, dd date) SERVER arrow_fdw OPTIONS (file '%s')"
         % path)
    psql("CREATE FOREIGN TABLE engf.clean (id int4, i2 int2, i4 int4, i8 int8, z int4, "
         "f4 float4, f8 float8, n numeric(20,2), t text, d date, ts timestamp, "
         "tstz timestamptz, b bool, iv interval, dd date) SERVER arrow_fdw OPTIONS (file '%s')"
         % os.path.join(d, "clean.arrow"))
    psql("CREATE COLLATION engf.nd (provider = icu, locale = 'und-u-ks-level2', "
         "deterministic = false)")
    DB.create_run_function("engf")
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

# the clauses of CLAUSES that stay in PostgreSQL's plan (no engine form, a
# non-C collation, numerics the engine cannot hold), and those whose values
# leave the engine's exact range in some batches (numeric products beyond 38
# digits), which PostgreSQL then rechecks
CLAUSES_NOT_IN_ENGINE = [
    "n < 1e40", "n / 2 > 0", "t < 'b' COLLATE \"und-x-icu\"", "t = 'A' COLLATE engf.nd", "t || 'x' = 'ax'", "t < 'b' COLLATE \"und-x-icu\" AND i4 / z > 0",
]
CLAUSES_RECHECKED = ["n * n > 0", "n * n * n > 0"]


def clauses_in_engine(rechecked):
    """The clauses of CLAUSES the engine evaluates: with rechecked those of
    CLAUSES_RECHECKED, else the others."""
    return [c for c in CLAUSES if c not in CLAUSES_NOT_IN_ENGINE and
            (c in CLAUSES_RECHECKED) == rechecked]


# the forms doc/engine.md's "What the engine evaluates" lists as added: each
# with PostgreSQL's results, NULLs, infinities and errors
CLAUSES_TYPES = [
    # interval constants, comparisons, arithmetic, overflow (22008)
    "iv > interval '1 day'", "iv = '1 mon'", "iv <> '30 days'", "iv < '-1 day'", "iv >= '0'",
    "iv <= '1 year'", "iv = '720 hours'", "iv IN ('1 mon', '30 days', '0')",
    "iv NOT IN ('1 mon', NULL)", "iv NOT IN ('1 mon', '1 year')", "iv + interval '1 day' > '1 mon'",
    "iv - interval '1 hour' < '0'", "-iv > '0'", "iv + iv > '0'", "iv - iv = '0'",
    "iv + interval '2147483647 months' > '0'", "iv - interval '1 day' < '0'",
    "COALESCE(iv, interval '0') > '1 day'", "CASE WHEN b THEN iv ELSE '1 day' END > '2 days'",
    "NULLIF(iv, '1 mon') IS NULL", "iv IS NULL", "iv BETWEEN '0' AND '1 mon'",
    "iv = ANY(ARRAY['1 mon', '30 days']::interval[])",
    # timestamp / date / timestamptz with intervals
    "ts + interval '1 hour' > '2000-01-01'", "ts - interval '1 mon' < '1970-01-01'",
    "ts + interval '1 year 2 mons 3 days 04:05:06.789' > '2000-01-01'",
    "ts + interval '290000 years' > '2000-01-01'", "ts - interval '300000 years' < '2000-01-01'",
    "ts + iv > '2000-01-01'", "ts - iv < '2000-01-01'", "ts - ts > interval '1 day'",
    "ts - '2000-01-01'::timestamp > interval '-1000 days'", "ts - ts = interval '0'",
    "tstz + interval '1 hour' > '2000-01-01 00:00+00'",
    "tstz - interval '00:00:00.000001' < '1970-01-01 00:00+00'",
    "tstz + interval '2500000000 hours' > '2000-01-01 00:00+00'",
    "tstz + interval '1 day' > '2000-01-01 00:00+00'", "tstz - tstz > interval '1 day'",
    "tstz - '2000-01-01 00:00+00'::timestamptz < interval '0'",
    "d + interval '1 day' > '2000-01-01'", "d - interval '1 mon' < '1970-01-01'",
    "dd + interval '1 day' > '2000-01-01'", "d + iv > '2000-01-01'",
    "dd - interval '1 hour' < 'infinity'::timestamp",
    # date against timestamp (dates past the timestamp range, infinities)
    "d < ts", "ts >= d", "d = ts", "d <> ts", "dd > ts", "dd <= ts",
    "dd < 'infinity'::timestamp", "dd > '294276-12-31'::timestamp", "dd = '-infinity'::timestamp",
    "ts > '2000-01-01'::date", "ts <= 'infinity'::date", "dd::timestamp > '2000-01-01'",
    "d IN ('2000-01-01 00:00'::timestamp, '1970-01-01 00:00:01'::timestamp)",
    "ts IN ('2000-01-01'::date, '1970-01-01'::date)",
    # extract / date_part / date_trunc
    "extract(year from ts) > 2000", "extract(second from ts) = 3.000004",
    "extract(epoch from ts) > 0", "extract(milliseconds from ts) > 1000",
    "extract(microseconds from ts) = 0", "extract(week from ts) = 1", "extract(isoyear from ts) < 2000",
    "extract(isodow from ts) = 7", "extract(decade from ts) = 200", "extract(century from ts) = 20",
    "extract(millennium from ts) = 2", "extract(doy from ts) = 60", "extract(quarter from ts) = 1",
    "extract(year from d) > 2000", "extract(epoch from d) < 0", "extract(julian from d) > 2451545",
    "extract(dow from dd) = 0", "extract(year from dd) > 5000", "extract(epoch from dd) > 0",
    "extract(week from d) = 52", "extract(isoyear from dd) < 2000", "extract(century from d) = 0",
    "date_part('julian', ts) > 2451545.5", "date_part('week', ts) = 9", "date_part('isoyear', ts) < 1",
    "date_part('milliseconds', ts) > 3000", "date_part('microseconds', ts) = 3000004",
    "date_part('millennium', ts) = 1", "date_part('decade', d) = 199",
    "date_trunc('millennium', ts) < '1001-01-01'", "date_trunc('century', ts) = '1901-01-01'",
    "date_trunc('decade', ts) = '2020-01-01'", "date_trunc('milliseconds', ts) = ts",
    "date_trunc('microseconds', ts) = ts", "date_trunc('week', ts) < '1970-01-01'",
    # extract / date_part of intervals (hours beyond an int: 22008, as interval2tm)
    "extract(epoch from iv) > 86400", "extract(epoch from ts - ts) = 0",
    "extract(epoch from ts - '2000-01-01'::timestamp) < 0", "extract(hour from iv) > 1",
    "extract(minute from -iv) < 0", "extract(second from iv) = 0", "extract(day from iv) < 0",
    "extract(month from iv) = 1", "extract(year from iv) > 0", "extract(quarter from iv) = 1",
    "extract(millennium from iv) <> 0", "extract(milliseconds from iv) > 0",
    "extract(microseconds from iv) = 1", "date_part('epoch', iv) > 2592000",
    "date_part('hour', ts - '1970-01-01'::timestamp) > 100", "date_part('century', iv) < 0",
    "date_part('second', iv) > 0", "extract(hour from iv + interval '2147483647 hours') > 0",
    "date_part('minute', iv - interval '2147483647 hours') < 0",
    "extract(day from iv + interval '2147483647 hours') > 0",
    # numeric mod, unary plus, IN lists and ANY / ALL of every comparable type
    "n % 1.5 = 0", "mod(n, 0.01) = 0", "n % 0 = 0", "n % n = 0", "mod(n, 7) > 0",
    "z <> 0 AND n % z = 0", "n % 0.001 = 0", "+i4 > 0", "+n > 0", "+f8 > 0",
    "n IN (1.5, 42, NULL)", "n NOT IN (1.5, 42)", "n NOT IN (1.5, NULL)", "i4 NOT IN (1, NULL)",
    "t NOT IN ('a', 'b')", "f8 NOT IN ('NaN', 0)", "f4 NOT IN (1.5, 'Infinity')",
    "i4 = ANY('{}'::int4[])", "i4 <> ALL('{}'::int4[])", "n = ANY('{}'::numeric[])",
    "b IN (true, NULL)", "i4 < ANY('{0, 5}')", "t < ALL(ARRAY['b', 'c'])", "n > ALL('{1, 2}')",
    "d NOT IN ('2000-01-01', '1970-01-01')", "ts NOT IN ('2000-01-01', '1970-01-01')",
    "i8 NOT IN (0, 42, -9223372036854775808)",
    # numeric CASE / COALESCE in quals (values at the largest scale)
    "CASE WHEN b THEN n ELSE 0 END > 0", "COALESCE(n, 0) = 0", "COALESCE(n, 1.234) > 1.2",
    "CASE WHEN i4 > 0 THEN 0 ELSE n END < 0", "CASE WHEN b THEN n * n ELSE 1.5 END > 2",
    "CASE WHEN b THEN n END IS NULL", "CASE i2 WHEN 42 THEN 1.00001 WHEN 0 THEN n END > 1",
    "COALESCE(NULL::numeric, n, 2) > 1", "(CASE WHEN b THEN n ELSE 0 END)::int4 = 1",
    "COALESCE(n, 0) * 3 > 100", "CASE WHEN b THEN 1.5 ELSE n * n END > 0",
    "CASE WHEN b THEN n * n * n ELSE 0.5 END > 0", "COALESCE(n * n, 99999999999999999999.1) > 1",
    "CASE WHEN z <> 0 THEN i4::numeric % z ELSE -1 END = 0",
    "CASE WHEN b THEN 99999999999999999999999999999999999999 ELSE n END > 0",
    # bool <-> int4
    "b::int4 = 1", "b::int4 + i4 > 0", "i4::bool", "NOT z::bool", "(z::bool)::int4 = 0",
]


# clauses of CLAUSES_TYPES that stay in PostgreSQL's plan (test_stays_in_postgresql
# says why), and those whose every batch PostgreSQL
# rechecks: each batch of the edge table holds an infinite dd (extract() of it
# is numeric infinity, past the engine's numeric) or a true b (which selects
# the 38-digit constant, past the engine's numeric at n's scale); the engine's
# forms of these run over engf.clean, the edge rows without those values
# (test_rechecked_everywhere_forms_run_in_the_engine)
TYPES_NOT_IN_ENGINE = ["tstz + interval '1 day' > '2000-01-01 00:00+00'",
                       "CASE WHEN b THEN 1.5 ELSE n * n END > 0"]
TYPES_RECHECKED_EVERYWHERE = [
    "extract(year from dd) > 5000", "extract(epoch from dd) > 0", "extract(isoyear from dd) < 2000",
    "CASE WHEN b THEN 99999999999999999999999999999999999999 ELSE n END > 0"]


def compare(clauses, node=FILTER, rechecked=False):
    """[(clause, on, off)]: the ids of the rows where each clause holds, and
    (node) the engine's filter ran (pg_sql.Db.compare)."""
    return [(c, on, off) for c, (_, on, off) in zip(clauses, DB.compare("engf", [
        "SELECT string_agg(id::text, ',' ORDER BY id) FROM engf.edge WHERE " + c
        for c in clauses], node=node, rechecked=rechecked))]


def test_results_equal_postgresql():
    """The engine's filter evaluates the clauses it compiles (PostgreSQL
    rechecks the batches where values leave its range); the others stay in
    PostgreSQL's plan."""
    bad = unequal(compare(clauses_in_engine(False)))
    bad += unequal(compare(clauses_in_engine(True), rechecked=True))
    bad += unequal(compare(CLAUSES_NOT_IN_ENGINE, None))
    assert not bad, "\n".join(bad)
    for c in CLAUSES_NOT_IN_ENGINE:
        assert engine_filter(explain(c)) is None, c


def test_added_forms_equal_postgresql():
    others = TYPES_NOT_IN_ENGINE + TYPES_RECHECKED_EVERYWHERE
    bad = unequal(compare([c for c in CLAUSES_TYPES if c not in others], rechecked=True))
    bad += unequal(compare(others, None))
    assert not bad, "\n".join(bad)
    for c in TYPES_NOT_IN_ENGINE:
        assert engine_filter(explain(c)) is None, c
    for c in TYPES_RECHECKED_EVERYWHERE:
        n = find_nodes(DB.plan("SELECT id FROM engf.edge WHERE " + c, (), analyze=True), FILTER)
        assert len(n) == 1 and n[0]["Engine Fallback Batches"] == n[0]["Batches Read"], n


def test_rechecked_everywhere_forms_run_in_the_engine():
    """The engine's own forms of TYPES_RECHECKED_EVERYWHERE, over rows where
    PostgreSQL need not recheck them: PostgreSQL's answers, no batch rechecked."""
    bad = unequal([(c, on, off) for c, (_, on, off) in zip(
        TYPES_RECHECKED_EVERYWHERE, DB.compare("engf", [
            "SELECT string_agg(id::text, ',' ORDER BY id) FROM engf.clean WHERE " + c
            for c in TYPES_RECHECKED_EVERYWHERE], node=FILTER))])
    assert not bad, "\n".join(bad)


def test_added_forms_errors():
    """The added forms raise PostgreSQL's errors: interval and timestamp
    overflow (22008), numeric mod by zero (22012)."""
    res = {c: on for c, on, off in compare([
        "iv + interval '2147483647 months' > '0'", "-iv > '0'", "iv + iv > '0'",
        "ts + interval '290000 years' > '2000-01-01'",
        "tstz + interval '2500000000 hours' > '2000-01-01 00:00+00'",
        "dd + interval '1 day' > '2000-01-01'", "n % 0 = 0", "n % n = 0"])}
    for c in ("iv + interval '2147483647 months' > '0'", "-iv > '0'", "iv + iv > '0'"):
        assert res[c].startswith("error 22008 interval out of range"), (c, res[c])
    for c in ("ts + interval '290000 years' > '2000-01-01'",
              "tstz + interval '2500000000 hours' > '2000-01-01 00:00+00'"):
        assert res[c].startswith("error 22008 timestamp out of range"), (c, res[c])
    assert res["dd + interval '1 day' > '2000-01-01'"].startswith("error 22008 ")
    assert res["n % 0 = 0"].startswith("error 22012 division by zero")
    assert res["n % n = 0"].startswith("error 22012 division by zero")


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
    "iv > interval '1 day'", "ts + interval '1 hour' < '2000-01-01'", "ts - ts > interval '1 day'",
    "tstz - interval '1 hour' < '2000-01-01'", "d + interval '1 day' > '2000-01-01'",
    "iv + interval '1 hour' > '1 mon'", "iv IN ('1 day', '2 days')",
    "d < ts", "ts >= '2000-01-01'::date", "extract(year from ts) > 2000",
    "extract(epoch from d) > 0", "date_part('week', ts) = 1", "date_trunc('decade', ts) > ts",
    "i4 NOT IN (1, 2)", "n IN (1.5, 2)", "n NOT IN (1.5, 2)", "n % 2 = 0", "+i4 > 0",
    "extract(epoch from ts - ts) = 0", "date_part('day', iv) < 0",
    "CASE WHEN b THEN n ELSE 0 END > 0", "COALESCE(n, 0) * 3 > 100",
    "t LIKE 'a_b'", "t LIKE '%b%a_'", "t ILIKE 'a%'", "CASE WHEN i4 > 0 THEN b END",
])
def test_engine_evaluates(where):
    plan = explain(where)
    assert "Engine: CPU" in plan and engine_filter(plan) is not None, plan
    # the engine's quals are all of them: nothing left for PostgreSQL
    assert "Rows Removed by Filter" not in explain(where, "ANALYZE, COSTS OFF, TIMING OFF")


@pytest.mark.parametrize("where", [
    "t < 'b' COLLATE \"und-x-icu\"", "t = 'A' COLLATE engf.nd", "random() > 2",
    "t LIKE 'a\\'", "t ILIKE 'a%' COLLATE \"und-x-icu\"", "n / 2 > 0", "n < 1e40",
    "tstz::date > '2000-01-01'",
    # what needs the session's time zone, and what the engine does not compute
    "tstz + interval '1 day' < '2000-01-01'", "extract(year from tstz) > 2000",
    "date_trunc('day', tstz, 'UTC') > '2000-01-01'", "d < tstz", "ts < tstz", "tstz > '2000-01-01'::date",
    "iv * 2 > interval '1 day'", "date_trunc('day', iv) > '1 day'", "extract(julian from ts) > 0",
    "extract(week from iv) > 0",
    "n::float8 > 0", "f8::numeric > 0", "CASE WHEN b THEN 1.5 ELSE n * n END > 0",
    "n NOT IN (" + ",".join(str(k) for k in range(40)) + ")",
    # an unsupported type (bpchar), a volatile function, a non-C collation
    "t::bpchar = 'a'", "i4 > random()", "t > 'a' COLLATE \"und-x-icu\"",
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
            res = DB.compare("engf", ["SELECT count(*) || ':' || sum(b) FROM engf.tiles WHERE " + c,
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
