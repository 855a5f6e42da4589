"""
Reader direction: pyarrow writes Arrow files and streams, our reader reads
them (`arrow-inspect --json FILE`), and what it prints must equal pyarrow's
values in the JSON form of doc/arrow-json.md, exactly.

Also: dictionaries (deltas, replacements, nested), compression (LZ4_FRAME,
ZSTD), the stream format, V4 metadata, and malformed input (exit 1 with a
message, never a crash or a hang).
"""

import decimal
import struct

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import arrow_ipc_layout as L
import arrow_json_form as J
import interop_cases as C


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def write_ipc(path, schema, batches, fmt="file", options=None):
    """
    pyarrow writes batches [(RecordBatch, metadata dict or None)] to path in
    the file or stream format; returns the writer's stats.
    """
    with open(path, "wb") as f:
        if fmt == "file":
            w = ipc.new_file(f, schema, options=options)
        else:
            w = ipc.new_stream(f, schema, options=options)
        for b, md in batches:
            if md:
                w.write_batch(b, custom_metadata=md)
            else:
                w.write_batch(b)
        w.close()
        return w.stats


def pyarrow_read(path):
    """[(RecordBatch, metadata dict)] as pyarrow reads the file or stream."""
    data = open(path, "rb").read()
    out = []
    if data[:6] == L.MAGIC:
        r = ipc.open_file(pa.py_buffer(data))
        for i in range(r.num_record_batches):
            b, md = r.get_batch_with_custom_metadata(i)
            out.append((b, J.metadata_to_json(md)))
        return r.schema, out
    r = ipc.open_stream(pa.py_buffer(data))
    while True:
        try:
            b, md = r.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        out.append((b, J.metadata_to_json(md)))
    return r.schema, out


def inspect(arrow_inspect, path):
    """(parse_inspect() result, output text) of `arrow-inspect --json`."""
    r = arrow_inspect("--json", path)
    assert r.rc == 0, r.describe()
    try:
        return J.parse_inspect(r.text), r.text
    except J.FormError as e:
        pytest.fail("%s: output not in the documented form: %s\n%s"
                    % (r.cmd(), e, r.text[:3000]))


def assert_exact_text(path, text):
    """The output is byte for byte the exact form of doc/arrow-json.md."""
    problems = J.check_exact_text(text)
    assert not problems, "arrow-inspect --json %s:\n%s" % (
        path, "\n".join(problems))


def assert_reads_as(arrow_inspect, path, schema, batches):
    """
    Our reader's output for path equals schema + batches [(rows, metadata)]
    in the JSON form.  First checks that pyarrow itself reads the file as
    exactly that, so the expectation is right.
    """
    expected = J.expected_form(schema, batches)
    rschema, rbatches = pyarrow_read(path)
    mine = {"schema": J.normalize_schema(J.schema_to_json(rschema)),
            "batches": [{"rows": b.num_rows, "metadata": md,
                         "values": J.batch_to_json(b)}
                        for b, md in rbatches]}
    problems = J.check_inspect(expected, mine)
    assert not problems, "pyarrow does not read back what it wrote " \
        "(test bug):\n" + "\n".join(problems)
    got, text = inspect(arrow_inspect, path)
    problems = J.check_inspect(expected, got)
    assert not problems, "arrow-inspect --json %s:\n%s" % (
        path, "\n".join(problems))
    assert_exact_text(path, text)


def _has_dictionary(t):
    if pa.types.is_dictionary(t):
        return True
    return any(_has_dictionary(f.type) for f in J._type_children(t))


def make_batches(schema, row_sets):
    """
    [(RecordBatch, md)] from [(rows, md)], validated by pyarrow.  With
    dictionary-encoded fields, the batches are slices of one batch, so that
    they share their dictionaries (the file format allows no replacement).
    """
    if any(_has_dictionary(f.type) for f in schema):
        whole = J.batch_from_json(schema, [r for rows, _ in row_sets
                                           for r in rows])
        whole.validate(full=True)
        out, pos = [], 0
        for rows, md in row_sets:
            out.append((whole.slice(pos, len(rows)), md))
            pos += len(rows)
        return out
    out = []
    for rows, md in row_sets:
        b = J.batch_from_json(schema, rows)
        b.validate(full=True)
        out.append((b, md))
    return out


# ---------------------------------------------------------------------------
# every type, every variant
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case_id,variant", C.variant_params(),
                         ids=["%s-%s" % p for p in C.variant_params()])
def test_type(arrow_inspect, workdir, case_id, variant):
    schema, rows = C.variant_data(C.CASE_BY_ID[case_id], variant)
    path = workdir / ("%s-%s.arrow" % (case_id, variant))
    write_ipc(path, schema, make_batches(schema, [(rows, None)]))
    assert_reads_as(arrow_inspect, path, schema, [(rows, {})])


# The formats every "wide" file is also written in.
FORMATS = {
    "file": ("file", {}),
    "stream": ("stream", {}),
    "file_lz4": ("file", {"compression": "lz4"}),
    "file_zstd": ("file", {"compression": "zstd"}),
    "stream_lz4": ("stream", {"compression": "lz4"}),
    "stream_zstd": ("stream", {"compression": "zstd"}),
    "file_v4": ("file", {"metadata_version": ipc.MetadataVersion.V4}),
    "stream_v4": ("stream", {"metadata_version": ipc.MetadataVersion.V4}),
    # pre-0.15 framing: no 0xFFFFFFFF continuation marker before messages
    "stream_legacy": ("stream", {"use_legacy_format": True}),
    "file_legacy": ("file", {"use_legacy_format": True}),
}
# Not here: V4 with compression.  Body compression came with V5; pyarrow 26
# writes V4 + zstd files it cannot read back itself.


