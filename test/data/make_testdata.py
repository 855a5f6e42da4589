#!/usr/bin/env python3
"""Writes the Arrow files that the arrow_fdw tests read (pg_regress suites
test/input/arrow_fdw*.source and test/python/test_arrow_fdw.py).

    python3 test/data/make_testdata.py [DIR]     (default test/data/generated)

prepare_regress.py runs it for the pg_regress suites (into TESTDIR/data/generated),
test_arrow_fdw.py into a temporary directory of its own.  The directory is
recreated and made world-readable, because the server runs as another OS user.  The files are
deterministic (same content on every run), written by pyarrow (an independent
Arrow implementation).  Only "noperm.arrow" is unreadable (mode 0600): run as
root, the server's user cannot read it.

Layout (see the tests for what each file is for):
  types.arrow types_lz4.arrow types_zstd.arrow   every type, NULLs, extremes, 3 batches
  many.arrow        100 batches x 1000 rows with pg_warp.min.N / max.N statistics
  stats_types.arrow statistics on timestamp, decimal, uint64, float, date64, time, int16
  dir/part-*.arrow  3 files, one schema (+ notes.txt, skipped by suffix / pattern)
  mismatch/         two files with different schemas
  exact.arrow       values PostgreSQL cannot hold exactly (one per column)
  stream.arrows     the stream format
  empty_batches.arrow   no record batch at all
  corrupt.arrow truncated.arrow garbage.arrow zero.arrow noperm.arrow
  mutants/          small valid files with bytes overwritten (120 files)
  fuzz/             the reader's fuzz corpus (test/fuzz/corpus), when present
"""
import datetime
import decimal
import os
import shutil
import struct
import sys
import tempfile
import time

