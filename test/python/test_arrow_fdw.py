"""arrow_fdw against pyarrow and against PostgreSQL itself.

Runs against the cluster that scripts/test.sh starts (PGHOST, PGPORT, PGUSER in
the environment, pg_warp installed).  The Arrow files come from
test/data/make_testdata.py, run by this module into a temporary directory of its
own; they and the files this suite writes itself go to world-readable temporary
directories (not pytest's tmp_path, which is private to our OS user), because the
server runs as another OS user.
"""
import datetime
import decimal
import os
import shutil
import subprocess
import tempfile

import pyarrow as pa
import pytest

from pg_sql import psql, sqlstate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = None         # the directory of make_testdata.py's files, set by setup()


def q(sql):
    return psql(sql)[1]


@pytest.fixture(scope="module", autouse=True)
def setup():
    global DATA
    top = tempfile.mkdtemp(prefix="pg_warp_fdw_data.")
    os.chmod(top, 0o755)
    DATA = os.path.join(top, "data")
    subprocess.run(["python3", os.path.join(ROOT, "test/data/make_testdata.py"), DATA], check=True)
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS fdwpy CASCADE; CREATE SCHEMA fdwpy")
    yield
    psql("DROP SCHEMA IF EXISTS fdwpy CASCADE")
    shutil.rmtree(top, ignore_errors=True)


def write(path, table, **kw):
    with pa.ipc.new_file(path, table.schema, options=pa.ipc.IpcWriteOptions(**kw)) as w:
        for b in table.to_batches(max_chunksize=3):
            w.write_batch(b)
    os.chmod(path, 0o644)


