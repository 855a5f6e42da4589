"""float2 (pg_warp's IEEE 754 binary16 type) against numpy.float16, exact
rational arithmetic (fractions) and PostgreSQL's own float4/float8.

Runs in a database of its own on the cluster of the environment (PGHOST,
PGPORT, PGUSER), with pg_warp installed and pgwarp on the search_path.
Values travel in binary (COPY BINARY in, float2send/float4send out), so that
the checks are bit-exact and do not depend on the text forms under test.
"""
import decimal
import os
import shutil
import struct
import subprocess
import tempfile
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from pg_sql import psql as _psql, sqlstate as _sqlstate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.environ.get("PG_WARP_TOOLS", os.path.join(ROOT, "tools", "bin"))
DB = "float2_test_%d" % os.getpid()
ALL = np.arange(65536, dtype=np.uint32).astype(np.uint16)   # every bit pattern
FINITE = ALL[(ALL & 0x7c00) != 0x7c00]
IS_NAN = lambda bits: (bits & 0x7c00) == 0x7c00 and (bits & 0x3ff) != 0


def psql(sql, check=True):
    return _psql(sql, check=check, db=DB)


def q(sql):
    return psql(sql)[1]


def lines(sql):
    out = q(sql)
    return out.split("\n") if out else []


def sqlstate(sql):
    return _sqlstate(sql, db=DB)


@pytest.fixture(scope="module", autouse=True)
def database():
    _psql("DROP DATABASE IF EXISTS %s" % DB)
    _psql("CREATE DATABASE %s" % DB)
    psql("CREATE EXTENSION pg_warp; ALTER DATABASE %s SET search_path = public, pgwarp" % DB)
    yield
    _psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB)


@pytest.fixture(scope="module")
def worlddir():
    d = tempfile.mkdtemp(prefix="pg_warp_float2.")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def copy_binary(table, rows, fmts):
    """Loads rows (tuples of raw field values) into table with COPY BINARY;
    fmts are struct formats (big-endian) of the fields."""
    out = bytearray(b"PGCOPY\n\xff\r\n\0" + struct.pack(">ii", 0, 0))
    for row in rows:
        out += struct.pack(">h", len(row))
        for v, f in zip(row, fmts):
            data = struct.pack(">" + f, v)
            out += struct.pack(">i", len(data)) + data
    out += struct.pack(">h", -1)
    fd, path = tempfile.mkstemp(suffix=".copy")
    os.write(fd, bytes(out))
    os.close(fd)
    try:
        psql("\\copy %s FROM '%s' WITH (FORMAT binary)" % (table, path))
    finally:
        os.unlink(path)


@pytest.fixture(scope="module")
def all_halves():
    """Table all_h(id, h): every one of the 65536 bit patterns, id = bits."""
    psql("CREATE TABLE all_h (id int4, h float2)")
    copy_binary("all_h", [(int(b), int(b)) for b in ALL], ("i", "H"))
    return "all_h"


# ---------------------------------------------------------------- exact widening

def test_every_half_widens_exactly(all_halves):
    got = lines("SELECT encode(float2send(h), 'hex') || encode(float4send(h::float4), 'hex') ||"
                " encode(float8send(h::float8), 'hex') FROM all_h ORDER BY id")
    f32 = ALL.view(np.float16).astype(np.float32).view(np.uint32)
    f64 = ALL.view(np.float16).astype(np.float64).view(np.uint64)
    want = ["%04x%08x%016x" % (int(b), int(a), int(c)) for b, a, c in zip(ALL, f32, f64)]
    assert got == want


# ---------------------------------------------------------------- text output

def test_output_is_numpys_shortest(all_halves):
    got = lines("SELECT h::text FROM all_h ORDER BY id")
    halves = ALL.view(np.float16)
    for bits, text in enumerate(got):
        v = halves[bits]
        if IS_NAN(bits):
            assert text == "NaN"
        elif np.isinf(v):
            assert text == ("Infinity" if v > 0 else "-Infinity")
        else:
            ref = np.format_float_scientific(v, unique=True)
            assert decimal.Decimal(text) == decimal.Decimal(ref), (hex(bits), text, ref)
            assert text.startswith("-") == bool(bits & 0x8000), text
            digits = lambda s: decimal.Decimal(s).normalize().as_tuple().digits
            assert digits(text) == digits(ref), (hex(bits), text, ref)


