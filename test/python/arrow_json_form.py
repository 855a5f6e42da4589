"""
pyarrow data <-> the JSON form of Arrow schemas and values (doc/arrow-json.md).

Both directions of the interop suite compare data in this one form:

  reader direction: JSON-form rows -> pyarrow arrays (batch_from_json) ->
      pyarrow writes a file -> `arrow-inspect --json` -> parse_inspect() ->
      compare with check_inspect()
  writer direction: JSON-form rows -> spec (dumps) -> `arrow-gen` ->
      pyarrow reads the file -> batch_to_json() -> compare with check_rows()

Values are converted through the raw Arrow buffers (validity bitmaps, offsets,
little-endian values) rather than pyarrow's Python conversions, so nothing is
rounded or reinterpreted on the way: float16 goes through struct's IEEE
binary16 ('e') format, decimals through their 128-bit two's complement,
temporal types stay integers in their unit.

Comparison is strict and type-directed: every value of a column is checked
against the column's type (a bool is not an integer, an integer column does
not take 1.0, a float32 value must be exactly representable as float32, a
decimal string must have exactly `scale` fraction digits, hex must be
lowercase, struct keys must be the child names in order ...) and then
compared exactly (floats by their bits; any NaN equals any NaN).
"""

import json
import math
import re
import struct

import pyarrow as pa

import arrow_cdata

# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------

_UNITS = ("s", "ms", "us", "ns")
_INT_TYPES = {
    "int8": (8, True), "int16": (16, True), "int32": (32, True),
    "int64": (64, True), "uint8": (8, False), "uint16": (16, False),
    "uint32": (32, False), "uint64": (64, False),
}
_SIMPLE = {
    "null": pa.null(), "bool": pa.bool_(),
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
    "int64": pa.int64(), "uint8": pa.uint8(), "uint16": pa.uint16(),
    "uint32": pa.uint32(), "uint64": pa.uint64(),
    "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(),
    "date32": pa.date32(), "date64": pa.date64(),
    "time32[s]": pa.time32("s"), "time32[ms]": pa.time32("ms"),
    "time64[us]": pa.time64("us"), "time64[ns]": pa.time64("ns"),
    "interval[mdn]": pa.month_day_nano_interval(),
    "utf8": pa.string(), "large_utf8": pa.large_string(),
    "binary": pa.binary(), "large_binary": pa.large_binary(),
}


def interval_ym():
    return arrow_cdata.interval_type("interval[ym]")


def interval_dt():
    return arrow_cdata.interval_type("interval[dt]")


def type_to_json(t):
    """The type string of a pyarrow type (dictionary: its value type)."""
    if pa.types.is_dictionary(t):
        return type_to_json(t.value_type)
    for name, st in _SIMPLE.items():
        if t.equals(st):
            return name
    if t.equals(interval_ym()):
        return "interval[ym]"
    if t.equals(interval_dt()):
        return "interval[dt]"
    if isinstance(t, pa.Decimal128Type):
        return "decimal128(%d, %d)" % (t.precision, t.scale)
    if pa.types.is_timestamp(t):
        if t.tz is None:
            return "timestamp[%s]" % t.unit
        return "timestamp[%s, tz=%s]" % (t.unit, t.tz)
    if pa.types.is_duration(t):
        return "duration[%s]" % t.unit
    if pa.types.is_fixed_size_binary(t):
        return "fixed_size_binary(%d)" % t.byte_width
    if pa.types.is_list(t):
        return "list"
    if pa.types.is_large_list(t):
        return "large_list"
    if pa.types.is_fixed_size_list(t):
        return "fixed_size_list(%d)" % t.list_size
    if pa.types.is_struct(t):
        return "struct"
    raise ValueError("type %s has no JSON form" % t)


_RE_DECIMAL = re.compile(r"^decimal128\((\d+), (-?\d+)\)$")
_RE_TIMESTAMP = re.compile(r"^timestamp\[(s|ms|us|ns)(?:, tz=(.+))?\]$")
_RE_DURATION = re.compile(r"^duration\[(s|ms|us|ns)\]$")
_RE_FSB = re.compile(r"^fixed_size_binary\((\d+)\)$")
_RE_FSL = re.compile(r"^fixed_size_list\((\d+)\)$")


def type_from_json(s, children=()):
    """pyarrow type of a type string; children: pa.Field list (nested)."""
    if s in _SIMPLE:
        return _SIMPLE[s]
    if s == "interval[ym]":
        return interval_ym()
    if s == "interval[dt]":
        return interval_dt()
    m = _RE_DECIMAL.match(s)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    m = _RE_TIMESTAMP.match(s)
    if m:
        return pa.timestamp(m.group(1), tz=m.group(2))
    m = _RE_DURATION.match(s)
    if m:
        return pa.duration(m.group(1))
    m = _RE_FSB.match(s)
    if m:
        return pa.binary(int(m.group(1)))
    if s == "list":
        (child,) = children
        return pa.list_(child)
    if s == "large_list":
        (child,) = children
        return pa.large_list(child)
    m = _RE_FSL.match(s)
    if m:
        (child,) = children
        return pa.list_(child, int(m.group(1)))
    if s == "struct":
        return pa.struct(list(children))
    raise ValueError("unknown type string %r" % s)


