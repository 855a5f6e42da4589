"""pg2arrow: PostgreSQL -> pg2arrow -> pyarrow.

Uses the running cluster of the environment (PGHOST, PGPORT, PGUSER), a
database of its own (dropped at the end) and the tool in PG_WARP_TOOLS.
Covers the type mapping with extremes, the parallel modes (-n, -k, ctid
ranges), --append, the single snapshot, batch statistics, passwords (-w,
PGPASSWORD, the -W prompt on a pseudo-terminal) and failures that must
never leave a complete-looking file.
"""
import datetime
import decimal
import glob
import math
import os
import select
import signal
import subprocess
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.environ.get("PG_WARP_TOOLS", os.path.join(ROOT, "tools", "bin"))
PG2ARROW = os.path.join(TOOLS, "pg2arrow")
DB = "pg2arrow_test_%d" % os.getpid()

pytestmark = pytest.mark.skipif(not os.path.exists(PG2ARROW),
                                reason="pg2arrow is not built")


def psql(sql, db=DB, check=True):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                       capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def p2a(*args, check=True, timeout=60):
    r = subprocess.run([PG2ARROW, "-d", DB] + list(args), capture_output=True,
                       text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def read(path):
    with ipc.open_file(path) as f:
        return f.read_all()


def batches(path):
    with ipc.open_file(path) as f:
        return [f.get_batch_with_custom_metadata(i) for i in range(f.num_record_batches)]


def leftovers(tmp_path):
    """Files in the directory that look like outputs or temporary files."""
    return sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "*")))


@pytest.fixture(scope="module", autouse=True)
def database():
    psql("DROP DATABASE IF EXISTS %s" % DB, db="postgres")
    psql("CREATE DATABASE %s" % DB, db="postgres")
    psql("""
        CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'zzz', 'aaa');
        CREATE TYPE pair AS (a int4, tags text[], m mood);
        CREATE DOMAIN posint AS int4 CHECK (VALUE > 0);
        CREATE DOMAIN money2 AS numeric(10,2);
        CREATE TABLE big AS SELECT i AS id, (i % 7)::int4 AS k, md5(i::text) AS s,
            (i * 1.5)::float8 AS f FROM generate_series(1, 20000) i;
        CREATE FUNCTION slow(int) RETURNS int LANGUAGE sql AS
            'SELECT pg_sleep(0.05); SELECT $1';
        ANALYZE big;
    """)
    yield
    psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB, db="postgres")


# ---------------------------------------------------------------- types