def test_output_reads_back_and_is_formatted_as_float4out(all_halves):
    # every value but NaN reads back as the same bits
    assert q("SELECT count(*) FROM all_h WHERE float2send(h::text::float2) <> float2send(h)"
             " AND (id & 32767) <= 31744") == "0"
    # the digits printed the way PostgreSQL prints its shortest floats
    assert q("SELECT count(*) FROM all_h WHERE h::text <> h::text::float8::text") == "0"
    assert lines("SELECT x::float2::text FROM unnest(ARRAY['0.1', '65504', '6e-8', '1e-5',"
                 " '0.0001', '-0', '1.001', '100', '2050']) x") == \
        ["0.1", "65500", "6e-08", "1e-05", "0.0001", "-0", "1.001", "100", "2050"]
    # extra_float_digits <= 0: %.*g with 3 + extra_float_digits digits, as float4out
    assert q("SET extra_float_digits = 0; SELECT 1.001::float2::text, 65504::float2::text") == "1|6.55e+04"
    assert q("SET extra_float_digits = -2; SELECT 1.5::float2::text, 'NaN'::float2::text") == "2|NaN"


# ---------------------------------------------------------------- rounding

def half_value(bits):
    return Fraction(float(np.array([bits], dtype=np.uint16).view(np.float16)[0]))


POS_FINITE = [Fraction(0)] + [half_value(b) for b in range(1, 0x7c00)]


def round_to_half(x):
    """The nearest half of the rational x (ties to even), as bits; None
    where float2 raises overflow or underflow (|x| >= 65520, or x != 0
    rounding to zero)."""
    sign = 0x8000 if x < 0 else 0
    a = abs(x)
    if a >= Fraction(65520):
        return None
    lo = max(0, int(np.searchsorted(POS_FLOATS, float(a))) - 2)
    best = None
    for b in range(lo, min(lo + 5, 0x7c00)):
        d = abs(POS_FINITE[b] - a)
        if best is None or d < best[0] or (d == best[0] and b % 2 == 0):
            best = (d, b)
    b = best[1]
    if b == 0 and x != 0:
        return None
    return sign | b


POS_FLOATS = np.array([float(v) for v in POS_FINITE])


def midpoints():
    """Every point halfway between two adjacent positive halves, and the
    halves themselves, as Fractions."""
    out = []
    for b in range(0, 0x7bff):
        out.append(POS_FINITE[b])
        out.append((POS_FINITE[b] + POS_FINITE[b + 1]) / 2)
    return out


def test_text_input_rounds_the_exact_decimal(all_halves):
    """Decimals at, just above and just below every half-way point: the
    exact value decides, not the nearest double (numpy's float16('...')
    rounds twice and is no oracle here)."""
    tiny = Fraction(1, 10 ** 30)
    cases = []
    for m in midpoints():
        for x in (m, m + m * tiny, m - m * tiny, -m):
            exp = round_to_half(x)
            if exp is not None:
                cases.append((x, exp))
    psql("CREATE TABLE txt (id int4, t text)")
    rows = []
    for i, (x, _) in enumerate(cases):
        d = decimal.Context(prec=200).divide(x.numerator, x.denominator)   # exact: dyadic
        rows.append("%d\t%s" % (i, format(d, "e")))
    fd, path = tempfile.mkstemp()
    os.write(fd, ("\n".join(rows) + "\n").encode())
    os.close(fd)
    psql("\\copy txt FROM '%s'" % path)
    os.unlink(path)
    got = lines("SELECT encode(float2send(t::float2), 'hex') FROM txt ORDER BY id")
    assert got == ["%04x" % e for _, e in cases]
    # numeric goes the same way
    assert q("SELECT count(*) FROM txt WHERE float2send(t::numeric::float2) <> float2send(t::float2)") == "0"


