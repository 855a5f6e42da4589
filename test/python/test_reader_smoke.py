"""
Smoke test of the reader (branch reader): pyarrow writes a table with every
type the reader supports, in the file and stream formats, uncompressed, LZ4
and ZSTD, metadata V4 and V5, and `arrow-inspect --json` must print the same
values (doc/arrow-json.md).  The interop suite (test_interop_*.py) is the
thorough one; this test only keeps the reader honest while it is developed.

Self-contained: it finds arrow-inspect in $PG_WARP_TOOLS or tools/bin (run
`make -C tools` first) and uses no fixtures.
"""

import decimal
import json
import math
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

REPO = Path(__file__).resolve().parent.parent.parent
INSPECT = Path(os.environ.get("PG_WARP_TOOLS", REPO / "tools" / "bin")) / "arrow-inspect"


def json_value(v, t):
    """A pyarrow Python value as the JSON form's value (after json.loads)."""
    if v is None:
        return None
    if pa.types.is_dictionary(t):
        return json_value(v, t.value_type)
    if pa.types.is_floating(t):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if pa.types.is_decimal(t):
        return format(v, "f")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return v.hex()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [json_value(x, t.value_type) for x in v]
    if pa.types.is_struct(t):
        return {f.name: json_value(v[f.name], f.type) for f in t}
    if t == pa.month_day_nano_interval():
        return [v.months, v.days, v.nanoseconds]
    return v


def stored(arr):
    """Temporal arrays as the integers they store."""
    t = arr.type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return arr.view(pa.int32())
    if pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t) \
            or pa.types.is_duration(t):
        return arr.view(pa.int64())
    return arr


def expected_rows(table):
    cols = []
    for name, col in zip(table.column_names, table.columns):
        arr = pa.concat_arrays(col.chunks) if col.num_chunks else pa.array([], col.type)
        src = arr if pa.types.is_dictionary(arr.type) else stored(arr)
        cols.append((name, [json_value(x, arr.type) for x in src.to_pylist()]))
    return [{name: vals[i] for name, vals in cols} for i in range(table.num_rows)]


def every_type():
    r = 3  # rows = 4 * r
    return pa.table({
        "b": pa.array([True, False, None, True] * r),
        "i8": pa.array([-128, 127, None, 0] * r, pa.int8()),
        "i16": pa.array([-32768, 32767, None, 1] * r, pa.int16()),
        "i32": pa.array([-2**31, 2**31 - 1, None, 5] * r, pa.int32()),
        "i64": pa.array([-2**63, 2**63 - 1, None, 7] * r, pa.int64()),
        "u8": pa.array([0, 255, None, 1] * r, pa.uint8()),
        "u16": pa.array([0, 65535, None, 1] * r, pa.uint16()),
        "u32": pa.array([0, 2**32 - 1, None, 1] * r, pa.uint32()),
        "u64": pa.array([0, 2**64 - 1, None, 1] * r, pa.uint64()),
        "f16": pa.array([1.5, float("nan"), None, 65504.0] * r, pa.float16()),
        "f32": pa.array([0.1, float("inf"), None, -0.0] * r, pa.float32()),
        "f64": pa.array([1e300, float("-inf"), None, 2.0**53] * r, pa.float64()),
        "dec": pa.array([decimal.Decimal("-123.45"), decimal.Decimal("0.01"), None,
                         decimal.Decimal("99999999.99")] * r, pa.decimal128(10, 2)),
        "d32": pa.array([0, 19000, None, -1] * r, pa.int32()).cast(pa.date32()),
        "d64": pa.array([0, 86400000, None, -86400000] * r, pa.int64()).cast(pa.date64()),
        "t32": pa.array([0, 86399999, None, 1] * r, pa.time32("ms")),
        "t64": pa.array([0, 86399999999, None, 1] * r, pa.time64("us")),
        "ts": pa.array([0, 1700000000000000000, None, -1] * r, pa.timestamp("ns", tz="Europe/Paris")),
        "dur": pa.array([0, -5, None, 2**62] * r, pa.duration("s")),
        "mdn": pa.array([pa.MonthDayNano([1, -2, 3000]), None, pa.MonthDayNano([0, 0, 0]),
                         pa.MonthDayNano([-1, 2**31 - 1, -2**63])] * r, pa.month_day_nano_interval()),
        "s": pa.array(["a", "", None, "\u00fc\x01\x7f\"\\\u2028"] * r),
        "ls": pa.array(["x", "yy", None, "z" * 100] * r, pa.large_string()),
        "bin": pa.array([b"\x00\xff", b"", None, b"abc"] * r),
        "lbin": pa.array([b"\x00", b"", None, b"q"] * r, pa.large_binary()),
        "fsb": pa.array([b"abc", b"\x00\x01\x02", None, b"zzz"] * r, pa.binary(3)),
        "l": pa.array([[1, None], [], None, [3]] * r, pa.list_(pa.int32())),
        "ll": pa.array([["a"], [], None, ["b", None]] * r, pa.large_list(pa.string())),
        "fsl": pa.array([[1, 2], [None, 3], None, [4, 5]] * r, pa.list_(pa.int16(), 2)),
        "st": pa.array([{"a": 1, "b": [1]}, {"a": None, "b": None}, None, {"a": 3, "b": []}] * r,
                       pa.struct([("a", pa.int8()), ("b", pa.list_(pa.int64()))])),
        "dict": pa.array(["x", "y", None, "x"] * r).dictionary_encode(),
        "dictu": pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 1] * r, pa.uint16()),
                                                pa.array([1.5, 2.5])),
        "ldict": pa.array([["x"], [], None, ["y", None]] * r,
                          pa.list_(pa.dictionary(pa.int32(), pa.string()))),
        "nul": pa.array([None] * (4 * r), pa.null()),
    })