import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def f16_array(values):
    """float16 without numpy: build the array from its buffers."""
    n = len(values)
    validity = bytearray((n + 7) // 8)
    data = bytearray()
    for i, v in enumerate(values):
        if v is not None:
            validity[i // 8] |= 1 << (i % 8)
        data += struct.pack("<e", v if v is not None else 0.0)
    nulls = sum(1 for v in values if v is None)
    return pa.Array.from_buffers(pa.float16(), n, [pa.py_buffer(bytes(validity)), pa.py_buffer(bytes(data))],
                                 null_count=nulls)


def types_table():
    """5 rows: minimum, maximum, zero/empty, NULL, typical."""
    I8, I16, I32, I64 = 2**7, 2**15, 2**31, 2**63
    D = decimal.Decimal
    us = datetime.timedelta(microseconds=1)
    cols = {
        "b": pa.array([False, True, False, None, True]),
        "i8": pa.array([-I8, I8 - 1, 0, None, 42], pa.int8()),
        "i16": pa.array([-I16, I16 - 1, 0, None, 42], pa.int16()),
        "i32": pa.array([-I32, I32 - 1, 0, None, 42], pa.int32()),
        "i64": pa.array([-I64, I64 - 1, 0, None, 42], pa.int64()),
        "u8": pa.array([0, 255, 0, None, 42], pa.uint8()),
        "u16": pa.array([0, 65535, 0, None, 42], pa.uint16()),
        "u32": pa.array([0, 2**32 - 1, 0, None, 42], pa.uint32()),
        "u64": pa.array([0, 2**64 - 1, 0, None, 42], pa.uint64()),
        "f16": f16_array([-65504.0, 65504.0, 0.0, None, 1.5]),
        "f32": pa.array([-3.4028234663852886e38, 3.4028234663852886e38, -0.0, None, 0.1], pa.float32()),
        "f64": pa.array([-1.7976931348623157e308, float("inf"), float("nan"), None, 0.1], pa.float64()),
        "dec": pa.array([D("-9999999999.99"), D("9999999999.99"), D("0.00"), None, D("123.45")],
                        pa.decimal128(12, 2)),
        "d32": pa.array([datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1970, 1, 1),
                         None, datetime.date(2024, 2, 29)], pa.date32()),
        "d64": pa.array([datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1970, 1, 1),
                         None, datetime.date(2024, 2, 29)], pa.date64()),
        "t32s": pa.array([0, 86399, 0, None, 3723], pa.time32("s")),
        "t32ms": pa.array([0, 86399999, 0, None, 3723004], pa.time32("ms")),
        "t64us": pa.array([0, 86399999999, 0, None, 3723004005], pa.time64("us")),
        "t64ns": pa.array([0, 86399999999000, 0, None, 3723004005000], pa.time64("ns")),
        "ts_s": pa.array([-62135596800, 253402300799, 0, None, 1700000000], pa.timestamp("s")),
        "ts_ms": pa.array([-62135596800000, 253402300799999, 0, None, 1700000000123], pa.timestamp("ms")),
        "ts_us": pa.array([-62135596800000000, 253402300799999999, 0, None, 1700000000123456],
                          pa.timestamp("us")),
        "ts_ns": pa.array([-9223372036854775000, 9223372036854775000, 0, None, 1700000000123456000],
                          pa.timestamp("ns")),
        "tstz": pa.array([-62135596800000000, 253402300799999999, 0, None, 1700000000123456],
                         pa.timestamp("us", tz="UTC")),
        "dur_s": pa.array([-86400, 86400 * 365, 0, None, 3723], pa.duration("s")),
        "dur_ms": pa.array([-1, 1000, 0, None, 3723004], pa.duration("ms")),
        "dur_us": pa.array([-1, 2**62, 0, None, 3723004005], pa.duration("us")),
        "dur_ns": pa.array([-1000, 2**62 - 2**62 % 1000, 0, None, 3723004005000], pa.duration("ns")),
        "mdn": pa.array([pa.scalar((-1, -2, -3000), pa.month_day_nano_interval()).as_py(),
                         pa.scalar((14, 40, 86400000000000), pa.month_day_nano_interval()).as_py(),
                         pa.scalar((0, 0, 0), pa.month_day_nano_interval()).as_py(), None,
                         pa.scalar((1, 2, 3000), pa.month_day_nano_interval()).as_py()],
                        pa.month_day_nano_interval()),
        "s": pa.array(["", "z" * 300, "", None, "héllo, wörld ✓"], pa.utf8()),
        "ls": pa.array(["a", "é", "", None, "large"], pa.large_utf8()),
        "bin": pa.array([b"", b"\x00\xff" * 10, b"", None, b"\xde\xad\xbe\xef"], pa.binary()),
        "lbin": pa.array([b"\x00", b"\xff", b"", None, b"abc"], pa.large_binary()),
        "fsb": pa.array([b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"abcd", None, b"\x01\x02\x03\x04"],
                        pa.binary(4)),
        "uid": pa.array([b"\x00" * 16, b"\xff" * 16, bytes(range(16)), None,
                         bytes.fromhex("a0eebc999c0b4ef8bb6d6bb9bd380a11")], pa.binary(16)),
        "li": pa.array([[], [1, None, 3], [0], None, [2**31 - 1, -2**31]], pa.list_(pa.int32())),
        "lls": pa.array([["x"], [], [None], None, ["a", "b"]], pa.large_list(pa.utf8())),
        "fsl": pa.array([[1.5, -1.5], [0.0, None], [2.0, 3.0], None, [4.0, 5.0]], pa.list_(pa.float64(), 2)),
        "st": pa.array([{"a": 1, "b": "x"}, {"a": None, "b": None}, {"a": 0, "b": ""}, None,
                        {"a": -7, "b": "struct"}],
                       pa.struct([("a", pa.int32()), ("b", pa.utf8())])),
        "dict": pa.array(["red", "green", "red", None, "blue"]).dictionary_encode(),
        "nul": pa.nulls(5),
    }
    fields = []
    for name, arr in cols.items():
        md = None
        if name == "uid":
            md = {"pg_type": "uuid"}
        fields.append(pa.field(name, arr.type, metadata=md))
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))


def write_file(path, table, batch_rows=None, compression=None, batch_metadata=None):
    opts = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_file(path, table.schema, options=opts) as w:
        batches = table.to_batches(max_chunksize=batch_rows) if batch_rows else table.to_batches()
        for i, b in enumerate(batches):
            md = batch_metadata(i, b) if batch_metadata else None
            if md:
                w.write_batch(b, custom_metadata=md)
            else:
                w.write_batch(b)


def many_table(n_batches=100, rows=1000):
    ids = list(range(n_batches * rows))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "grp": pa.array([i % 7 for i in ids], pa.int32()),
        "val": pa.array([(i * 37) % 1000 / 10.0 for i in ids], pa.float64()),
        "day": pa.array([i // rows for i in ids], pa.date32()),
        "note": pa.array([None if i % 10 == 0 else "n%d" % i for i in ids], pa.utf8()),
    })