def py_text(v):
    """PostgreSQL's text output for a Python value from pyarrow (simple types)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return "\\x" + v.hex()
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    return str(v)


@pytest.mark.parametrize("name", ["types.arrow", "types_lz4.arrow", "types_zstd.arrow"])
def test_values_equal_pyarrow(name):
    """Every scalar column reads exactly what pyarrow reads."""
    t = pa.ipc.open_file(os.path.join(DATA, name)).read_all()
    cols = ["b", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "dec", "d32", "s", "ls",
            "bin", "lbin", "fsb", "ts_us", "dict"]
    psql("DROP FOREIGN TABLE IF EXISTS fdwpy.t; CREATE FOREIGN TABLE fdwpy.t ("
         "b bool, i8 int2, i16 int2, i32 int4, i64 int8, u8 int2, u16 int4, u32 int8, u64 numeric,"
         "dec numeric, d32 date, s text, ls text, bin bytea, lbin bytea, fsb bytea, ts_us timestamp,"
         "dict text) SERVER arrow_fdw OPTIONS (file '%s/%s')" % (DATA, name))
    out = q("SET datestyle = 'ISO'; SELECT %s FROM fdwpy.t" % ", ".join(
        "coalesce(%s::text, '<null>')" % c for c in cols))
    got = [line.split("|") for line in out.splitlines()]
    want = []
    for i in range(t.num_rows):
        row = []
        for c in cols:
            v = t.column(c)[i].as_py()
            row.append("<null>" if v is None else py_text(v))
        want.append(row)
    assert got == want


def test_floats_bit_exact():
    t = pa.ipc.open_file(os.path.join(DATA, "types.arrow")).read_all()
    psql("DROP FOREIGN TABLE IF EXISTS fdwpy.f; CREATE FOREIGN TABLE fdwpy.f (f32 float4, f64 float8)"
         " SERVER arrow_fdw OPTIONS (file '%s/types.arrow')" % DATA)
    out = q("SET extra_float_digits = 3; SELECT coalesce(f32::float8::text, 'null'), "
            "coalesce(f64::text, 'null') FROM fdwpy.f")
    for i, line in enumerate(out.splitlines()):
        a, b = line.split("|")
        for got, v in ((a, t.column("f32")[i].as_py()), (b, t.column("f64")[i].as_py())):
            if v is None:
                assert got == "null"
            elif v != v:
                assert got == "NaN"
            elif v in (float("inf"), float("-inf")):
                assert got == ("Infinity" if v > 0 else "-Infinity")
            else:
                assert float(got) == v


def test_parallel_scan_counts_batches():
    psql("DROP FOREIGN TABLE IF EXISTS fdwpy.m; CREATE FOREIGN TABLE fdwpy.m (id int8, val float8)"
         " SERVER arrow_fdw OPTIONS (file '%s/many.arrow')" % DATA)
    sets = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
            "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 3; ")
    plan = q(sets + "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
             "SELECT count(*) FROM fdwpy.m WHERE id >= 50000")
    assert "Parallel Foreign Scan" in plan, plan
    assert "Batches Read: 50" in plan, plan
    assert "Batches Skipped: 50" in plan, plan
    assert q(sets + "SELECT count(*), count(DISTINCT id), sum(id) FROM fdwpy.m") == \
        "100000|100000|%d" % (99999 * 100000 // 2)


def test_file_changed_after_planning(tmpdir_world):
    path = os.path.join(tmpdir_world, "t.arrow")
    write(path, pa.table({"x": pa.array(range(10), pa.int64())}))
    psql("DROP FOREIGN TABLE IF EXISTS fdwpy.c; CREATE FOREIGN TABLE fdwpy.c (x int8)"
         " SERVER arrow_fdw OPTIONS (file '%s')" % path)
    script = ("SET plan_cache_mode = force_generic_plan;\n"
              "PREPARE p AS SELECT sum(x) FROM fdwpy.c;\n"
              "EXECUTE p;\n"
              "\\! python3 -c \"import os; os.utime('%s', (1, 1))\"\n"
              "EXECUTE p;\n" % path)
    r = subprocess.run(["psql", "-XAtq", "-v", "VERBOSITY=verbose"], input=script,
                       capture_output=True, text=True)
    assert r.stdout.strip().splitlines()[0] == "45"
    assert "55000" in r.stderr and "changed after the query was planned" in r.stderr, r.stderr
    # a new plan sees the file as it is now
    assert q("SELECT sum(x) FROM fdwpy.c") == "45"


def test_error_sqlstates(tmpdir_world):
    cases = [
        ("no_such_file.arrow", "58P01"),     # undefined_file
        ("corrupt.arrow", "XX001"),          # data_corrupted
        ("truncated.arrow", "XX001"),
        ("garbage.arrow", "XX001"),
        ("zero.arrow", "XX001"),
    ]
    for name, code in cases:
        got, err = sqlstate("CREATE FOREIGN TABLE fdwpy.e (id int8) SERVER arrow_fdw "
                            "OPTIONS (file '%s/%s')" % (DATA, name))
        assert got == code, (name, err)
        assert name in err
    got, err = sqlstate("CREATE FOREIGN TABLE fdwpy.e (x int8) SERVER arrow_fdw "
                        "OPTIONS (dir '%s/mismatch')" % DATA)
    assert got == "HV021" and "mismatch/b.arrow" in err and '"x"' in err, err
    got, err = sqlstate("CREATE FOREIGN TABLE fdwpy.e (id int4) SERVER arrow_fdw "
                        "OPTIONS (file '%s/many.arrow')" % DATA)
    assert got == "HV004", err
    got, err = sqlstate("CREATE FOREIGN TABLE fdwpy.e (nosuch int4) SERVER arrow_fdw "
                        "OPTIONS (file '%s/many.arrow')" % DATA)
    assert got == "HV005", err
    # a file removed after the table was made: an error at planning
    path = os.path.join(tmpdir_world, "gone.arrow")
    write(path, pa.table({"x": pa.array([1], pa.int64())}))
    psql("DROP FOREIGN TABLE IF EXISTS fdwpy.g; CREATE FOREIGN TABLE fdwpy.g (x int8)"
         " SERVER arrow_fdw OPTIONS (file '%s')" % path)
    os.unlink(path)
    got, err = sqlstate("SELECT * FROM fdwpy.g")
    assert got == "58P01", err
    assert q("SELECT 1") == "1"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a file the server's OS user cannot read")
def test_unreadable_file():
    got, err = sqlstate("CREATE FOREIGN TABLE fdwpy.e (x int8) SERVER arrow_fdw "
                        "OPTIONS (file '%s/noperm.arrow')" % DATA)
    assert got == "42501" and "noperm.arrow" in err, err


def scan_every_file(d):
    """IMPORTs and scans every file of d; returns (scanned, errors)."""
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    if not names:
        pytest.skip("no files in " + d)
    scanned = errors = 0
    for name in names:
        path = os.path.join(d, name).replace("'", "''")
        sql = ("DROP SCHEMA IF EXISTS fz CASCADE; CREATE SCHEMA fz;\n"
               "IMPORT FOREIGN SCHEMA t FROM SERVER arrow_fdw INTO fz OPTIONS (file '%s');\n"
               "SELECT count(*), sum(length(t::text)) FROM fz.t t;\n" % path)
        rc, out, err = psql(sql, check=False)
        if rc == 0:
            scanned += 1
        else:
            errors += 1
            assert "ERROR" in err, (name, err)
            assert "server closed the connection" not in err, (name, err)
            assert "terminated" not in err, (name, err)
        assert q("SELECT 1") == "1", "server died after " + name
    psql("DROP SCHEMA IF EXISTS fz CASCADE")
    assert scanned + errors == len(names)
    return scanned, errors


def test_fuzz_corpus_never_crashes():
    """Every file of the reader's fuzz corpus either scans or errors."""
    scan_every_file(os.path.join(DATA, "fuzz"))