def test_scalar_types_round_trip(tmp_path):
    out = tmp_path / "t.arrow"
    psql("""CREATE TABLE scalars (id int, b bool, i2 int2, i4 int4, i8 int8, f4 float4,
              f8 float8, num numeric(19,5), t text, vc varchar(10), bp char(5), nm name,
              ba bytea, d date, tm time, ttz timetz, ts timestamp, tstz timestamptz,
              iv interval, u uuid, js json, jsb jsonb, ci cidr, ine inet, mac macaddr,
              dom posint, dnum money2);
        INSERT INTO scalars VALUES
          (1, true, -32768, -2147483648, -9223372036854775808,
           '-Infinity', '-Infinity', -12345678901234.56789,
           'héllo ✓ 𝄞', '', 'ab', 'nm', '\\x00ff10',
           '4713-01-01 BC', '00:00:00', '12:00:00+02',
           '4713-01-01 00:00:00 BC', '1900-01-01 00:00:00+00',
           '1 mon 2 days 00:00:03.000004',
           'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2]}',
           '{"b": 1, "a": "x"}', '192.168.1.0/24', '10.1.2.3',
           '08:00:2b:01:02:03', 5, 12.5),
          (2, false, 32767, 2147483647, 9223372036854775807,
           'Infinity', 'NaN', 99999999999999.99999,
           '', 'x', 'abcde', '', '\\x',
           'infinity', '23:59:59.999999', '23:30:00-01',
           'infinity', '-infinity',
           '-1 mon -2 days -00:00:00.5',
           '00000000-0000-0000-0000-000000000000', 'null', '[]', '::1/128', '::ffff:1.2.3.4',
           'ff:ff:ff:ff:ff:ff', 2147483647, -0.01),
          (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)""")
    p2a("-o", str(out), "-c", "SELECT * FROM scalars ORDER BY id")
    t = read(out)
    assert t.num_rows == 3
    s = t.schema
    types = {f.name: str(f.type) for f in s}
    assert types["b"] == "bool" and types["i2"] == "int16" and types["i8"] == "int64"
    assert types["f4"] == "float" and types["f8"] == "double"
    assert types["num"] == "decimal128(19, 5)"
    assert types["t"] == "string" and types["bp"] == "string" and types["ba"] == "binary"
    assert types["d"] == "date32[day]" and types["tm"] == "time64[us]"
    assert types["ts"] == "timestamp[us]" and types["tstz"] == "timestamp[us, tz=UTC]"
    assert types["iv"] == "month_day_nano_interval"
    assert types["u"] == "fixed_size_binary[16]"
    assert types["dom"] == "int32" and types["dnum"] == "decimal128(10, 2)"
    md = {f.name: f.metadata[b"pg_type"].decode() for f in s}
    assert md["num"] == "numeric(19,5)" and md["vc"] == "character varying(10)"
    assert md["bp"] == "character(5)" and md["tstz"] == "timestamp with time zone"
    assert md["dom"] == "posint" and md["dnum"] == "money2" and md["ine"] == "inet"

    # d, tm, ts and tstz hold values Python's datetime cannot represent
    c = {name: t.column(name).to_pylist() for name in t.column_names
         if name not in ("d", "tm", "ts", "tstz")}
    assert c["b"] == [True, False, None]
    assert c["i2"] == [-32768, 32767, None]
    assert c["i4"] == [-2147483648, 2147483647, None]
    assert c["i8"] == [-9223372036854775808, 9223372036854775807, None]
    assert c["f4"][0] == -math.inf and c["f4"][1] == math.inf and c["f4"][2] is None
    assert c["f8"][0] == -math.inf and math.isnan(c["f8"][1]) and c["f8"][2] is None
    assert c["num"] == [decimal.Decimal("-12345678901234.56789"),
                        decimal.Decimal("99999999999999.99999"), None]
    assert c["t"] == ["héllo ✓ 𝄞", "", None]
    assert c["vc"] == ["", "x", None]
    assert c["bp"] == ["ab   ", "abcde", None]        # bpchar keeps its padding
    assert c["nm"] == ["nm", "", None]
    assert c["ba"] == [b"\x00\xff\x10", b"", None]
    # dates and timestamps as stored: days / microseconds since 1970-01-01;
    # infinity keeps PostgreSQL's sentinels (int32/int64 max and min)
    days = t.column("d").cast(pa.int32()).to_pylist()
    assert days == [-2440550, 2**31 - 1, None]
    us = t.column("ts").cast(pa.int64()).to_pylist()
    assert us == [-210863520000000000, 2**63 - 1, None]
    us = t.column("tstz").cast(pa.int64()).to_pylist()
    assert us == [-2208988800000000, -2**63, None]
    assert t.column("tm").cast(pa.int64()).to_pylist() == [0, 86399999999, None]
    assert c["ttz"] == [datetime.time(10, 0), datetime.time(0, 30), None]
    iv = c["iv"]
    assert (iv[0].months, iv[0].days, iv[0].nanoseconds) == (1, 2, 3000004000)
    assert (iv[1].months, iv[1].days, iv[1].nanoseconds) == (-1, -2, -500000000)
    assert iv[2] is None
    assert c["u"] == [uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").bytes, bytes(16), None]
    assert c["js"] == ['{"a": [1, 2]}', "null", None]
    assert c["jsb"] == ['{"a": "x", "b": 1}', "[]", None]
    assert c["ci"] == ["192.168.1.0/24", "::1/128", None]
    assert c["ine"] == ["10.1.2.3", "::ffff:1.2.3.4", None]
    assert c["mac"] == ["08:00:2b:01:02:03", "ff:ff:ff:ff:ff:ff", None]
    assert c["dom"] == [5, 2147483647, None]
    assert c["dnum"] == [decimal.Decimal("12.50"), decimal.Decimal("-0.01"), None]


def test_enum_array_composite(tmp_path):
    out = tmp_path / "n.arrow"
    psql("""CREATE TABLE nested (id int, m mood, a int4[], ta text[], p pair, pa pair[]);
            INSERT INTO nested VALUES
              (1, 'happy', '{1,NULL,-3}', '{"x","",NULL}', ROW(7, '{"t1"}', 'zzz'),
               ARRAY[ROW(1, '{}', 'aaa')::pair, NULL]),
              (2, NULL, '{}', NULL, ROW(NULL, NULL, NULL), '{}'),
              (3, 'sad', NULL, '{"ü"}', NULL, NULL)""")
    p2a("-o", str(out), "-c", "SELECT * FROM nested ORDER BY id")
    t = read(out)
    m = t.column("m").combine_chunks()
    assert pa.types.is_dictionary(m.type) and m.type.index_type == pa.int32()
    # the dictionary holds every label in the enum's sort order
    assert m.dictionary.to_pylist() == ["sad", "ok", "happy", "zzz", "aaa"]
    assert m.to_pylist() == ["happy", None, "sad"]
    assert t.column("a").to_pylist() == [[1, None, -3], [], None]
    assert t.column("ta").to_pylist() == [["x", "", None], None, ["ü"]]
    assert t.column("p").to_pylist() == [{"a": 7, "tags": ["t1"], "m": "zzz"},
                                         {"a": None, "tags": None, "m": None}, None]
    assert t.column("pa").to_pylist() == [[{"a": 1, "tags": [], "m": "aaa"}, None], [], None]
    f = t.schema.field("p")
    assert f.metadata[b"pg_type"] == b"pair"
    assert f.type.field("tags").metadata[b"pg_type"] == b"text[]"
    assert t.schema.field("a").metadata[b"pg_type"] == b"integer[]"


def test_numeric_modes(tmp_path):
    out = tmp_path / "num.arrow"
    q = "SELECT x FROM (VALUES (1, 1.5::numeric), (2, -123456789012345678901234567890.123456), " \
        "(3, NULL), (4, 0.000001)) v(i, x) ORDER BY i"
    p2a("-o", str(out), "-c", q)
    t = read(out)
    assert str(t.schema.field("x").type) == "decimal128(38, 6)"
    assert t.column("x").to_pylist() == [decimal.Decimal("1.5"),
                                         decimal.Decimal("-123456789012345678901234567890.123456"),
                                         None, decimal.Decimal("0.000001")]
    # more fraction digits than the scale: an error naming column and row
    r = p2a("-o", str(out), "-c", "SELECT 1.0000001::numeric AS x", check=False)
    assert r.returncode != 0 and 'column "x", row 1' in r.stderr and "scale" in r.stderr
    r = p2a("-o", str(tmp_path / "nan.arrow"), "-c", "SELECT 'NaN'::numeric AS x", check=False)
    assert r.returncode != 0 and "NaN" in r.stderr and "--numeric" in r.stderr
    assert not os.path.exists(tmp_path / "nan.arrow")
    p2a("--numeric-scale=8", "-o", str(out), "-c", "SELECT 1.0000001::numeric AS x")
    assert read(out).column("x").to_pylist() == [decimal.Decimal("1.00000010")]
    q2 = "SELECT x FROM (VALUES (1, 3.25::numeric), (2, 'NaN'), (3, '-Infinity'), " \
         "(4, 1234567890123456789012345678901234567890.5)) v(i, x) ORDER BY i"
    p2a("--numeric=text", "-o", str(out), "-c", q2)
    assert read(out).column("x").to_pylist() == [
        "3.25", "NaN", "-Infinity", "1234567890123456789012345678901234567890.5"]
    p2a("--numeric=float8", "-o", str(out), "-c", q2)
    v = read(out).column("x").to_pylist()
    assert v[0] == 3.25 and math.isnan(v[1]) and v[2] == -math.inf and v[3] == 1.2345678901234568e39


def test_float2(tmp_path):
    out = tmp_path / "h.arrow"
    # pg_warp's float2 is a base type; a domain of that name stands in for it
    psql("""CREATE DOMAIN float2 AS real;
            CREATE TABLE halfs (i int, h float2, ha float2[]);
            INSERT INTO halfs VALUES (1, 0.5, '{0.5,NULL}'), (2, -65504, '{-65504,NULL}'),
                                     (3, 'Infinity', '{Infinity,NULL}'), (4, 0.1, NULL)""")
    try:
        p2a("-o", str(out), "-c", "SELECT h, ha FROM halfs WHERE i < 4 ORDER BY i")
        # statistics are those of the stored halves: 0.1 is stored as 0.0999755859375
        p2a("-S", "-o", str(tmp_path / "hs.arrow"), "-c", "SELECT h FROM halfs WHERE i IN (1, 4)")
        md = batches(tmp_path / "hs.arrow")[0][1]
        assert float(md[b"pg_warp.min.0"].decode()) == 0.0999755859375
        assert float(md[b"pg_warp.max.0"].decode()) == 0.5
    finally:
        psql("DROP TABLE halfs; DROP DOMAIN float2")
    t = read(out)
    assert str(t.schema.field("h").type) == "halffloat"
    assert [float(v) for v in t.column("h").to_pylist()] == [0.5, -65504.0, math.inf]
    assert t.schema.field("h").metadata[b"pg_type"] == b"float2"
    assert [float(v[0]) for v in t.column("ha").to_pylist()] == [0.5, -65504.0, math.inf]


def test_empty_result(tmp_path):
    out = tmp_path / "e.arrow"
    p2a("-o", str(out), "-c", "SELECT id, s FROM big WHERE false")
    t = read(out)
    assert t.num_rows == 0 and t.column_names == ["id", "s"]
    assert str(t.schema.field("id").type) == "int32"


def test_unsupported_types(tmp_path):
    out = tmp_path / "u.arrow"
    r = p2a("-o", str(out), "-c", "SELECT point(1, 2) AS pt", check=False)
    assert r.returncode != 0
    assert 'column "pt" has type point, which has no Arrow mapping' in r.stderr
    assert "hint" in r.stderr and '"pt"::text' in r.stderr
    r = p2a("-o", str(out), "-c", "SELECT ARRAY[[1,2],[3,4]] AS m", check=False)
    assert r.returncode != 0 and 'column "m"' in r.stderr and "dimensions" in r.stderr
    r = p2a("-o", str(out), "-c", "SELECT '24:00'::time AS t24", check=False)
    assert r.returncode != 0 and 'column "t24", row 1: time 24:00:00' in r.stderr
    r = p2a("-o", str(out), "-c", "SELECT to_tsvector('a b') AS tv", check=False)
    assert r.returncode != 0 and "tsvector" in r.stderr
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------- parallel

def ids(path):
    return sorted(read(path).column("id").to_pylist())


def test_table_split_by_ctid(tmp_path):
    out = tmp_path / "big.arrow"
    p2a("-t", "big", "-n", "3", "-s", "64k", "-o", str(out))
    assert ids(out) == list(range(1, 20001))
    bs = batches(out)
    assert len(bs) > 3
    # only one batch may be smaller than half a segment: the shared final one
    small = [b for b, _ in bs if b.nbytes < 32 * 1024]
    assert len(small) <= 1


def test_sql_macros(tmp_path):
    out = tmp_path / "m.arrow"
    p2a("-n", "4", "-o", str(out), "-c",
        "SELECT id, $(WORKER_ID) AS w FROM big WHERE id % $(N_WORKERS) = $(WORKER_ID)")
    t = read(out)
    assert sorted(t.column("id").to_pylist()) == list(range(1, 20001))
    assert all(i % 4 == w for i, w in zip(t.column("id").to_pylist(), t.column("w").to_pylist()))
    p2a("-n", "5", "--ctid-table=big", "-o", str(out), "-c",
        "SELECT id FROM big WHERE $(CTID_RANGE) AND k <> 3")
    assert ids(out) == [i for i in range(1, 20001) if i % 7 != 3]
    p2a("-k", "0,1,2,3,4,5,6", "-s", "32k", "-o", str(out), "-c",
        "SELECT id, k FROM big WHERE k = $(PARALLEL_KEY)")
    assert ids(out) == list(range(1, 20001))


def test_option_errors(tmp_path):
    out = str(tmp_path / "x.arrow")
    r = p2a("-n", "2", "-o", out, "-c", "SELECT 1", check=False)
    assert r.returncode != 0 and "$(WORKER_ID)" in r.stderr
    r = p2a("-n", "2", "-k", "a", "-o", out, "-c", "SELECT '$(PARALLEL_KEY)'", check=False)
    assert r.returncode != 0 and "cannot be combined" in r.stderr
    r = p2a("-t", "big", "-c", "SELECT 1", "-o", out, check=False)
    assert r.returncode != 0 and "exactly one" in r.stderr
    r = p2a("-t", "big", "-o", out, "--append", out, check=False)
    assert r.returncode != 0
    psql("CREATE VIEW bigview AS SELECT * FROM big")
    r = p2a("-t", "bigview", "-n", "2", "-o", out, check=False)
    assert r.returncode != 0 and "not a table" in r.stderr and "$(WORKER_ID)" in r.stderr
    p2a("-t", "bigview", "-o", out)
    assert read(out).num_rows == 20000
    os.unlink(out)
    r = p2a("--stat=s", "-t", "big", "-o", out, check=False)
    assert r.returncode != 0 and 'column "s" has type text' in r.stderr
    assert leftovers(tmp_path) == []
    assert "Usage" in p2a("--help").stdout
    assert "pg2arrow" in p2a("--version").stdout


def test_connection_options(tmp_path):
    out = tmp_path / "c.arrow"
    host, port, user = (os.environ.get(k, "") for k in ("PGHOST", "PGPORT", "PGUSER"))
    r = subprocess.run([PG2ARROW, "-d", "dbname=%s" % DB, "-h", host, "-p", port, "-u", user,
                        "-w", "-o", str(out), "-c", "SELECT current_database() AS db"],
                       capture_output=True, text=True, env=dict(os.environ, PGDATABASE="none"))
    assert r.returncode == 0, r.stderr
    assert read(out).column("db").to_pylist() == [DB]
    r = p2a("-p", "1", "-o", str(out), "-c", "SELECT 1", check=False)
    assert r.returncode != 0 and "connection to database failed" in r.stderr


def run_on_terminal(argv, answer, env, timeout=60):
    """Runs argv on a new pseudo-terminal, made its controlling terminal by
    util-linux's `setsid -c`, and types 'answer' after the first "Password: "
    prompt; returns (exit status, everything written to the terminal)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(["setsid", "-c"] + argv, stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    seen = b""
    answered = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:         # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if not answered and b"Password: " in seen:
                os.write(master, answer)
                answered = True
    finally:
        os.close(master)
    try:
        rc = proc.wait(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    return rc, seen.decode(errors="replace")


def test_password(tmp_path):
    """A role that must give a password: -w never asks (a clear error),
    PGPASSWORD is used, -W asks on the terminal once for every worker (or
    reads stdin when there is no terminal), and a wrong answer leaves no
    file."""
    hba = psql("SHOW hba_file")
    if not os.access(hba, os.W_OK):
        pytest.skip("cannot edit %s to require a password" % hba)
    with open(hba) as f:
        original = f.read()
    psql("CREATE ROLE p2a_pw LOGIN PASSWORD 'sEcret 1'")
    psql("GRANT SELECT ON big TO p2a_pw")
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "PGPASSFILE")}
    env["PGPASSFILE"] = str(tmp_path / "no-passfile")
    out = tmp_path / "pw.arrow"
    args = [PG2ARROW, "-d", DB, "-u", "p2a_pw", "-t", "big", "-o", str(out)]
    try:
        with open(hba, "w") as f:
            f.write("local all p2a_pw scram-sha-256\n"
                    "host all p2a_pw 127.0.0.1/32 scram-sha-256\n" + original)
        psql("SELECT pg_reload_conf()")
        for _ in range(50):                 # the postmaster reloads asynchronously
            r = subprocess.run(args + ["-w"], capture_output=True, text=True, env=env)
            if r.returncode != 0:
                break
            time.sleep(0.1)
        assert r.returncode != 0 and "password" in r.stderr, r.stderr
        assert leftovers(tmp_path) == []

        r = subprocess.run(args + ["-n", "2"], capture_output=True, text=True,
                           env=dict(env, PGPASSWORD="sEcret 1"))
        assert r.returncode == 0, r.stderr
        assert ids(out) == list(range(1, 20001))
        out.unlink()

        rc, screen = run_on_terminal(args + ["-W", "-n", "3"], b"sEcret 1\n", env)
        assert rc == 0, screen
        assert screen.count("Password: ") == 1 and "sEcret" not in screen, screen
        assert ids(out) == list(range(1, 20001))
        out.unlink()

        # no terminal at all (a new session): -W reads the password from
        # stdin and prompts on stderr, as psql does (PostgreSQL's simple_prompt)
        r = subprocess.run(args + ["-W", "-n", "2"], input="sEcret 1\n", capture_output=True,
                           text=True, env=env, start_new_session=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("Password: ") == 1, r.stderr
        assert ids(out) == list(range(1, 20001))
        out.unlink()

        rc, screen = run_on_terminal(args + ["-W", "-n", "2"], b"wrong\n", env)
        assert rc != 0 and "password authentication failed" in screen, screen
        assert leftovers(tmp_path) == []
    finally:
        with open(hba, "w") as f:
            f.write(original)
        psql("SELECT pg_reload_conf()")
        psql("DROP OWNED BY p2a_pw")
        psql("DROP ROLE p2a_pw")


def test_set_option(tmp_path):
    out = tmp_path / "s.arrow"
    psql("CREATE SCHEMA IF NOT EXISTS other; CREATE TABLE IF NOT EXISTS other.hidden AS SELECT 42 AS x")
    p2a("--set=search_path:other", "-n", "2", "-o", str(out),
        "-c", "SELECT x, current_setting('search_path') AS sp FROM hidden WHERE $(WORKER_ID) = 0")
    t = read(out)
    assert t.column("x").to_pylist() == [42] and t.column("sp").to_pylist() == ["other"]


def test_append(tmp_path):
    out = tmp_path / "a.arrow"
    p2a("-o", str(out), "-s", "64k", "-c", "SELECT id, s FROM big WHERE id <= 10000")
    before = read(out)
    n_before = len(batches(out))
    p2a("--append", str(out), "-n", "2", "-s", "64k", "-c",
        "SELECT id, s FROM big WHERE id > 10000 AND id % 2 = $(WORKER_ID)")
    assert ids(out) == list(range(1, 20001))
    after = batches(out)
    assert len(after) > n_before
    # the existing batches are unchanged
    assert pa.Table.from_batches([b for b, _ in after[:n_before]]).equals(before)


def test_append_failures_leave_file_unchanged(tmp_path):
    out = tmp_path / "a.arrow"
    p2a("-o", str(out), "-c", "SELECT id, s FROM big WHERE id <= 100")
    original = out.read_bytes()
    r = p2a("--append", str(out), "-c", "SELECT id, s, 1 AS extra FROM big", check=False)
    assert r.returncode != 0 and "unchanged" in r.stderr
    assert out.read_bytes() == original
    r = p2a("--append", str(out), "-c", "SELECT s AS id, s FROM big", check=False)
    assert r.returncode != 0
    assert out.read_bytes() == original
    # fails after some batches were already appended
    r = p2a("--append", str(out), "-s", "16k", "-c",
            "SELECT id, CASE WHEN id = 15000 THEN (1 / (id - 15000))::text ELSE s END AS s FROM big",
            check=False)
    assert r.returncode != 0 and "division by zero" in r.stderr
    assert out.read_bytes() == original
    # one of three parallel workers fails after the others wrote batches
    r = p2a("--append", str(out), "-n", "3", "-s", "16k", "-c",
            "SELECT id, CASE WHEN id = 19000 THEN (1 / (id - 19000))::text ELSE s END AS s "
            "FROM big WHERE id % 3 = $(WORKER_ID)", check=False)
    assert r.returncode != 0 and "division by zero" in r.stderr and "worker 1" in r.stderr
    assert out.read_bytes() == original
    assert leftovers(tmp_path) == ["a.arrow"]


# ---------------------------------------------------------------- snapshot

def test_one_snapshot(tmp_path):
    psql("CREATE TABLE snap AS SELECT i AS id, 0 AS v FROM generate_series(1, 4000) i")
    out = tmp_path / "snap.arrow"
    # slow on 81 rows spread over the workers: about 1 s per worker
    proc = subprocess.Popen(
        [PG2ARROW, "-d", DB, "-n", "4", "-o", str(out), "-c",
         "SELECT id, v, CASE WHEN id % 49 = 0 THEN slow(id) ELSE id END AS x "
         "FROM snap WHERE id % 4 = $(WORKER_ID) ORDER BY id"],
        stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline:
        n = psql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                 "AND query LIKE 'COPY (SELECT id, v%' AND state = 'active'")
        if n == "4":
            break
        time.sleep(0.01)
    assert n == "4", "workers did not start"
    psql("UPDATE snap SET v = 1")          # commits while the workers run
    assert proc.poll() is None, "pg2arrow finished before the update committed"
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    t = read(out)
    assert sorted(t.column("id").to_pylist()) == list(range(1, 4001))
    assert set(t.column("v").to_pylist()) == {0}
    assert psql("SELECT DISTINCT v FROM snap") == "1"


# ---------------------------------------------------------------- statistics

def test_stats_match_batches(tmp_path):
    out = tmp_path / "st.arrow"
    psql("""CREATE TABLE st AS SELECT i AS id, (i * 37 % 1001 - 500)::int2 AS i2,
              CASE WHEN i % 11 = 0 THEN NULL ELSE i * 1.25 END::float8 AS f,
              CASE WHEN i % 13 = 0 THEN 'NaN'::float4 ELSE (i % 97)::float4 END AS f4,
              (i * 0.01)::numeric(12,2) AS d, date '2000-01-01' + i AS dt,
              timestamptz '2020-01-01 00:00+00' + i * interval '1 min' AS ts,
              md5(i::text) AS s
            FROM generate_series(1, 30000) i""")
    p2a("-t", "st", "-n", "3", "-s", "100k", "-S", "-o", str(out))
    bs = batches(out)
    assert len(bs) > 3
    schema = bs[0][0].schema
    for batch, md in bs:
        md = {k.decode(): v.decode() for k, v in (md or {}).items()}
        for i, name in enumerate(schema.names):
            col = batch.column(i)
            if name == "s":
                assert "pg_warp.min.%d" % i not in md
                continue
            if pa.types.is_floating(col.type):
                col = pc.filter(col, pc.invert(pc.is_nan(col)))
            if pa.types.is_date(col.type):
                col = col.cast(pa.int32())
            if pa.types.is_timestamp(col.type):
                col = col.cast(pa.int64())
            mm = pc.min_max(col)
            if not mm["min"].is_valid:
                assert "pg_warp.min.%d" % i not in md
                continue
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            got_lo, got_hi = md["pg_warp.min.%d" % i], md["pg_warp.max.%d" % i]
            if isinstance(lo, float):
                assert float(got_lo) == lo and float(got_hi) == hi
            elif isinstance(lo, decimal.Decimal):
                assert decimal.Decimal(got_lo) == lo and decimal.Decimal(got_hi) == hi
                assert got_lo == str(lo)
            else:
                assert int(got_lo) == lo and int(got_hi) == hi
    # a list names the columns
    p2a("-t", "st", "-s", "100k", "-Sid,d", "-o", str(out))
    md = batches(out)[0][1]
    assert set(k.decode() for k in md.keys()) == {"pg_warp.min.0", "pg_warp.max.0",
                                                   "pg_warp.min.4", "pg_warp.max.4"}


# ---------------------------------------------------------------- failures

def test_query_errors_leave_no_file(tmp_path):
    out = tmp_path / "f.arrow"
    r = p2a("-o", str(out), "-c", "SELECT * FROM no_such_table", check=False)
    assert r.returncode != 0 and "no_such_table" in r.stderr
    # one worker fails half-way: division by zero on a row only it reads
    r = p2a("-n", "4", "-s", "16k", "-o", str(out), "-c",
            "SELECT id, 100000 / (id - 15001) AS q, s FROM big "
            "WHERE id % 4 = $(WORKER_ID)", check=False)
    assert r.returncode != 0 and "division by zero" in r.stderr and "worker 1" in r.stderr
    assert leftovers(tmp_path) == []
    # an existing file is not replaced by a failed export
    p2a("-o", str(out), "-c", "SELECT 1 AS one")
    good = out.read_bytes()
    r = p2a("-o", str(out), "-c", "SELECT 1/0 AS one", check=False)
    assert r.returncode != 0 and out.read_bytes() == good
    assert leftovers(tmp_path) == ["f.arrow"]


@pytest.fixture
def small_fs(tmp_path):
    """A 512 kB tmpfs (needs root; skipped where mounting is not allowed)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + r.stderr.strip())
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_disk_full(small_fs):
    out = small_fs / "full.arrow"
    r = p2a("-t", "big", "-n", "2", "-s", "64k", "-o", str(out), check=False)
    assert r.returncode != 0 and "No space left on device" in r.stderr
    assert os.listdir(small_fs) == []
    # --append that runs out of space leaves the file as it was
    p2a("-o", str(out), "-c", "SELECT id, s FROM big WHERE id <= 100")
    original = out.read_bytes()
    r = p2a("--append", str(out), "-s", "64k", "-c", "SELECT id, s FROM big", check=False)
    assert r.returncode != 0 and "No space left on device" in r.stderr
    assert out.read_bytes() == original
    assert os.listdir(small_fs) == ["full.arrow"]