def f32_cases():
    rng = np.random.default_rng(7)
    pos = np.arange(0, 0x7c00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mids = (pos[:-1] + pos[1:]) / 2
    vals = np.concatenate([pos, mids]).astype(np.float32)
    up = np.nextafter(vals, np.float32(np.inf))
    down = np.nextafter(vals, np.float32(0))
    rnd = rng.integers(0, 2 ** 32, 300000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    nans = np.array([0x7f800001, 0x7fa00000, 0xffc00001, 0x7fc00000], dtype=np.uint32).view(np.float32)
    allv = np.concatenate([vals, up, down, -vals, -up, rnd, nans,
                           np.array([np.inf, -np.inf], dtype=np.float32)])
    return allv


def conversion_errors(src, half):
    """Rows where float4's rule raises: a finite value rounding to an
    infinity, a non-zero one rounding to zero."""
    with np.errstate(all="ignore"):
        over = np.isfinite(src) & np.isinf(half)
        under = (src != 0) & ~np.isnan(src) & (half == 0)
    return over | under


@pytest.mark.parametrize("typ", ["float4", "float8"])
def test_float_to_float2_round_to_nearest_even(typ):
    if typ == "float4":
        src = f32_cases()
        ufmt, view = "I", np.uint32
    else:
        pos = np.arange(0, 0x7c00, dtype=np.uint16).view(np.float16).astype(np.float64)
        mids = (pos[:-1] + pos[1:]) / 2
        base = np.concatenate([pos, mids])
        rng = np.random.default_rng(8)
        src = np.concatenate([base, np.nextafter(base, np.inf), np.nextafter(base, 0),
                              base * (1 + 2.0 ** -40), base * (1 - 2.0 ** -40), -base,
                              rng.integers(0, 2 ** 64, 300000, dtype=np.uint64).view(np.float64),
                              np.array([0x7ff0000000000001, 0xfff8000000000000], dtype=np.uint64).view(np.float64)])
        ufmt, view = "Q", np.uint64
    with np.errstate(all="ignore"):
        half = src.astype(np.float16)
    err = conversion_errors(src, half)
    ok_src = src[~err]
    tab = "conv_" + typ
    psql("CREATE TABLE %s (id int4, v %s)" % (tab, typ))
    copy_binary(tab, [(i, int(b)) for i, b in enumerate(ok_src.view(view))], ("i", ufmt))
    got = lines("SELECT encode(float2send(v::float2), 'hex') FROM %s ORDER BY id" % tab)
    want = ["%04x" % int(b) for b in half[~err].view(np.uint16)]
    assert len(got) == len(want) > 300000
    assert got == want
    # and those that round outside: float4's errors (float8 -> float4 raises the same)
    for v in src[err][:50]:
        lit = np.format_float_scientific(v, unique=True)    # reads back as v in its type
        state, msg = sqlstate("SELECT '%s'::%s::float2" % (lit, typ))
        assert state == "22003" and "value out of range" in msg, msg


def test_out_of_range_errors():
    for sql, state, text in [
            ("SELECT '65520'::float2", "22003", 'is out of range for type float2'),
            ("SELECT '1e400'::float2", "22003", 'is out of range for type float2'),
            ("SELECT '1e-8'::float2", "22003", 'is out of range for type float2'),
            ("SELECT '2.98023223876953125e-8'::float2", "22003", "out of range"),  # 2^-25: tie to 0
            ("SELECT 'abc'::float2", "22P02", 'invalid input syntax for type float2'),
            ("SELECT ''::float2", "22P02", 'invalid input syntax for type float2'),
            ("SELECT '1.5x'::float2", "22P02", 'invalid input syntax for type float2'),
            ("SELECT 65520::float2", "22003", "value out of range: overflow"),
            ("SELECT 1e-8::float8::float2", "22003", "value out of range: underflow"),
            ("SELECT 70000::int8::float2", "22003", "value out of range: overflow"),
            ("SELECT 70000.0::numeric::float2", "22003", "is out of range for type float2"),
            ("SELECT 40000::float2::int2", "22003", "smallint out of range"),
            ("SELECT 'NaN'::float2::int4", "22003", "integer out of range"),
            ("SELECT 'Infinity'::float2::int8", "22003", "bigint out of range")]:
        got, msg = sqlstate(sql)
        assert got == state and text in msg, (sql, msg)
    # accepted: white space, special values, subnormals, the largest values
    assert lines("SELECT x::float2::text FROM unnest(ARRAY[' 1.5 ', 'NaN', 'inf', '-Infinity',"
                 " '+inf', '65519.99', '2.9802322387695313e-8', '5.96e-8', '-0', '0e-1000', '0x1p-3']) x") == \
        ["1.5", "NaN", "Infinity", "-Infinity", "Infinity", "65500", "6e-08", "6e-08", "-0", "0", "0.125"]


# ---------------------------------------------------------------- casts

def test_casts_behave_as_float4s(all_halves):
    # the integer casts are float4's on the same value (rint, half to even)
    assert q("SELECT count(*) FROM all_h WHERE (id & 32767) < 31744 AND"
             " (h::int4 <> h::float4::int4 OR h::int8 <> h::float4::int8)") == "0"
    assert q("SELECT count(*) FROM all_h WHERE (id & 32767) < 31744 AND abs(h::float4) < 32767 AND"
             " h::int2 <> h::float4::int2") == "0"
    assert q("SELECT 2.5::float2::int4, 3.5::float2::int4, (-2.5)::float2::int2") == "2|4|-2"
    # numeric: the printed value, exactly; back again to the same bits (but
    # -0, which numeric does not have: 0, as for float4)
    assert q("SELECT count(*) FROM all_h WHERE (id & 32767) < 31744 AND id <> 32768 AND"
             " (h::numeric <> h::text::numeric OR float2send(h::numeric::float2) <> float2send(h))") == "0"
    assert q("SELECT 0.1::float2::numeric, 'Infinity'::float2::numeric, 'NaN'::float2::numeric") == \
        "0.1|Infinity|NaN"
    # ints: exact up to 2048, then rounded to nearest even
    assert q("SELECT 2049::float2::text, 2051::int8::float2::text, 65519::int4::float2::text, (-32768)::int2::float2::text") == \
        "2048|2052|65500|-32770"
    # the cast contexts are float4's towards the same types
    ctx = lines("""
        SELECT s.typname || '>' || t.typname || '=' || c.castcontext::text
          FROM pg_cast c JOIN pg_type s ON s.oid = c.castsource JOIN pg_type t ON t.oid = c.casttarget
         WHERE 'float2' IN (s.typname, t.typname) ORDER BY 1""")
    assert ctx == ["float2>float4=i", "float2>float8=i", "float2>int2=a", "float2>int4=a",
                   "float2>int8=a", "float2>numeric=a", "float4>float2=a", "float8>float2=a",
                   "int2>float2=i", "int4>float2=i", "int8>float2=i", "numeric>float2=i"]
    f4 = lines("""
        SELECT s.typname || '>' || t.typname || '=' || c.castcontext::text
          FROM pg_cast c JOIN pg_type s ON s.oid = c.castsource JOIN pg_type t ON t.oid = c.casttarget
         WHERE 'float4' IN (s.typname, t.typname) AND c.castfunc <> 0 ORDER BY 1""")
    for line in ["float4>int2=a", "float4>int4=a", "float4>int8=a", "float4>numeric=a",
                 "float8>float4=a", "int2>float4=i", "int4>float4=i", "int8>float4=i",
                 "numeric>float4=i", "float4>float8=i"]:
        assert line in f4


# ---------------------------------------------------------------- operators

def op_pairs(n=40000):
    rng = np.random.default_rng(9)
    special = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff,
                        0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x5bff, 0x3555], dtype=np.uint16)
    a = np.concatenate([rng.choice(FINITE, n), np.repeat(special, len(special))])
    b = np.concatenate([rng.choice(FINITE, n), np.tile(special, len(special))])
    # also pairs close to each other (cancellation) and small ones (underflow)
    c = rng.choice(FINITE, 5000)
    a = np.concatenate([a, c, rng.integers(0, 0x1400, 5000).astype(np.uint16)])
    b = np.concatenate([b, c ^ 1, rng.integers(0, 0x1400, 5000).astype(np.uint16)])
    return a, b