def _wide_row_sets(tag):
    rng = C.rng_for("wide", tag)
    return [
        (C.wide_rows(45, rng), {"part": "edges"}),
        ([], None),
        (C.wide_rows(200, rng), None),
        (C.wide_rows(13, rng, nulls=False), {"part": "no nulls"}),
        ([{c.id: None for c in C.CASES}] * 9, None),
    ]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_all_types_one_file(arrow_inspect, workdir, fmt):
    """One column per type, five batches (edges, empty, random, no nulls,
    all null), in each format: file/stream, compressed, V4."""
    kind, opts = FORMATS[fmt]
    schema = C.wide_schema(metadata={"format": fmt})
    row_sets = _wide_row_sets(fmt)
    if "v4" in fmt or "legacy" in fmt:
        # pyarrow 26 cannot read back V4 batches with custom metadata (it
        # takes it for V4's experimental compression key)
        row_sets = [(rows, None) for rows, _ in row_sets]
    path = workdir / ("wide.%s" % fmt)
    write_ipc(path, schema, make_batches(schema, row_sets), kind,
              ipc.IpcWriteOptions(**opts))
    assert_reads_as(arrow_inspect, path, schema,
                    [(rows, md or {}) for rows, md in row_sets])


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
@pytest.mark.parametrize("data", ["compressible", "random", "tiny"])
def test_compression(arrow_inspect, workdir, codec, data):
    """Compressed bodies: highly compressible buffers, incompressible ones
    (random bytes) and one-row batches."""
    schema = pa.schema([("i", pa.int64()), ("s", pa.string()),
                        ("b", pa.binary()), ("l", pa.list_(pa.float64())),
                        ("d", pa.dictionary(pa.int32(), pa.string()))])
    rng = C.rng_for("compression", codec, data)
    if data == "compressible":
        rows = [{"i": i % 3, "s": "same text " * 5, "b": "00" * 50,
                 "l": [1.0] * (i % 4), "d": "k%d" % (i % 2)}
                for i in range(2000)]
    elif data == "random":
        rows = [{"i": rng.getrandbits(63), "s": C.random_string(rng),
                 "b": bytes(rng.getrandbits(8) for _ in range(30)).hex(),
                 "l": [J.float_to_json(struct.unpack(
                     "<d", rng.getrandbits(64).to_bytes(8, "little"))[0])],
                 "d": str(rng.getrandbits(16))} for _ in range(500)]
    else:
        rows = [{"i": None, "s": "x", "b": None, "l": [], "d": None}]
    row_sets = [(rows, None), (rows[:1], None)]
    path = workdir / ("c.%s" % codec)
    write_ipc(path, schema, make_batches(schema, row_sets), "file",
              ipc.IpcWriteOptions(compression=codec))
    data_bytes = open(path, "rb").read()
    msg = L.read_message(data_bytes,
                         L.read_footer(data_bytes)["record_batches"][0].offset)
    assert msg["body_length"] > 0
    assert_reads_as(arrow_inspect, path, schema,
                    [(rows, {}), (rows[:1], {})])


# ---------------------------------------------------------------------------
# batch counts, metadata, names
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_many_batches(arrow_inspect, workdir, fmt):
    """50 batches of 0..20 rows each, each with its own metadata."""
    schema = pa.schema([("n", pa.int32()), ("s", pa.string()),
                        ("l", pa.list_(pa.int16()))])
    rng = C.rng_for("many", fmt)
    row_sets = []
    for i in range(50):
        rows = C.random_rows(schema, rng.randint(0, 20), rng)
        row_sets.append((rows, {"batch": str(i)} if i % 3 else None))
    path = workdir / ("many.%s" % fmt)
    write_ipc(path, schema, make_batches(schema, row_sets), fmt)
    assert_reads_as(arrow_inspect, path, schema,
                    [(r, md or {}) for r, md in row_sets])


@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_zero_batches(arrow_inspect, workdir, fmt):
    schema = pa.schema([pa.field("a", pa.int32(), metadata={"k": "v"}),
                        ("b", pa.list_(pa.string()))],
                       metadata={"empty": "yes"})
    path = workdir / ("zero.%s" % fmt)
    write_ipc(path, schema, [], fmt)
    assert_reads_as(arrow_inspect, path, schema, [])


@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_only_empty_batches(arrow_inspect, workdir, fmt):
    schema = C.wide_schema()
    row_sets = [([], None), ([], {"m": "1"}), ([], None)]
    path = workdir / ("empties.%s" % fmt)
    write_ipc(path, schema, make_batches(schema, row_sets), fmt)
    assert_reads_as(arrow_inspect, path, schema,
                    [([], {}), ([], {"m": "1"}), ([], {})])


METADATA_CASES = {
    "ascii": {"k": "v", "pandas": '{"x": [1, 2]}'},
    "unicode": {"日本語キー": "値😀", "e\u0301": "\u2028"},
    "empty_value": {"empty": "", "": "empty key"},
    "escapes": {"q\"uote": "back\\slash\n\t\x01"},
    "many": {"k%03d" % i: "v" * i for i in range(60)},
}


@pytest.mark.parametrize("name", sorted(METADATA_CASES))
@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_custom_metadata(arrow_inspect, workdir, name, fmt):
    """Schema, field (top-level and nested children) and batch metadata."""
    md = METADATA_CASES[name]
    child = pa.field("item", pa.int32(), metadata=md)
    schema = pa.schema([
        pa.field("a", pa.int64(), metadata=md),
        pa.field("l", pa.list_(child), metadata={"only": "parent"}),
        pa.field("s", pa.struct([pa.field("x", pa.string(), metadata=md),
                                 pa.field("y", pa.bool_())])),
        pa.field("plain", pa.float32()),
    ], metadata=md)
    rng = C.rng_for("md", name, fmt)
    row_sets = [(C.random_rows(schema, 5, rng), md),
                (C.random_rows(schema, 3, rng), None),
                ([], md), (C.random_rows(schema, 2, rng), {"other": "x"})]
    path = workdir / ("md.%s" % fmt)
    write_ipc(path, schema, make_batches(schema, row_sets), fmt)
    assert_reads_as(arrow_inspect, path, schema,
                    [(r, m or {}) for r, m in row_sets])