@pytest.mark.parametrize("signo", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_leaves_no_file(tmp_path, signo):
    out = tmp_path / "i.arrow"
    proc = subprocess.Popen([PG2ARROW, "-d", DB, "-n", "2", "-s", "16k", "-o", str(out), "-c",
                             "SELECT id, s, CASE WHEN id % 49 = 0 THEN slow(id) END AS x "
                             "FROM big WHERE id % 2 = $(WORKER_ID)"],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert proc.poll() is None
    proc.send_signal(signo)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode != 0 and "interrupted" in err
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------- other

def test_dump_and_progress(tmp_path):
    out = tmp_path / "d.arrow"
    r = p2a("--progress", "-t", "big", "-n", "2", "-S", "-s", "128k", "-o", str(out))
    assert "20000 rows" in r.stderr and "100%" in r.stderr
    r = subprocess.run([PG2ARROW, "--dump", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "record batch 0" in r.stdout and "pg_type = integer" in r.stdout
    assert "pg_warp.min.0" in r.stdout
    r = subprocess.run([PG2ARROW, "--dump", str(tmp_path / "missing")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "missing" in r.stderr


def test_network_types_print_like_postgres(tmp_path):
    """inet/cidr/macaddr are formatted from their binary form in C: compare
    with PostgreSQL's own output function on many shapes of address."""
    out = tmp_path / "net.arrow"
    psql("""DROP TABLE IF EXISTS nets; DROP TYPE IF EXISTS netpair;
        CREATE TYPE netpair AS (x inet, y macaddr);
        CREATE TABLE nets (i serial, a inet, c cidr, m macaddr8, arr inet[], p netpair);
        INSERT INTO nets (a, c, m, arr, p) SELECT a::inet, c::cidr, m::macaddr8,
               ARRAY[a::inet, NULL], ROW(a::inet, '01:02:03:04:05:06')::netpair
        FROM (VALUES
          ('0.0.0.0', '0.0.0.0/0', '00:00:00:00:00:00:00:00'),
          ('255.255.255.255/8', '10.0.0.0/8', 'ff:ff:ff:ff:ff:ff:ff:ff'),
          ('::', '::/0', '01:02:03:04:05:06:07:08'),
          ('::1', '2001:db8::/32', '08:00:2b:01:02:03:04:05'),
          ('2001:db8:0:0:1:0:0:1/64', '2001:db8:1::/48', '00:00:00:00:00:00:00:01'),
          ('fe80::1:2:3:4', 'fe80::/10', '10:20:30:40:50:60:70:80'),
          ('::ffff:10.1.2.3', '::ffff:0.0.0.0/96', 'aa:bb:cc:dd:ee:ff:00:11'),
          ('::10.1.2.3', '1:2:3:4:5:6:7:8/128', 'ab:cd:ef:01:23:45:67:89'),
          ('1:0:0:0:0:0:0:0', '1::/16', '00:11:22:33:44:55:66:77'),
          ('1:0:1:0:1:0:1:0/127', '1:0:1:0:1:0:1:0/127', '12:34:56:78:9a:bc:de:f0')
        ) v(a, c, m)""")
    p2a("-o", str(out), "-c", "SELECT a, c, m, arr, p FROM nets ORDER BY i")
    t = read(out)
    rows = psql("SELECT a, c, m, (p).x, (p).y FROM nets ORDER BY i").split("\n")
    expect = [r.split("|") for r in rows]
    assert t.column("a").to_pylist() == [e[0] for e in expect]
    assert t.column("c").to_pylist() == [e[1] for e in expect]
    assert t.column("m").to_pylist() == [e[2] for e in expect]
    assert t.column("arr").to_pylist() == [[e[0], None] for e in expect]
    assert t.column("p").to_pylist() == [{"x": e[3], "y": e[4]} for e in expect]


def test_append_enum_labels(tmp_path):
    out = tmp_path / "e.arrow"
    psql("""CREATE TYPE color AS ENUM ('red', 'green');
            CREATE TABLE paint (id int, c color, cs color[]);
            INSERT INTO paint VALUES (1, 'red', '{green}'), (2, 'green', NULL)""")
    p2a("-o", str(out), "-c", "SELECT * FROM paint")
    p2a("--append", str(out), "-c", "SELECT * FROM paint")
    t = read(out)
    assert t.column("c").to_pylist() == ["red", "green"] * 2
    assert t.column("cs").to_pylist() == [["green"], None] * 2
    original = out.read_bytes()
    psql("ALTER TYPE color ADD VALUE 'blue'")
    r = p2a("--append", str(out), "-c", "SELECT * FROM paint", check=False)
    assert r.returncode != 0 and "labels of enum type color differ" in r.stderr
    assert out.read_bytes() == original


def test_parallel_merge_keeps_every_type(tmp_path):
    """Leftover rows are copied between column builders when batches merge:
    the result must equal the serial export for every type, nested ones
    included."""
    for table in ("scalars", "nested"):
        one, par = tmp_path / (table + "1.arrow"), tmp_path / (table + "3.arrow")
        p2a("-o", str(one), "-c", "SELECT * FROM %s ORDER BY id" % table)
        p2a("-n", "3", "-o", str(par), "-c",
            "SELECT * FROM %s WHERE id %% 3 = $(WORKER_ID)" % table)
        t1, t3 = read(one), read(par)
        t3 = t3.take(pc.sort_indices(t3.column("id")))
        assert t3.schema.equals(t1.schema, check_metadata=True)
        for name in t1.column_names:
            a, b = t1.column(name).combine_chunks(), t3.column(name).combine_chunks()
            if pa.types.is_floating(a.type):     # NaN != NaN: compare the masks
                assert pc.is_nan(a).equals(pc.is_nan(b))
                a = pc.if_else(pc.is_nan(a), 0, a)
                b = pc.if_else(pc.is_nan(b), 0, b)
            assert a.equals(b), name
        assert len(batches(par)) == 1


def test_parallel_merge_cuts_batches(tmp_path):
    """Leftovers larger than a segment are merged in row ranges that cut the
    shared batch at the segment size (lists, structs, nulls, booleans and
    enums across the cuts); the rows equal the serial export's."""
    psql("""CREATE TABLE mixed AS SELECT i AS id, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 = 0 END AS b,
              CASE WHEN i % 7 = 0 THEN NULL ELSE repeat('x', i % 13) END AS s,
              CASE WHEN i % 11 = 0 THEN NULL
                   ELSE ARRAY[i, NULL, -i]::int4[] END AS a,
              CASE WHEN i % 17 = 0 THEN NULL
                   ELSE ROW(i, ARRAY['t' || i], (ARRAY['sad','ok','happy'])[i % 3 + 1])::pair END AS p,
              (ARRAY['sad','ok','happy','zzz','aaa'])[i % 5 + 1]::mood AS m
            FROM generate_series(1, 6000) i""")
    one, par = tmp_path / "m1.arrow", tmp_path / "m3.arrow"
    try:
        p2a("-o", str(one), "-c", "SELECT * FROM mixed ORDER BY id")
        p2a("-n", "3", "-s", "16k", "-o", str(par), "-c",
            "SELECT * FROM mixed WHERE id % 3 = $(WORKER_ID)")
    finally:
        psql("DROP TABLE mixed")
    t1, t3 = read(one), read(par)
    t3 = t3.take(pc.sort_indices(t3.column("id")))
    assert t3.schema.equals(t1.schema, check_metadata=True)
    for name in t1.column_names:
        assert t1.column(name).combine_chunks().equals(t3.column(name).combine_chunks()), name
    bs = batches(par)
    assert len(bs) > 3
    # every batch but the shared final one reaches the segment size, none passes it by much
    sizes = sorted(b.nbytes for b, _ in bs)
    assert all(16 * 1024 * 0.9 <= n <= 16 * 1024 * 1.1 for n in sizes[1:]), sizes


def test_default_batches_serve_statistics(tmp_path):
    """Issue 27, item 11: the default record batch size (8 MB) cuts a 20 MB
    export into batches whose -S ranges exclude each other, so a range
    condition skips all but one (the old 256 MB default wrote one batch,
    leaving statistics useless; bench/pg2arrow_batch_size.py measures why 8 MB)."""
    psql("CREATE TABLE IF NOT EXISTS sized AS SELECT i AS id, (i % 7)::int4 AS k,"
         " md5(i::text) AS s, (i * 1.5)::float8 AS f FROM generate_series(1, 400000) i")
    out = str(tmp_path / "sized.arrow")
    p2a("-t", "sized", "-S", "-o", out)
    bs = batches(out)
    assert len(bs) >= 3, len(bs)
    hit = 0
    for b, md in bs:
        lo, hi = int(md[b"pg_warp.min.0"]), int(md[b"pg_warp.max.0"])
        hit += lo <= 204000 and hi >= 200000
    assert hit == 1, [(m[b"pg_warp.min.0"], m[b"pg_warp.max.0"]) for _, m in bs]