def _type_children(t):
    """Child fields of a (non-dictionary) nested pyarrow type."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or \
            pa.types.is_fixed_size_list(t):
        return [t.value_field]
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    return []


# ---------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------

def metadata_to_json(md):
    """pyarrow metadata (bytes -> bytes, or None) as a str -> str dict."""
    if not md:
        return {}
    return {k.decode("utf-8"): v.decode("utf-8") for k, v in md.items()}


def field_to_json(f, _ids=None):
    """The JSON form of a pa.Field; dictionary ids in pre-order from 0."""
    ids = _ids if _ids is not None else [0]
    t = f.type
    d = {"name": f.name, "type": type_to_json(t), "nullable": f.nullable,
         "metadata": metadata_to_json(f.metadata)}
    if pa.types.is_dictionary(t):
        d["dictionary"] = {"id": ids[0],
                           "index_type": type_to_json(t.index_type),
                           "ordered": bool(t.ordered)}
        ids[0] += 1
        t = t.value_type
    kids = _type_children(t)
    if kids:
        d["children"] = [field_to_json(c, ids) for c in kids]
    return d


def schema_to_json(schema):
    """
    The JSON form of a pa.Schema.  Dictionary ids are numbered in pre-order
    (a field before its children) from 0, as Arrow C++ (pyarrow) and the
    Arrow spec's reference implementations assign them.
    """
    ids = [0]
    return {"fields": [field_to_json(f, ids) for f in schema],
            "metadata": metadata_to_json(schema.metadata)}


def field_from_json(d):
    children = [field_from_json(c) for c in d.get("children", [])]
    t = type_from_json(d["type"], children)
    if d.get("dictionary"):
        di = d["dictionary"]
        t = pa.dictionary(type_from_json(di["index_type"]), t,
                          ordered=di.get("ordered", False))
    return pa.field(d["name"], t, nullable=d.get("nullable", True),
                    metadata=d.get("metadata") or None)


def schema_from_json(d):
    return pa.schema([field_from_json(f) for f in d["fields"]],
                     metadata=d.get("metadata") or None)


_FIELD_KEYS = {"name", "type", "nullable", "metadata", "children",
               "dictionary"}


def normalize_field(d, path="field"):
    """
    A field's JSON form with the documented defaults filled in (metadata {},
    children [] for non-nested kinds, no dictionary), checking that every
    key is one the doc defines and every value has the documented JSON type.
    """
    if not isinstance(d, dict):
        raise FormError("%s: not an object: %r" % (path, d))
    extra = set(d) - _FIELD_KEYS
    if extra:
        raise FormError("%s: unknown keys %s" % (path, sorted(extra)))
    for k in ("name", "type", "nullable"):
        if k not in d:
            raise FormError("%s: no %r" % (path, k))
    if not isinstance(d["name"], str) or not isinstance(d["type"], str) or \
            not isinstance(d["nullable"], bool):
        raise FormError("%s: bad name/type/nullable: %r" % (path, d))
    md = d.get("metadata", {})
    _check_metadata(md, path + ".metadata")
    children = d.get("children", [])
    if not isinstance(children, list):
        raise FormError("%s: children not a list" % path)
    out = {"name": d["name"], "type": d["type"], "nullable": d["nullable"],
           "metadata": md,
           "children": [normalize_field(c, "%s.children[%d]" % (path, i))
                        for i, c in enumerate(children)]}
    if "dictionary" in d:
        di = d["dictionary"]
        if not isinstance(di, dict) or set(di) != {"id", "index_type",
                                                    "ordered"} or \
                type(di["id"]) is not int or \
                di["index_type"] not in _INT_TYPES or \
                not isinstance(di["ordered"], bool):
            raise FormError("%s: bad dictionary %r" % (path, di))
        out["dictionary"] = dict(di)
    return out


def normalize_schema(d):
    if not isinstance(d, dict) or not set(d) <= {"fields", "metadata"} or \
            "fields" not in d:
        raise FormError("schema: bad object %r" % (d,))
    md = d.get("metadata", {})
    _check_metadata(md, "schema.metadata")
    return {"fields": [normalize_field(f, "fields[%d]" % i)
                       for i, f in enumerate(d["fields"])],
            "metadata": md}


def _check_metadata(md, path):
    if not isinstance(md, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in md.items()):
        raise FormError("%s: not a string -> string object: %r" % (path, md))


class FormError(AssertionError):
    """Data not in the documented JSON form."""


# ---------------------------------------------------------------------------
# Strict JSON text
# ---------------------------------------------------------------------------

def _pairs_no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise FormError("duplicate keys in object: %r" % keys)
    return dict(pairs)


def _no_constants(name):
    raise FormError("non-JSON constant %s (the form uses the strings "
                    "\"NaN\", \"Infinity\", \"-Infinity\")" % name)


def loads(text):
    """json.loads that rejects NaN/Infinity tokens and duplicate keys."""
    return json.loads(text, object_pairs_hook=_pairs_no_duplicates,
                      parse_constant=_no_constants)


def format_float(x):
    """The documented text of a double: %.17g, but -0.0 as -0.0."""
    if math.isnan(x) or math.isinf(x):
        raise ValueError("non-finite floats are strings in the JSON form")
    if x == 0.0 and math.copysign(1.0, x) < 0:
        return "-0.0"
    return "%.17g" % x


def dumps(v, ensure_ascii=False):
    """
    JSON text of a JSON-form value: floats as format_float(), strings as
    UTF-8 (ensure_ascii=True: \\u escapes, surrogate pairs beyond the BMP).
    """
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=ensure_ascii)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(dumps(x, ensure_ascii) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(
            json.dumps(k, ensure_ascii=ensure_ascii) + ": " +
            dumps(x, ensure_ascii) for k, x in v.items()) + "}"
    raise TypeError("no JSON form for %r" % (v,))


_ESCAPED = {ord('"'): '\\"', ord("\\"): "\\\\"}
for _c in list(range(0x20)) + list(range(0x7f, 0xa0)) + [0x2028, 0x2029]:
    _ESCAPED[_c] = "\\u%04x" % _c


def exact_string(s):
    """A string in the exact form: \\" \\\\, \\uxxxx (lowercase) for
    U+0000-U+001F, U+007F-U+009F, U+2028, U+2029; UTF-8 for the rest."""
    return '"' + s.translate(_ESCAPED) + '"'


def exact_dumps(v):
    """JSON text in the exact form of doc/arrow-json.md (", " and ": ")."""
    if isinstance(v, str):
        return exact_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(exact_dumps(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(exact_string(k) + ": " + exact_dumps(x)
                               for k, x in v.items()) + "}"
    return dumps(v)


def exact_field(fd):
    """A normalized field in the exact key order and presence rules."""
    out = {"name": fd["name"], "type": fd["type"],
           "nullable": fd["nullable"]}
    if fd["metadata"]:
        out["metadata"] = fd["metadata"]
    if fd["type"] in ("list", "large_list", "struct") or \
            fd["type"].startswith("fixed_size_list("):
        out["children"] = [exact_field(c) for c in fd["children"]]
    if "dictionary" in fd:
        di = fd["dictionary"]
        out["dictionary"] = {"id": di["id"], "index_type": di["index_type"],
                             "ordered": di["ordered"]}
    return out


def exact_inspect_text(parsed):
    """
    The exact `arrow-inspect --json` text of a parse_inspect() result,
    built from its content in the documented key order.
    """
    sch = parsed["schema"]
    lines = [exact_dumps({"schema": {
        "fields": [exact_field(f) for f in sch["fields"]],
        "metadata": sch["metadata"]}})]
    for i, b in enumerate(parsed["batches"]):
        lines.append(exact_dumps({"batch": i, "rows": b["rows"],
                                  "metadata": b["metadata"]}))
        for row in b["values"]:
            lines.append(exact_dumps({"row": row}))
    return "".join(line + "\n" for line in lines)


def check_exact_text(text):
    """Problems (empty: none) with the exact text form of inspect output."""
    want = exact_inspect_text(parse_inspect(text)).split("\n")
    got = text.split("\n")
    problems = []
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            problems.append("line %d not in the exact form:\n  want %s\n"
                            "  got  %s" % (i + 1, w[:500], g[:500]))
            if len(problems) >= 5:
                break
    if len(want) != len(got) and not problems:
        problems.append("%d lines, expected %d" % (len(got), len(want)))
    return problems


def _utf8_seq_len(b, i):
    """Length of the well-formed UTF-8 sequence at b[i], or 0 (Unicode
    Table 3-7: no overlongs, no surrogates, nothing above U+10FFFF)."""
    c = b[i]
    n = len(b)

    def cont(k, lo=0x80, hi=0xbf):
        return i + k < n and lo <= b[i + k] <= hi
    if c < 0x80:
        return 1
    if 0xc2 <= c <= 0xdf:
        return 2 if cont(1) else 0
    if c == 0xe0:
        return 3 if cont(1, 0xa0) and cont(2) else 0
    if 0xe1 <= c <= 0xec or 0xee <= c <= 0xef:
        return 3 if cont(1) and cont(2) else 0
    if c == 0xed:
        return 3 if cont(1, 0x80, 0x9f) and cont(2) else 0
    if c == 0xf0:
        return 4 if cont(1, 0x90) and cont(2) and cont(3) else 0
    if 0xf1 <= c <= 0xf3:
        return 4 if cont(1) and cont(2) and cont(3) else 0
    if c == 0xf4:
        return 4 if cont(1, 0x80, 0x8f) and cont(2) and cont(3) else 0
    return 0


def exact_utf8_literal(raw):
    """The exact JSON string literal of utf8 bytes that may be ill-formed:
    each byte outside a well-formed sequence as the escape \\ufffd."""
    out = []
    i = 0
    while i < len(raw):
        k = _utf8_seq_len(raw, i)
        if k:
            out.append(exact_string(raw[i:i + k].decode("utf-8"))[1:-1])
            i += k
        else:
            out.append("\\ufffd")
            i += 1
    return '"' + "".join(out) + '"'


def decode_utf8_per_doc(raw):
    """UTF-8 bytes as the JSON form prints them: a byte that is not part of
    a well-formed sequence becomes U+FFFD, one per byte."""
    out = []
    i = 0
    while i < len(raw):
        k = _utf8_seq_len(raw, i)
        if k:
            out.append(raw[i:i + k].decode("utf-8"))
            i += k
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


# ---------------------------------------------------------------------------
# Scalar helpers
# ---------------------------------------------------------------------------

def float_to_json(x):
    """A Python float (already widened) as its JSON-form value."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def float_from_json(v):
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf,
                "-Infinity": -math.inf}[v]
    return float(v)