def inspect_rows(path):
    out = subprocess.run([str(INSPECT), "--json", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.split("\n") if line]
    assert "schema" in lines[0]
    return lines[0]["schema"], [line["row"] for line in lines if "row" in line]


@pytest.mark.skipif(not INSPECT.exists(), reason="arrow-inspect not built (make -C tools)")
@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
@pytest.mark.parametrize("compression", [None, "lz4", "zstd"])
@pytest.mark.parametrize("version", [ipc.MetadataVersion.V4, ipc.MetadataVersion.V5], ids=["V4", "V5"])
def test_every_type(tmp_path, stream, compression, version):
    table = every_type()
    path = tmp_path / "t.data"
    options = ipc.IpcWriteOptions(compression=compression, metadata_version=version)
    with (ipc.new_stream if stream else ipc.new_file)(path, table.schema, options=options) as w:
        for batch in table.to_batches(max_chunksize=5):
            w.write_batch(batch)
    schema, rows = inspect_rows(path)
    assert [f["name"] for f in schema["fields"]] == table.column_names
    assert rows == expected_rows(table)


@pytest.mark.skipif(not INSPECT.exists(), reason="arrow-inspect not built (make -C tools)")
def test_unsupported_type_is_named(tmp_path):
    table = pa.table({"m": pa.UnionArray.from_sparse(pa.array([0], pa.int8()),
                                                     [pa.array([1], pa.int32())])})
    path = tmp_path / "m.data"
    with ipc.new_file(path, table.schema) as w:
        w.write_table(table)
    out = subprocess.run([str(INSPECT), str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.startswith("arrow-inspect: %s: unsupported type Union" % path)
    assert '"m"' in out.stderr


@pytest.mark.skipif(not INSPECT.exists(), reason="arrow-inspect not built (make -C tools)")
@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_delta_dictionaries(tmp_path, stream):
    """Dictionaries of nested values growing by deltas read as pyarrow reads them."""
    grown = {
        "dl": pa.array([[1, None], None, [], [7, 8, 9]], pa.list_(pa.int32())),
        "ds": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": "yz"}],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "df": pa.array([[1, 2], None, [None, 4]], pa.list_(pa.int8(), 2)),
        "db": pa.array([True, None, False]),
        "dL": pa.array(["p", None, "qq"], pa.large_string()),
    }
    batches = []
    for n in (2, 3, 4):
        cols = [pa.DictionaryArray.from_arrays(
                    pa.array([min(n, len(v)) - 1, 0, None], pa.int16()), v.slice(0, min(n, len(v))))
                for v in grown.values()]
        batches.append(pa.record_batch(cols, names=list(grown)))
    path = tmp_path / "d.data"
    options = ipc.IpcWriteOptions(emit_dictionary_deltas=True)
    with (ipc.new_stream if stream else ipc.new_file)(path, batches[0].schema, options=options) as w:
        for b in batches:
            w.write_batch(b)
    reader = (ipc.open_stream if stream else ipc.open_file)(path)
    if stream:
        read = list(reader)
    else:
        read = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    expected = [row for b in read for row in expected_rows(pa.Table.from_batches([b]))]
    _, rows = inspect_rows(path)
    assert rows == expected
