"""
Test data shared by both directions of the interop suite: one case per Arrow
type (hand-picked edge values in the JSON form of doc/arrow-json.md) and a
seeded random generator of JSON-form values for any field.

Every random stream is seeded from a fixed seed and the case name (crc32,
not hash(), which Python randomizes per process), so a run is reproducible.
"""

import random
import struct
import zlib

import pyarrow as pa

import arrow_json_form as J

SEED = 0x5EED2024

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
DAY_MS = 86400000


def rng_for(*names):
    key = "/".join(str(n) for n in names).encode("utf-8")
    return random.Random(SEED ^ zlib.crc32(key))


# ---------------------------------------------------------------------------
# Edge values per type (JSON form)
# ---------------------------------------------------------------------------

def _int_edges(bits, signed):
    if signed:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return [lo, hi, 0, -1, 1, None, lo + 1, hi - 1]
    hi = (1 << bits) - 1
    return [0, hi, 1, hi - 1, 1 << (bits - 1), None]


def _f(fmt, x):
    """x rounded to the float format fmt ('e', 'f'), widened to double."""
    return struct.unpack("<" + fmt, struct.pack("<" + fmt, x))[0]


FLOAT64_EDGES = [
    0.0, -0.0, "Infinity", "-Infinity", "NaN", None,
    5e-324, -5e-324,                        # smallest subnormals
    2.225073858507201e-308,                 # largest subnormal
    2.2250738585072014e-308,                # smallest normal
    1.7976931348623157e308, -1.7976931348623157e308,
    0.1, 1 / 3, 1.0, -2.5, 1e16, 123456789012345678.0,
    9007199254740993.0, 4.35e-310, 1e-5, 1e21, 1e22, 0.3,
]
FLOAT32_EDGES = [
    0.0, -0.0, "Infinity", "-Infinity", "NaN", None,
    1.401298464324817e-45, -1.401298464324817e-45,  # smallest subnormals
    1.1754942106924411e-38,                 # largest subnormal
    1.1754943508222875e-38,                 # smallest normal
    3.4028234663852886e+38, -3.4028234663852886e+38,
    _f("f", 0.1), _f("f", 1 / 3), 1.0, -2.5, 16777216.0, _f("f", 1e10),
]
FLOAT16_EDGES = [
    0.0, -0.0, "Infinity", "-Infinity", "NaN", None,
    5.960464477539063e-08, -5.960464477539063e-08,  # 2^-24, subnormal
    6.097555160522461e-05,                  # largest subnormal
    6.103515625e-05,                        # smallest normal
    65504.0, -65504.0, 0.333251953125, 0.0999755859375, 1.0, -2.5, 2048.0,
    0.0009765625,
]