def decimal_to_json(unscaled, scale):
    """Unscaled integer and scale -> "-123.45" (exactly scale digits)."""
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if scale <= 0:      # the integer unscaled x 10^-scale, no point
        return sign + digits + "0" * (-scale) if unscaled else "0"
    digits = digits.rjust(scale + 1, "0")
    return sign + digits[:-scale] + "." + digits[-scale:]


def decimal_from_json(s, scale):
    """
    "-123.45", scale 2 -> -12345 (the string must have scale digits);
    negative scale: "-12345000", scale -3 -> -12345.
    """
    m = re.fullmatch(r"(-?)(\d+)(?:\.(\d+))?", s)
    if not m:
        raise ValueError("bad decimal %r" % s)
    if scale < 0:
        if m.group(3) is not None:
            raise ValueError("decimal %r has a point (scale %d)" % (s, scale))
        v, r = divmod(int(m.group(2)), 10 ** -scale)
        if r:
            raise ValueError("decimal %r is not a multiple of 10^%d"
                             % (s, -scale))
        return -v if m.group(1) else v
    frac = m.group(3) or ""
    if len(frac) != max(scale, 0):
        raise ValueError("decimal %r has not %d fraction digits" % (s, scale))
    v = int(m.group(2) + frac)
    return -v if m.group(1) else v


