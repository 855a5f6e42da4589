"""HyperLogLog sketches (doc/hll.md) against the test cluster (PG* variables):
the documented hash and format (a Python model of both), determinism, merge and
combine equal to the sketch of the union, precision folding, cross-type
equality, NULLs and empty input, accuracy within 3 standard errors for 1 to
10^7 distinct values, parallel aggregation equal to serial, and corrupt
sketches as errors.  Runs in a database of its own whose search_path has
pgwarp (the functions resolve unqualified)."""
import math
import struct

import pytest

from pg_sql import psql

DB = "pg_warp_hll_test"
M64 = (1 << 64) - 1


# --- a Python model of the documented hash (xpu/xpu_hll.h, doc/hll.md) ---
SEED_INT = 0x243f6a8885a308d3
SEED_FLOAT = 0x13198a2e03707344
SEED_TEXT = 0x082efa98ec4e6c89
K_LEN = 0x9e3779b97f4a7c15
K_FINAL = 0xc2b2ae3d27d4eb4f


def mix(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def hash_bytes(seed, data):
    h = seed ^ ((len(data) * K_LEN) & M64)
    for i in range(0, len(data), 8):
        h = mix(h ^ int.from_bytes(data[i:i + 8].ljust(8, b"\0"), "little"))
    return mix(h ^ K_FINAL)


def hash_int(v):
    return hash_bytes(SEED_INT, struct.pack("<q", v))


def rank(h, p):
    w = ((h << p) & M64) | (1 << (p - 1))
    return 64 - w.bit_length() + 1


# --- the cluster ---
@pytest.fixture(scope="module", autouse=True)
def hll_db():
    psql("DROP DATABASE IF EXISTS %s" % DB)
    psql("CREATE DATABASE %s" % DB)
    q("CREATE EXTENSION pg_warp")
    q("ALTER DATABASE %s SET search_path = pgwarp, public" % DB)
    yield
    psql("DROP DATABASE IF EXISTS %s" % DB)


def q(sql):
    return psql(sql, db=DB)[1]


def sketch(sql):
    """The bytes of the bytea that sql returns."""
    out = q(sql)
    assert out.startswith("\\x"), out
    return bytes.fromhex(out[2:])


def hashes_by_value(values_sql):
    """Comma-separated hex of the one-value sketch of each row (v, i) of
    values_sql, in the order of i."""
    return q("SELECT string_agg(encode(s, 'hex'), ',' ORDER BY i) FROM "
             "(SELECT i, hll_sketch(v) s FROM (%s) t GROUP BY i) x" % values_sql)


def explicit_hashes(b):
    assert b[:3] == b"WH\x01" and b[4] == 0, b[:8]
    return [int.from_bytes(b[i:i + 8], "little") for i in range(8, len(b), 8)]


def dense_registers(b):
    p = b[3]
    assert b[4] == 1
    bits = int.from_bytes(b[8:], "little")
    return [(bits >> (6 * i)) & 63 for i in range(1 << p)]


# --- the documented hash and format ---
def test_hash_matches_the_documented_function():
    vals = [0, 1, -1, 42, 2**63 - 1, -2**63, 123456789]
    got = hashes_by_value("SELECT v, i FROM unnest(ARRAY%r::int8[]) WITH ORDINALITY u(v, i)"
                          % vals).split(",")
    for v, hexs in zip(vals, got):
        assert explicit_hashes(bytes.fromhex(hexs)) == [hash_int(v)], v
    for s in ["", "a", "abcdefgh", "abcdefghi", "ünïcode text of some length"]:
        b = sketch("SELECT hll_sketch(%s::text)" % ("'" + s + "'"))
        assert explicit_hashes(b) == [hash_bytes(SEED_TEXT, s.encode())], s
    b = sketch("SELECT hll_sketch(0.25::float8)")
    assert explicit_hashes(b) == [hash_bytes(SEED_FLOAT, struct.pack("<d", 0.25))]


def test_explicit_sketch_is_sorted_distinct_hashes():
    b = sketch("SELECT hll_sketch(g % 500) FROM generate_series(1, 5000) g")
    assert explicit_hashes(b) == sorted(hash_int(v) for v in range(500))


def test_dense_registers_match_the_model():
    n, p = 5000, 10
    b = sketch("SET pg_warp.hll_registers_bits = %d; "
               "SELECT hll_sketch(g) FROM generate_series(1, %d) g" % (p, n))
    assert b[3] == p and len(b) == 8 + (6 << p) // 8
    regs = [0] * (1 << p)
    for v in range(1, n + 1):
        h = hash_int(v)
        i = h >> (64 - p)
        regs[i] = max(regs[i], rank(h, p))
    assert dense_registers(b) == regs
    hist = q("SET pg_warp.hll_registers_bits = %d; SELECT array_to_string("
             "hll_sketch_histogram(hll_sketch(g)), ',') FROM generate_series(1, %d) g" % (p, n))
    assert [int(x) for x in hist.split(",")] == [regs.count(k) for k in range(66 - p)]


# --- the hash's distribution ---
def int_hashes(values_sql):
    """The hashes of the int8 values v that values_sql returns (with an
    ordinal i), in the order of i."""
    out = hashes_by_value(values_sql)
    return [int.from_bytes(explicit_bytes(x), "little") for x in out.split(",")]


def explicit_bytes(hexs):
    return bytes.fromhex(hexs)[8:16]


def test_hash_bits_are_balanced_and_registers_uniform():
    hs = int_hashes("SELECT g::int8 AS v, g AS i FROM generate_series(1, 20000) g")
    n = len(hs)
    assert n == 20000
    for bit in range(64):
        ones = sum((h >> bit) & 1 for h in hs)
        assert abs(ones - n / 2) < 4 * math.sqrt(n / 4), bit     # 4 sigma
    # chi-square of the top 8 bits (256 registers at p = 8), 255 degrees of freedom
    counts = [0] * 256
    for h in hs:
        counts[h >> 56] += 1
    e = n / 256
    chi2 = sum((c - e) ** 2 / e for c in counts)
    assert chi2 < 255 + 5 * math.sqrt(2 * 255), chi2


def test_hash_avalanche():
    base = list(range(1, 201))
    flips = [[0] * 64 for _ in range(64)]
    values = base + [v ^ (1 << k) for v in base for k in range(63)]
    # row i of the query is values[i - 1]
    hs = int_hashes("SELECT CASE WHEN k < 0 THEN b ELSE b # (1::int8 << k) END AS v, "
                    "CASE WHEN k < 0 THEN b ELSE 200 + (b - 1) * 63 + k + 1 END AS i "
                    "FROM generate_series(1, 200) b, generate_series(-1, 62) k")
    assert len(hs) == len(values)
    hmap = dict(zip(values, hs))
    for v in base:
        for k in range(63):
            d = hmap[v] ^ hmap[v ^ (1 << k)]
            for bit in range(64):
                flips[k][bit] += (d >> bit) & 1
    n = len(base)
    for k in range(63):
        for bit in range(64):
            # each output bit flips with probability 1/2: 5 sigma band
            assert abs(flips[k][bit] - n / 2) < 5 * math.sqrt(n / 4), (k, bit, flips[k][bit])


# --- determinism, merge, combine, folding ---
def test_same_input_same_bytes_any_order():
    for n in (100, 50000):
        a = sketch("SELECT hll_sketch(g) FROM generate_series(1, %d) g" % n)
        b = sketch("SELECT hll_sketch(g ORDER BY g DESC) FROM generate_series(1, %d) g" % n)
        c = sketch("SELECT hll_sketch(x) FROM (SELECT g FROM generate_series(1, %d) g "
                   "ORDER BY md5(g::text)) t(x)" % n)
        d = sketch("SELECT hll_sketch(g %% %d) FROM generate_series(1, %d) g" % (n, 3 * n))
        assert a == b == c
        assert d == sketch("SELECT hll_sketch(g) FROM generate_series(0, %d) g" % (n - 1))


@pytest.mark.parametrize("n", [1000, 3000, 200000])
def test_merge_and_combine_equal_the_union(n):
    count = int(q("SELECT hll_count(g) FROM generate_series(1, %d) g" % n))
    parts = "SELECT hll_sketch(g) FROM generate_series(1, %d) g GROUP BY g %% 7" % n
    assert int(q("SELECT hll_merge(s) FROM (%s) t(s)" % parts)) == count
    union = sketch("SELECT hll_sketch(g) FROM generate_series(1, %d) g" % n)
    assert sketch("SELECT hll_combine(s) FROM (%s) t(s)" % parts) == union
    # overlapping parts
    over = ("SELECT hll_sketch(g) FROM generate_series(1, %d) g, generate_series(1, 2) k "
            "GROUP BY (g + k) %% 5" % n)
    assert sketch("SELECT hll_combine(s) FROM (%s) t(s)" % over) == union


@pytest.mark.parametrize("n", [50, 1000, 100000])
def test_merging_precisions_folds_to_the_lower(n):
    a = "(SELECT hll_sketch(g) FROM generate_series(1, %d) g WHERE g %% 2 = 0)" % n
    b = ("(SELECT hll_sketch(g) FROM generate_series(1, %d) g WHERE g %% 2 = 1)" % n)
    combined = sketch("SET pg_warp.hll_registers_bits = 14; CREATE TEMP TABLE s14 AS SELECT %s AS s; "
                      "SET pg_warp.hll_registers_bits = 10; CREATE TEMP TABLE s10 AS SELECT %s AS s; "
                      "SELECT hll_combine(s) FROM (SELECT s FROM s14 UNION ALL SELECT s FROM s10) t"
                      % (a, b))
    p10 = sketch("SET pg_warp.hll_registers_bits = 10; "
                 "SELECT hll_sketch(g) FROM generate_series(1, %d) g" % n)
    assert combined[3] == 10 and combined == p10
    for p in (4, 9, 13, 18):
        folded = sketch("SET pg_warp.hll_registers_bits = 18; CREATE TEMP TABLE s18 AS "
                        "SELECT hll_sketch(g) s FROM generate_series(1, %d) g; "
                        "SET pg_warp.hll_registers_bits = %d; "
                        "SELECT hll_combine(s) FROM (SELECT s FROM s18 UNION ALL "
                        "SELECT hll_sketch(1)) t" % (n, p))
        assert folded == sketch("SET pg_warp.hll_registers_bits = %d; "
                                "SELECT hll_sketch(g) FROM generate_series(1, %d) g" % (p, n)), p


# --- canonical forms across types ---
def test_cross_type_equality():
    ints = "SELECT hll_sketch(g::%s) FROM generate_series(-300, 3000) g"
    s = [sketch(ints % t) for t in ("int2", "int4", "int8")]
    assert s[0] == s[1] == s[2]
    nums = [sketch("SELECT hll_sketch(round(g / 7.0, 3)::numeric(20, %d)) "
                   "FROM generate_series(-2000, 2000) g" % scale) for scale in (3, 5, 9)]
    assert nums[0] == nums[1] == nums[2]
    f = [sketch("SELECT hll_sketch((g / 8.0)::%s) FROM generate_series(-5000, 5000) g" % t)
         for t in ("float4", "float8")]
    assert f[0] == f[1]
    assert q("SELECT hll_count(x) FROM (VALUES ('-0'::float4), ('0'), ('NaN'), "
             "('-Infinity'), ('Infinity')) v(x)") == "4"
    assert q("SELECT hll_count(x) FROM (VALUES (10::numeric), (10.000), (1e1), (100), "
             "(0.1), (0.10), ('NaN'), ('Infinity')) v(x)") == "5"
    assert sketch("SELECT hll_sketch('x  '::char(3))") == sketch("SELECT hll_sketch('x'::text)")


def test_nulls_and_empty_input():
    assert q("SELECT hll_count(NULL::int8) FROM generate_series(1, 100)") == "0"
    assert q("SELECT hll_count(g) FROM generate_series(1, 0) g") == "0"
    assert q("SELECT hll_count(CASE WHEN g % 2 = 0 THEN g END) FROM generate_series(1, 200) g") \
        == "100"
    assert q("SELECT hll_merge(NULL::bytea) FROM generate_series(1, 3)") == "0"
    assert q("SELECT hll_combine(NULL::bytea) IS NULL") == "t"
    assert sketch("SELECT hll_sketch(NULL::text)") == b"WH\x01\x0e\0\0\0\0"
    assert q("SELECT hll_merge(x) FROM (VALUES (NULL::bytea), ((SELECT hll_sketch(1))), (NULL)) v(x)") == "1"


# --- accuracy ---
@pytest.mark.parametrize("p", [14, 10])
def test_estimates_within_three_standard_errors(p):
    se = 1.04 / math.sqrt(2 ** p)
    ns = [10 ** k for k in range(0, 8 if p == 14 else 7)]
    for seed in range(2 if p == 14 else 3):
        for n in ns:
            if n == 10 ** 7 and seed > 0:
                continue
            est = int(q("SET pg_warp.hll_registers_bits = %d; SELECT hll_count(g::int8 * 1000003 + %d) "
                        "FROM generate_series(1, %d) g" % (p, seed, n)))
            assert abs(est - n) <= 3 * se * n, (p, seed, n, est)
            if n <= (6 << p) // 64:     # explicit sketches count exactly
                assert est == n


def test_small_cardinalities_exact():
    out = q("SELECT string_agg(c::text, ',' ORDER BY n) FROM generate_series(0, 100) n, "
            "LATERAL (SELECT hll_count(md5(g::text)) FROM generate_series(1, n) g) t(c)")
    assert [int(x) for x in out.split(",")] == list(range(101))


# --- parallel plans ---
# PostgreSQL's own partial aggregation (combine, serial and deserial functions):
# GpuPreAgg, which now takes heap groupings too, is kept out
PARALLEL = ("SET pg_warp.enable_gpupreagg = off; "
            "SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; "
            "SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; "
            "SET parallel_leader_participation = off; ")
SERIAL = "SET pg_warp.enable_gpupreagg = off; SET max_parallel_workers_per_gather = 0; "


def test_parallel_equals_serial():
    q("DROP TABLE IF EXISTS hll_par; CREATE TABLE hll_par AS "
      "SELECT g AS id, (g::int8 * 7919) % 100003 AS v, g % 5 AS k, md5(g::text) AS t "
      "FROM generate_series(1, 300000) g; ANALYZE hll_par")
    plan = q(PARALLEL + "EXPLAIN SELECT hll_count(v) FROM hll_par")
    assert "Partial Aggregate" in plan and "Workers Planned" in plan, plan
    for sql in ("SELECT hll_sketch(v) FROM hll_par",
                "SELECT hll_sketch(t) FROM hll_par WHERE id % 1000 = 0",
                "SELECT hll_sketch(v) FROM hll_par WHERE id < 1000",
                "SELECT string_agg(encode(s, 'hex'), ',' ORDER BY k) FROM "
                "(SELECT k, hll_sketch(v) s FROM hll_par GROUP BY k) g",
                "SELECT hll_count(v) FROM hll_par",
                "SELECT hll_combine(s) FROM (SELECT hll_sketch(v) s FROM hll_par GROUP BY id % 50) x"):
        assert q(PARALLEL + sql) == q(SERIAL + sql), sql
    q("CREATE TABLE hll_par_s AS SELECT id % 997 AS g, hll_sketch(v) AS s FROM hll_par "
      "GROUP BY 1; ANALYZE hll_par_s")
    sql = "SELECT hll_merge(s) FROM hll_par_s"
    assert "Partial Aggregate" in q(PARALLEL + "EXPLAIN " + sql)
    assert q(PARALLEL + sql) == q(SERIAL + sql) == q("SELECT hll_count(v) FROM hll_par")
    # the same sketches from GpuPreAgg over the heap table (the CPU engine)
    for sql in ("SELECT hll_sketch(v) FROM hll_par",
                "SELECT string_agg(encode(s, 'hex'), ',' ORDER BY k) FROM "
                "(SELECT k, hll_sketch(v) s FROM hll_par GROUP BY k) g",
                "SELECT hll_count(t) FROM hll_par"):
        engine = ("SET pg_warp.engine_startup_cost = 0; SET pg_warp.engine_row_cost = 0; "
                  "SET max_parallel_workers_per_gather = 0; ")
        assert "GpuPreAgg" in q(engine + "EXPLAIN " + sql), sql
        assert q(engine + sql) == q(SERIAL + sql), sql
    q("DROP TABLE hll_par, hll_par_s")


# --- errors ---
def sqlstate_db(sql):
    rc, out, errtext = psql(sql, check=False, db=DB)
    assert rc != 0, sql
    for line in errtext.splitlines():
        if line.startswith("ERROR:"):
            return line.split()[1].rstrip(":"), errtext
    raise AssertionError(errtext)


def test_corrupt_sketches_are_errors():
    good = sketch("SELECT hll_sketch(g) FROM generate_series(1, 5000) g")
    small = sketch("SELECT hll_sketch(g) FROM generate_series(1, 5) g")

    def lit(b):
        return "'\\x%s'::bytea" % b.hex()

    bad = [b"", good[:7], b"XH" + good[2:], good[:2] + b"\x02" + good[3:],
           good[:3] + b"\x13" + good[4:], good[:3] + b"\x03" + good[4:],
           good[:4] + b"\x05" + good[5:], good[:5] + b"\x01" + good[6:],
           good[:-1], good + b"\x00", small[:-1], small[:8] + small[16:24] + small[8:16] + small[24:],
           small[:8] + small[8:16] * 2,
           good[:8] + b"\xff" * (len(good) - 8)]
    for b in bad:
        for fn in ("SELECT hll_merge(%s)", "SELECT hll_combine(%s)", "SELECT hll_sketch_histogram(%s)"):
            code, text = sqlstate_db(fn % lit(b))
            assert code == "22P03", (b[:16].hex(), text)
            assert "invalid HyperLogLog sketch" in text
    # the cluster is still up, and good sketches still work
    assert q("SELECT hll_merge(%s)" % lit(small)) == "5"


def test_random_bytes_never_crash():
    import random
    rnd = random.Random(7)
    good = sketch("SELECT hll_sketch(g) FROM generate_series(1, 3000) g")
    for _ in range(40):
        b = bytearray(good)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        rc, out, errtext = psql("SELECT hll_merge('\\x%s'::bytea)" % bytes(b).hex(), check=False, db=DB)
        assert rc == 0 or "22P03" in errtext, errtext
    assert q("SELECT 1") == "1"


def test_nondeterministic_collation_refused():
    q("DROP COLLATION IF EXISTS hll_ci; CREATE COLLATION hll_ci "
      "(provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
    code, text = sqlstate_db("SELECT hll_count(x COLLATE hll_ci) FROM (VALUES ('a'::text)) v(x)")
    assert code == "0A000", text
    assert q("SELECT hll_count(x COLLATE \"C\") FROM (VALUES ('a'::text), ('A')) v(x)") == "2"


def test_bad_precision_setting():
    code, _ = sqlstate_db("SET pg_warp.hll_registers_bits = 19")
    assert code == "22023"
    code, _ = sqlstate_db("SET pg_warp.hll_registers_bits = 3")
    assert code == "22023"


def test_unqualified_names_resolve_for_a_plain_user():
    q("DROP ROLE IF EXISTS hll_user; CREATE ROLE hll_user LOGIN")
    try:
        rc, out, errtext = psql("SET ROLE hll_user; SELECT hll_count(g), hll_merge(s) FROM "
                                "(SELECT g, hll_sketch(g) OVER () s FROM generate_series(1, 10) g) t",
                                db=DB)
        assert out == "10|10", errtext
    finally:
        q("DROP ROLE hll_user")


def test_shared_state_and_running_windows():
    # hll_count and hll_sketch of one argument share a transition state
    out = q("SELECT hll_count(g), hll_sketch(g) = (SELECT hll_sketch(x) FROM "
            "generate_series(1, 5000) x), hll_count(g) FROM generate_series(1, 5000) g")
    c, same, c2 = out.split("|")
    assert same == "t" and c == c2
    # a running window finalizes the state again and again while it grows
    out = q("SELECT string_agg(c::text, ',' ORDER BY n) FROM (SELECT g AS n, "
            "hll_count(g) OVER (ORDER BY g) c FROM generate_series(1, 5000) g) t")
    cs = [int(x) for x in out.split(",")]
    assert cs[:1536] == list(range(1, 1537))
    assert all(abs(c - n) <= 3 * 0.0082 * n for n, c in enumerate(cs, 1))
    assert cs[-1] == int(c)