def expected(op, a16, b16):
    """numpy: float4 arithmetic rounded to a half, and which rows raise."""
    a, b = a16.astype(np.float32), b16.astype(np.float32)
    with np.errstate(all="ignore"):
        r = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
        h = r.astype(np.float16)
        err = (np.isinf(r) & np.isfinite(a) & (np.isfinite(b) if op != "/" else True))
        err |= np.isfinite(r) & np.isinf(h)
        err |= (r != 0) & ~np.isnan(r) & (h == 0)
        if op == "*":
            err |= (r == 0) & (a != 0) & (b != 0)
        if op == "/":
            err |= (b == 0) & ~np.isnan(a)
            err |= (r == 0) & (a != 0) & ~np.isinf(b)
    return h, err


def test_arithmetic_is_float4_rounded():
    a, b = op_pairs()
    res = {op: expected(op, a.view(np.float16), b.view(np.float16)) for op in "+-*/"}
    psql("CREATE TABLE pairs (id int4, a float2, b float2, ok_pl bool, ok_mi bool, ok_mul bool, ok_div bool)")
    copy_binary("pairs", [(i, int(x), int(y)) + tuple(not bool(res[op][1][i]) for op in "+-*/")
                          for i, (x, y) in enumerate(zip(a, b))], ("i", "H", "H", "?", "?", "?", "?"))
    for op, ok in zip("+-*/", ("ok_pl", "ok_mi", "ok_mul", "ok_div")):
        h, err = res[op]
        got = lines("SELECT id || ' ' || encode(float2send(a %s b), 'hex') FROM pairs"
                    " WHERE %s ORDER BY id" % (op, ok))
        hb = h.view(np.uint16)
        bad = []
        for line in got:
            i, hx = line.split()
            i = int(i)
            want = int(hb[i])
            have = int(hx, 16)
            if IS_NAN(want) and IS_NAN(have):
                continue
            if want != have:
                bad.append((op, hex(a[i]), hex(b[i]), hex(want), hex(have)))
        assert len(got) == int((~err).sum()) and bad == []
        # each row numpy expects to fail fails, with float4's SQLSTATE
        for i in np.nonzero(err)[0][:30]:
            state, msg = sqlstate("SELECT a %s b FROM pairs WHERE id = %d" % (op, i))
            r = None if op != "/" or b[i] & 0x7fff else "22012"
            assert state == (r or "22003"), (op, hex(a[i]), hex(b[i]), msg)