def hex_of(b):
    return bytes(b).hex()


# ---------------------------------------------------------------------------
# pyarrow arrays -> JSON-form values (through the buffers)
# ---------------------------------------------------------------------------

_PRIM_FMT = {
    "int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4), "int64": ("q", 8),
    "uint8": ("B", 1), "uint16": ("H", 2), "uint32": ("I", 4),
    "uint64": ("Q", 8), "float16": ("e", 2), "float32": ("f", 4),
    "float64": ("d", 8), "date32": ("i", 4), "date64": ("q", 8),
    "time32[s]": ("i", 4), "time32[ms]": ("i", 4), "time64[us]": ("q", 8),
    "time64[ns]": ("q", 8), "interval[ym]": ("i", 4),
}


def _prim_fmt(ts):
    if ts in _PRIM_FMT:
        return _PRIM_FMT[ts]
    if ts.startswith("timestamp[") or ts.startswith("duration["):
        return ("q", 8)
    return None


def _bit(buf, i):
    return (buf[i >> 3] >> (i & 7)) & 1


def _validity(buf, offset, n):
    if buf is None:
        return [True] * n
    b = memoryview(buf)
    return [bool(_bit(b, offset + i)) for i in range(n)]


def fixed_values_to_json(ts, n, validity_buf, data, offset):
    """Values of a flat fixed-width column from its raw buffers."""
    valid = _validity(validity_buf, offset, n)
    data = memoryview(data) if data is not None else memoryview(b"")
    out = []
    pf = _prim_fmt(ts)
    if ts == "interval[dt]":
        for i in range(n):
            out.append(list(struct.unpack_from("<ii", data, (offset + i) * 8))
                       if valid[i] else None)
        return out
    if ts == "interval[mdn]":
        for i in range(n):
            out.append(list(struct.unpack_from("<iiq", data,
                                               (offset + i) * 16))
                       if valid[i] else None)
        return out
    fmt, width = pf
    for i in range(n):
        if not valid[i]:
            out.append(None)
            continue
        (v,) = struct.unpack_from("<" + fmt, data, (offset + i) * width)
        out.append(float_to_json(v) if fmt in "efd" else v)
    return out


