"""Extreme values through pg2arrow and arrow_fdw (issue 9, items 2 and 3).

Every value PostgreSQL can store in a date, timestamp, timestamptz, float,
time, interval or bigint column -- ±infinity, NaN, the first and last finite
values -- must survive pg2arrow -> arrow_fdw unchanged, also when batch
statistics (-S) or row filters decide which rows are read; the values that
Arrow cannot hold must be export errors naming the column.  Files written by
pyarrow with the int min/max of every time unit read as ±infinity
(doc/arrow_fdw.md, "Extreme values: infinity, NaN").  Decimal128 with a
negative scale or a scale above the precision reads exactly (pyarrow's
Decimal values are the oracle).

Uses the running cluster of the environment (PGHOST, PGPORT, PGUSER), a
database of its own (dropped at the end) and pg2arrow from PG_WARP_TOOLS.
Files go to a world-readable temporary directory (the server may run as
another OS user).
"""
import decimal
import json
import os
import shutil
import subprocess
import tempfile

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.environ.get("PG_WARP_TOOLS", os.path.join(ROOT, "tools", "bin"))
PG2ARROW = os.path.join(TOOLS, "pg2arrow")
DB = "extreme_values_%d" % os.getpid()

I64_MIN, I64_MAX = -2**63, 2**63 - 1
I32_MIN, I32_MAX = -2**31, 2**31 - 1


def psql(sql, check=True):
    """Runs sql in the test database; returns (rc, stdout, stderr)."""
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
                        "-d", DB, "-c", "SET datestyle = 'ISO, YMD'; SET timezone = 'UTC'; " + sql],
                       capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r.returncode, r.stdout.strip(), r.stderr


def q(sql):
    return psql(sql)[1]


def lines(sql):
    out = q(sql)
    return out.split("\n") if out else []


def sqlstate(sql):
    rc, _, err = psql(sql, check=False)
    assert rc != 0, "expected an error from: " + sql
    for line in err.splitlines():
        if line.startswith("ERROR:"):
            return line.split()[1].rstrip(":"), err
    raise AssertionError(err)


