"""The xPU interpreter against PostgreSQL as the oracle.

Every opcode that computes a value is run by test/c/bin/xpu_harness (both
interpreter forms: per row as on the GPU, per tile as on the CPU) on edge and
random values, and PostgreSQL evaluates the same SQL expression on the same
values; results and SQLSTATEs must be equal.  A FALLBACK of the engine is
accepted only where PostgreSQL's numeric result needs more than 38 digits.

Runs against the cluster that scripts/test.sh starts (PGHOST, PGPORT, PGUSER
in the environment).
"""
import decimal
import math
import os
import random
import struct
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "test", "c", "bin", "xpu_harness")

I2 = (-32768, 32767)
I4 = (-2**31, 2**31 - 1)
I8 = (-2**63, 2**63 - 1)
DATE_MIN, DATE_MAX = -2451545, 2147483494 - 2451545 - 1
# the largest finite timestamp an Arrow timestamp[us] (1970 epoch) holds: its
# int64 maximum is infinity, as arrow_fdw reads it
TS_MIN, TS_MAX = -211813488000000000, 2**63 - 2 - 946684800000000
decimal.getcontext().prec = 100
FIELDS = ["year", "quarter", "month", "week", "day", "hour", "minute", "second",
          "dow", "doy", "epoch", "isodow", "isoyear", "decade", "century", "millennium",
          "milliseconds", "microseconds", "julian"]     # XpuDateField - 1
TRUNC_UNITS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second",
               "decade", "century", "millennium", "milliseconds", "microseconds"}
DATE_FIELDS = {"year", "quarter", "month", "week", "day", "dow", "doy", "epoch", "isodow",
               "isoyear", "decade", "century", "millennium", "julian"}


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


# ---------------------------------------------------------------- values

def int_values(lo, hi, rnd):
    v = [0, 1, -1, 2, -2, 7, -7, lo, hi, lo + 1, hi - 1, None, 46341, -46341, 181, 255]
    v = [x for x in v if x is None or lo <= x <= hi]
    v += [rnd.randint(lo, hi) for _ in range(6)]
    v += [rnd.randint(-1000, 1000) for _ in range(6)]
    return v


def float_values(rnd, single):
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, float("nan"),
         float("inf"), float("-inf"), None, 32767.5, -32768.5, 2147483647.5,
         -2147483648.5, 2147483520.0, 2147483648.0, 9.2233720368547758e18,
         -9.2233720368547758e18]
    if single:
        v += [3.4028234663852886e38, 1.1754943508222875e-38, 1.401298464324817e-45]
    else:
        v += [1e308, -1e308, 2.2250738585072014e-308, 5e-324, 1e200, 1e-200]
    v += [rnd.uniform(-1e6, 1e6) for _ in range(5)]
    return [f32(x) if single and x is not None else x for x in v]


def numeric_values(scale, rnd):
    q = decimal.Decimal(1).scaleb(-scale)
    big = decimal.Decimal("9" * (38 - scale) + ("." + "9" * scale if scale else ""))
    v = [decimal.Decimal(x) for x in ("0", "1", "-1", "2.5", "-2.5", "1.49", "-1.5",
                                      "0.01", "-0.01", "123456.78", "32767.5")]
    v += [big, -big, big / 10 ** 19, None]
    v += [decimal.Decimal(rnd.randint(-10**12, 10**12)).scaleb(-scale) for _ in range(5)]
    return [x if x is None else x.quantize(q, rounding=decimal.ROUND_HALF_UP) for x in v]


TEXTS = ["", "a", "ab", "abc", "abd", "ABC", "b", "a b", "it's", "é", "éa",
         "日本語", "日本", "🙂x", "x🙂", "zz", "\u00ff", None, "a%b", "a_b", "a\\b", "%", "_",
         "aBab", "ÉA", "abab", "baab", "é日b"]


def text_values(rnd):
    pieces = ["a", "b", "é", "日", "🙂", " ", "A", "%"]
    return TEXTS + ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 6)))
                    for _ in range(6)]


def date_values(rnd):
    return [0, 1, -1, 59, 60, 365, 366, -730120, DATE_MIN, DATE_MAX, 106751991,
            "inf", "-inf", None] + [rnd.randint(-800000, 800000) for _ in range(6)]