def array_to_json(arr):
    """JSON-form values of a pyarrow Array or ChunkedArray."""
    if isinstance(arr, pa.ChunkedArray):
        out = []
        for c in arr.chunks:
            out.extend(array_to_json(c))
        return out
    t = arr.type
    n = len(arr)
    off = arr.offset
    if pa.types.is_null(t):
        return [None] * n
    if pa.types.is_dictionary(t):
        idx = array_to_json(arr.indices)
        dvals = array_to_json(arr.dictionary)
        return [None if i is None else dvals[i] for i in idx]
    bufs = arr.buffers()
    valid = _validity(bufs[0], off, n)
    ts = type_to_json(t)
    if ts == "bool":
        data = memoryview(bufs[1])
        return [bool(_bit(data, off + i)) if valid[i] else None
                for i in range(n)]
    if _prim_fmt(ts) or ts == "interval[mdn]":
        return fixed_values_to_json(ts, n, bufs[0], bufs[1], off)
    if ts.startswith("decimal128("):
        data = memoryview(bufs[1])
        out = []
        for i in range(n):
            if not valid[i]:
                out.append(None)
                continue
            p = (off + i) * 16
            v = int.from_bytes(data[p:p + 16], "little", signed=True)
            out.append(decimal_to_json(v, t.scale))
        return out
    if ts in ("utf8", "large_utf8", "binary", "large_binary"):
        ofmt = "<q" if ts.startswith("large") else "<i"
        ow = 8 if ts.startswith("large") else 4
        offs = memoryview(bufs[1])
        data = memoryview(bufs[2]) if bufs[2] is not None else b""
        out = []
        for i in range(n):
            if not valid[i]:
                out.append(None)
                continue
            (a,) = struct.unpack_from(ofmt, offs, (off + i) * ow)
            (b,) = struct.unpack_from(ofmt, offs, (off + i + 1) * ow)
            raw = bytes(data[a:b])
            out.append(raw.decode("utf-8") if "utf8" in ts else raw.hex())
        return out
    if ts.startswith("fixed_size_binary("):
        w = t.byte_width
        data = memoryview(bufs[1]) if bufs[1] is not None else b""
        return [bytes(data[(off + i) * w:(off + i + 1) * w]).hex()
                if valid[i] else None for i in range(n)]
    if ts in ("list", "large_list"):
        ofmt = "<q" if ts == "large_list" else "<i"
        ow = 8 if ts == "large_list" else 4
        offs = memoryview(bufs[1])
        child = array_to_json(arr.values)
        out = []
        for i in range(n):
            if not valid[i]:
                out.append(None)
                continue
            (a,) = struct.unpack_from(ofmt, offs, (off + i) * ow)
            (b,) = struct.unpack_from(ofmt, offs, (off + i + 1) * ow)
            out.append(child[a:b])
        return out
    if ts.startswith("fixed_size_list("):
        k = t.list_size
        child = array_to_json(arr.values)
        return [child[(off + i) * k:(off + i + 1) * k] if valid[i] else None
                for i in range(n)]
    if ts == "struct":
        names = [t.field(j).name for j in range(t.num_fields)]
        kids = [array_to_json(arr.field(j)) for j in range(t.num_fields)]
        return [{nm: kids[j][i] for j, nm in enumerate(names)}
                if valid[i] else None for i in range(n)]
    raise ValueError("no JSON conversion for %s" % t)


def batch_to_json(batch):
    """JSON-form rows of a RecordBatch (intervals ym/dt included)."""
    cols = []
    for j, f in enumerate(batch.schema):
        if arrow_cdata.is_unwrappable(f.type):
            n, _, validity, values, off = \
                arrow_cdata.export_column_buffers(batch, j)
            cols.append(fixed_values_to_json(type_to_json(f.type), n,
                                             validity, values, off))
        else:
            cols.append(array_to_json(batch.column(j)))
    names = batch.schema.names
    return [{nm: cols[j][i] for j, nm in enumerate(names)}
            for i in range(batch.num_rows)]


# ---------------------------------------------------------------------------
# JSON-form values -> pyarrow arrays (through the buffers)
# ---------------------------------------------------------------------------

