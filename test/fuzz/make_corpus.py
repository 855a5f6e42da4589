#!/usr/bin/env python3
"""Writes the seed corpus of the Arrow reader fuzzer (test/fuzz/corpus).

Each seed is a small Arrow IPC file or stream made with pyarrow, together
covering what the reader handles: every supported type with nulls, nested
lists and structs, dictionaries (nested, delta of every kind of value type,
replacement, indices of several widths), LZ4 and ZSTD
bodies, the stream format (also the pre-0.15 prefix), V4 metadata, custom
metadata at every level, and empty and zero-row files.  The C unit tests
(test/c/test_reader.c) open every seed and check some of their values, so
changing a seed's contents means updating those checks.

The files have no .arrow extension (.file / .stream) so that no tool treats
them as data.  Run from anywhere: python3 test/fuzz/make_corpus.py
"""
import decimal
import os

import pyarrow as pa
import pyarrow.ipc as ipc

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(name, table_or_batches, schema=None, stream=False, batch_metadata=None, **opts):
    path = os.path.join(OUT, name)
    options = ipc.IpcWriteOptions(**opts)
    if isinstance(table_or_batches, pa.Table):
        schema = table_or_batches.schema
        batches = table_or_batches.to_batches()
    else:
        batches = table_or_batches
    with (ipc.new_stream if stream else ipc.new_file)(path, schema, options=options) as w:
        for b in batches:
            if batch_metadata is not None:
                w.write_batch(b, custom_metadata=batch_metadata)
            else:
                w.write_batch(b)