def test_unicode_and_odd_names(arrow_inspect, workdir):
    names = ["日本語", "emoji😀", "quote\"back\\slash", "", "tab\tnl\n",
             "e\u0301", "a b", "\x7f\x85\u2028", "\x01"]
    schema = pa.schema([pa.field(n, pa.int8()) for n in names] + [
        pa.field("st", pa.struct([pa.field("子", pa.string()),
                                  pa.field("", pa.bool_())]))])
    rng = C.rng_for("names")
    rows = C.random_rows(schema, 12, rng)
    path = workdir / "names.arrow"
    write_ipc(path, schema, make_batches(schema, [(rows, None)]))
    assert_reads_as(arrow_inspect, path, schema, [(rows, {})])


@pytest.mark.parametrize("where", ["field_name", "child_name",
                                   "schema_metadata_value",
                                   "field_metadata_key",
                                   "batch_metadata_value"])
def test_nul_in_names_and_metadata(arrow_inspect, workdir, where):
    """U+0000 inside a name or a metadata string (valid Arrow; arrow.h
    keeps names as C strings).  Either it reads back exactly or the reader
    refuses the file with exit 1 and a message: never a silently shortened
    name (that would make "a\0b" and "a" the same column)."""
    nul = "a\x00b"
    fields = [pa.field(nul if where == "field_name" else "x", pa.int32(),
                       metadata={nul: "v"} if where == "field_metadata_key"
                       else None),
              pa.field("s", pa.struct([pa.field(
                  nul if where == "child_name" else "c", pa.int8())]))]
    schema = pa.schema(fields, metadata={"k": nul}
                       if where == "schema_metadata_value" else None)
    rows = C.random_rows(schema, 3, C.rng_for("nul", where))
    md = {"k": nul} if where == "batch_metadata_value" else None
    path = workdir / "nul.arrow"
    write_ipc(path, schema, make_batches(schema, [(rows, md)]))
    r = arrow_inspect("--json", path)
    if r.rc == 1:
        assert r.stderr.strip(), r.describe()
        return
    assert_reads_as(arrow_inspect, path, schema, [(rows, md or {})])


INVALID_UTF8 = [
    b"\xff", b"a\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"\xe6\x97", b"ok\x80ok", b"\xf0\x9f\x98", b"\xfe\xfe", b"\xe0\x80\x80",
    "日本".encode() + b"\xa5",
]


@pytest.mark.parametrize("large", [False, True], ids=["utf8", "large_utf8"])
def test_invalid_utf8(arrow_inspect, workdir, large):
    """utf8 values that are not UTF-8 (pyarrow writes them unchecked):
    each byte outside a well-formed sequence prints as U+FFFD, the output
    stays valid UTF-8 JSON (doc/arrow-json.md)."""
    t = pa.large_string() if large else pa.string()
    ofmt = "<q" if large else "<i"
    offs = [0]
    for raw in INVALID_UTF8:
        offs.append(offs[-1] + len(raw))
    arr = pa.Array.from_buffers(t, len(INVALID_UTF8), [
        None, pa.py_buffer(b"".join(struct.pack(ofmt, o) for o in offs)),
        pa.py_buffer(b"".join(INVALID_UTF8))])
    schema = pa.schema([("s", t)])
    path = workdir / "badutf8.arrow"
    write_ipc(path, schema, [(pa.RecordBatch.from_arrays([arr],
                                                         schema=schema),
                              None)])
    rows = [{"s": J.decode_utf8_per_doc(raw)} for raw in INVALID_UTF8]
    assert rows[3]["s"] == "\ufffd" * 3 and rows[1]["s"] == "a\ufffd"
    got, text = inspect(arrow_inspect, path)
    problems = J.check_inspect(J.expected_form(schema, [(rows, {})]), got)
    assert not problems, "arrow-inspect --json %s:\n%s" % (
        path, "\n".join(problems))
    want = ['{"row": {"s": %s}}' % J.exact_utf8_literal(raw)
            for raw in INVALID_UTF8]
    got_lines = [line for line in text.split("\n")
                 if line.startswith('{"row"')]
    assert got_lines == want


def test_nan_payloads_and_float_bits(arrow_inspect, workdir):
    """NaNs with payloads and signs all print as "NaN"; every other bit
    pattern (subnormals, -0.0) reads back exactly."""
    f64 = [0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001,
           0x7ff4000000000000, 0xffffffffffffffff, 0x8000000000000000,
           0x0000000000000001, 0x000fffffffffffff, 0x7fefffffffffffff]
    f32 = [0x7fc00000, 0xffc00000, 0x7f800001, 0x7fffffff, 0x80000000,
           0x00000001, 0x007fffff, 0x7f7fffff, 0x3dcccccd]
    f16 = [0x7e00, 0xfe00, 0x7c01, 0x7fff, 0x8000, 0x0001, 0x03ff, 0x7bff,
           0x3555]
    n = len(f64)
    cols = [pa.Array.from_buffers(t, n, [None, pa.py_buffer(
        b"".join(struct.pack(p, x) for x in bits))])
        for t, p, bits in [(pa.float64(), "<Q", f64),
                           (pa.float32(), "<I", f32),
                           (pa.float16(), "<H", f16)]]
    schema = pa.schema([("d", pa.float64()), ("f", pa.float32()),
                        ("h", pa.float16())])
    batch = pa.RecordBatch.from_arrays(cols, schema=schema)

    def val(p, fmt, x):
        return J.float_to_json(struct.unpack(
            fmt, struct.pack(p, x))[0])
    rows = [{"d": val("<Q", "<d", f64[i]), "f": val("<I", "<f", f32[i]),
             "h": val("<H", "<e", f16[i])} for i in range(n)]
    assert [r["d"] for r in rows[:5]] == ["NaN"] * 5
    path = workdir / "bits.arrow"
    write_ipc(path, schema, [(batch, None)])
    assert_reads_as(arrow_inspect, path, schema, [(rows, {})])