def stats_md(i, b):
    """pg_warp.min.N / pg_warp.max.N for id (0), grp (1), val (2), day (3)."""
    md = {}
    for n, name in enumerate(["id", "grp", "val", "day"]):
        col = b.column(name)
        vals = [v for v in (col.cast(pa.int32()) if name == "day" else col).to_pylist() if v is not None]
        if not vals:
            continue
        lo, hi = min(vals), max(vals)
        if name == "val":
            md["pg_warp.min.%d" % n] = "%.17g" % lo
            md["pg_warp.max.%d" % n] = "%.17g" % hi
        else:
            md["pg_warp.min.%d" % n] = str(lo)
            md["pg_warp.max.%d" % n] = str(hi)
    return md


def write_stats_types(path):
    """1000 rows in 10 batches; statistics for every column, in the stored form of
    doc/arrow-metadata.md (integers in the unit, decimals as text, floats %.17g)."""
    D = decimal.Decimal
    n = 1000
    base_us = 1577836800 * 1000000          # 2020-01-01 00:00:00
    cols = {
        "ts": pa.array([base_us + i * 1000000 for i in range(n)], pa.timestamp("us")),
        "tsns": pa.array([(base_us + i * 1000000) * 1000 for i in range(n)], pa.timestamp("ns")),
        "tstz": pa.array([base_us + i * 1000000 for i in range(n)], pa.timestamp("us", tz="UTC")),
        "dec": pa.array([D(i) * D("0.50") - 100 for i in range(n)], pa.decimal128(10, 2)),
        "u64": pa.array([i * 2**54 for i in range(n)], pa.uint64()),
        "f32": pa.array([i * 0.25 for i in range(n)], pa.float32()),
        "d64": pa.array([(10957 + i) * 86400000 for i in range(n)], pa.date64()),
        "t64": pa.array([i * 60000000 for i in range(n)], pa.time64("us")),
        "i16": pa.array([i - 500 for i in range(n)], pa.int16()),
    }
    t = pa.table(cols)

    def raw(col, b):
        arr = b.column(col)
        if isinstance(arr.type, pa.TimestampType) or arr.type in (pa.date64(), pa.time64("us")):
            return [v for v in arr.cast(pa.int64()).to_pylist()]
        return arr.to_pylist()

    def md(i, b):
        out = {}
        for k, name in enumerate(cols):
            vals = raw(name, b)
            lo, hi = min(vals), max(vals)
            if name == "f32":
                lo, hi = "%.17g" % lo, "%.17g" % hi
            out["pg_warp.min.%d" % k] = str(lo)
            out["pg_warp.max.%d" % k] = str(hi)
        return out
    write_file(path, t, batch_rows=100, batch_metadata=md)