def ts_values(rnd):
    day = 86400000000
    return [0, 1, -1, day - 1, 59 * day + 3723000001, TS_MIN, TS_MAX, -63 * day,
            "inf", "-inf", None] + [rnd.randint(-10**17, 10**17) for _ in range(6)]


def interval_values(rnd):
    day = 86400000000
    v = [(0, 0, 0), (1, 0, 0), (0, 30, 0), (0, 0, 30 * day), (-1, 0, 0), (0, -1, 1),
         (0, 1, -1), (12, 0, 0), (0, 0, 1), (1, -30, 0), (-24000, 5, -3), (2**31 - 1, 0, 0),
         (-2**31, 0, 0), (0, 2**31 - 1, 0), (0, 0, 2**63 // 1000 - 1), None,
         (0, 0, -(2**62 // 1000)), (-13, -45, -3723000004), (25, 3, 59999999)]
    v += [(rnd.randint(-500, 500), rnd.randint(-1000, 1000), rnd.randint(-10**12, 10**12))
          for _ in range(6)]
    return v


def values_of(t, rnd):
    kind, _, scale = t.partition(":")
    return {
        "bool": lambda: [True, False, None],
        "int2": lambda: int_values(*I2, rnd),
        "int4": lambda: int_values(*I4, rnd),
        "int8": lambda: int_values(*I8, rnd),
        "float4": lambda: float_values(rnd, True),
        "float8": lambda: float_values(rnd, False),
        "numeric": lambda: numeric_values(int(scale or 0), rnd),
        "text": lambda: text_values(rnd),
        "date": lambda: date_values(rnd),
        "timestamp": lambda: ts_values(rnd),
        "interval": lambda: interval_values(rnd),
    }[kind]()


# ---------------------------------------------------------------- encodings

def harness_value(t, v):
    """A value as xpu_harness reads it."""
    if v is None:
        return "N"
    kind = t.split(":")[0]
    if kind == "bool":
        return "t" if v else "f"
    if kind in ("float4", "float8"):
        return repr(v)
    if kind == "numeric":
        return str(v)
    if kind == "text":
        return "x" + v.encode().hex()
    if kind == "interval":
        return "%d:%d:%d" % v
    return str(v)


def sql_value(t, v):
    """A value as a PostgreSQL expression of type t."""
    kind, _, scale = t.partition(":")
    if v is None:
        return "NULL::" + ("numeric" if kind == "numeric" else kind)
    if kind == "bool":
        return "true" if v else "false"
    if kind in ("int2", "int4", "int8"):
        return "'%d'::%s" % (v, kind)
    if kind in ("float4", "float8"):
        s = "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity") \
            if math.isinf(v) else repr(v)
        return "'%s'::%s" % (s, kind)
    if kind == "numeric":
        return "'%s'::numeric(38,%s)" % (v, scale or 0)
    if kind == "text":
        return "convert_from('\\x%s'::bytea, 'UTF8')" % v.encode().hex()
    if kind == "interval":
        return ("(make_interval(months => %d, days => %d) + %d * interval '1 microsecond')"
                % v)
    if v in ("inf", "-inf"):
        return "'%sinfinity'::%s" % ("-" if v == "-inf" else "", kind)
    if kind == "date":
        return "(date '2000-01-01' + %d)" % v
    days, us = divmod(v, 86400000000)
    return ("(timestamp '2000-01-01' + make_interval(days => %d) + %d * interval '1 microsecond')"
            % (days, us))


def sql_result(rt, e):
    """The query whose text result compares with the harness's output."""
    kind = rt.split(":")[0]
    if kind == "text":
        return "SELECT 'x' || encode(convert_to(%s, 'UTF8'), 'hex')" % e
    if kind == "date":
        return ("SELECT CASE WHEN isfinite(v) THEN (v - date '2000-01-01')::text "
                "ELSE v::text END FROM (SELECT %s AS v) s" % e)
    if kind == "timestamp":
        # days and time of day apart: extract(epoch) rounds near the top of the range
        return ("SELECT CASE WHEN isfinite(v) THEN ((v::date - date '2000-01-01')::numeric "
                "* 86400000000 + extract(epoch from v::time) * 1000000)::bigint::text "
                "ELSE v::text END FROM (SELECT %s AS v) s" % e)
    if kind == "interval":
        # months : days : microseconds, each field apart (interval2tm's)
        return ("SELECT (extract(year from v) * 12 + extract(month from v))::bigint || ':' || "
                "extract(day from v)::bigint || ':' || (extract(hour from v) * 3600000000 + "
                "extract(minute from v) * 60000000 + extract(microseconds from v))::bigint "
                "FROM (SELECT %s AS v) s" % e)
    return "SELECT (%s)::text" % e


# ---------------------------------------------------------------- cases

def op_cases():
    """(opcode, result type, argument types, SQL template, immediate line)."""
    c = []
    for w, t in (("I2", "int2"), ("I4", "int4"), ("I8", "int8")):
        for op, f in (("ADD", "{0} + {1}"), ("SUB", "{0} - {1}"), ("MUL", "{0} * {1}"),
                      ("DIV", "{0} / {1}"), ("MOD", "{0} % {1}")):
            c.append((op + "_" + w, t, [t, t], f, None))
        c.append(("NEG_" + w, t, [t], "- {0}", None))
        c.append(("ABS_" + w, t, [t], "abs({0})", None))
    for src, dst, op in (("int2", "int4", "I2_TO_I4"), ("int2", "int8", "I2_TO_I8"),
                         ("int4", "int2", "I4_TO_I2"), ("int4", "int8", "I4_TO_I8"),
                         ("int8", "int2", "I8_TO_I2"), ("int8", "int4", "I8_TO_I4"),
                         ("int8", "float4", "I8_TO_F4"), ("int8", "float8", "I8_TO_F8"),
                         ("float4", "float8", "F4_TO_F8"), ("float8", "float4", "F8_TO_F4"),
                         ("float4", "int2", "F4_TO_I2"), ("float4", "int4", "F4_TO_I4"),
                         ("float4", "int8", "F4_TO_I8"), ("float8", "int2", "F8_TO_I2"),
                         ("float8", "int4", "F8_TO_I4"), ("float8", "int8", "F8_TO_I8"),
                         ("numeric:2", "int2", "NUM_TO_I2"), ("numeric:2", "int4", "NUM_TO_I4"),
                         ("numeric:1", "int8", "NUM_TO_I8"), ("int8", "numeric:0", "I8_TO_NUM"),
                         ("date", "timestamp", "DATE_TO_TS"), ("timestamp", "date", "TS_TO_DATE"),
                         ("bool", "int4", "BOOL_TO_I4"), ("int4", "bool", "I4_TO_BOOL")):
        c.append((op, dst, [src], "({0})::" + dst.split(":")[0], None))
    c.append(("NUM_RESCALE", "numeric:1", ["numeric:3"], "({0})::numeric(38,1)", None))
    c.append(("NUM_RESCALE", "numeric:4", ["numeric:2"], "({0})::numeric(38,4)", None))
    for t in ("int2", "int4", "int8", "date", "timestamp", "bool"):
        for op, f in (("EQ", "="), ("NE", "<>"), ("LT", "<"), ("LE", "<="), ("GT", ">"),
                      ("GE", ">=")):
            c.append((op + "_INT", "bool", [t, t], "{0} %s {1}" % f, None))
    for w, t in (("F4", "float4"), ("F8", "float8")):
        for op, f in (("ADD", "+"), ("SUB", "-"), ("MUL", "*"), ("DIV", "/"), ("EQ", "="),
                      ("NE", "<>"), ("LT", "<"), ("LE", "<="), ("GT", ">"), ("GE", ">=")):
            rt = "bool" if op in ("EQ", "NE", "LT", "LE", "GT", "GE") else t
            c.append((op + "_" + w, rt, [t, t], "{0} %s {1}" % f, None))
        c.append(("NEG_" + w, t, [t], "- {0}", None))
        c.append(("ABS_" + w, t, [t], "abs({0})", None))
    for a, b in (("numeric:2", "numeric:2"), ("numeric:2", "numeric:0"), ("numeric:1", "numeric:3")):
        sa, sb = int(a[8:]), int(b[8:])
        c.append(("ADD_NUM", "numeric:%d" % max(sa, sb), [a, b], "{0} + {1}", None))
        c.append(("SUB_NUM", "numeric:%d" % max(sa, sb), [a, b], "{0} - {1}", None))
        c.append(("MUL_NUM", "numeric:%d" % (sa + sb), [a, b], "{0} * {1}", None))
        for op, f in (("EQ", "="), ("NE", "<>"), ("LT", "<"), ("LE", "<="), ("GT", ">"),
                      ("GE", ">=")):
            c.append((op + "_NUM", "bool", [a, b], "{0} %s {1}" % f, None))
    c.append(("NEG_NUM", "numeric:2", ["numeric:2"], "- {0}", None))
    c.append(("ABS_NUM", "numeric:2", ["numeric:2"], "abs({0})", None))
    for op, f in (("EQ", "="), ("NE", "<>"), ("LT", "<"), ("LE", "<="), ("GT", ">"),
                  ("GE", ">=")):
        c.append((op + "_TEXT", "bool", ["text", "text"], "{0} %s {1} COLLATE \"C\"" % f, None))
    for pat in ("", "a", "ab", "é", "日本", "🙂"):
        h = pat.encode().hex()
        lit = "convert_from('\\x%s'::bytea, 'UTF8')" % h
        for op, f in (("LIKE_EXACT", "{0} LIKE %s"), ("LIKE_PREFIX", "{0} LIKE %s || '%%%%'"),
                      ("LIKE_SUFFIX", "{0} LIKE '%%%%' || %s"),
                      ("LIKE_INFIX", "{0} LIKE '%%%%' || %s || '%%%%'")):
            c.append((op, "bool", ["text"], (f % lit).replace("%%", "%"), "text x" + h))
    for pat in like_patterns():
        lit = "convert_from('\\x%s'::bytea, 'UTF8')" % pat.encode().hex()
        c.append(("LIKE_MATCH", "bool", ["text"], "{0} LIKE %s" % lit,
                  "text x" + pat.encode().hex()))
        # ILIKE: codegen lowers the pattern as lower() does in a C ctype
        low = "".join(ch.lower() if "A" <= ch <= "Z" else ch for ch in pat)
        c.append(("ILIKE_MATCH", "bool", ["text"], "{0} ILIKE %s COLLATE \"C\"" % lit,
                  "text x" + low.encode().hex()))
    c.append(("LENGTH_TEXT", "int4", ["text"], "length({0})", None))
    c.append(("SUBSTR_FROM", "text", ["text", "int4"], "substring({0} from {1})", None))
    c.append(("SUBSTR_FOR", "text", ["text", "int4", "int4"],
              "substring({0} from {1} for {2})", None))
    c.append(("IN_INT", "bool", ["int4"], "{0} IN (1, -1, 7, 2147483647)", "list 1 -1 7 2147483647"))
    c.append(("IN_INT", "bool", ["int8"], "{0} IN (-7, 0, 2, 46341, NULL)",
              "list sorted -7 0 2 46341 N"))
    c.append(("IN_F8", "bool", ["float8"], "{0} IN ('-Infinity', -0.5, 1, 'NaN')",
              "list sorted -inf -0.5 1 nan"))
    c.append(("IN_F8", "bool", ["float8"], "{0} IN (2.5, 0, NULL)", "list 2.5 0 N"))
    c.append(("IN_TEXT", "bool", ["text"], "{0} IN ('a', '', 'é', NULL)", "list x61 x xc3a9 N"))
    for op, f in (("AND", "{0} AND {1}"), ("OR", "{0} OR {1}")):
        c.append((op, "bool", ["bool", "bool"], f, None))
    for op, f in (("NOT", "NOT {0}"), ("IS_TRUE", "{0} IS TRUE"), ("IS_NOT_TRUE", "{0} IS NOT TRUE"),
                  ("IS_FALSE", "{0} IS FALSE"), ("IS_NOT_FALSE", "{0} IS NOT FALSE")):
        c.append((op, "bool", ["bool"], f, None))
    c.append(("IS_NULL", "bool", ["int4"], "{0} IS NULL", None))
    c.append(("IS_NOT_NULL", "bool", ["text"], "{0} IS NOT NULL", None))
    c.append(("COALESCE", "int8", ["int8", "int8"], "COALESCE({0}, {1})", None))
    c.append(("SELECT", "text", ["bool", "text", "text"], "CASE WHEN {0} THEN {1} ELSE {2} END", None))
    c.append(("DATE_PL_INT", "date", ["date", "int4"], "{0} + {1}", None))
    c.append(("DATE_MI_INT", "date", ["date", "int4"], "{0} - {1}", None))
    c.append(("DATE_MI_DATE", "int4", ["date", "date"], "{0} - {1}", None))
    for op, f in (("EQ", "="), ("NE", "<>"), ("LT", "<"), ("LE", "<="), ("GT", ">"),
                  ("GE", ">=")):
        c.append((op + "_IV", "bool", ["interval", "interval"], "{0} %s {1}" % f, None))
    c.append(("TS_PL_IV", "timestamp", ["timestamp", "interval"], "{0} + {1}", None))
    c.append(("TS_MI_IV", "timestamp", ["timestamp", "interval"], "{0} - {1}", None))
    c.append(("TS_MI_TS", "interval", ["timestamp", "timestamp"], "{0} - {1}", None))
    for i, f in enumerate(FIELDS):
        c.append(("DATE_PART_TS", "float8", ["timestamp"], "date_part('%s', {0})" % f,
                  "field %d" % (i + 1)))
        if f in TRUNC_UNITS:
            c.append(("DATE_TRUNC_TS", "timestamp", ["timestamp"], "date_trunc('%s', {0})" % f,
                      "field %d" % (i + 1)))
        if f != "julian":
            scale = 6 if f in ("second", "epoch") else 3 if f == "milliseconds" else 0
            c.append(("EXTRACT_TS", "numeric:%d" % scale, ["timestamp"],
                      "extract(%s from {0})" % f, "field %d" % (i + 1)))
        if f in DATE_FIELDS:
            c.append(("EXTRACT_DATE", "numeric:0", ["date"], "extract(%s from {0})" % f,
                      "field %d" % (i + 1)))
    for i, f in enumerate(FIELDS):
        if f not in ("week", "dow", "doy", "isodow", "isoyear", "julian"):
            scale = 6 if f in ("second", "epoch") else 3 if f == "milliseconds" else 0
            c.append(("DATE_PART_IV", "float8", ["interval"], "date_part('%s', {0})" % f,
                      "field %d" % (i + 1)))
            c.append(("EXTRACT_IV", "numeric:%d" % scale, ["interval"],
                      "extract(%s from {0})" % f, "field %d" % (i + 1)))
    c.append(("ADD_IV", "interval", ["interval", "interval"], "{0} + {1}", None))
    c.append(("SUB_IV", "interval", ["interval", "interval"], "{0} - {1}", None))
    c.append(("NEG_IV", "interval", ["interval"], "- {0}", None))
    for a, b in (("numeric:2", "numeric:2"), ("numeric:2", "numeric:0"), ("numeric:1", "numeric:3")):
        c.append(("MOD_NUM", "numeric:%d" % max(int(a[8:]), int(b[8:])), [a, b], "{0} % {1}",
                  None))
    return c


def like_patterns():
    """LIKE patterns of every form xpu_like_match meets: '_' (one character,
    not one byte), inner and repeated '%', escapes of '%', '_' and '\\',
    '%' followed by '_', multibyte literals, case; then random ones."""
    fixed = ["%", "_", "%%", "_%", "%_", "__", "___%", "a_c", "a%c", "%a%b%", "a%%b", "a_%_c",
             "%b_", "\\%", "\\_", "a\\_b", "\\\\%", "%\\%%", "_\\\\", "_é%", "日_",
             "%🙂", "%x%y", "A%", "a%C", "%É%", "_B_", "%b%b%", "ab%ab", "%a_", "é_", "%%_%%",
             "a\\%%", "%\\_", "", "ab", "\\a\\b"]
    rnd = random.Random(20261129)
    pieces = ["a", "b", "A", "é", "日", "🙂", " ", "%", "_", "\\%", "\\_", "\\\\", "%_"]
    return fixed + ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 5)))
                    for _ in range(40)]