def _bitmap(bits):
    out = bytearray((len(bits) + 7) // 8)
    for i, b in enumerate(bits):
        if b:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def _validity_buffer(values):
    nulls = sum(v is None for v in values)
    if nulls == 0:
        return None, 0
    return pa.py_buffer(_bitmap([v is not None for v in values])), nulls


def _fixed_bytes(ts, t, values):
    """Packed little-endian values of a fixed-width type (0 for nulls)."""
    pf = _prim_fmt(ts)
    out = bytearray()
    for v in values:
        if ts == "interval[dt]":
            out += struct.pack("<ii", *(v if v is not None else (0, 0)))
        elif ts == "interval[mdn]":
            out += struct.pack("<iiq", *(v if v is not None else (0, 0, 0)))
        elif ts.startswith("decimal128("):
            u = decimal_from_json(v, t.scale) if v is not None else 0
            out += u.to_bytes(16, "little", signed=True)
        elif ts.startswith("fixed_size_binary("):
            out += bytes.fromhex(v) if v is not None else \
                bytes(t.byte_width)
        else:
            fmt = pf[0]
            if v is None:
                v = 0
            elif fmt in "efd":
                v = float_from_json(v)
            out += struct.pack("<" + fmt, v)
    return bytes(out)


def array_from_json(field, values):
    """
    pyarrow Array of type field.type from JSON-form values.  A dictionary
    field gets a dictionary of the distinct values in order of appearance.
    Not for interval[ym]/interval[dt] (use batch_from_json).
    """
    t = field.type
    n = len(values)
    if pa.types.is_dictionary(t):
        vf = pa.field("v", t.value_type)
        keys, dvals, idx = {}, [], []
        for v in values:
            if v is None:
                idx.append(None)
                continue
            k = dumps(v)
            if k not in keys:
                keys[k] = len(dvals)
                dvals.append(v)
            idx.append(keys[k])
        return pa.DictionaryArray.from_arrays(
            array_from_json(pa.field("i", t.index_type), idx),
            array_from_json(vf, dvals))
    if pa.types.is_null(t):
        return pa.nulls(n)
    ts = type_to_json(t)
    validity, nulls = _validity_buffer(values)
    if ts == "bool":
        data = pa.py_buffer(_bitmap([bool(v) for v in values]))
        return pa.Array.from_buffers(t, n, [validity, data], nulls)
    if ts in ("utf8", "large_utf8", "binary", "large_binary"):
        ofmt = "<q" if ts.startswith("large") else "<i"
        offs = [0]
        data = bytearray()
        for v in values:
            if v is not None:
                data += v.encode("utf-8") if "utf8" in ts else \
                    bytes.fromhex(v)
            offs.append(len(data))
        ob = b"".join(struct.pack(ofmt, o) for o in offs)
        return pa.Array.from_buffers(
            t, n, [validity, pa.py_buffer(ob), pa.py_buffer(bytes(data))],
            nulls)
    if ts in ("list", "large_list"):
        ofmt = "<q" if ts == "large_list" else "<i"
        offs = [0]
        flat = []
        for v in values:
            if v is not None:
                flat.extend(v)
            offs.append(len(flat))
        child = array_from_json(t.value_field, flat)
        ob = b"".join(struct.pack(ofmt, o) for o in offs)
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(ob)],
                                     nulls, children=[child])
    if ts.startswith("fixed_size_list("):
        k = t.list_size
        flat = []
        for v in values:
            if v is not None and len(v) != k:
                raise ValueError("fixed_size_list(%d) value %r" % (k, v))
            flat.extend(v if v is not None else [None] * k)
        child = array_from_json(t.value_field, flat)
        return pa.Array.from_buffers(t, n, [validity], nulls,
                                     children=[child])
    if ts == "struct":
        kids = []
        for j in range(t.num_fields):
            cf = t.field(j)
            kids.append(array_from_json(
                cf, [v[cf.name] if v is not None else None for v in values]))
        return pa.Array.from_buffers(t, n, [validity], nulls, children=kids)
    data = pa.py_buffer(_fixed_bytes(ts, t, values))
    return pa.Array.from_buffers(t, n, [validity, data], nulls)


def batch_from_json(schema, rows, arrays=None):
    """
    RecordBatch of a pa.Schema from JSON-form rows (dicts by name);
    arrays: {column index: pa.Array} to use as given instead.
    """
    cols = []
    raw = False
    for j, f in enumerate(schema):
        if arrays and j in arrays:
            cols.append(arrays[j])
            continue
        values = [r[f.name] for r in rows]
        if arrow_cdata.is_unwrappable(f.type):
            raw = True
            validity, nulls = _validity_buffer(values)
            cols.append(arrow_cdata.RawColumn(
                f, len(values), nulls,
                validity.to_pybytes() if validity is not None else None,
                _fixed_bytes(type_to_json(f.type), f.type, values)))
        else:
            cols.append(array_from_json(f, values))
    if raw:
        return arrow_cdata.make_batch(schema, cols, len(rows))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


# ---------------------------------------------------------------------------
# Strict, type-directed normalization and comparison
# ---------------------------------------------------------------------------

def _is_int(v):
    return type(v) is int


def _int_range(ts):
    if ts in _INT_TYPES:
        bits, signed = _INT_TYPES[ts]
        return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed \
            else (0, (1 << bits) - 1)
    if ts in ("date32", "time32[s]", "time32[ms]", "interval[ym]"):
        return (-(1 << 31), (1 << 31) - 1)
    return (-(1 << 63), (1 << 63) - 1)


def _float_bits(ts, v):
    if isinstance(v, str):
        if v not in ("NaN", "Infinity", "-Infinity"):
            raise FormError("bad float string %r" % v)
        x = float_from_json(v)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        x = float(v)
        if math.isnan(x) or math.isinf(x):
            raise FormError("non-finite float as a number: %r" % v)
    else:
        raise FormError("not a float: %r" % (v,))
    if math.isnan(x):
        return ("float", "NaN")
    fmt = {"float16": "<e", "float32": "<f", "float64": "<d"}[ts]
    try:
        narrow = struct.unpack(fmt, struct.pack(fmt, x))[0]
    except OverflowError:
        narrow = None
    if narrow is None or struct.pack("<d", narrow) != struct.pack("<d", x):
        raise FormError("%r is not exactly a %s value" % (v, ts))
    return ("float", struct.unpack("<Q", struct.pack("<d", x))[0])