def main():
    final = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "test", "data", "generated")
    # Written into a new directory beside FINAL, then FINAL (a symbolic link) is
    # switched to it in one rename, so a test run reading the data while another
    # run writes it never sees a half-written set.
    os.makedirs(os.path.dirname(os.path.abspath(final)), exist_ok=True)
    out = tempfile.mkdtemp(prefix=os.path.basename(final) + ".",
                           dir=os.path.dirname(os.path.abspath(final)))
    p = lambda *a: os.path.join(out, *a)

    t = types_table()
    write_file(p("types.arrow"), t, batch_rows=2)
    write_file(p("types_lz4.arrow"), t, batch_rows=2, compression="lz4")
    write_file(p("types_zstd.arrow"), t, batch_rows=2, compression="zstd")

    m = many_table()
    write_file(p("many.arrow"), m, batch_rows=1000, batch_metadata=stats_md)
    write_file(p("many_nostats.arrow"), m, batch_rows=1000)

    write_stats_types(p("stats_types.arrow"))

    os.makedirs(p("dir"))
    for k in range(3):
        part = pa.table({"k": pa.array([k] * 10, pa.int32()),
                         "x": pa.array(range(k * 10, k * 10 + 10), pa.int64()),
                         "s": pa.array(["p%d-%d" % (k, i) for i in range(10)])})
        write_file(p("dir", "part-%d.arrow" % k), part, batch_rows=4)
    with open(p("dir", "notes.txt"), "w") as f:
        f.write("not an Arrow file\n")

    os.makedirs(p("mismatch"))
    write_file(p("mismatch", "a.arrow"), pa.table({"x": pa.array([1], pa.int64())}))
    write_file(p("mismatch", "b.arrow"), pa.table({"x": pa.array([1], pa.int32())}))

    exact = pa.table({
        "ts_ns": pa.array([1000, 1500], pa.timestamp("ns")),
        "d32": pa.array([0, 2**31 - 1], pa.date32()),
        "d64": pa.array([0, 86400000 + 1], pa.date64()),
        "t64ns": pa.array([1000, 1001], pa.time64("ns")),
        "dur_ns": pa.array([1000, 1], pa.duration("ns")),
        "u64": pa.array([1, 2**64 - 1], pa.uint64()),
        "s": pa.array(["ok", "ok"]),
    })
    write_file(p("exact.arrow"), exact)

    with pa.ipc.new_stream(p("stream.arrows"), m.schema) as w:
        for b in m.slice(0, 2500).to_batches(max_chunksize=1000):
            w.write_batch(b)
    with pa.ipc.new_file(p("empty_batches.arrow"), m.schema):
        pass

    good = open(p("many.arrow"), "rb").read()
    with open(p("truncated.arrow"), "wb") as f:
        f.write(good[: len(good) // 2])
    bad = bytearray(good)
    # overwrite the footer (the last 2 KiB before the length and magic) with junk
    for i in range(len(bad) - 2048 - 10, len(bad) - 10):
        bad[i] = (i * 131) & 0xFF
    with open(p("corrupt.arrow"), "wb") as f:
        f.write(bytes(bad))
    with open(p("garbage.arrow"), "wb") as f:
        f.write(b"this is not an arrow file at all\n" * 10)
    open(p("zero.arrow"), "wb").close()
    write_file(p("noperm.arrow"), pa.table({"x": pa.array([1], pa.int64())}))

    # deterministic mutants of small valid files: bytes overwritten at spread-out
    # offsets (the FDW must scan or raise an error, never crash)
    os.makedirs(p("mutants"))
    small = pa.table({"id": pa.array(range(20), pa.int64()), "s": pa.array(["v%d" % i for i in range(20)]),
                      "li": pa.array([[i, None] for i in range(20)], pa.list_(pa.int32())),
                      "d": pa.array(["a", "b"] * 10).dictionary_encode()})
    write_file(p("mutants", "base.arrow"), small, batch_rows=7)
    for src_name in ("mutants/base.arrow", "types.arrow"):
        base = open(p(src_name), "rb").read()
        for k in range(60):
            m = bytearray(base)
            pos = (k * 7919 + 13) % len(m)
            for j in range(1 + k % 4):
                m[(pos + j * 3) % len(m)] ^= (0xFF if k % 2 else 0x80) >> (j % 3)
            name = "%s_%03d.arrow" % (os.path.basename(src_name).split(".")[0], k)
            with open(p("mutants", name), "wb") as f:
                f.write(bytes(m))

    corpus = os.path.join(ROOT, "test", "fuzz", "corpus")
    os.makedirs(p("fuzz"))
    if os.path.isdir(corpus):
        for name in sorted(os.listdir(corpus)):
            src = os.path.join(corpus, name)
            if os.path.isfile(src):
                shutil.copyfile(src, p("fuzz", name))

    for dirpath, dirnames, filenames in os.walk(out):
        os.chmod(dirpath, 0o755)
        for fn in filenames:
            os.chmod(os.path.join(dirpath, fn), 0o644)
    os.chmod(p("noperm.arrow"), 0o600)
    publish(out, final)
    print("Arrow test data in %s" % final)


def publish(out, final):
    """Points the link FINAL at OUT atomically; removes sets older than an hour."""
    if os.path.isdir(final) and not os.path.islink(final):
        shutil.rmtree(final)            # a directory left by an older version
    link = out + ".link"
    os.symlink(out, link)
    os.replace(link, final)
    prefix = os.path.basename(final) + "."
    parent = os.path.dirname(out)
    for name in os.listdir(parent):
        old = os.path.join(parent, name)
        if (name.startswith(prefix) and old != out and not name.endswith(".link")
                and os.path.isdir(old) and time.time() - os.path.getmtime(old) > 3600):
            shutil.rmtree(old, ignore_errors=True)


if __name__ == "__main__":
    main()