def rows_for(argtypes, rnd):
    """Edge values crossed with each other (capped), then random tuples."""
    vals = [values_of(t, rnd) for t in argtypes]
    if len(argtypes) == 1:
        return [(v,) for v in vals[0]]
    rows = []
    for a in vals[0]:
        for b in vals[1][:12]:
            rows.append((a, b) + tuple(rnd.choice(v) for v in vals[2:]))
    rows += [tuple(rnd.choice(v) for v in vals) for _ in range(40)]
    return rows


def same(rt, ours, pg):
    """Do a harness result line and a PostgreSQL result line agree?"""
    if ours == pg:
        return True
    if not (ours.startswith("ok ") and pg.startswith("ok ")):
        return ours.split()[:2] == pg.split()[:2]
    a, b = ours[3:], pg[3:]
    kind = rt.split(":")[0]
    if kind in ("float4", "float8"):
        x, y = float(a), float(b)
        if kind == "float4":
            x, y = f32(x), f32(y)
        return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
    return False


def test_xpu_against_postgresql(psql_batch, harness):
    rnd = random.Random(20261124)
    cases = []
    for op, rt, argtypes, tmpl, imm in op_cases():
        rows = rows_for(argtypes, rnd)
        exprs = [sql_result(rt, tmpl.format(*(sql_value(t, v) for t, v in zip(argtypes, r))))
                 for r in rows]
        cases.append((op, rt, argtypes, tmpl, imm, rows, exprs))
    # the harness, all cases in one run
    lines = []
    for op, rt, argtypes, tmpl, imm, rows, exprs in cases:
        lines.append("case %s %s %s" % (op, rt, " ".join(argtypes)))
        if imm:
            lines.append(imm)
        for r in rows:
            lines.append("row " + " ".join(harness_value(t, v) for t, v in zip(argtypes, r)))
        lines.append("end")
    ours = harness("\n".join(lines) + "\n")
    # PostgreSQL, all expressions in one session
    theirs = psql_batch([e for c in cases for e in c[6]])
    failures = []
    pos = 0
    k = 0
    for op, rt, argtypes, tmpl, imm, rows, exprs in cases:
        for r, e in zip(rows, exprs):
            o, t = ours[pos], theirs[k]
            pos += 1
            k += 1
            if o == "fallback" and rt.startswith("numeric"):
                # PostgreSQL re-evaluates the rows: right only where its
                # result needs more than 38 digits or it fails (typmod), is
                # an infinity (extract()), or where mod's dividend needs
                # more than 38 digits at the result's scale
                digits = sum(ch.isdigit() for ch in t)
                ok = (t.startswith("ok ") and digits > 38) or t.startswith("error 22003") or \
                    t in ("ok Infinity", "ok -Infinity") or \
                    (op == "MOD_NUM" and len(str(abs(r[0]).scaleb(int(rt[8:])).to_integral_value()))
                     > 38)
            else:
                ok = not o.startswith("MISMATCH") and same(rt, o, t)
            if not ok:
                failures.append("%s %r: engine %r, postgresql %r\n    %s" % (op, r, o, t, e))
        if ours[pos] != "agree":
            failures.append("%s: per-row and per-tile forms disagree (%s)" % (op, ours[pos]))
        pos += 1
    assert not failures, "%d mismatches:\n%s" % (len(failures), "\n".join(failures[:int(os.environ.get("XPU_SHOW", "40"))]))