def test_sliced_arrays(arrow_inspect, workdir):
    """pyarrow writes slices with non-zero offsets (bitmaps not byte
    aligned, offsets not starting at 0)."""
    schema = C.wide_schema()
    rng = C.rng_for("sliced")
    rows = C.wide_rows(200, rng)
    full = J.batch_from_json(schema, rows)
    sl = [(full.slice(3, 50), None), (full.slice(101, 7), None),
          (full.slice(199, 1), None)]
    path = workdir / "sliced.arrow"
    write_ipc(path, schema, sl)
    assert_reads_as(arrow_inspect, path, schema,
                    [(rows[3:53], {}), (rows[101:108], {}),
                     (rows[199:200], {})])


def test_footer_custom_metadata(arrow_inspect, workdir):
    """Footer custom metadata (not part of the JSON form) does not disturb
    reading."""
    schema = pa.schema([("a", pa.int32()), ("s", pa.string())],
                       metadata={"k": "v"})
    rows = C.random_rows(schema, 10, C.rng_for("footer-md"))
    path = workdir / "footer.arrow"
    with open(path, "wb") as f:
        w = ipc.new_file(f, schema, metadata={"footer": "x" * 100})
        w.write_batch(J.batch_from_json(schema, rows))
        w.close()
    assert_reads_as(arrow_inspect, path, schema, [(rows, {})])


def test_extension_type_reads_as_storage(arrow_inspect, workdir):
    """An extension type (arrow.uuid) is its storage type plus the
    ARROW:extension:* field metadata, which is how IPC carries it."""
    storage = J.array_from_json(pa.field("u", pa.binary(16)),
                                ["00" * 16, None, "ff" * 16])
    arr = pa.ExtensionArray.from_storage(pa.uuid(), storage)
    schema = pa.schema([("u", pa.uuid())])
    path = workdir / "ext.arrow"
    write_ipc(path, schema, [(pa.RecordBatch.from_arrays([arr],
                                                         schema=schema),
                              None)])
    got, _ = inspect(arrow_inspect, path)
    (fd,) = got["schema"]["fields"]
    assert fd["type"] == "fixed_size_binary(16)", fd
    assert fd["metadata"].get("ARROW:extension:name") == "arrow.uuid", fd
    assert [r["u"] for r in got["batches"][0]["values"]] == \
        ["00" * 16, None, "ff" * 16]


def _unsupported_arrays():
    ints = pa.array([1, None, 3], pa.int32())
    decs = [decimal.Decimal("1.25"), None, decimal.Decimal("-3.00")]
    return {
        "dense_union": pa.UnionArray.from_dense(
            pa.array([0, 1, 0], pa.int8()), pa.array([0, 0, 1], pa.int32()),
            [pa.array([1, 2], pa.int32()), pa.array(["x"])]),
        "sparse_union": pa.UnionArray.from_sparse(
            pa.array([0, 1, 0], pa.int8()),
            [ints, pa.array(["x", "y", "z"])]),
        "decimal32": pa.array(decs, pa.decimal32(9, 2)),
        "decimal64": pa.array(decs, pa.decimal64(18, 2)),
    }


def _newer_layouts():
    """Types read since issue 9 item 10: (array, its values in the JSON
    form: views as strings / hex, Decimal256 as text, maps as lists of
    {"key", "value"}, run-end encoded as the values they stand for)."""
    decs = [decimal.Decimal("1.25"), None, decimal.Decimal("-3" + "0" * 40 + ".05")]
    return {
        "map": (pa.array([[("a", 1), ("b", None)], None, []],
                         pa.map_(pa.string(), pa.int32())),
                [[{"key": "a", "value": 1}, {"key": "b", "value": None}], None, []]),
        "decimal256": (pa.array(decs, pa.decimal256(45, 2)),
                       ["1.25", None, "-3" + "0" * 40 + ".05"]),
        "string_view": (pa.array(["a", None, "long string over 12 bytes"],
                                 pa.string_view()),
                        ["a", None, "long string over 12 bytes"]),
        "binary_view": (pa.array([b"a", None, b"x" * 20], pa.binary_view()),
                        ["61", None, "78" * 20]),
        "list_view": (pa.array([[1], None, []], pa.list_view(pa.int32())),
                      [[1], None, []]),
        "large_list_view": (pa.array([[1], None, []],
                                     pa.large_list_view(pa.int32())),
                            [[1], None, []]),
        "run_end_encoded": (pa.RunEndEncodedArray.from_arrays(
            pa.array([2, 3], pa.int32()), pa.array([7, None], pa.int64())),
            [7, 7, None]),
    }


@pytest.mark.parametrize("name", sorted(_newer_layouts()))
@pytest.mark.parametrize("nested", [False, True], ids=["top", "in_list"])
def test_newer_layouts(arrow_inspect, workdir, name, nested):
    """Views, list views, maps, run-end encoding and Decimal256 read as
    pyarrow wrote them, at the top level and inside a list."""
    arr, want = _newer_layouts()[name]
    if nested:
        arr = pa.ListArray.from_arrays(pa.array([0, 1, len(arr)], pa.int32()),
                                       arr)
        want = [want[:1], want[1:]]
    schema = pa.schema([("ok", pa.int32()), ("x", arr.type)])
    batch = pa.RecordBatch.from_arrays(
        [pa.array(range(len(arr)), pa.int32()), arr], schema=schema)
    path = workdir / "newer.arrow"
    write_ipc(path, schema, [(batch, None)])
    got, _ = inspect(arrow_inspect, path)
    assert [r["x"] for r in got["batches"][0]["values"]] == want