def test_mixed_operators_and_comparisons_are_float4s_and_float8s():
    a, b = op_pairs(8000)
    psql("CREATE TABLE mix (id int4, a float2, b float2)")
    copy_binary("mix", [(i, int(x), int(y)) for i, (x, y) in enumerate(zip(a, b))], ("i", "H", "H"))
    psql("DELETE FROM mix WHERE b::float4 = 0 OR abs(a::float4 * b::float4) > 1e30")
    for op in "+-*/":
        assert q("SELECT pg_typeof(a %s b::float4), pg_typeof(a::float4 %s b),"
                 " pg_typeof(a %s b::float8), pg_typeof(a::float8 %s b) FROM mix LIMIT 1"
                 % (op, op, op, op)) == "real|real|double precision|double precision"
        assert q("SELECT count(*) FROM mix WHERE"
                 " (a %s b::float4) IS DISTINCT FROM (a::float4 %s b::float4)"
                 " OR (a::float4 %s b) IS DISTINCT FROM (a::float4 %s b::float4)"
                 " OR (a %s b::float8) IS DISTINCT FROM (a::float8 %s b::float8)"
                 " OR (a::float8 %s b) IS DISTINCT FROM (a::float8 %s b::float8)"
                 % ((op,) * 8)) == "0"
    for op in ("=", "<>", "<", "<=", ">", ">="):
        assert q("SELECT count(*) FROM mix WHERE"
                 " (a %s b) <> (a::float4 %s b::float4)"
                 " OR (a %s b::float4) <> (a::float4 %s b::float4)"
                 " OR (a::float4 %s b) <> (a::float4 %s b::float4)"
                 " OR (a %s b::float8) <> (a::float8 %s b::float8)"
                 " OR (a::float8 %s b) <> (a::float8 %s b::float8)" % ((op,) * 10)) == "0"
    # unary minus and abs flip and clear the sign bit (NaNs too, as float4's)
    assert q("SELECT count(*) FROM mix WHERE get_byte(float2send(-a), 0) <> (get_byte(float2send(a), 0) # 128)"
             " OR float2send(abs(a)) <> float2send(@ a)"
             " OR abs(a)::float4 IS DISTINCT FROM abs(a::float4)") == "0"
    assert q("SELECT 1::float2 + 1::float2 = 2, pg_typeof(1::float2 + 1::float2),"
             " pg_typeof(-1::float2), pg_typeof(abs(1::float2))") == "t|float2|float2|float2"