def test_mutated_files_never_crash():
    """Valid files with overwritten bytes: each scans or errors, the server survives."""
    scanned, errors = scan_every_file(os.path.join(DATA, "mutants"))
    assert errors > 0 and scanned > 0


def test_uint64_and_decimal_exact(tmpdir_world):
    path = os.path.join(tmpdir_world, "n.arrow")
    D = decimal.Decimal
    t = pa.table({"u": pa.array([2**64 - 1, 0, 2**63], pa.uint64()),
                  "d": pa.array([D("-99999999999999999999999999999999999.999"), D("0.000"), D("1.001")],
                                pa.decimal128(38, 3))})
    write(path, t)
    psql("DROP SCHEMA IF EXISTS n CASCADE; CREATE SCHEMA n; IMPORT FOREIGN SCHEMA t FROM SERVER arrow_fdw"
         " INTO n OPTIONS (file '%s')" % path)
    assert q("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'n.t'::regclass"
             " AND attnum > 0 ORDER BY attnum").splitlines() == ["numeric", "numeric(38,3)"]
    assert q("SELECT u, d FROM n.t").splitlines() == [
        "18446744073709551615|-99999999999999999999999999999999999.999", "0|0.000",
        "9223372036854775808|1.001"]
    psql("DROP SCHEMA n CASCADE")


def test_pg_type_metadata_restores_types(tmpdir_world):
    """pg_type field metadata (what pg2arrow writes) picks the exact type when it can hold the field."""
    path = os.path.join(tmpdir_world, "m.arrow")
    sch = pa.schema([
        pa.field("v", pa.utf8(), metadata={"pg_type": "character varying(20)"}),
        pa.field("j", pa.utf8(), metadata={"pg_type": "jsonb"}),
        pa.field("n", pa.int32(), metadata={"pg_type": "numeric(12,2)"}),   # cannot hold: default
        pa.field("x", pa.int64(), metadata={"pg_type": "no_such_type"}),
        pa.field("y", pa.int16(), metadata={"pg_type": "integer"}),
        pa.field("z", pa.int16(), metadata={"pg_type": "'; drop table x; --"}),
    ])
    t = pa.table([pa.array(["a"]), pa.array(['{"a": 1}']), pa.array([1], pa.int32()),
                  pa.array([2], pa.int64()), pa.array([3], pa.int16()), pa.array([4], pa.int16())],
                 schema=sch)
    write(path, t)
    psql("DROP SCHEMA IF EXISTS md CASCADE; CREATE SCHEMA md; IMPORT FOREIGN SCHEMA t FROM SERVER arrow_fdw"
         " INTO md OPTIONS (file '%s')" % path)
    assert q("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'md.t'::regclass"
             " AND attnum > 0 ORDER BY attnum").splitlines() == [
        "character varying(20)", "jsonb", "integer", "bigint", "integer", "smallint"]
    assert q("SELECT v, j->>'a', n, x, y, z FROM md.t") == "a|1|1|2|3|4"
    psql("DROP SCHEMA md CASCADE")


# The default PostgreSQL type of each Arrow type (doc/arrow_fdw.md), written
# out here rather than taken from the library's type table it checks
DEFAULT_TYPES = [
    (pa.null(), "text"), (pa.bool_(), "boolean"),
    (pa.int8(), "smallint"), (pa.int16(), "smallint"), (pa.int32(), "integer"),
    (pa.int64(), "bigint"), (pa.uint8(), "smallint"), (pa.uint16(), "integer"),
    (pa.uint32(), "bigint"), (pa.uint64(), "numeric"),
    # float16: pg_warp's float2 (doc/arrow_fdw.md: "float2 if such a type exists")
    (pa.float16(), "pgwarp.float2"), (pa.float32(), "real"), (pa.float64(), "double precision"),
    (pa.decimal128(10, 2), "numeric(10,2)"), (pa.decimal256(40, 3), "numeric(40,3)"),
    (pa.date32(), "date"), (pa.date64(), "date"),
    (pa.time32("ms"), "time without time zone"), (pa.time64("us"), "time without time zone"),
    (pa.timestamp("us"), "timestamp without time zone"),
    (pa.timestamp("ms", tz="UTC"), "timestamp with time zone"),
    (pa.month_day_nano_interval(), "interval"), (pa.duration("s"), "interval"),
    (pa.utf8(), "text"), (pa.large_utf8(), "text"), (pa.string_view(), "text"),
    (pa.binary(), "bytea"), (pa.large_binary(), "bytea"), (pa.binary(4), "bytea"),
    (pa.binary_view(), "bytea"),
    (pa.list_(pa.int32()), "integer[]"), (pa.large_list(pa.utf8()), "text[]"),
    (pa.list_(pa.float64(), 3), "double precision[]"),
    (pa.list_view(pa.int16()), "smallint[]"),
    (pa.map_(pa.utf8(), pa.int32()), "jsonb"),
    (pa.run_end_encoded(pa.int32(), pa.utf8()), "text"),
]