def main():
    os.makedirs(OUT, exist_ok=True)
    primitives = pa.table({
        "b": pa.array([True, None, False, True]),
        "i8": pa.array([-128, 127, None, 0], pa.int8()),
        "i16": pa.array([None, -32768, 32767, 1], pa.int16()),
        "i32": pa.array([1, None, 3, -2147483648], pa.int32()),
        "i64": pa.array([-9223372036854775808, 9223372036854775807, None, 42], pa.int64()),
        "u8": pa.array([255, None, 0, 1], pa.uint8()),
        "u16": pa.array([65535, 0, None, 1], pa.uint16()),
        "u32": pa.array([4294967295, 0, 1, None], pa.uint32()),
        "u64": pa.array([18446744073709551615, None, 0, 1], pa.uint64()),
        "f16": pa.array([1.5, None, -0.0, float("inf")], pa.float16()),
        "f32": pa.array([0.1, float("nan"), None, -1.0], pa.float32()),
        "f64": pa.array([1e300, -0.0, float("-inf"), None], pa.float64()),
        "n": pa.array([None] * 4, pa.null()),
    })
    write("seed-primitives.file", primitives)

    strings = pa.table({
        "s": pa.array(["a", None, "", "h\u00e9\"\\\n\x01"]),
        "ls": pa.array(["x", "yy", None, "zzz"], pa.large_string()),
        "bin": pa.array([b"\x00\xff", None, b"", b"abc"]),
        "lbin": pa.array([b"q", b"", None, b"\x01\x02"], pa.large_binary()),
        "fsb": pa.array([b"abc", None, b"\x00\x01\x02", b"zzz"], pa.binary(3)),
    })
    write("seed-strings.file", strings)

    nested = pa.table({
        "l": pa.array([[1, None], [], None, [4]], pa.list_(pa.int32())),
        "ll": pa.array([["a"], None, [], ["b", None]], pa.large_list(pa.string())),
        "fsl": pa.array([[1, 2], None, [None, 3], [4, 5]], pa.list_(pa.int16(), 2)),
        "st": pa.array([{"a": 1, "b": [1.5]}, None, {"a": None, "b": []}, {"a": 4, "b": None}],
                       pa.struct([("a", pa.int8()), ("b", pa.list_(pa.float64()))])),
        "ls2": pa.array([[[1], [2, 3]], None, [[]], [None]], pa.list_(pa.list_(pa.int64()))),
    })
    write("seed-nested.file", nested)

    temporal = pa.table({
        "dec": pa.array([decimal.Decimal("-123.45"), None, decimal.Decimal("0.01"),
                         decimal.Decimal("99999999.99")], pa.decimal128(10, 2)),
        "d32": pa.array([19000, None, 0, -1], pa.int32()).cast(pa.date32()),
        "d64": pa.array([86400000, 0, None, -86400000], pa.int64()).cast(pa.date64()),
        "t32": pa.array([1, 86399, None, 0], pa.time32("s")),
        "t64": pa.array([1, None, 86399999999999, 0], pa.time64("ns")),
        "ts": pa.array([1700000000000000, None, 0, -1], pa.timestamp("us", tz="UTC")),
        "dur": pa.array([5, -5, None, 0], pa.duration("ms")),
        "mdn": pa.array([pa.MonthDayNano([1, -2, 3000]), None, pa.MonthDayNano([0, 0, 0]),
                         pa.MonthDayNano([-1, 31, -9223372036854775808])],
                        pa.month_day_nano_interval()),
    })
    write("seed-temporal.file", temporal)

    dictionary = pa.table({
        "d": pa.array(["x", "y", None, "x"]).dictionary_encode(),
        "d8": pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int8()),
                                             pa.array(["p", "q"])),
        "ld": pa.array([["x"], [], None, ["y", None]], pa.list_(pa.dictionary(pa.int32(), pa.string()))),
        "sd": pa.array([{"k": "a"}, {"k": None}, None, {"k": "b"}],
                       pa.struct([("k", pa.dictionary(pa.uint8(), pa.string()))])),
    })
    write("seed-dictionary.file", dictionary)

    mixed = pa.table({
        "i": pa.array(list(range(40)) + [None], pa.int64()),
        "s": pa.array(["row %d" % i for i in range(40)] + [None]),
        "l": pa.array([[i, i + 1] for i in range(41)], pa.list_(pa.int32())),
        "d": pa.array(["a", "b", "c", None] * 10 + ["a"]).dictionary_encode(),
    })
    write("seed-lz4.file", mixed, compression="lz4")
    write("seed-zstd.file", mixed, compression="zstd")
    write("seed-zstd.stream", mixed, stream=True, compression="zstd")

    # a stream of two batches whose dictionary grows by a delta
    b1 = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([0, 1, None], pa.int32()),
                                                         pa.array(["a", "b"])),
                          pa.array([1, 2, 3], pa.int16())], names=["d", "v"])
    b2 = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([2, 0, 1], pa.int32()),
                                                         pa.array(["a", "b", "c"])),
                          pa.array([4, None, 6], pa.int16())], names=["d", "v"])
    write("seed-delta.stream", [b1, b2], schema=b1.schema, stream=True, emit_dictionary_deltas=True)
    write("seed-delta.file", [b1, b2], schema=b1.schema, emit_dictionary_deltas=True)
    # ... and one whose dictionary is replaced
    b3 = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([1, 0, 0], pa.int32()),
                                                         pa.array(["x", "y"])),
                          pa.array([7, 8, 9], pa.int16())], names=["d", "v"])
    write("seed-replace.stream", [b1, b3], schema=b1.schema, stream=True)

    # deltas of nested and other value types, indices of several widths
    first = {
        "dl": pa.array([[1, None], None], pa.list_(pa.int32())),
        "ds": pa.array([{"a": 1, "b": "x"}, None], pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "df": pa.array([[1, 2], None], pa.list_(pa.int8(), 2)),
        "db": pa.array([True, None]),
        "dL": pa.array(["p", None], pa.large_string()),
        "dd": pa.array([1.5, None], pa.float64()),
    }
    more = {
        "dl": [[], [7, 8, 9]],
        "ds": [{"a": None, "b": "yz"}],
        "df": [[None, 4]],
        "db": [False],
        "dL": ["qq"],
        "dd": [-2.0],
    }
    index_types = {"dl": pa.int16(), "ds": pa.uint16(), "df": pa.int64(), "db": pa.uint64(),
                   "dL": pa.uint32(), "dd": pa.int8()}
    grown = {k: pa.concat_arrays([v, pa.array(more[k], v.type)]) for k, v in first.items()}
    d1 = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([0, 1, None], index_types[k]), v)
                          for k, v in first.items()], names=list(first))
    d2 = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([len(v) - 1, 0, None], index_types[k]), v)
                          for k, v in grown.items()], names=list(grown))
    write("seed-delta-types.stream", [d1, d2], schema=d1.schema, stream=True, emit_dictionary_deltas=True)

    write("seed-legacy.stream", strings, stream=True, use_legacy_format=True)
    write("seed-v4.file", nested, metadata_version=ipc.MetadataVersion.V4)

    meta_schema = pa.schema([pa.field("x", pa.int32(), metadata={"unit": "m", "k\u00e9y": "v\u00e4l"}),
                             pa.field("y", pa.string(), nullable=False)],
                            metadata={"origin": "pg_warp", "empty": ""})
    meta = pa.record_batch([pa.array([1, None], pa.int32()), pa.array(["a", "b"])], schema=meta_schema)
    write("seed-metadata.file", [meta], schema=meta_schema, batch_metadata={"batch": "first"})
    # record batch metadata with a key twice, then with 40 distinct keys (the reader's check
    # that a batch's keys are unique, which lets a lookup trust its hint)
    keys = pa.schema([pa.field("x", pa.int32())])
    kb = pa.record_batch([pa.array([1, 2], pa.int32())], schema=keys)
    with ipc.new_file(os.path.join(OUT, "seed-batch-keys.file"), keys) as w:
        w.write_batch(kb, custom_metadata=pa.KeyValueMetadata([("k", "first"), ("j", "x"), ("k", "second")]))
        w.write_batch(kb, custom_metadata=pa.KeyValueMetadata([("key%02d" % i, "v%d" % i) for i in range(40)]))

    write("seed-empty.file", [], schema=primitives.schema)
    write("seed-zero-rows.stream", [primitives.to_batches()[0].slice(0, 0)],
          schema=primitives.schema, stream=True)
    newer_layouts()