# ---------------------------------------------------------------- operator classes

@pytest.fixture(scope="module")
def sets():
    """hv(id, h float2) and fv(id, f float4) with the same values, duplicates,
    -0 and 0, NaNs and infinities; hv2 and fv2 alike for joins."""
    rng = np.random.default_rng(11)
    vals = rng.choice(FINITE[np.abs(FINITE.view(np.float16).astype(np.float32)) < 1024], 6000)
    vals = np.concatenate([vals, vals[:500], np.array([0, 0x8000, 0x7e00, 0xfe01, 0x7c00, 0xfc00] * 3,
                                                      dtype=np.uint16)])
    other = np.concatenate([rng.choice(vals, 4000), np.array([0x8000, 0x7e01], dtype=np.uint16)])
    for name, v in (("hv", vals), ("hv2", other)):
        psql("CREATE TABLE %s (id int4, h float2)" % name)
        copy_binary(name, [(i, int(x)) for i, x in enumerate(v)], ("i", "H"))
    psql("CREATE TABLE fv AS SELECT id, h::float4 AS f FROM hv; CREATE TABLE fv2 AS SELECT id, h::float4 AS f FROM hv2;"
         " ANALYZE hv, hv2, fv, fv2")


PLAN_OFF = {"hash": "SET enable_mergejoin = off; SET enable_nestloop = off; ",
            "merge": "SET enable_hashjoin = off; SET enable_nestloop = off; "}


def test_group_by_distinct_order_by_as_float4(sets):
    for agg in ("on", "off"):
        s = "SET enable_hashagg = %s; " % agg
        assert lines(s + "SELECT h::float4, count(*) FROM hv GROUP BY h ORDER BY 1") == \
            lines(s + "SELECT f, count(*) FROM fv GROUP BY f ORDER BY 1")
        assert lines(s + "SELECT DISTINCT h::float4 FROM hv ORDER BY 1") == \
            lines(s + "SELECT DISTINCT f FROM fv ORDER BY 1")
    assert lines("SELECT h::float4, id FROM hv ORDER BY h DESC, id") == \
        lines("SELECT f, id FROM fv ORDER BY f DESC, id")
    # NaNs are one group, above every number; -0 and 0 are one group
    assert q("SELECT count(*) FROM (SELECT DISTINCT h FROM hv WHERE h = 'NaN' OR h = 0) x") == "2"


@pytest.mark.parametrize("kind", ["hash", "merge"])
def test_joins(sets, kind):
    s = PLAN_OFF[kind]
    join = "Hash Join" if kind == "hash" else "Merge Join"
    for cond, ref in (("hv.h = hv2.h", "fv.f = fv2.f"),
                      ("hv.h = fv2.f", "fv.f = fv2.f"),          # float2 = float4
                      ("hv.h = hv2.h::float8", "fv.f = fv2.f::float8")):
        right = "fv2" if "fv2" in cond else "hv2"
        plan = q(s + "EXPLAIN (COSTS OFF) SELECT count(*) FROM hv JOIN %s ON %s" % (right, cond))
        assert join in plan, plan
        got = lines(s + "SELECT hv.id, %s.id FROM hv JOIN %s ON %s ORDER BY 1, 2" % (right, right, cond))
        want = lines(s + "SELECT fv.id, fv2.id FROM fv JOIN fv2 ON %s ORDER BY 1, 2" % ref)
        assert got == want and len(got) > 4000


def test_index_scans(sets):
    psql("CREATE INDEX hv_h ON hv (h)")
    s = "SET enable_seqscan = off; SET enable_bitmapscan = off; "
    for cond in ("h < 1.5", "h = '0.5'", "h >= -2::float4", "h BETWEEN -1 AND 1", "h = 'NaN'",
                 "h > 1000", "h IN (0.25, 0.5, 3)", "h = 0"):
        plan = q(s + "EXPLAIN (COSTS OFF) SELECT id FROM hv WHERE %s" % cond)
        assert "Index" in plan and "Index Cond" in plan, (cond, plan)
        got = lines(s + "SELECT id FROM hv WHERE %s ORDER BY id" % cond)
        want = lines("SELECT id FROM fv WHERE %s ORDER BY id" % cond.replace("h", "f"))
        assert got == want, cond
    assert q(s + "SELECT min(h)::text || max(h)::text FROM hv WHERE h < 'Infinity'") == \
        q("SELECT min(h)::text || max(h)::text FROM hv WHERE h < 'Infinity'")
    psql("DROP INDEX hv_h")