@pytest.mark.parametrize("name", sorted(_unsupported_arrays()))
@pytest.mark.parametrize("nested", [False, True], ids=["top", "in_list"])
def test_unsupported_type(arrow_inspect, workdir, name, nested):
    """Valid Arrow types outside doc/arrow-json.md: exit 1 with a message
    (ARROW_ERR_UNSUPPORTED), never a crash or made-up output."""
    arr = _unsupported_arrays()[name]
    if nested:
        arr = pa.ListArray.from_arrays(pa.array([0, 1, len(arr)], pa.int32()),
                                       arr)
    schema = pa.schema([("ok", pa.int32()), ("x", arr.type)])
    batch = pa.RecordBatch.from_arrays(
        [pa.array(range(len(arr)), pa.int32()), arr], schema=schema)
    path = workdir / "unsupported.arrow"
    write_ipc(path, schema, [(batch, None)])
    r = arrow_inspect("--json", path)
    assert r.rc == 1 and r.stderr.strip(), r.describe()


# ---------------------------------------------------------------------------
# dictionaries
# ---------------------------------------------------------------------------

def _dict_array(indices, index_type, values, value_type, ordered=False):
    return pa.DictionaryArray.from_arrays(
        J.array_from_json(pa.field("i", index_type), indices),
        J.array_from_json(pa.field("v", value_type), values),
        ordered=ordered)


def _decoded(indices, values):
    return [None if i is None else values[i] for i in indices]


DICT_CASES = {
    # id: (index type, value type, dictionary values, indices, ordered)
    "utf8_int32": (pa.int32(), pa.string(), ["a", "b", "日本", "", "😀"],
                   [0, 1, 2, 3, 4, 4, 0, None, 2, None], False),
    "utf8_int8": (pa.int8(), pa.string(), ["x%d" % i for i in range(128)],
                  [127, 0, None, 64, 127, 1], False),
    "utf8_int16": (pa.int16(), pa.large_string(), ["p", "q"],
                   [1, 0, None, 1], False),
    "utf8_int64": (pa.int64(), pa.string(), ["p", "q"], [1, 0, 1], True),
    "utf8_uint8": (pa.uint8(), pa.string(), ["p", "q", "r"],
                   [2, None, 0], False),
    "null_in_dictionary": (pa.int32(), pa.string(), ["a", None, "c"],
                           [0, 1, 2, 1, None], False),
    "unused_entries": (pa.int32(), pa.string(), ["u%d" % i for i in
                                                 range(50)],
                       [49, 7], False),
    "all_null_indices": (pa.int32(), pa.string(), ["a"], [None] * 10,
                         False),
    "empty_dictionary": (pa.int32(), pa.string(), [], [None, None], False),
    "int64_values": (pa.int32(), pa.int64(), [C.I64_MIN, 0, C.I64_MAX],
                     [2, 1, 0, None], False),
    "float64_values": (pa.int16(), pa.float64(), ["NaN", -0.0, 5e-324],
                       [0, 1, 2], False),
    "decimal_values": (pa.int8(), pa.decimal128(12, 3), ["-1.000",
                                                         "999999999.999"],
                       [1, 0, None], False),
    "binary_values": (pa.int32(), pa.binary(), ["", "00ff"], [1, 0, 1],
                      False),
    "fixed_size_binary_values": (pa.int32(), pa.binary(2), ["0000", "ffff"],
                                 [1, 1, 0], False),
    "date32_values": (pa.int32(), pa.date32(), [0, C.I32_MIN, C.I32_MAX],
                      [2, 0, 1], False),
    "timestamp_tz_values": (pa.int32(), pa.timestamp("us", tz="+05:30"),
                            [0, C.I64_MAX], [1, 0], False),
}


@pytest.mark.parametrize("name", sorted(DICT_CASES))
def test_dictionary(arrow_inspect, workdir, name):
    itype, vtype, values, indices, ordered = DICT_CASES[name]
    arr = _dict_array(indices, itype, values, vtype, ordered)
    schema = pa.schema([pa.field("d", arr.type), pa.field("n", pa.int32())])
    ns = list(range(len(indices)))
    batch = pa.RecordBatch.from_arrays(
        [arr, pa.array(ns, pa.int32())], schema=schema)
    batch.validate(full=True)
    rows = [{"d": v, "n": i} for i, v in zip(ns, _decoded(indices, values))]
    path = workdir / "dict.arrow"
    # the same dictionary in every batch: one dictionary batch in the file
    write_ipc(path, schema, [(batch, None), (batch.slice(0, 0), None),
                             (batch, {"again": "1"})])
    assert_reads_as(arrow_inspect, path, schema,
                    [(rows, {}), ([], {}), (rows, {"again": "1"})])


def test_dictionary_several_columns(arrow_inspect, workdir):
    """Dictionary ids 0..2 over three columns; a plain column between."""
    a = _dict_array([0, 1, None], pa.int32(), ["a", "b"], pa.string())
    b = _dict_array([1, 1, 0], pa.int8(), [10, 20], pa.int64())
    c = _dict_array([None, 0, 0], pa.int16(), ["z"], pa.large_string())
    schema = pa.schema([("a", a.type), ("p", pa.int32()), ("b", b.type),
                        ("c", c.type)])
    batch = pa.RecordBatch.from_arrays(
        [a, pa.array([1, 2, 3], pa.int32()), b, c], schema=schema)
    rows = [{"a": "a", "p": 1, "b": 20, "c": None},
            {"a": "b", "p": 2, "b": 20, "c": "z"},
            {"a": None, "p": 3, "b": 10, "c": "z"}]
    path = workdir / "dicts.arrow"
    write_ipc(path, schema, [(batch, None)])
    assert_reads_as(arrow_inspect, path, schema, [(rows, {})])