def newer_layouts():
    """Views (two data buffers, sliced), list views, run-end encoding, maps,
    Decimal256; a ZSTD string buffer that decompresses 4 KiB to 1 MiB (what
    a decompression bomb looks like when its lengths are honest)."""
    views = pa.concat_arrays([pa.array(["x" * 20, None, "exactly12byt"], pa.string_view()),
                              pa.array(["thirteen byte", "", None], pa.string_view())])
    newer = pa.table({
        "sv": views,
        "bv": pa.array([b"a", None, b"b" * 13, b"", b"c" * 12, None], pa.binary_view()),
        "lv": pa.ListViewArray.from_arrays(pa.array([2, 0, 1, 0, 3, 0], pa.int32()),
                                           pa.array([2, 3, 0, 1, 1, 0], pa.int32()),
                                           pa.array([1, None, 3, 4], pa.int32())),
        "ree": pa.RunEndEncodedArray.from_arrays(pa.array([2, 3, 6], pa.int16()),
                                                 pa.array(["r", None, "s"])),
        "m": pa.array([[("a", 1), ("b", None)], None, [], [("c", 3)], [], [("d", 4)]],
                      pa.map_(pa.string(), pa.int64())),
        "d256": pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("-1e60"),
                          decimal.Decimal(0), None, decimal.Decimal("0.25")], pa.decimal256(70, 2)),
    })
    write("seed-newer.file", newer.slice(0, 5))
    write("seed-newer.stream", newer, stream=True, compression="lz4")
    write("seed-big-zstd.file", pa.table({"s": pa.array(["y" * (1 << 20), None, "z"])}),
          compression="zstd")


if __name__ == "__main__":
    main()