def test_import_default_type_of_every_arrow_type(tmpdir_world):
    """IMPORT FOREIGN SCHEMA gives each Arrow type its documented default type."""
    path = os.path.join(tmpdir_world, "every_type.arrow")
    fields = [pa.field("c%d" % i, t) for i, (t, _) in enumerate(DEFAULT_TYPES)]
    table = pa.table([pa.nulls(1, f.type) for f in fields], schema=pa.schema(fields))
    write(path, table)
    psql("DROP SCHEMA IF EXISTS dt CASCADE; CREATE SCHEMA dt; IMPORT FOREIGN SCHEMA t FROM SERVER arrow_fdw"
         " INTO dt OPTIONS (file '%s')" % path)
    got = q("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'dt.t'::regclass"
            " AND attnum > 0 ORDER BY attnum").splitlines()
    assert list(zip([str(t) for t, _ in DEFAULT_TYPES], got)) == \
        [(str(t), pg) for t, pg in DEFAULT_TYPES]
    assert q("SELECT count(*) FROM dt.t") == "1"
    psql("DROP SCHEMA dt CASCADE")


def pg2arrow():
    tools = os.environ.get("PG_WARP_TOOLS", os.path.join(ROOT, "tools", "bin"))
    p = os.path.join(tools, "pg2arrow")
    return p if os.access(p, os.X_OK) else None