@pytest.fixture(scope="module")
def harness():
    if not os.access(HARNESS, os.X_OK):
        subprocess.run(["make", "-C", os.path.join(ROOT, "test", "c"), "bin/xpu_harness"],
                       check=True, capture_output=True)

    def run(text):
        r = subprocess.run([HARNESS], input=text, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        return [ln for ln in r.stdout.split("\n") if ln]
    return run


@pytest.fixture(scope="module")
def psql_batch():
    """Evaluates SQL queries in one psql session: 'ok TEXT', 'null' or 'error SQLSTATE'."""
    def run(queries):
        sql = ["SET extra_float_digits = 3;",
               "CREATE FUNCTION pg_temp.xpu_try(q text) RETURNS text LANGUAGE plpgsql AS $f$"
               " DECLARE r text; BEGIN EXECUTE q INTO r;"
               " RETURN CASE WHEN r IS NULL THEN 'null' ELSE 'ok ' || r END;"
               " EXCEPTION WHEN others THEN RETURN 'error ' || SQLSTATE; END $f$;"]
        for i in range(0, len(queries), 500):
            vals = ",".join("(%d, '%s')" % (i + j, q.replace("'", "''"))
                            for j, q in enumerate(queries[i:i + 500]))
            sql.append("SELECT o, pg_temp.xpu_try(q) FROM (VALUES %s) v(o, q) ORDER BY o;" % vals)
        r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-f", "-"],
                           input="\n".join(sql), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        out = [ln.split("|", 1)[1] for ln in r.stdout.split("\n") if "|" in ln]
        assert len(out) == len(queries)
        return out
    return run