_RE_HEX = re.compile(r"(?:[0-9a-f]{2})*")


def make_normalizer(fd):
    """
    Function mapping a JSON-form value of field fd (normalize_field form)
    to a tagged canonical form, raising FormError for a value that is not
    in the documented form of the field's type.
    """
    ts = fd["type"]
    nullable = True   # nulls in non-nullable fields are not this check's job
    kids = [make_normalizer(c) for c in fd.get("children", [])]
    names = [c["name"] for c in fd.get("children", [])]

    def fail(v, why):
        raise FormError("%s (%s): %s: %r" % (fd["name"], ts, why, v))

    if ts == "null":
        def norm(v):
            if v is not None:
                fail(v, "null type value not null")
            return None
        return norm
    if ts == "bool":
        def core(v):
            if not isinstance(v, bool):
                fail(v, "not a boolean")
            return ("bool", v)
    elif ts in ("float16", "float32", "float64"):
        def core(v):
            try:
                return _float_bits(ts, v)
            except FormError as e:
                fail(v, str(e))
    elif ts.startswith("decimal128("):
        m = _RE_DECIMAL.match(ts)
        prec, scale = int(m.group(1)), int(m.group(2))
        pat = re.compile(r"-?(0|[1-9]\d*)" +
                         (r"\.\d{%d}" % scale if scale > 0 else ""))

        def core(v):
            if not isinstance(v, str) or not pat.fullmatch(v):
                fail(v, "not a decimal string with %d fraction digits"
                     % max(scale, 0))
            try:
                u = decimal_from_json(v, scale)
            except ValueError as e:
                fail(v, str(e))
            if abs(u) >= 10 ** prec:
                fail(v, "more than %d digits" % prec)
            if u == 0 and v.startswith("-"):
                fail(v, "negative zero decimal")
            return ("dec", v)
    elif ts == "interval[dt]" or ts == "interval[mdn]":
        rng = [(-(1 << 31), (1 << 31) - 1)] * 2 + [(-(1 << 63),
                                                    (1 << 63) - 1)]
        k = 2 if ts == "interval[dt]" else 3

        def core(v):
            if not isinstance(v, list) or len(v) != k or \
                    not all(_is_int(x) and rng[i][0] <= x <= rng[i][1]
                            for i, x in enumerate(v)):
                fail(v, "not an array of %d integers in range" % k)
            return ("interval",) + tuple(v)
    elif ts in ("utf8", "large_utf8"):
        def core(v):
            if not isinstance(v, str):
                fail(v, "not a string")
            return ("str", v)
    elif ts in ("binary", "large_binary") or ts.startswith(
            "fixed_size_binary("):
        width = int(_RE_FSB.match(ts).group(1)) if ts.startswith(
            "fixed_size_binary(") else None

        def core(v):
            if not isinstance(v, str) or not _RE_HEX.fullmatch(v):
                fail(v, "not a lowercase hex string")
            if width is not None and len(v) != 2 * width:
                fail(v, "not %d bytes" % width)
            return ("bin", v)
    elif ts in ("list", "large_list") or ts.startswith("fixed_size_list("):
        (kid,) = kids
        size = int(_RE_FSL.match(ts).group(1)) if ts.startswith(
            "fixed_size_list(") else None

        def core(v):
            if not isinstance(v, list):
                fail(v, "not an array")
            if size is not None and len(v) != size:
                fail(v, "not %d elements" % size)
            return ("list",) + tuple(kid(x) for x in v)
    elif ts == "struct":
        def core(v):
            if not isinstance(v, dict) or list(v.keys()) != names:
                fail(v, "not an object with keys %r in order" % names)
            return ("struct",) + tuple((nm, kids[i](v[nm]))
                                       for i, nm in enumerate(names))
    else:
        lo, hi = _int_range(ts)

        def core(v):
            if not _is_int(v):
                fail(v, "not an integer")
            if not lo <= v <= hi:
                fail(v, "out of range")
            return ("int", v)

    def norm(v):
        if v is None:
            return None
        return core(v)
    return norm