@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_dictionary_nested(arrow_inspect, workdir, fmt):
    """Dictionary-encoded children: list<dict>, struct<dict>,
    large_list<struct<dict, int>>, and a dictionary column after them."""
    # rows: ["x", null], [], null, ["y", "x"]
    la = pa.Array.from_buffers(
        pa.list_(pa.dictionary(pa.int32(), pa.string())), 4,
        [pa.py_buffer(b"\x0b"),
         pa.py_buffer(struct.pack("<5i", 0, 2, 2, 2, 4))],
        children=[_dict_array([0, None, 1, 0], pa.int32(), ["x", "y"],
                              pa.string())])
    sa = pa.StructArray.from_arrays(
        [_dict_array([1, 0, None, 0], pa.int8(), ["p", "q"], pa.string()),
         pa.array([1, 2, 3, 4], pa.int16())], names=["s", "n"])
    inner = pa.StructArray.from_arrays(
        [_dict_array([0, 0, 1], pa.int32(), ["m", "n"], pa.string()),
         pa.array([7, None, 9], pa.int32())], names=["d", "i"])
    lla = pa.LargeListArray.from_arrays(pa.array([0, 1, 1, 3, 3],
                                                 pa.int64()), inner)
    top = _dict_array([2, None, 0, 1], pa.int32(), ["A", "B", "C"],
                      pa.string())
    schema = pa.schema([("l", la.type), ("s", sa.type), ("ll", lla.type),
                        ("t", top.type)])
    batch = pa.RecordBatch.from_arrays([la, sa, lla, top], schema=schema)
    batch.validate(full=True)
    rows = [
        {"l": ["x", None], "s": {"s": "q", "n": 1}, "ll": [{"d": "m", "i": 7}],
         "t": "C"},
        {"l": [], "s": {"s": "p", "n": 2}, "ll": [], "t": None},
        {"l": None, "s": {"s": None, "n": 3},
         "ll": [{"d": "m", "i": None}, {"d": "n", "i": 9}], "t": "A"},
        {"l": ["y", "x"], "s": {"s": "p", "n": 4}, "ll": [], "t": "B"},
    ]
    js = J.schema_to_json(schema)
    # pre-order ids: l.item 0, s.s 1, ll.item.d 2, t 3
    assert js["fields"][0]["children"][0]["dictionary"]["id"] == 0
    assert js["fields"][3]["dictionary"]["id"] == 3
    path = workdir / ("nested_dict.%s" % fmt)
    write_ipc(path, schema, [(batch, None), (batch.slice(1, 2), None)], fmt)
    assert_reads_as(arrow_inspect, path, schema,
                    [(rows, {}), (rows[1:3], {})])


@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_dictionary_deltas(arrow_inspect, workdir, fmt):
    """emit_dictionary_deltas: later batches extend the dictionary with
    delta batches (checked through the writer's stats)."""
    vals = ["a", "b", "c", "日本", "e", "f"]
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string())),
                        ("x", pa.int32())])
    steps = [(2, [0, 1, None, 1]), (4, [3, 2, 0]), (4, []), (6, [5, 4, 3])]
    batches, row_sets = [], []
    for k, idx in steps:
        arr = _dict_array(idx, pa.int32(), vals[:k], pa.string())
        batches.append((pa.RecordBatch.from_arrays(
            [arr, pa.array(range(len(idx)), pa.int32())], schema=schema),
            None))
        row_sets.append(([{"d": v, "x": i} for i, v in
                          enumerate(_decoded(idx, vals))], {}))
    path = workdir / ("delta.%s" % fmt)
    stats = write_ipc(path, schema, batches, fmt,
                      ipc.IpcWriteOptions(emit_dictionary_deltas=True))
    assert stats.num_dictionary_deltas == 2, stats
    assert_reads_as(arrow_inspect, path, schema, row_sets)


def test_dictionary_replacement_stream(arrow_inspect, workdir):
    """A stream may replace a dictionary between batches (non-delta
    dictionary batch with the same id): each batch decodes with the
    dictionary in force when it was written."""
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    d1 = _dict_array([0, 1, 0], pa.int32(), ["one", "two"], pa.string())
    d2 = _dict_array([1, 0, None], pa.int32(), ["uno", "dos"], pa.string())
    d3 = _dict_array([0], pa.int32(), ["eins"], pa.string())
    path = workdir / "replace.stream"
    stats = write_ipc(path, schema, [
        (pa.RecordBatch.from_arrays([d], schema=schema), None)
        for d in (d1, d2, d3)], "stream")
    assert stats.num_replaced_dictionaries == 2, stats
    assert_reads_as(arrow_inspect, path, schema, [
        ([{"d": "one"}, {"d": "two"}, {"d": "one"}], {}),
        ([{"d": "dos"}, {"d": "uno"}, {"d": None}], {}),
        ([{"d": "eins"}], {})])


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_dictionary_compressed(arrow_inspect, workdir, codec):
    """Dictionary batches are compressed too."""
    vals = ["value number %d" % i for i in range(300)]
    idx = [i * 7 % 300 for i in range(1000)] + [None]
    arr = _dict_array(idx, pa.int16(), vals, pa.string())
    schema = pa.schema([("d", arr.type)])
    path = workdir / "dictc.arrow"
    write_ipc(path, schema,
              [(pa.RecordBatch.from_arrays([arr], schema=schema), None)],
              "file", ipc.IpcWriteOptions(compression=codec))
    assert_reads_as(arrow_inspect, path, schema,
                    [([{"d": v} for v in _decoded(idx, vals)], {})])


# ---------------------------------------------------------------------------
# malformed input: exit 1 with a message, never a crash or a hang
# ---------------------------------------------------------------------------

def _valid_file(workdir, fmt="file", compression=None):
    schema = pa.schema([("i", pa.int64()), ("s", pa.string()),
                        ("l", pa.list_(pa.int32())),
                        ("st", pa.struct([("a", pa.float64()),
                                          ("b", pa.binary(3))])),
                        ("d", pa.dictionary(pa.int32(), pa.string()))])
    rng = C.rng_for("malformed", fmt, compression)
    # one batch sliced in two: both parts share one dictionary
    ((whole, _),) = make_batches(schema, [(C.random_rows(schema, 29, rng),
                                           None)])
    path = workdir / ("valid.%s" % fmt)
    write_ipc(path, schema, [(whole.slice(0, 20), {"m": "1"}),
                             (whole.slice(20), None)], fmt,
              ipc.IpcWriteOptions(compression=compression))
    return open(path, "rb").read()


def _expect_error(arrow_inspect, workdir, data, what):
    path = workdir / "bad.arrow"
    path.write_bytes(data)
    r = arrow_inspect("--json", path)
    assert r.rc == 1, "%s: expected exit 1\n%s" % (what, r.describe())
    assert r.stderr.strip(), "%s: exit 1 without a message on stderr" % what