def test_hash_values_agree_with_float4_and_float8(all_halves):
    assert q("SELECT count(*) FROM all_h WHERE float2hash(h) <> hashfloat4(h::float4)"
             " OR float2hash(h) <> hashfloat8(h::float8)"
             " OR float2hashextended(h, 42) <> hashfloat8extended(h::float8, 42)") == "0"
    assert q("SELECT amvalidate(oid) FROM pg_opclass WHERE opcname = 'float2_ops'") == "t\nt"


# ---------------------------------------------------------------- aggregates

def test_aggregates_match_float4_and_float8(sets):
    aggs = ("sum(%s)", "avg(%s)", "min(%s)", "max(%s)", "stddev(%s)", "stddev_samp(%s)",
            "stddev_pop(%s)", "variance(%s)", "var_samp(%s)", "var_pop(%s)", "count(%s)")
    where = "WHERE h < 'Infinity' AND h > '-Infinity' AND h = h AND NOT h = 'NaN'"
    got = q("SELECT %s FROM hv %s" % (", ".join((a % "h") + ("::float8" if a[:2] == "mi" or a[:2] == "ma" else "")
                                             for a in aggs), where))
    f8 = q("SELECT sum(h::float4), %s FROM hv %s" % (", ".join(a % "h::float8" for a in aggs[1:]), where))
    assert got == f8
    assert q("SELECT pg_typeof(sum(h)), pg_typeof(avg(h)), pg_typeof(min(h)), pg_typeof(max(h)),"
             " pg_typeof(variance(h)) FROM hv") == "real|double precision|float2|float2|double precision"
    # NaN and infinities as float4's aggregates treat them
    assert q("SELECT sum(h)::text, max(h)::text, min(h)::text, avg(h)::text FROM hv") == \
        q("SELECT sum(h::float4)::text, max(h::float4)::text, min(h::float4)::text, avg(h::float8)::text FROM hv")
    # parallel: partial aggregates combine (sums of these halves are exact in
    # float8; sum() adds in float4, whose rounding depends on the order)
    par = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
           " SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = off; ")
    sql = "SELECT avg(h), min(h), max(h), count(h), var_pop(h)::numeric(30,4) FROM hv %s" % where
    assert "Partial Aggregate" in q(par + "EXPLAIN (COSTS OFF) " + sql)
    assert q(par + sql) == q(sql)
    psum = float(q(par + "SELECT sum(h) FROM hv %s" % where))
    assert abs(psum - float(q("SELECT sum(h::float8) FROM hv %s" % where))) < 0.5
    assert q("SELECT sum(x), avg(x), min(x), max(x), stddev(x) FROM (SELECT NULL::float2 x) s") == "||||"


# ---------------------------------------------------------------- domains

def test_domain_over_float2():
    psql("CREATE DOMAIN posh AS float2 CHECK (VALUE > 0); CREATE TABLE dom (x posh)")
    psql("INSERT INTO dom VALUES (1.5), (0.1)")
    assert q("SELECT x::text FROM dom ORDER BY x") == "0.1\n1.5"
    state, _ = sqlstate("INSERT INTO dom VALUES (-1)")
    assert state == "23514"
    assert q("SELECT sum(x), max(x) FROM dom") == "1.5999756|1.5"   # a float4 sum


# ---------------------------------------------------------------- Arrow

def write_arrow(path, table, stats=None):
    with ipc.new_file(path, table.schema) as w:
        for i, b in enumerate(table.to_batches(max_chunksize=1000)):
            w.write_batch(b, custom_metadata=stats(b) if stats else None)
    os.chmod(path, 0o644)