@pytest.mark.skipif(pg2arrow() is None, reason="pg2arrow is not built in this checkout")
def test_pg2arrow_round_trip(tmpdir_world):
    """table -> pg2arrow -> arrow_fdw equals the table."""
    psql("""DROP TABLE IF EXISTS fdwpy.src;
        CREATE TABLE fdwpy.src AS SELECT i::int4 AS i, (i::int8 * 1000000007) AS b,
          (i / 7.0)::numeric(12,4) AS n, i / 3.0::float8 AS f, 'r' || i AS s,
          date '2000-01-01' + i AS d, timestamp '2020-01-01' + i * interval '1 second' AS ts,
          CASE WHEN i % 5 = 0 THEN NULL ELSE i % 2 = 0 END AS flag
          FROM generate_series(1, 5000) i""")
    out = os.path.join(tmpdir_world, "rt.arrow")
    r = subprocess.run([pg2arrow(), "-c", "SELECT * FROM fdwpy.src", "-o", out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    os.chmod(out, 0o644)
    psql("DROP SCHEMA IF EXISTS rt CASCADE; CREATE SCHEMA rt; IMPORT FOREIGN SCHEMA src FROM SERVER"
         " arrow_fdw INTO rt OPTIONS (file '%s')" % out)
    assert q("SELECT count(*) FROM (SELECT * FROM fdwpy.src EXCEPT ALL SELECT * FROM rt.src) x") == "0"
    assert q("SELECT count(*) FROM (SELECT * FROM rt.src EXCEPT ALL SELECT * FROM fdwpy.src) x") == "0"
    psql("DROP SCHEMA rt CASCADE")


def test_without_preload():
    """Without shared_preload_libraries the first CREATE of a session is not checked
    (the library loads during that statement); planning raises the error."""
    import socket
    cluster = os.path.join(ROOT, "scripts", "cluster.sh")
    base = tempfile.mkdtemp(prefix="pg_warp_plain.")
    os.chmod(base, 0o755)
    d = os.path.join(base, "c")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PGPORT=str(port), PG_WARP_PRELOAD="0")
    out = subprocess.run(["bash", cluster, "start", d], env=env, check=True,
                         capture_output=True, text=True).stdout
    for word in out.split():
        if "=" in word and word.startswith("PG"):
            k, v = word.split("=", 1)
            env[k] = v

    def run(sql):
        return subprocess.run(["psql", "-XAtq", "-v", "VERBOSITY=verbose", "-c", sql], env=env,
                              capture_output=True, text=True)
    try:
        assert run("CREATE EXTENSION pg_warp").returncode == 0
        create = ("CREATE FOREIGN TABLE %s (id int4) SERVER arrow_fdw "
                  "OPTIONS (file '%s/many.arrow')")
        r = run(create % ("unchecked", DATA))
        assert r.returncode == 0, r.stderr               # not checked: library not loaded yet
        r = run("SELECT count(*) FROM unchecked")
        assert r.returncode != 0 and "HV004" in r.stderr, r.stderr
        # once loaded in a session, CREATE is checked
        r2 = subprocess.run(["psql", "-XAtq", "-v", "VERBOSITY=verbose"], env=env, text=True,
                            capture_output=True,
                            input="LOAD 'pg_warp';\n" + create % ("checked", DATA) + ";\n")
        assert "HV004" in r2.stderr, r2.stderr
    finally:
        subprocess.run(["bash", cluster, "destroy", d], env=env, check=False, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(pg2arrow() is None, reason="pg2arrow is not built in this checkout")
def test_pg2arrow_round_trip_types(tmpdir_world):
    """Every kind of column pg2arrow exports comes back equal through IMPORT
    (pg_type metadata restores the types), parallel export with statistics."""
    psql("""DROP TABLE IF EXISTS fdwpy.src2; DROP TYPE IF EXISTS fdwpy.mood CASCADE;
        DROP TYPE IF EXISTS fdwpy.pair CASCADE;
        CREATE TYPE fdwpy.mood AS ENUM ('sad', 'ok', 'happy');
        CREATE TYPE fdwpy.pair AS (a int4, b text);
        CREATE TABLE fdwpy.src2 AS SELECT
          i::int2 AS i2, i::float4 / 8 AS f4, (i * 1.25)::numeric AS n, ('v' || i)::varchar(10) AS vc,
          ('c' || i % 10)::char(5) AS ch, jsonb_build_object('k', i) AS jb, decode(md5(i::text), 'hex') AS by,
          time '00:00' + i * interval '17 seconds' AS tm,
          timestamptz '2024-01-01 00:00+00' + i * interval '1 hour 1 second' AS tz,
          make_interval(0, i % 13, 0, i % 40, 0, 0, i / 7.0) AS iv,
          md5(i::text)::uuid AS u, ('10.0.' || i % 256 || '.1')::inet AS ip,
          (ARRAY['sad','ok','happy']::fdwpy.mood[])[i % 3 + 1] AS m,
          ARRAY[i, NULL, -i]::int4[] AS ai, ARRAY['x' || i, NULL]::text[] AS at,
          ROW(i, 'p' || i)::fdwpy.pair AS pr,
          CASE WHEN i % 9 = 0 THEN NULL ELSE i END::int8 AS maybe
          FROM generate_series(1, 3000) i""")
    out = os.path.join(tmpdir_world, "rt2.arrow")
    r = subprocess.run([pg2arrow(), "-t", "fdwpy.src2", "-n", "2", "-S", "-s", "64k", "-o", out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    os.chmod(out, 0o644)
    psql("DROP SCHEMA IF EXISTS rt2 CASCADE; CREATE SCHEMA rt2; IMPORT FOREIGN SCHEMA src2 FROM SERVER"
         " arrow_fdw INTO rt2 OPTIONS (file '%s')" % out)
    types = lambda rel: q("SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) "
                          "FROM pg_attribute WHERE attrelid = '%s'::regclass AND attnum > 0" % rel)
    assert types("rt2.src2") == types("fdwpy.src2")
    assert q("SELECT count(*) FROM (SELECT * FROM fdwpy.src2 EXCEPT ALL SELECT * FROM rt2.src2) x") == "0"
    assert q("SELECT count(*) FROM (SELECT * FROM rt2.src2 EXCEPT ALL SELECT * FROM fdwpy.src2) x") == "0"
    # statistics from pg2arrow -S skip batches
    plan = q("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM rt2.src2 WHERE i2 < 10")
    assert "Batches Skipped: 0" not in plan and "Batches Skipped" in plan, plan
    assert q("SELECT count(*) FROM rt2.src2 WHERE i2 < 10") == "9"
    psql("DROP SCHEMA rt2 CASCADE; DROP TABLE fdwpy.src2; DROP TYPE fdwpy.mood; DROP TYPE fdwpy.pair")