GARBAGE = {
    "empty_file": lambda v: b"",
    "one_byte": lambda v: b"A",
    "magic_only": lambda v: b"ARROW1",
    "magic_padded": lambda v: b"ARROW1\x00\x00",
    "magic_twice": lambda v: b"ARROW1\x00\x00ARROW1",
    "magic_zero_footer": lambda v: b"ARROW1\x00\x00" + b"\x00" * 4 +
    b"ARROW1",
    "random_bytes": lambda v: bytes(C.rng_for("garbage").getrandbits(8)
                                    for _ in range(1000)),
    "magic_then_random": lambda v: b"ARROW1\x00\x00" + bytes(
        C.rng_for("garbage2").getrandbits(8) for _ in range(1000)) +
    b"ARROW1",
    "continuation_only": lambda v: b"\xff\xff\xff\xff",
    "huge_metadata_length": lambda v: b"\xff\xff\xff\xff\xff\xff\xff\x7f" +
    b"\x00" * 64,
    "negative_metadata_length": lambda v: b"\xff\xff\xff\xff\x00\x00\x00\x80"
    + b"\x00" * 64,
    "text_file": lambda v: b"this is not an arrow file\n" * 20,
    "trailing_magic_corrupt": lambda v: v[:-6] + b"ARROW2",
    "footer_length_huge": lambda v: v[:-10] + struct.pack("<i", 0x7fffffff) +
    v[-6:],
    "footer_length_negative": lambda v: v[:-10] + struct.pack("<i", -5) +
    v[-6:],
    "footer_length_zero": lambda v: v[:-10] + struct.pack("<i", 0) + v[-6:],
    "footer_length_off_by_8": lambda v: v[:-10] + struct.pack(
        "<i", struct.unpack("<i", v[-10:-6])[0] + 8) + v[-6:],
    "footer_zeroed": lambda v: v[:L.read_footer(v)["footer_start"]] +
    bytes(len(v) - 10 - L.read_footer(v)["footer_start"]) + v[-10:],
}


@pytest.mark.parametrize("name", sorted(GARBAGE))
def test_malformed(arrow_inspect, workdir, name):
    data = GARBAGE[name](_valid_file(workdir))
    _expect_error(arrow_inspect, workdir, data, name)


def _patch(data, pos, fmt, value):
    b = bytearray(data)
    struct.pack_into("<" + fmt, b, pos, value)
    return bytes(b)


# Footer block patches: (which block list, field offset in Block, value)
BLOCK_PATCHES = {
    "batch_offset_past_end": ("record_batches", 0, "q", 1 << 40),
    "batch_offset_negative": ("record_batches", 0, "q", -8),
    "batch_offset_inside_schema": ("record_batches", 0, "q", 8),
    "batch_offset_misaligned": ("record_batches", 0, "q", None),  # +4
    "batch_meta_length_huge": ("record_batches", 8, "i", 0x7ffffff0),
    "batch_meta_length_zero": ("record_batches", 8, "i", 0),
    "batch_body_length_huge": ("record_batches", 16, "q", 1 << 40),
    "batch_body_length_negative": ("record_batches", 16, "q", -64),
    "dictionary_offset_past_end": ("dictionaries", 0, "q", 1 << 40),
    "dictionary_body_length_huge": ("dictionaries", 16, "q", 1 << 40),
}


@pytest.mark.parametrize("name", sorted(BLOCK_PATCHES))
def test_malformed_footer_blocks(arrow_inspect, workdir, name):
    data = _valid_file(workdir)
    which, off, fmt, value = BLOCK_PATCHES[name]
    block = L.read_footer(data)[which][0]
    if value is None:
        value = block.offset + 4
    _expect_error(arrow_inspect, workdir,
                  _patch(data, block.pos + off, fmt, value), name)


def _message_buffer_patches(data):
    """(name, patched file) pairs that break the first record batch's
    buffer table: offsets/lengths past the body, negative, node lengths."""
    blk = L.read_footer(data)["record_batches"][0]
    msg = L.read_message(data, blk.offset)
    out = []
    # buffers vector: find its position again through the flatbuffer
    prefix = 8
    fb_start = blk.offset + prefix
    fb = data[fb_start:msg["body_start"]]
    t = L.root(fb)
    rb = t.table(2)
    bpos, nbuf = rb.vector(2)
    npos, nnodes = rb.vector(1)
    assert nbuf == len(msg["buffers"]) and nbuf > 3
    body = msg["body_length"]
    for k in (1, 2, nbuf - 1):
        p = fb_start + bpos + 16 * k
        out.append(("buffer%d_offset_past_body" % k,
                    _patch(data, p, "q", body + 64)))
        out.append(("buffer%d_length_past_body" % k,
                    _patch(data, p + 8, "q", body * 4 + 4096)))
        out.append(("buffer%d_offset_negative" % k,
                    _patch(data, p, "q", -64)))
    for k in (0, 2, nnodes - 1):
        p = fb_start + npos + 16 * k
        out.append(("node%d_length_huge" % k,
                    _patch(data, p, "q", 1 << 40)))
        out.append(("node%d_length_negative" % k, _patch(data, p, "q", -3)))
        out.append(("node%d_null_count_gt_length" % k,
                    _patch(data, p + 8, "q", 1 << 30)))
    out.append(("batch_length_huge", _patch(
        data, fb_start + rb.field_pos(0), "q", 1 << 40)))
    return out


def test_malformed_batch_buffers(arrow_inspect, workdir):
    """Buffer and node tables that do not fit the body.  Each variant must
    give exit 1 (all are detectable from sizes alone)."""
    data = _valid_file(workdir)
    failures = []
    for name, bad in _message_buffer_patches(data):
        path = workdir / ("%s.arrow" % name)
        path.write_bytes(bad)
        r = arrow_inspect("--json", path)
        if r.rc != 1 or not r.stderr.strip():
            failures.append("%s: exit %d, stderr %r (file %s)"
                            % (name, r.rc, r.stderr[:200], path))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("fmt", ["file", "stream"])