def test_arrow_fdw_reads_float16_bits(worlddir):
    path = os.path.join(worlddir, "halves.arrow")
    ids = pa.array(np.arange(65537, dtype=np.int32))
    bits = np.concatenate([ALL, np.array([0], dtype=np.uint16)])
    h = pa.Array.from_buffers(pa.float16(), 65537, [pa.array([True] * 65536 + [False]).buffers()[1],
                                                    pa.py_buffer(bits.tobytes())])
    write_arrow(path, pa.table({"id": ids, "h": h}))
    psql("IMPORT FOREIGN SCHEMA t FROM SERVER arrow_fdw INTO public OPTIONS (file '%s')" % path)
    assert q("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 't'::regclass"
             " AND attname = 'h'") == "float2"
    got = lines("SELECT coalesce(encode(float2send(h), 'hex'), 'null') FROM t ORDER BY id")
    assert got == ["%04x" % int(b) for b in ALL] + ["null"]
    # a domain column reads through the same conversion, and checks
    psql("CREATE DOMAIN anyh AS float2 CHECK (VALUE = VALUE);"
         " CREATE FOREIGN TABLE td (id int4, h anyh) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    assert q("SELECT count(*) FROM td t2 JOIN t USING (id) WHERE float2send(t2.h) = float2send(t.h)") == "65536"


def test_arrow_fdw_stats_skip_with_float2_quals(worlddir):
    path = os.path.join(worlddir, "stats.arrow")
    vals = np.arange(0, 4000, dtype=np.float32).astype(np.float16)   # exact up to 2048, then even
    tab = pa.table({"h": pa.array(vals, type=pa.float16())})

    def stats(b):
        v = np.array(b.column(0).to_numpy(zero_copy_only=False), dtype=np.float64)
        return {"pg_warp.min.0": "%.17g" % v.min(), "pg_warp.max.0": "%.17g" % v.max()}
    write_arrow(path, tab, stats)
    psql("CREATE FOREIGN TABLE st (h float2) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    # floats: only the minimum is used (a NaN may lie above any maximum)
    for cond, skipped in (("h < 1000", 3), ("h >= 2000.5", None), ("h = 1500", 2),
                          ("h < '1000'::float2", 3), ("h < 999.5::float4", 3)):
        for skip in ("on", "off"):
            got = q("SET pg_warp.arrow_stats_skip = %s; SELECT count(*), sum(h) FROM st WHERE %s" % (skip, cond))
            assert got == q("SELECT count(*), sum(h) FROM (SELECT h::float2 AS h FROM"
                            " unnest('{%s}'::float4[]) h) x WHERE %s" % (",".join(str(float(x)) for x in vals), cond))
        plan = q("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM st WHERE %s" % cond)
        if skipped is not None:
            assert "Batches Skipped: %d" % skipped in plan, (cond, plan)


def test_pg2arrow_writes_float16(worlddir):
    pg2arrow = os.path.join(TOOLS, "pg2arrow")
    out = os.path.join(worlddir, "p2a.arrow")
    psql("CREATE TABLE p2a AS SELECT id, h FROM all_h WHERE (id & 32767) <= 31744")
    r = subprocess.run([pg2arrow, "-d", DB, "-S", "-o", out, "-c", "SELECT id, h FROM p2a ORDER BY id"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with ipc.open_file(out) as f:
        t = f.read_all()
        md = f.get_batch_with_custom_metadata(0)[1]
    assert str(t.schema.field("h").type) == "halffloat"
    assert t.schema.field("h").metadata[b"pg_type"] == b"float2"
    got = np.frombuffer(t.column("h").combine_chunks().buffers()[1], dtype=np.uint16)[:t.num_rows]
    want = np.array([int(x) for x in lines("SELECT id FROM p2a ORDER BY id")], dtype=np.uint16)
    assert (got == want).all()
    assert float(md[b"pg_warp.min.1"]) == -np.inf and float(md[b"pg_warp.max.1"]) == np.inf
    # and back through arrow_fdw, the same bits
    psql("CREATE FOREIGN TABLE p2a_back (id int4, h float2) SERVER arrow_fdw OPTIONS (file '%s')" % out)
    assert q("SELECT count(*) FROM p2a_back b JOIN p2a USING (id) WHERE float2send(b.h) = float2send(p2a.h)") == \
        str(len(want))