def p2a(*args, check=True):
    r = subprocess.run([PG2ARROW, "-d", DB] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def plan(sql):
    """EXPLAIN ANALYZE of sql as the dict of its (only) foreign scan node."""
    out = q("EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF) " + sql)
    node = json.loads(out)[0]["Plan"]
    while node["Node Type"] != "Foreign Scan":
        node = node["Plans"][0]
    return node


@pytest.fixture(scope="module", autouse=True)
def database():
    subprocess.run(["psql", "-XAtq", "-d", "postgres", "-c", "DROP DATABASE IF EXISTS %s" % DB],
                   check=True, capture_output=True)
    subprocess.run(["psql", "-XAtq", "-d", "postgres", "-c", "CREATE DATABASE %s" % DB],
                   check=True, capture_output=True)
    psql("CREATE EXTENSION pg_warp")
    yield
    subprocess.run(["psql", "-XAtq", "-d", "postgres", "-c",
                    "DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB], capture_output=True)


@pytest.fixture
def wdir():
    d = tempfile.mkdtemp(prefix="pg_warp_extreme.")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def import_file(table, path):
    os.chmod(path, 0o644)
    psql("DROP FOREIGN TABLE IF EXISTS %s; IMPORT FOREIGN SCHEMA %s FROM SERVER arrow_fdw "
         "INTO public OPTIONS (file '%s')" % (table, table, path))


def column_types(table):
    return lines("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                 "'%s'::regclass AND attnum > 0 ORDER BY attnum" % table)


# ------------------------------------------------------ pg2arrow round trip

# Four record batches of three rows each (ids 3k+1 .. 3k+3): ordinary values,
# then infinity, then -infinity and the first finite values, then the last
# finite values and NULLs.  One list per column, in id order.
COLUMNS = [
    ("ts", "timestamp", [
        "2000-01-01", "2005-06-01 12:00:00.000001", "2010-12-31 23:59:59.999999",
        "infinity", "2015-06-01", None,
        "-infinity", "4714-11-24 00:00:00 BC", "1969-12-31 23:59:59.999999",
        "294247-01-10 04:00:54.775806", None, "1970-01-01"]),
    ("tz", "timestamptz", [
        "2000-01-01+00", "2005-06-01 12:00:00.000001+00", "2010-12-31 23:59:59.999999+00",
        "infinity", "2015-06-01+00", None,
        "-infinity", "4714-11-24 00:00:00+00 BC", "1969-12-31 23:59:59.999999+00",
        "294247-01-10 04:00:54.775806+00", None, "1970-01-01+00"]),
    ("d", "date", [
        "2000-01-01", "2005-06-01", "2010-12-31",
        "infinity", "2015-06-01", None,
        "-infinity", "4714-11-24 BC", "1969-12-31",
        "5874897-12-31", None, "1970-01-01"]),
    ("f4", "float4", [
        "1.5", "-2.25", "0",
        "Infinity", "NaN", None,
        "-Infinity", "-3.4028235e38", "-1e-45",
        "3.4028235e38", "1e-45", "-0"]),
    ("f8", "float8", [
        "1.5", "-2.25", "0",
        "Infinity", "NaN", None,
        "-Infinity", "-1.7976931348623157e308", "-5e-324",
        "1.7976931348623157e308", "5e-324", "-0"]),
    ("t", "time", [
        "00:00:00", "12:00:00", "23:59:59.999999",
        "00:00:00.000001", "01:02:03", None,
        "00:00:00", "23:59:59.999999", None,
        "23:59:59.999999", None, "00:00:00"]),
    # PostgreSQL 15 has no infinite interval; the time part of an Arrow
    # MonthDayNano interval holds +-2^63 ns, so these are the extremes
    ("iv", "interval", [
        "1 day", "-1 month", "0",
        "178956970 years 7 months 2147483647 days 2562047:47:16.854775", "1 year", None,
        "-178956970 years -8 months -2147483648 days -2562047:47:16.854775", "-1 us", None,
        "2147483647 months", None, "1 us"]),
    ("i8", "int8", [
        "1", "-1", "0",
        str(I64_MAX), "5", None,
        str(I64_MIN), str(I64_MIN + 1), "-5",
        str(I64_MAX - 1), None, "0"]),
    ("i4", "int4", [
        "1", "-1", "0",
        str(I32_MAX), "5", None,
        str(I32_MIN), str(I32_MIN + 1), "-5",
        str(I32_MAX - 1), None, "0"]),
    ("i2", "int2", [
        "1", "-1", "0",
        "32767", "5", None,
        "-32768", "-32767", "-5",
        "32766", None, "0"]),
    ("num", "numeric(38,5)", [
        "1.5", "-2.25", "0",
        "999999999999999999999999999999999.99999", "0.00001", None,
        "-999999999999999999999999999999999.99999", "-0.00001", None,
        "123456789012345678901234567890123.45678", None, "0"]),
]

# conditions that statistics and row filters decide, each checked against
# the heap table
CONDITIONS = [
    "ts > '2020-01-01'", "ts = 'infinity'", "ts = '-infinity'", "ts < '1900-01-01'",
    "ts >= '294247-01-01'", "ts <= '-infinity'", "ts >= 'infinity'", "ts < 'infinity'",
    "ts > '-infinity'", "ts IN ('infinity', '2000-01-01')", "ts > date '2020-01-01'",
    "ts BETWEEN '2001-01-01' AND '2016-01-01'",
    "tz > '2020-01-01+00'", "tz = '-infinity'", "tz < '0001-01-01+00'",
    "tz > '294247-01-10 04:00:54.775805+00'",
    "d < '1900-01-01'", "d = 'infinity'", "d > '5874897-01-01'", "d = '-infinity'",
    "d >= '2001-01-01' AND d < 'infinity'", "d > timestamp '2020-01-01'",
    "d IN ('-infinity', '4714-11-24 BC')",
    "f8 > 1e308", "f8 = 'NaN'", "f8 < '-1e308'", "f8 = 'Infinity'", "f4 > 3e38",
    "f4 = '-Infinity'", "f4 < 0",
    "i8 > 0", "i8 = 9223372036854775807", "i8 < -9223372036854775807",
    "i8 >= 9223372036854775806", "i8 <= -9223372036854775808", "i8 > -9223372036854775808",
    "i8 IN (0, -9223372036854775808)", "i8 > 2147483647::int4", "i8 = ANY ('{5,-5}'::int2[])",
    "i4 > 0", "i4 = 2147483647", "i4 < -2147483647", "i4 >= 2147483646::int8",
    "i4 < 3000000000", "i4 > -3000000000", "i4 IN (-2147483648, 5)",
    "i4 = ANY ('{1,2147483647}'::int8[])", "i4 <= -5::int2", "i4 BETWEEN -1 AND 1",
    "i2 < -32767", "i2 = 32767", "i2 >= 32766::int4", "i2 > 40000", "i2 <= -32768::int8",
    "i2 IN (5, -32768)", "i2 > -32769",
    "num > 999999999999999999999999999999999", "num < 0", "num = 0.00001",
    "t > '23:00'", "iv > '100000 years'", "iv < '-100000 years'",
]


# the conditions again under a GpuPreAgg on the CPU engine
ENGINE = "SET pg_warp.engine = cpu; SET pg_warp.engine_startup_cost = 0; "
AGG = "SELECT count(*), coalesce(sum(id), 0) FROM %s WHERE %s"


def sql_literal(v):
    return "NULL" if v is None else "'%s'" % v


@pytest.fixture(scope="module")
def heap():
    """The heap table ext with every column of COLUMNS (ids 1..12)."""
    cols = ", ".join("%s %s" % (n, t) for n, t, _ in COLUMNS)
    rows = []
    for i in range(12):
        rows.append("(%d, %s)" % (i + 1, ", ".join(
            "%s::%s" % (sql_literal(vals[i]), t) for _, t, vals in COLUMNS)))
    psql("CREATE TABLE ext (id int, %s); INSERT INTO ext VALUES %s" % (cols, ", ".join(rows)))
    return "ext"


def export_batches(heap, path, stats):
    """ext to path with pg2arrow: one record batch per three ids."""
    extra = ["-S"] if stats else []
    for k in range(4):
        sql = "SELECT * FROM ext WHERE id BETWEEN %d AND %d ORDER BY id" % (3 * k + 1, 3 * k + 3)
        if k == 0:
            p2a("-o", path, "-c", sql, *extra)
        else:
            p2a("--append=%s" % path, "-c", sql, *extra)
    os.chmod(path, 0o644)


def rows_of(table, where="true"):
    return lines("SELECT x::text FROM %s x WHERE %s ORDER BY id" % (table, where))


@pytest.mark.parametrize("stats", [False, True], ids=["plain", "stats"])
def test_round_trip(heap, wdir, stats):
    path = os.path.join(wdir, "ext.arrow")
    export_batches(heap, path, stats)

    # pyarrow: the sentinels are the storage type's min/max
    with ipc.open_file(path) as f:
        assert f.num_record_batches == 4
        t = f.read_all()
    for name in ("ts", "tz"):
        raw = t.column(name).combine_chunks().view(pa.int64()).to_pylist()
        assert raw[3] == I64_MAX and raw[6] == I64_MIN, raw
        assert raw[9] == I64_MAX - 1
    raw = t.column("d").combine_chunks().view(pa.int32()).to_pylist()
    assert raw[3] == I32_MAX and raw[6] == I32_MIN, raw

    import_file("ext_arrow", path)
    assert column_types("ext_arrow") == column_types(heap)
    want = rows_of(heap)
    assert len(want) == 12
    assert rows_of("ext_arrow") == want
    for cond in CONDITIONS:
        for skip in ("on", "off"):
            got = lines("SET pg_warp.arrow_stats_skip = %s; SELECT x::text FROM ext_arrow x "
                        "WHERE %s ORDER BY id" % (skip, cond))
            assert got == rows_of(heap, cond), (cond, skip)
            # the engine's source decides the batches itself (arrow_stats_skip_batches)
            got = lines(ENGINE + "SET pg_warp.arrow_stats_skip = %s; " % skip +
                        AGG % ("ext_arrow", cond))
            assert got == lines(AGG % (heap, cond)), (cond, skip, "GpuPreAgg")
    # ... and it ran there, on each integer column (their conditions are
    # decided in one loop over the batches, the others one batch at a time)
    for cond in ("i8 > 2147483647::int4", "i4 < 3000000000", "i2 IN (5, -32768)",
                 "d < '1900-01-01'", "ts > '2020-01-01'"):
        out = q(ENGINE + "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + AGG % ("ext_arrow", cond))
        assert "GpuPreAgg" in out and "Engine: CPU" in out, (cond, out)
    if stats:
        # one batch holds each extreme: the engine's source keeps it alone
        for cond in ("i4 = 2147483647", "i2 <= -32768::int8", "i8 < -9223372036854775807",
                     "i4 = ANY ('{-2147483648}'::int8[])"):
            out = q(ENGINE + "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " +
                    AGG % ("ext_arrow", cond))
            assert "Batches Skipped by Statistics: 3" in out, (cond, out)

    if stats:
        # the statistics hold the sentinels and still decide correctly
        md = [ipc.open_file(path).get_batch_with_custom_metadata(i)[1] for i in range(4)]
        assert md[1][b"pg_warp.max.1"] == str(I64_MAX).encode()
        assert md[2][b"pg_warp.min.1"] == str(I64_MIN).encode()
        assert md[1][b"pg_warp.max.3"] == str(I32_MAX).encode()
        n = plan("SELECT * FROM ext_arrow WHERE ts > '2020-01-01'")
        assert n["Batches Skipped"] == 2, n   # the first and the third
        n = plan("SELECT * FROM ext_arrow WHERE ts = 'infinity'")
        assert n["Batches Read"] == 1 and n["Actual Rows"] == 1, n
        n = plan("SELECT * FROM ext_arrow WHERE d = '-infinity'")
        assert n["Batches Read"] == 1 and n["Actual Rows"] == 1, n
        n = plan("SELECT * FROM ext_arrow WHERE d > '5874897-01-01'")
        assert n["Batches Read"] == 2 and n["Actual Rows"] == 2, n   # infinity too
    else:
        n = plan("SELECT * FROM ext_arrow WHERE i8 = 9223372036854775807")
        assert n["Actual Rows"] == 1, n
    psql("DROP FOREIGN TABLE ext_arrow")


def test_numeric_specials(wdir):
    """numeric NaN, ±Infinity: kept by --numeric=text and float8, an error as decimal."""
    psql("CREATE TABLE nspec (id int, nn numeric); INSERT INTO nspec VALUES "
         "(1, 'NaN'), (2, 'Infinity'), (3, '-Infinity'), (4, NULL), (5, 1.25), "
         "(6, -0.000001), (7, 12345678901234567890123456789012.123456)")
    want_text = lines("SELECT coalesce(nn::text, 'null') FROM nspec ORDER BY id")
    path = os.path.join(wdir, "n.arrow")
    r = p2a("-o", path, "-c", "SELECT id, nn FROM nspec ORDER BY id", check=False)
    assert r.returncode != 0
    assert 'column "nn", row 1' in r.stderr and "NaN" in r.stderr and "--numeric" in r.stderr
    assert not os.path.exists(path)

    p2a("--numeric=text", "-o", path, "-c", "SELECT id, nn FROM nspec ORDER BY id")
    import_file("n_text", path)
    assert lines("SELECT coalesce(nn::numeric::text, 'null') FROM n_text ORDER BY id") == want_text
    assert q("SELECT count(*) FROM n_text a JOIN nspec b USING (id) "
             "WHERE a.nn::numeric IS NOT DISTINCT FROM b.nn") == "7"

    p2a("--numeric=float8", "-S", "-o", path, "-c", "SELECT id, nn FROM nspec ORDER BY id")
    import_file("n_f8", path)
    assert q("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
             "'n_f8'::regclass AND attname = 'nn'") == "double precision"
    assert lines("SELECT coalesce(nn::text, 'null') FROM n_f8 ORDER BY id") == \
        lines("SELECT coalesce(nn::float8::text, 'null') FROM nspec ORDER BY id")
    for cond in ("nn = 'NaN'", "nn > 1e300", "nn = '-Infinity'", "nn < 0"):
        assert lines("SELECT id FROM n_f8 WHERE %s ORDER BY id" % cond) == \
            lines("SELECT id FROM nspec WHERE nn::float8 %s ORDER BY id" % cond[2:])


def test_export_errors_name_the_column(wdir):
    """Values Arrow cannot hold: an error naming the column and row, no file."""
    path = os.path.join(wdir, "e.arrow")
    cases = [
        ("SELECT time '12:00' AS a UNION ALL SELECT time '24:00:00' AS a", 'column "a", row 2', "24:00:00"),
        # the last 29 years of timestamps: past int64 microseconds, or int64
        # max itself, which means infinity
        ("SELECT timestamp '294247-01-10 04:00:54.775807' AS tsx", 'column "tsx", row 1', "294247"),
        ("SELECT timestamptz '294276-12-31 23:59:59.999999+00' AS tzx", 'column "tzx", row 1', "294247"),
        ("SELECT interval '2562048 hours' AS ivx", 'column "ivx", row 1', "nanoseconds"),
    ]
    for sql, where, what in cases:
        r = p2a("-o", path, "-c", sql, check=False)
        assert r.returncode != 0, sql
        assert where in r.stderr and what in r.stderr, r.stderr
        assert not os.path.exists(path)
    # the timestamp before those is finite, also after the round trip
    p2a("-o", path, "-c", "SELECT timestamp '294247-01-10 04:00:54.775806' AS ts")
    import_file("last_ts", path)
    assert q("SELECT ts FROM last_ts") == "294247-01-10 04:00:54.775806"


# ------------------------------------------- files from another writer

UNITS = ["s", "ms", "us", "ns"]


def sentinel_table():
    """Timestamps of every unit (with and without zone) and dates, as stored integers."""
    arrays, names = [], []
    for unit in UNITS:
        for tz in (None, "UTC"):
            vals = [I64_MIN, I64_MAX, 0, None, 86400 * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]]
            arrays.append(pa.array(vals, pa.int64()).view(pa.timestamp(unit, tz)))
            names.append("ts_%s%s" % (unit, "_tz" if tz else ""))
    arrays.append(pa.array([I32_MIN, I32_MAX, 0, None, 1], pa.int32()).view(pa.date32()))
    names.append("d32")
    arrays.append(pa.array([I64_MIN, I64_MAX, 0, None, 86400000], pa.int64()).view(pa.date64()))
    names.append("d64")
    return pa.table(arrays, names=names)


def test_pyarrow_sentinels_every_unit(wdir):
    t = sentinel_table()
    path = os.path.join(wdir, "s.arrow")
    with ipc.new_file(path, t.schema) as w:
        w.write_table(t)
    import_file("sent", path)
    for name in t.column_names:
        # pyarrow's oracle: the stored integers are the storage type's min/max
        raw = t.column(name).combine_chunks().view(
            pa.int32() if name == "d32" else pa.int64()).to_pylist()
        lo, hi = (I32_MIN, I32_MAX) if name == "d32" else (I64_MIN, I64_MAX)
        assert raw[:2] == [lo, hi]
        got = lines("SELECT coalesce(%s::text, 'null') FROM sent" % name)
        if name.startswith("d"):
            assert got == ["-infinity", "infinity", "1970-01-01", "null", "1970-01-02"], name
        else:
            zone = "+00" if name.endswith("_tz") else ""
            assert got == ["-infinity", "infinity", "1970-01-01 00:00:00" + zone, "null",
                           "1970-01-02 00:00:00" + zone], name
        assert lines("SELECT count(*) FROM sent WHERE %s = 'infinity' OR %s = '-infinity'"
                     % (name, name)) == ["2"]


def test_pyarrow_next_to_sentinels(wdir):
    """One step inside the sentinels: a finite value, or an error when PostgreSQL has none."""
    cases = {
        # (unit, stored value): the text PostgreSQL shows, or None for 22008
        ("s", I64_MAX - 1): None, ("s", I64_MIN + 1): None,
        ("ms", I64_MAX - 1): None, ("ms", I64_MIN + 1): None,
        ("us", I64_MAX - 1): "294247-01-10 04:00:54.775806",
        ("us", I64_MIN + 1): None,
        ("ns", I64_MAX - 807): "2262-04-11 23:47:16.854775",
        ("ns", I64_MAX - 1): None, ("ns", I64_MIN + 1): None,
    }
    for (unit, v), want in cases.items():
        path = os.path.join(wdir, "n_%s_%d.arrow" % (unit, v))
        t = pa.table([pa.array([v], pa.int64()).view(pa.timestamp(unit))], names=["ts"])
        with ipc.new_file(path, t.schema) as w:
            w.write_table(t)
        import_file("near", path)
        if want is None:
            assert sqlstate("SELECT ts FROM near")[0] == "22008", (unit, v)
        else:
            assert q("SELECT ts FROM near") == want, (unit, v)
            # pyarrow's value, to the microsecond
            assert t.column(0)[0].value == v
    for v, want in ((I32_MAX - 1, None), (I32_MIN + 1, None)):
        path = os.path.join(wdir, "d_%d.arrow" % v)
        t = pa.table([pa.array([v], pa.int32()).view(pa.date32())], names=["d"])
        with ipc.new_file(path, t.schema) as w:
            w.write_table(t)
        import_file("near_d", path)
        assert sqlstate("SELECT d FROM near_d")[0] == "22008"


def test_pyarrow_sentinel_statistics(wdir):
    """Batch statistics holding the sentinels (in s and in days) skip correctly."""
    path = os.path.join(wdir, "st.arrow")
    schema = pa.schema([("ts", pa.timestamp("s")), ("d", pa.date32())])
    batches = [
        ([0, 86400], [0, 1], (0, 86400, 0, 1)),                      # 1970
        ([I64_MAX, 2 * 86400], [I32_MAX, 2], (2 * 86400, I64_MAX, 2, I32_MAX)),
        ([I64_MIN, -86400], [I32_MIN, -1], (I64_MIN, -86400, I32_MIN, -1)),
    ]
    with ipc.new_file(path, schema) as w:
        for ts, d, (tmin, tmax, dmin, dmax) in batches:
            b = pa.record_batch([pa.array(ts, pa.int64()).view(pa.timestamp("s")),
                                 pa.array(d, pa.int32()).view(pa.date32())], schema=schema)
            w.write_batch(b, custom_metadata={
                "pg_warp.min.0": str(tmin), "pg_warp.max.0": str(tmax),
                "pg_warp.min.1": str(dmin), "pg_warp.max.1": str(dmax)})
    import_file("st_sent", path)
    psql("CREATE TABLE st_heap AS SELECT * FROM st_sent")
    for cond, read in (("ts > '2020-01-01'", 1), ("ts = 'infinity'", 1), ("ts < '1960-01-01'", 1),
                       ("ts = '-infinity'", 1), ("d > '2020-01-01'", 1), ("d = '-infinity'", 1),
                       ("d < 'infinity'", 3), ("ts >= '1970-01-02'", 2)):
        got = lines("SELECT ts::text || ' ' || d::text FROM st_sent WHERE %s ORDER BY 1" % cond)
        assert got == lines("SELECT ts::text || ' ' || d::text FROM st_heap WHERE %s ORDER BY 1"
                            % cond), cond
        n = plan("SELECT * FROM st_sent WHERE %s" % cond)
        assert n["Batches Read"] == read, (cond, n)
    assert lines("SELECT count(*) FROM st_sent WHERE ts = 'infinity' AND d = 'infinity'") == ["1"]


# ------------------------------------------------------- decimal scales

def dec_array(unscaled, precision, scale, bits=128):
    """A Decimal128 (or Decimal256) array from unscaled integers (None: NULL),
    as pyarrow stores it."""
    data = b"".join((0 if v is None else v).to_bytes(bits // 8, "little", signed=True)
                    for v in unscaled)
    validity = pa.array([v is not None for v in unscaled]).buffers()[1]
    typ = pa.decimal128 if bits == 128 else pa.decimal256
    a = pa.Array.from_buffers(typ(precision, scale), len(unscaled),
                              [validity, pa.py_buffer(data)])
    a.validate(full=True)
    return a


DECIMALS = [
    # precision, scale, unscaled values
    (5, -2, [123, -99999, 0, None, 99999, 1]),
    (3, 5, [123, -999, 0, None, 1, 999]),
    (38, 0, [10**38 - 1, -(10**38 - 1), 0, None, 1, -1]),
    (38, 38, [10**38 - 1, -(10**38 - 1), 0, None, 1, -1]),
    (38, -38, [10**38 - 1, -(10**38 - 1), 0, None, 1, -1]),
    (1, -38, [9, -9, 0, None, 1, -1]),
    (1, 38, [9, -9, 0, None, 1, -1]),
    (10, -3, [1234567890, -1, 0, None, 42, -42]),
]


def dec_name(p, s):
    return "d_%d_%s" % (p, ("m%d" % -s) if s < 0 else str(s))


def plain(v):
    """PostgreSQL's text form of a Decimal: no exponent, the scale's digits."""
    return "null" if v is None else format(v, "f")


def test_decimal_scales(wdir):
    arrays = [dec_array(u, p, s) for p, s, u in DECIMALS]
    names = [dec_name(p, s) for p, s, _ in DECIMALS]
    t = pa.table(arrays, names=names)
    path = os.path.join(wdir, "dec.arrow")
    with ipc.new_file(path, t.schema) as w:
        for b in t.to_batches(max_chunksize=2):
            w.write_batch(b)
    import_file("decs", path)
    assert column_types("decs") == ["numeric(%d,%d)" % (p, s) for p, s, _ in DECIMALS]
    for name in names:
        want = [plain(v) for v in t.column(name).to_pylist()]
        got = lines("SELECT coalesce(%s::text, 'null') FROM decs" % name)
        assert got == want, name
        # equal as numbers too, through an unconstrained numeric
        for i, v in enumerate(t.column(name).to_pylist()):
            if v is not None:
                assert decimal.Decimal(got[i]) == v

    # a numeric column of the user's choice: plain numeric, or numeric(P, s)
    # with room for the digits left of the point
    psql("CREATE FOREIGN TABLE dec_user (d_5_m2 numeric, d_3_5 numeric(4,5), "
         "d_38_m38 numeric(76,-38), d_10_m3 numeric(13,-3)) SERVER arrow_fdw "
         "OPTIONS (file '%s')" % path)
    for name in ("d_5_m2", "d_3_5", "d_38_m38", "d_10_m3"):
        assert lines("SELECT coalesce(%s::text, 'null') FROM dec_user" % name) == \
            [plain(v) for v in t.column(name).to_pylist()], name
    # too few digits left of the point, or another scale: refused
    for col, bad in (("d_5_m2", "numeric(4,-2)"), ("d_5_m2", "numeric(5,-1)"),
                     ("d_3_5", "numeric(3,4)"), ("d_3_5", "numeric(2,5)")):
        rc, _, err = psql("CREATE FOREIGN TABLE dec_bad (%s %s) SERVER arrow_fdw "
                          "OPTIONS (file '%s'); SELECT * FROM dec_bad" % (col, bad, path),
                          check=False)
        assert rc != 0 and "cannot hold" in err, (bad, err)


DECIMALS256 = DECIMALS + [
    (76, 0, [10**76 - 1, -(10**76 - 1), 0, None, 1, -1]),
    (76, -40, [10**76 - 1, -(10**76 - 1), 0, None, 1, -1]),
    (40, 76, [10**40 - 1, -(10**40 - 1), 0, None, 1, -1]),
]


def test_decimal256_scales(wdir):
    """Decimal256 gets the same types as Decimal128, negative scales and scales
    above the precision included, and reads exactly (76 digits)."""
    arrays = [dec_array(u, p, s, bits=256) for p, s, u in DECIMALS256]
    names = [dec_name(p, s) for p, s, _ in DECIMALS256]
    t = pa.table(arrays, names=names)
    path = os.path.join(wdir, "dec256.arrow")
    with ipc.new_file(path, t.schema) as w:
        for b in t.to_batches(max_chunksize=2):
            w.write_batch(b)
    import_file("decs256", path)
    assert column_types("decs256") == ["numeric(%d,%d)" % (p, s) for p, s, _ in DECIMALS256]
    for name in names:
        want = [plain(v) for v in t.column(name).to_pylist()]
        assert lines("SELECT coalesce(%s::text, 'null') FROM decs256" % name) == want, name


def test_decimal_statistics(wdir):
    """min/max statistics of negative-scale and large-scale decimals skip correctly."""
    path = os.path.join(wdir, "decst.arrow")
    schema = pa.schema([("a", pa.decimal128(5, -2)), ("b", pa.decimal128(3, 5))])
    parts = [([100, 200], [1, 2]), ([-99999, -5], [-999, -5]), ([99999, None], [999, None])]
    with ipc.new_file(path, schema) as w:
        for ua, ub in parts:
            a, b = dec_array(ua, 5, -2), dec_array(ub, 3, 5)
            va = [v for v in a.to_pylist() if v is not None]
            vb = [v for v in b.to_pylist() if v is not None]
            w.write_batch(pa.record_batch([a, b], schema=schema), custom_metadata={
                "pg_warp.min.0": plain(min(va)), "pg_warp.max.0": plain(max(va)),
                "pg_warp.min.1": plain(min(vb)), "pg_warp.max.1": plain(max(vb))})
    import_file("decst", path)
    all_rows = pa.ipc.open_file(path).read_all().to_pylist()
    for cond, pyfilter, read in (
            ("a > 1000000", lambda r: r["a"] is not None and r["a"] > 1000000, 1),
            ("a < 0", lambda r: r["a"] is not None and r["a"] < 0, 1),
            ("a = 20000", lambda r: r["a"] == 20000, 1),
            ("b < 0", lambda r: r["b"] is not None and r["b"] < 0, 1),
            ("b >= 0.00999", lambda r: r["b"] is not None and r["b"] >= decimal.Decimal("0.00999"), 1),
            ("b BETWEEN 0.00001 AND 0.00002", lambda r: r["b"] is not None and
             decimal.Decimal("0.00001") <= r["b"] <= decimal.Decimal("0.00002"), 1)):
        got = lines("SELECT coalesce(a::text, 'null') || ' ' || coalesce(b::text, 'null') "
                    "FROM decst WHERE %s" % cond)
        want = ["%s %s" % (plain(r["a"]), plain(r["b"])) for r in all_rows if pyfilter(r)]
        assert got == want, cond
        assert plan("SELECT * FROM decst WHERE %s" % cond)["Batches Read"] == read, cond


def test_pg2arrow_negative_scale(wdir):
    """numeric(5,-2) and numeric(3,5) export as --numeric says (README) and read back equal."""
    psql("CREATE TABLE negsc (id int, a numeric(5,-2), b numeric(3,5)); INSERT INTO negsc VALUES "
         "(1, 12345, 0.00123), (2, -9999949, -0.00999), (3, 0, 0), (4, NULL, NULL)")
    path = os.path.join(wdir, "negsc.arrow")
    p2a("-o", path, "-c", "SELECT * FROM negsc ORDER BY id")
    t = ipc.open_file(path).read_all()
    assert str(t.schema.field("a").type) == "decimal128(38, 6)"
    assert str(t.schema.field("b").type) == "decimal128(38, 6)"
    import_file("negsc_arrow", path)
    assert q("SELECT count(*) FROM negsc_arrow f JOIN negsc h USING (id) "
             "WHERE f.a IS NOT DISTINCT FROM h.a AND f.b IS NOT DISTINCT FROM h.b") == "4"
    p2a("--numeric=text", "-o", path, "-c", "SELECT * FROM negsc ORDER BY id")
    assert ipc.open_file(path).read_all().column("a").to_pylist() == ["12300", "-9999900", "0", None]