def test_truncated(arrow_inspect, workdir, fmt):
    """Cuts at many places: every cut of a file (the trailing magic is
    gone) and every cut of a stream inside a message is an error."""
    data = _valid_file(workdir, fmt)
    if fmt == "file":
        cuts = sorted(set([1, 5, 7, 8, 9, 12, 16, len(data) - 1,
                           len(data) - 6, len(data) - 10, len(data) - 11] +
                          [len(data) * k // 23 for k in range(1, 23)]))
    else:
        cuts = []
        for m in L.stream_messages(data):
            s, e, bs = m["start"], m["end"], m["body_start"]
            cuts += [s + 2, s + 4, s + 6, s + 8, (s + bs) // 2, bs - 1]
            if e > bs:
                cuts += [bs + 1, (bs + e) // 2, e - 1]
        cuts = sorted(set(c for c in cuts if 0 < c < len(data)))
    failures = []
    for c in cuts:
        path = workdir / ("cut%d.arrow" % c)
        path.write_bytes(data[:c])
        r = arrow_inspect("--json", path)
        if r.rc != 1 or not r.stderr.strip():
            failures.append("cut at %d of %d: exit %d, stderr %r"
                            % (c, len(data), r.rc, r.stderr[:200]))
    assert not failures, "\n".join(failures)


def test_stream_without_eos(arrow_inspect, workdir):
    """A stream that ends at a message boundary without the end-of-stream
    marker: every batch before the end is read, and nothing else."""
    data = _valid_file(workdir, "stream")
    msgs = L.stream_messages(data)
    assert data[msgs[-1]["end"]:] == b"\xff\xff\xff\xff\x00\x00\x00\x00"
    path = workdir / "noeos.stream"
    path.write_bytes(data[:msgs[-1]["end"]])
    full = workdir / "full.stream"
    full.write_bytes(data)
    want, _ = inspect(arrow_inspect, full)
    r = arrow_inspect("--json", path)
    if r.rc == 0:
        assert J.parse_inspect(r.text) == want
    else:
        assert r.rc == 1 and r.stderr.strip(), r.describe()


@pytest.mark.parametrize("fmt,compression", [("file", None),
                                             ("stream", None),
                                             ("file", "lz4"),
                                             ("file", "zstd")])
def test_fuzz_byte_flips(arrow_inspect, workdir, fmt, compression):
    """Seeded random corruptions of a valid file: 1-4 bytes overwritten per
    variant, 60 variants.  Any outcome but a crash or a hang is allowed
    (a flipped value byte is still a valid file); exit 1 needs a message."""
    data = _valid_file(workdir, fmt, compression)
    rng = C.rng_for("fuzz", fmt, compression)
    # most flips go to the metadata (flatbuffers, prefixes, footer), where
    # they change structure rather than values
    if fmt == "file":
        f = L.read_footer(data)
        blocks = f["dictionaries"] + f["record_batches"]
        regions = [(8, min(b.offset for b in blocks)),
                   (f["footer_start"], len(data))] + \
            [(b.offset, b.offset + b.meta_len) for b in blocks]
    else:
        regions = [(m["start"], m["body_start"])
                   for m in L.stream_messages(data)]
    regions.append((0, len(data)))
    failures = []
    for k in range(60):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            lo, hi = rng.choice(regions)
            b[rng.randrange(lo, hi)] = rng.choice(
                [0x00, 0x01, 0xff, 0x7f, 0x80, rng.getrandbits(8)])
        path = workdir / ("fuzz%02d.arrow" % k)
        path.write_bytes(bytes(b))
        r = arrow_inspect("--json", path)   # crash/hang fails here
        if r.rc == 1 and not r.stderr.strip():
            failures.append("%s: exit 1 without a message" % path)
    assert not failures, "\n".join(failures)


def test_missing_file(arrow_inspect, workdir):
    r = arrow_inspect("--json", workdir / "does-not-exist.arrow")
    assert r.rc == 1 and r.stderr.strip(), r.describe()


def test_directory_argument(arrow_inspect, workdir):
    r = arrow_inspect("--json", workdir)
    assert r.rc == 1 and r.stderr.strip(), r.describe()


NOT_ARROW = {
    "csv": (b"name,value\nalpha,1\n", '"name,val"'),
    "text_file": (GARBAGE["text_file"](b""), '"this is "'),
    "empty_file": (b"", "is empty"),
    "one_byte": (b"A", '"A"'),
    "binary": (b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, '"\\x89PNG\\x0d\\x0a\\x1a\\x0a"'),
}


@pytest.mark.parametrize("name", sorted(NOT_ARROW))
def test_not_arrow_says_so(arrow_inspect, workdir, name):
    """Issue 27, item 9: a CSV or text file is 'not an Arrow IPC file' with its
    first bytes, not '1701667186 bytes of metadata'."""
    data, shown = NOT_ARROW[name]
    path = workdir / "not.arrow"
    path.write_bytes(data)
    r = arrow_inspect("--json", path)
    assert r.rc == 1, r.describe()
    err = r.stderr.decode("utf-8", "replace")
    assert "not an Arrow IPC file" in err and shown in err, r.describe()


@pytest.mark.parametrize("name", ["magic_only", "continuation_only",
                                  "huge_metadata_length", "footer_length_huge"])
def test_damaged_arrow_is_not_called_not_arrow(arrow_inspect, workdir, name):
    """What starts as Arrow does (file magic, a stream message's marker) is a
    truncated or corrupt Arrow file, not 'not an Arrow IPC file'."""
    path = workdir / "bad.arrow"
    path.write_bytes(GARBAGE[name](_valid_file(workdir)))
    r = arrow_inspect("--json", path)
    assert r.rc == 1 and r.stderr.strip(), r.describe()
    assert b"not an Arrow IPC file" not in r.stderr, r.describe()