def check_rows(schema_json, expected, got, where=""):
    """
    Compares JSON-form rows of one batch; returns a list of problems
    (empty: equal).  schema_json: normalized or raw schema form.
    """
    fields = normalize_schema(schema_json)["fields"]
    names = [f["name"] for f in fields]
    norms = [make_normalizer(f) for f in fields]
    problems = []
    if len(expected) != len(got):
        problems.append("%s: %d rows expected, got %d"
                        % (where, len(expected), len(got)))
    for r, (e, g) in enumerate(zip(expected, got)):
        if not isinstance(g, dict) or list(g.keys()) != names:
            problems.append("%s row %d: keys %r, expected %r"
                            % (where, r, list(g) if isinstance(g, dict)
                               else g, names))
            continue
        for nm, norm in zip(names, norms):
            ne = norm(e[nm])       # our own expectation must be well-formed
            try:
                ng = norm(g[nm])
            except FormError as err:
                problems.append("%s row %d column %r: %s"
                                % (where, r, nm, err))
                continue
            if ne != ng:
                problems.append("%s row %d column %r: expected %s got %s"
                                % (where, r, nm, dumps(e[nm]),
                                   dumps(g[nm]) if _dumpable(g[nm])
                                   else repr(g[nm])))
        if len(problems) > 20:
            problems.append("... (stopped)")
            break
    return problems


def _dumpable(v):
    try:
        dumps(v)
        return True
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------
# arrow-inspect --json output and arrow-gen specs
# ---------------------------------------------------------------------------

def parse_inspect(text):
    """
    Parses `arrow-inspect --json` output into
    {"schema": SCHEMA, "batches": [{"rows": n, "metadata": {}, "values":
    [row, ...]}, ...]}, checking the line structure of doc/arrow-json.md:
    one object per line, newline-terminated, the schema first, each batch
    line (numbered from 0) followed by exactly its row lines.
    """
    if text and not text.endswith("\n"):
        raise FormError("output does not end with a newline")
    lines = text.split("\n")[:-1] if text else []
    if not lines:
        raise FormError("no output")
    objs = []
    for i, line in enumerate(lines):
        try:
            objs.append(loads(line))
        except ValueError as e:
            raise FormError("line %d is not JSON (%s): %r"
                            % (i + 1, e, line[:200]))
    first = objs[0]
    if not isinstance(first, dict) or list(first) != ["schema"]:
        raise FormError("first line is not {\"schema\": ...}: %r" % first)
    out = {"schema": normalize_schema(first["schema"]), "batches": []}
    cur = None
    for i, o in enumerate(objs[1:], start=2):
        if not isinstance(o, dict):
            raise FormError("line %d: not an object" % i)
        if "batch" in o:
            if set(o) != {"batch", "rows", "metadata"}:
                raise FormError("line %d: batch line keys %r" % (i, list(o)))
            if cur is not None and len(cur["values"]) != cur["rows"]:
                raise FormError("batch %d: %d rows announced, %d printed"
                                % (len(out["batches"]) - 1, cur["rows"],
                                   len(cur["values"])))
            if o["batch"] != len(out["batches"]) or not _is_int(o["rows"]) \
                    or o["rows"] < 0:
                raise FormError("line %d: bad batch line %r" % (i, o))
            _check_metadata(o["metadata"], "batch metadata")
            cur = {"rows": o["rows"], "metadata": o["metadata"],
                   "values": []}
            out["batches"].append(cur)
        elif list(o) == ["row"]:
            if cur is None:
                raise FormError("line %d: row before any batch line" % i)
            cur["values"].append(o["row"])
        else:
            raise FormError("line %d: unknown line %r" % (i, o))
    if cur is not None and len(cur["values"]) != cur["rows"]:
        raise FormError("last batch: %d rows announced, %d printed"
                        % (cur["rows"], len(cur["values"])))
    return out


def expected_form(schema, batches):
    """
    The expected parse_inspect() result for a pa.Schema and a list of
    (JSON-form rows, batch metadata dict) pairs.
    """
    return {"schema": normalize_schema(schema_to_json(schema)),
            "batches": [{"rows": len(rows), "metadata": dict(md or {}),
                         "values": rows} for rows, md in batches]}


def check_inspect(expected, got):
    """Problems (empty list: equal) between two parse_inspect() results."""
    problems = []
    if expected["schema"] != got["schema"]:
        problems.append("schema differs:\n  expected %s\n  got      %s"
                        % (dumps(expected["schema"]), dumps(got["schema"])))
        return problems
    eb, gb = expected["batches"], got["batches"]
    if len(eb) != len(gb):
        problems.append("%d batches expected, got %d" % (len(eb), len(gb)))
    for i, (e, g) in enumerate(zip(eb, gb)):
        if e["rows"] != g["rows"]:
            problems.append("batch %d: rows %d expected, got %d"
                            % (i, e["rows"], g["rows"]))
        if e["metadata"] != g["metadata"]:
            problems.append("batch %d: metadata %r expected, got %r"
                            % (i, e["metadata"], g["metadata"]))
        problems += check_rows(expected["schema"], e["values"], g["values"],
                               "batch %d" % i)
        if len(problems) > 20:
            break
    return problems


def make_spec(schema_json, batches, dictionaries=None):
    """arrow-gen spec: batches as (rows, metadata) pairs."""
    spec = {"schema": schema_json,
            "batches": [{"metadata": dict(md or {}), "rows": rows}
                        for rows, md in batches]}
    if dictionaries is not None:
        spec["dictionaries"] = dictionaries
    return spec