def _dec_edges(p, s):
    big = 10 ** p - 1
    vals = [big, -big, 0, 1, -1, 10 ** (p // 2), -(10 ** (p - 1))]
    return [J.decimal_to_json(v, s) for v in vals] + [None]


def _time_edges(hi):
    return [0, 1, hi // 2, hi, None, hi - 1]


def _i64_edges(unit_per_s):
    return [0, -1, 1, 1700000000 * unit_per_s, -1700000000 * unit_per_s,
            I64_MIN, I64_MAX, None, I64_MIN + 1]


UTF8_EDGES = [
    "", "a", None, "日本語テキスト", "中文字符", "한국어",
    "😀", "👍🏽", "👨‍👩‍👧", "e\u0301", "a\u0308\u0301\u0323",
    "a\x00b", "\x00", "quote\" back\\slash /", "tab\tnl\ncr\r",
    "\x01\x1f\x7f", "\u2028\u2029", "\ufeffbom", "\uffff", "\U0010ffff",
    "x" * 1000, "Ǆ" * 7, "\ufffd", "\u0085\u009f\u00a0",
]
BINARY_EDGES = ["", "00", None, bytes(range(256)).hex(), "ff" * 3,
                "00000000", "7f80", "deadbeef" * 40]


class Case:
    def __init__(self, cid, typ, edges, no_all_null=False):
        self.id = cid
        self.type = typ
        self.edges = edges
        self.no_all_null = no_all_null

    def field(self, nullable=True, name="c"):
        # pyarrow refuses a non-nullable field of the null type
        return pa.field(name, self.type,
                        nullable=nullable or pa.types.is_null(self.type))


def _cases():
    cs = [Case("null", pa.null(), [None] * 5), Case("bool", pa.bool_(),
               [True, False, None, True, True, False, None, False, True])]
    for name, (bits, signed) in [("int8", (8, True)), ("int16", (16, True)),
                                 ("int32", (32, True)), ("int64", (64, True)),
                                 ("uint8", (8, False)),
                                 ("uint16", (16, False)),
                                 ("uint32", (32, False)),
                                 ("uint64", (64, False))]:
        cs.append(Case(name, J.type_from_json(name), _int_edges(bits, signed)))
    cs += [Case("float16", pa.float16(), FLOAT16_EDGES),
           Case("float32", pa.float32(), FLOAT32_EDGES),
           Case("float64", pa.float64(), FLOAT64_EDGES)]
    for p, s in [(1, 0), (5, 2), (10, 2), (18, 6), (19, 0), (20, 19),
                 (38, 0), (38, 10), (38, 38), (5, -3), (38, -10),
                 (5, 7)]:
        cs.append(Case("decimal128_%d_%s" % (p, str(s).replace("-", "neg")),
                       pa.decimal128(p, s), _dec_edges(p, s)))
    cs += [
        Case("date32", pa.date32(), [0, -1, 1, 19000, -719162, 2932896,
                                     I32_MIN, I32_MAX, None]),
        Case("date64", pa.date64(),
             [0, -DAY_MS, 19000 * DAY_MS, -719162 * DAY_MS,
              2932896 * DAY_MS, (I64_MAX // DAY_MS) * DAY_MS,
              -(-I64_MIN // DAY_MS) * DAY_MS, None]),
        Case("time32_s", pa.time32("s"), _time_edges(86399)),
        Case("time32_ms", pa.time32("ms"), _time_edges(86399999)),
        Case("time64_us", pa.time64("us"), _time_edges(86399999999)),
        Case("time64_ns", pa.time64("ns"), _time_edges(86399999999999)),
    ]
    per_s = {"s": 1, "ms": 1000, "us": 10 ** 6, "ns": 10 ** 9}
    for unit in ("s", "ms", "us", "ns"):
        for tz, tzid in [(None, "naive"), ("UTC", "utc"),
                         ("Asia/Tokyo", "tokyo"), ("+05:30", "plus0530")]:
            cs.append(Case("timestamp_%s_%s" % (unit, tzid),
                           pa.timestamp(unit, tz=tz), _i64_edges(per_s[unit])))
    cs += [
        Case("interval_ym", J.interval_ym(),
             [0, 1, -1, 14, -14, I32_MIN, I32_MAX, None]),
        Case("interval_dt", J.interval_dt(),
             [[0, 0], [3, 500], [-1, -86399999], [I32_MIN, I32_MAX],
              [I32_MAX, I32_MIN], None, [0, 1]]),
        Case("interval_mdn", pa.month_day_nano_interval(),
             [[0, 0, 0], [1, -2, 3000], [I32_MIN, I32_MAX, I64_MIN],
              [I32_MAX, I32_MIN, I64_MAX], None, [-1, -1, -1]]),
    ]
    for unit in ("s", "ms", "us", "ns"):
        cs.append(Case("duration_" + unit, pa.duration(unit),
                       _i64_edges(per_s[unit])))
    cs += [
        Case("utf8", pa.string(), UTF8_EDGES),
        Case("large_utf8", pa.large_string(), UTF8_EDGES),
        Case("binary", pa.binary(), BINARY_EDGES),
        Case("large_binary", pa.large_binary(), BINARY_EDGES),
        Case("fixed_size_binary_1", pa.binary(1), ["00", "ff", None, "7f"]),
        Case("fixed_size_binary_4", pa.binary(4),
             ["00000000", "ffffffff", None, "0102a0b0"]),
        Case("fixed_size_binary_16", pa.binary(16),
             [bytes(range(16)).hex(), "00" * 16, None, "ff" * 16]),
        Case("list_int32", pa.list_(pa.int32()),
             [[1, None, 3], [], None, [I32_MIN, I32_MAX], [None],
              [None, None], list(range(20))]),
        Case("list_utf8", pa.list_(pa.string()),
             [["a", "", None], [], None, ["日本", "😀"], [""]]),
        Case("list_element_notnull",
             pa.list_(pa.field("element", pa.int64(), nullable=False)),
             [[1, 2], [], None, [I64_MIN, I64_MAX]]),
        Case("large_list_int64", pa.large_list(pa.int64()),
             [[1, None], [], None, [I64_MIN], [None]]),
        Case("large_list_large_utf8", pa.large_list(pa.large_string()),
             [["x", None, ""], [], None]),
        Case("fixed_size_list_3_float64", pa.list_(pa.float64(), 3),
             [[1.0, None, -0.0], ["NaN", "Infinity", 5e-324], None,
              [None, None, None]]),
        Case("fixed_size_list_2_utf8", pa.list_(pa.string(), 2),
             [["a", ""], [None, "日本"], None]),
        Case("fixed_size_list_1_int8", pa.list_(pa.int8(), 1),
             [[-128], [None], None, [127]]),
        Case("struct", pa.struct([("a", pa.int32()), ("b", pa.string())]),
             [{"a": 1, "b": "x"}, {"a": None, "b": None}, None,
              {"a": -1, "b": ""}]),
        Case("struct_empty", pa.struct([]), [{}, None, {}, {}]),
        Case("struct_null_child", pa.struct([("n", pa.null()),
                                             ("x", pa.bool_())]),
             [{"n": None, "x": True}, None, {"n": None, "x": None}]),
        Case("struct_notnull_child",
             pa.struct([pa.field("k", pa.int16(), nullable=False),
                        pa.field("v", pa.float32())]),
             [{"k": 1, "v": 0.5}, {"k": -32768, "v": None}, None]),
        Case("list_of_struct",
             pa.list_(pa.struct([("x", pa.int16()),
                                 ("y", pa.list_(pa.string()))])),
             [[{"x": 1, "y": ["a", None]}, None, {"x": None, "y": None}],
              [], None, [{"x": -32768, "y": []}]]),
        Case("struct_with_list",
             pa.struct([("l", pa.list_(pa.int32())),
                        ("s", pa.struct([("f", pa.float64()),
                                         ("d", pa.decimal128(5, 2))]))]),
             [{"l": [1, 2], "s": {"f": -0.0, "d": "-1.50"}},
              {"l": None, "s": None}, None,
              {"l": [], "s": {"f": "NaN", "d": None}}]),
        Case("list_of_list", pa.list_(pa.list_(pa.int32())),
             [[[1, 2], [], None, [None]], [], None, [[3]], [None]]),
        Case("large_list_of_fixed_size_list",
             pa.large_list(pa.list_(pa.int32(), 2)),
             [[[1, 2], None, [None, 3]], [], None]),
        Case("fixed_size_list_of_struct",
             pa.list_(pa.struct([("a", pa.bool_()), ("b", pa.binary())]), 2),
             [[{"a": True, "b": "00"}, None], None,
              [{"a": None, "b": None}, {"a": False, "b": ""}]]),
        Case("struct_mixed",
             pa.struct([("ts", pa.timestamp("ns", tz="Asia/Tokyo")),
                        ("iv", pa.month_day_nano_interval()),
                        ("fb", pa.binary(3)),
                        ("dec", pa.decimal128(38, 10)),
                        ("d64", pa.date64()),
                        ("h", pa.float16())]),
             [{"ts": I64_MIN, "iv": [1, 2, 3], "fb": "abcdef",
               "dec": "-1.0000000000", "d64": DAY_MS, "h": 65504.0},
              None, {"ts": None, "iv": None, "fb": None, "dec": None,
                     "d64": None, "h": None}]),
        Case("deep_nesting",
             pa.list_(pa.list_(pa.list_(pa.struct(
                 [("a", pa.list_(pa.int8()))])))),
             [[[[{"a": [1, None]}, None]], [], None], None, [],
              [[[]], [[{"a": None}]]]]),
    ]
    return cs


CASES = _cases()
CASE_BY_ID = {c.id: c for c in CASES}


# ---------------------------------------------------------------------------
# Seeded random values
# ---------------------------------------------------------------------------

_ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789",
    "\x00\x01\t\n\r\x1f\x7f\"\\/",
    "àéîõüßÆøÅñç",
    "日本語中文字符한국어漢字",
    "😀😎🚀🌍👍🏽🧪",
    "e\u0301\u0308\u0323\u200d\ufe0f",
]


def random_string(rng):
    n = rng.choice([0, 1, 2, 3, 5, 8, 13])
    return "".join(rng.choice(rng.choice(_ALPHABETS)) for _ in range(n))


def _random_int(rng, lo, hi):
    r = rng.random()
    if r < 0.1:
        return rng.choice([lo, hi])
    if r < 0.5:                 # small magnitudes
        v = rng.randint(-1000, 1000)
    else:                       # any magnitude
        v = rng.getrandbits(rng.randint(1, max(hi.bit_length(), 1)))
        if lo < 0 and rng.random() < 0.5:
            v = -v
    return max(lo, min(hi, v))


def random_value(field, rng, null_p=0.2):
    """A random JSON-form value for a pa.Field (None only when nullable)."""
    t = field.type
    if pa.types.is_null(t):
        return None
    if field.nullable and rng.random() < null_p:
        return None
    if pa.types.is_dictionary(t):
        return random_value(pa.field("v", t.value_type, False), rng, null_p)
    ts = J.type_to_json(t)
    if ts == "bool":
        return rng.random() < 0.5
    if ts in ("float16", "float32", "float64"):
        fmt, bits = {"float16": ("e", 16), "float32": ("f", 32),
                     "float64": ("d", 64)}[ts]
        if rng.random() < 0.5:
            x = _f(fmt, rng.uniform(-1000, 1000))
        else:
            raw = rng.getrandbits(bits).to_bytes(bits // 8, "little")
            (x,) = struct.unpack("<" + fmt, raw)
        return J.float_to_json(float(x))
    if ts.startswith("decimal128("):
        nd = rng.randint(1, t.precision)
        u = rng.randint(0, 10 ** nd - 1) * rng.choice([-1, 1])
        return J.decimal_to_json(u, t.scale)
    if ts == "date64":
        return _random_int(rng, I64_MIN // DAY_MS + 1, I64_MAX // DAY_MS) \
            * DAY_MS
    if ts.startswith("time32") or ts.startswith("time64"):
        hi = {"time32[s]": 86399, "time32[ms]": 86399999,
              "time64[us]": 86399999999,
              "time64[ns]": 86399999999999}[ts]
        return rng.randint(0, hi)
    if ts == "interval[dt]":
        return [_random_int(rng, I32_MIN, I32_MAX),
                _random_int(rng, I32_MIN, I32_MAX)]
    if ts == "interval[mdn]":
        return [_random_int(rng, I32_MIN, I32_MAX),
                _random_int(rng, I32_MIN, I32_MAX),
                _random_int(rng, I64_MIN, I64_MAX)]
    if ts in ("utf8", "large_utf8"):
        return random_string(rng)
    if ts in ("binary", "large_binary"):
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 9))
                     ).hex()
    if ts.startswith("fixed_size_binary("):
        return bytes(rng.getrandbits(8) for _ in range(t.byte_width)).hex()
    if ts in ("list", "large_list"):
        return [random_value(t.value_field, rng, null_p)
                for _ in range(rng.choice([0, 1, 2, 3, 4]))]
    if ts.startswith("fixed_size_list("):
        return [random_value(t.value_field, rng, null_p)
                for _ in range(t.list_size)]
    if ts == "struct":
        return {t.field(i).name: random_value(t.field(i), rng, null_p)
                for i in range(t.num_fields)}
    lo, hi = J._int_range(ts)
    return _random_int(rng, lo, hi)


def column_values(case, n, rng, nulls=True):
    """n JSON-form values for a case: its edge values first, then random."""
    field = case.field(nullable=nulls)
    vals = [v for v in case.edges if nulls or v is not None]
    vals = vals[:n]
    while len(vals) < n:
        vals.append(random_value(field, rng, 0.2 if nulls else 0.0))
    return vals


# The per-type variants both directions run.
VARIANTS = ("values", "no_nulls", "all_null", "empty")


def variant_data(case, variant):
    """(pa.Schema of one column "c", rows) for a case and variant."""
    rng = rng_for(case.id, variant)
    if variant == "values":
        field = case.field(True)
        vals = column_values(case, len(case.edges) + 40, rng, True)
    elif variant == "no_nulls":
        field = case.field(False)
        vals = column_values(case, len(case.edges) + 40, rng, False)
    elif variant == "all_null":
        field = case.field(True)
        vals = [None] * 19
    else:
        field = case.field(True)
        vals = []
    return pa.schema([field]), [{"c": v} for v in vals]


def variant_params():
    """(case id, variant) pairs: not no_nulls for the null type."""
    out = []
    for c in CASES:
        for v in VARIANTS:
            if c.id == "null" and v == "no_nulls":
                continue
            out.append((c.id, v))
    return out


def wide_schema(cases=None, metadata=None):
    """One nullable column per case, named after it."""
    cases = cases or CASES
    return pa.schema([c.field(True, name=c.id) for c in cases],
                     metadata=metadata)


def wide_rows(n, rng, cases=None, nulls=True):
    """n rows over wide_schema(): per column edges then random values."""
    cases = cases or CASES
    cols = {c.id: column_values(c, n, rng, nulls) for c in cases}
    return [{c.id: cols[c.id][i] for c in cases} for i in range(n)]


def random_rows(schema, n, rng, null_p=0.2):
    return [{f.name: random_value(f, rng, null_p) for f in schema}
            for _ in range(n)]
