"""
Writer direction: our writer writes Arrow files from JSON-form specs
(`arrow-gen OUT.arrow < SPEC.json`), pyarrow reads them, and schema (names,
types, nullability, children), custom metadata (schema, field, batch) and
every value must equal the spec exactly.  Every file must also pass
pyarrow's full validation and the layout rules of the Arrow spec (8-byte
aligned blocks, metadata and bodies; buffers inside their body).

Also: appending (`arrow-gen --append`): same schema -> old + new batches,
the old bytes untouched; another schema or bad input -> exit 1 and the file
unchanged byte for byte.
"""

import json

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import arrow_ipc_layout as L
import arrow_json_form as J
import interop_cases as C


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def spec_text(spec, style="doc"):
    """doc: the documented form (UTF-8, %.17g floats); ascii: Python's
    json with \\u escapes, shortest float repr and indentation."""
    if style == "doc":
        return J.dumps(spec)
    if style == "exact":    # the schema exactly as arrow-inspect prints it
        sch = J.normalize_schema(spec["schema"])
        spec = dict(spec, schema={
            "fields": [J.exact_field(f) for f in sch["fields"]],
            "metadata": sch["metadata"]})
        return J.exact_dumps(spec)
    return json.dumps(spec, ensure_ascii=True, indent=1)


def gen(arrow_gen, path, spec, append=False, style="doc"):
    """Runs arrow-gen; keeps the spec beside the output for reproduction."""
    text = spec_text(spec, style)
    spec_path = path.parent / (path.name + (".append" if append else "") +
                               ".json")
    spec_path.write_text(text, encoding="utf-8")
    args = (["--append"] if append else []) + [path]
    r = arrow_gen(*args, stdin=text)
    r.spec_path = spec_path
    return r


def gen_ok(arrow_gen, path, spec, append=False, style="doc"):
    r = gen(arrow_gen, path, spec, append, style)
    assert r.rc == 0, "%s < %s\n%s" % (r.cmd(), r.spec_path, r.describe())
    return r


def check_layout(data, n_batches):
    """Problems with the file's layout by the rules of the Arrow spec."""
    problems = []
    if data[:8] != b"ARROW1\x00\x00":
        problems.append("does not start with ARROW1 and 2 padding bytes")
    if data[-6:] != b"ARROW1":
        problems.append("does not end with ARROW1")
        return problems
    footer = L.read_footer(data)
    if len(footer["record_batches"]) != n_batches:
        problems.append("footer lists %d record batches, expected %d"
                        % (len(footer["record_batches"]), n_batches))
    schema_msg = L.read_message(data, 8)
    if schema_msg is None or schema_msg["header_type"] != L.HEADER_SCHEMA:
        problems.append("no schema message at offset 8")
    for kind, blocks in (("dictionary", footer["dictionaries"]),
                         ("record batch", footer["record_batches"])):
        for i, b in enumerate(blocks):
            where = "%s block %d %r" % (kind, i, b)
            if b.offset % 8 or b.meta_len % 8 or b.body_len % 8:
                problems.append(where + ": not 8-byte aligned")
            if b.end > footer["footer_start"]:
                problems.append(where + ": overlaps the footer")
                continue
            m = L.read_message(data, b.offset)
            if data[b.offset:b.offset + 4] != b"\xff\xff\xff\xff":
                problems.append(where + ": no continuation marker")
            if m is None:
                problems.append(where + ": no message")
                continue
            want = L.HEADER_DICTIONARY if kind == "dictionary" \
                else L.HEADER_RECORD_BATCH
            if m["header_type"] != want:
                problems.append(where + ": header type %d" %
                                m["header_type"])
            if m["meta_len"] != b.meta_len:
                problems.append(where + ": message metadata is %d bytes"
                                % m["meta_len"])
            if m["body_length"] != b.body_len:
                problems.append(where + ": message body is %d bytes"
                                % m["body_length"])
            for k, (off, ln) in enumerate(m["buffers"]):
                if off % 8 or off < 0 or ln < 0 or off + ln > b.body_len:
                    problems.append(where + ": buffer %d (%d, %d) misplaced"
                                    % (k, off, ln))
    return problems


def pyarrow_read(path):
    """pyarrow's view of a file: schema and [(batch, metadata)], after
    full validation of every batch."""
    r = ipc.open_file(pa.py_buffer(open(path, "rb").read()))
    out = []
    for i in range(r.num_record_batches):
        b, md = r.get_batch_with_custom_metadata(i)
        b.validate(full=True)
        out.append((b, J.metadata_to_json(md)))
    return r.schema, out


def assert_file_is(path, schema, row_sets):
    """pyarrow reads path as exactly schema + [(rows, metadata)]."""
    data = open(path, "rb").read()
    problems = check_layout(data, len(row_sets))
    try:
        rschema, batches = pyarrow_read(path)
    except (pa.ArrowException, OSError) as e:
        pytest.fail("pyarrow cannot read %s: %s\n%s"
                    % (path, e, "\n".join(problems)))
    schema_ok = rschema.equals(schema, check_metadata=True) and \
        J.normalize_schema(J.schema_to_json(rschema)) == \
        J.normalize_schema(J.schema_to_json(schema))
    if not schema_ok:
        problems.append("schema differs:\n  expected %s\n  got      %s"
                        % (J.dumps(J.schema_to_json(schema)),
                           J.dumps(J.schema_to_json(rschema))))
    if len(batches) != len(row_sets):
        problems.append("%d batches expected, pyarrow sees %d"
                        % (len(row_sets), len(batches)))
    sj = J.schema_to_json(schema)
    for i, ((b, md), (rows, want_md)) in enumerate(zip(batches, row_sets)):
        if md != (want_md or {}):
            problems.append("batch %d: metadata %r expected, got %r"
                            % (i, want_md or {}, md))
        if b.num_rows != len(rows):
            problems.append("batch %d: %d rows expected, got %d"
                            % (i, len(rows), b.num_rows))
        if schema_ok:
            problems += J.check_rows(sj, rows, J.batch_to_json(b),
                                     "batch %d" % i)
    assert not problems, "%s:\n%s" % (path, "\n".join(problems))


def spec_for(schema, row_sets, dictionaries=None):
    return J.make_spec(J.schema_to_json(schema), row_sets, dictionaries)


# ---------------------------------------------------------------------------
# every type, every variant
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case_id,variant", C.variant_params(),
                         ids=["%s-%s" % p for p in C.variant_params()])
def test_type(arrow_gen, workdir, case_id, variant):
    schema, rows = C.variant_data(C.CASE_BY_ID[case_id], variant)
    path = workdir / ("%s-%s.arrow" % (case_id, variant))
    gen_ok(arrow_gen, path, spec_for(schema, [(rows, None)]))
    assert_file_is(path, schema, [(rows, None)])


def _wide_row_sets(tag):
    rng = C.rng_for("write-wide", tag)
    return [
        (C.wide_rows(45, rng), {"part": "edges"}),
        ([], None),
        (C.wide_rows(200, rng), None),
        (C.wide_rows(13, rng, nulls=False), {"part": "no nulls"}),
        ([{c.id: None for c in C.CASES}] * 9, None),
    ]


@pytest.mark.parametrize("style", ["doc", "ascii_escapes", "exact"])
def test_all_types_one_file(arrow_gen, workdir, style):
    """One column per type, five batches (edges, empty, random, no nulls,
    all null).  ascii_escapes: the same spec as \\u escapes (surrogate
    pairs, \\u0000), indented, floats in shortest form; exact: the text
    form arrow-inspect prints (empty field metadata left out, \\u000a)."""
    schema = C.wide_schema(metadata={"style": style})
    row_sets = _wide_row_sets(style)
    path = workdir / "wide.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, row_sets), style=style)
    assert_file_is(path, schema, row_sets)


def test_many_batches(arrow_gen, workdir):
    """50 batches of 0..20 rows, most with their own metadata."""
    schema = pa.schema([("n", pa.int32()), ("s", pa.string()),
                        ("l", pa.list_(pa.int16())),
                        ("t", pa.timestamp("ms", tz="UTC"))])
    rng = C.rng_for("write-many")
    row_sets = [(C.random_rows(schema, rng.randint(0, 20), rng),
                 {"batch": str(i)} if i % 3 else None) for i in range(50)]
    path = workdir / "many.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, row_sets))
    assert_file_is(path, schema, row_sets)


def test_zero_batches(arrow_gen, workdir):
    schema = pa.schema([pa.field("a", pa.int32(), metadata={"k": "v"}),
                        ("b", pa.list_(pa.string()))],
                       metadata={"empty": "yes"})
    path = workdir / "zero.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, []))
    assert_file_is(path, schema, [])


def test_only_empty_batches(arrow_gen, workdir):
    schema = C.wide_schema()
    row_sets = [([], None), ([], {"m": "1"}), ([], None)]
    path = workdir / "empties.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, row_sets))
    assert_file_is(path, schema, row_sets)


def test_large_batch(arrow_gen, workdir):
    """One batch of 1500 random rows over every type."""
    schema = C.wide_schema()
    rows = C.wide_rows(1500, C.rng_for("write-large"))
    path = workdir / "large.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, [(rows, None)]))
    assert_file_is(path, schema, [(rows, None)])


METADATA_CASES = {
    "ascii": {"k": "v", "pandas": '{"x": [1, 2]}'},
    "unicode": {"日本語キー": "値😀", "e\u0301": "\u2028"},
    "empty_value": {"empty": "", "": "empty key"},
    "escapes": {"q\"uote": "back\\slash\n\t\x01"},
    "many": {"k%03d" % i: "v" * i for i in range(60)},
}


@pytest.mark.parametrize("name", sorted(METADATA_CASES))
def test_custom_metadata(arrow_gen, workdir, name):
    """Schema, field (top-level and nested children) and batch metadata."""
    md = METADATA_CASES[name]
    schema = pa.schema([
        pa.field("a", pa.int64(), metadata=md),
        pa.field("l", pa.list_(pa.field("item", pa.int32(), metadata=md)),
                 metadata={"only": "parent"}),
        pa.field("s", pa.struct([pa.field("x", pa.string(), metadata=md),
                                 pa.field("y", pa.bool_())])),
        pa.field("plain", pa.float32()),
    ], metadata=md)
    rng = C.rng_for("write-md", name)
    row_sets = [(C.random_rows(schema, 5, rng), md),
                (C.random_rows(schema, 3, rng), None),
                ([], md), (C.random_rows(schema, 2, rng), {"other": "x"})]
    path = workdir / "md.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, row_sets))
    assert_file_is(path, schema, row_sets)


def test_unicode_and_odd_names(arrow_gen, workdir):
    names = ["日本語", "emoji😀", "quote\"back\\slash", "", "tab\tnl\n",
             "e\u0301", "a b", "\x7f\x85\u2028", "\x01"]
    schema = pa.schema([pa.field(n, pa.int8()) for n in names] + [
        pa.field("st", pa.struct([pa.field("子", pa.string()),
                                  pa.field("", pa.bool_())]))])
    rows = C.random_rows(schema, 12, C.rng_for("write-names"))
    path = workdir / "names.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, [(rows, None)]))
    assert_file_is(path, schema, [(rows, None)])


@pytest.mark.parametrize("where", ["field_name", "child_name",
                                   "schema_metadata_value",
                                   "field_metadata_key",
                                   "batch_metadata_value"])
def test_nul_in_names_and_metadata(arrow_gen, workdir, where):
    """U+0000 inside a name or metadata string: written exactly, or refused
    with exit 1 and a message (arrow.h keeps names as C strings); never
    written shortened."""
    nul = "a\x00b"
    fields = [pa.field(nul if where == "field_name" else "x", pa.int32(),
                       metadata={nul: "v"} if where == "field_metadata_key"
                       else None),
              pa.field("s", pa.struct([pa.field(
                  nul if where == "child_name" else "c", pa.int8())]))]
    schema = pa.schema(fields, metadata={"k": nul}
                       if where == "schema_metadata_value" else None)
    rows = C.random_rows(schema, 3, C.rng_for("w-nul", where))
    md = {"k": nul} if where == "batch_metadata_value" else None
    path = workdir / "nul.arrow"
    r = gen(arrow_gen, path, spec_for(schema, [(rows, md)]))
    if r.rc == 1:
        assert r.stderr.strip(), r.describe()
        return
    assert_file_is(path, schema, [(rows, md)])


def test_list_child_names(arrow_gen, workdir):
    """List children keep their names, nullability and metadata."""
    schema = pa.schema([
        ("a", pa.list_(pa.field("element", pa.int32(), nullable=False))),
        ("b", pa.large_list(pa.field("x", pa.string(),
                                     metadata={"m": "1"}))),
        ("c", pa.list_(pa.field("v", pa.float64(), nullable=False), 2)),
        pa.field("d", pa.struct([pa.field("k", pa.int8(), nullable=False)]),
                 nullable=False),
    ])
    rows = C.random_rows(schema, 20, C.rng_for("write-child-names"))
    path = workdir / "children.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, [(rows, None)]))
    assert_file_is(path, schema, [(rows, None)])


def test_dictionary_spec(arrow_gen, workdir):
    """Dictionary-encoded fields written from the spec's dictionaries:
    rows hold indices; pyarrow decodes them."""
    schema = pa.schema([
        ("d", pa.dictionary(pa.int32(), pa.string())),
        ("e", pa.dictionary(pa.int8(), pa.int64(), ordered=True)),
        ("n", pa.int32()),
    ])
    sj = J.schema_to_json(schema)
    dvals = ["a", "", "日本", "😀"]
    evals = [C.I64_MIN, 0, C.I64_MAX]
    idx = [(0, 2), (1, None), (2, 0), (None, 1), (3, 2), (0, 0)]
    spec_rows = [{"d": i, "e": j, "n": k} for k, (i, j) in enumerate(idx)]
    spec = J.make_spec(sj, [(spec_rows, None), ([], None),
                            (spec_rows[:2], {"b": "2"})],
                       [{"id": 0, "values": dvals}, {"id": 1,
                                                     "values": evals}])
    path = workdir / "dict.arrow"
    gen_ok(arrow_gen, path, spec)
    rows = [{"d": None if i is None else dvals[i],
             "e": None if j is None else evals[j], "n": k}
            for k, (i, j) in enumerate(idx)]
    assert_file_is(path, schema, [(rows, None), ([], None),
                                  (rows[:2], {"b": "2"})])


# ---------------------------------------------------------------------------
# invalid specs
# ---------------------------------------------------------------------------

INVALID_SPECS = {
    "int8_out_of_range": ("int8", 128),
    "uint64_out_of_range": ("uint64", 1 << 64),
    "uint8_negative": ("uint8", -1),
    "int32_from_string": ("int32", "1"),
    "int32_fraction": ("int32", 1.5),
    "bool_from_int": ("bool", 1),
    "decimal_too_many_digits": ("decimal128(5, 2)", "1000.00"),
    "decimal_too_many_fraction_digits": ("decimal128(5, 2)", "1.234"),
    "decimal_not_a_number": ("decimal128(5, 2)", "abc"),
    "fixed_size_binary_wrong_width": ("fixed_size_binary(4)", "0011"),
    "binary_odd_hex": ("binary", "abc"),
    "binary_not_hex": ("binary", "zz"),
    "utf8_from_int": ("utf8", 5),
    "float_bad_string": ("float64", "nan"),
    "interval_dt_one_element": ("interval[dt]", [1]),
    "date32_out_of_range": ("date32", 1 << 31),
}


@pytest.mark.parametrize("name", sorted(INVALID_SPECS))
def test_invalid_spec_value(arrow_gen, workdir, name):
    """A value not in the JSON form of its type: exit 1 with a message."""
    ts, value = INVALID_SPECS[name]
    spec = {"schema": {"fields": [{"name": "c", "type": ts,
                                   "nullable": True}], "metadata": {}},
            "batches": [{"metadata": {}, "rows": [{"c": None},
                                                  {"c": value}]}]}
    r = gen(arrow_gen, workdir / "bad.arrow", spec)
    assert r.rc == 1 and r.stderr.strip(), r.describe()


@pytest.mark.parametrize("text", ["", "{", "[]", "{\"schema\": 1}",
                                  "not json", "{\"batches\": []}"],
                         ids=["empty", "unterminated", "array",
                              "schema_not_object", "text", "no_schema"])
def test_invalid_spec_document(arrow_gen, workdir, text):
    r = arrow_gen(workdir / "bad.arrow", stdin=text)
    assert r.rc == 1 and r.stderr.strip(), r.describe()


# ---------------------------------------------------------------------------
# append
# ---------------------------------------------------------------------------

def _append_schema():
    return pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        ("name", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("p", pa.struct([("x", pa.float64()), ("y", pa.decimal128(10, 3))])),
        ("ts", pa.timestamp("us", tz="Asia/Tokyo")),
        ("iv", J.interval_dt()),
    ], metadata={"table": "t"})


def _assert_prefix_kept(before, after):
    """Every byte of the old file up to its last block is unchanged, and
    the new footer lists the old blocks first, at the same places."""
    fb = L.read_footer(before)
    fa = L.read_footer(after)
    blocks = fb["dictionaries"] + fb["record_batches"]
    end = max(b.end for b in blocks) if blocks else \
        L.read_message(before, 8)["end"]
    assert after[:end] == before[:end], "old bytes changed before %d" % end
    for b in blocks:
        assert after[b.offset:b.end] == before[b.offset:b.end], b
    old = [b.key() for b in fb["record_batches"]]
    new = [b.key() for b in fa["record_batches"]]
    assert new[:len(old)] == old, (old, new)
    assert [b.key() for b in fa["dictionaries"]][:len(fb["dictionaries"])] \
        == [b.key() for b in fb["dictionaries"]]


def test_append_same_schema(arrow_gen, workdir):
    schema = _append_schema()
    rng = C.rng_for("append")
    first = [(C.random_rows(schema, 7, rng), {"run": "1"}),
             (C.random_rows(schema, 0, rng), None)]
    second = [(C.random_rows(schema, 11, rng), {"run": "2"}),
              (C.random_rows(schema, 3, rng), None)]
    third = [(C.random_rows(schema, 1, rng), {"run": "3"})]
    path = workdir / "app.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, first))
    before = path.read_bytes()
    gen_ok(arrow_gen, path, spec_for(schema, second), append=True)
    middle = path.read_bytes()
    _assert_prefix_kept(before, middle)
    assert_file_is(path, schema, first + second)
    gen_ok(arrow_gen, path, spec_for(schema, third), append=True)
    _assert_prefix_kept(middle, path.read_bytes())
    assert_file_is(path, schema, first + second + third)


def test_append_to_zero_batches(arrow_gen, workdir):
    schema = _append_schema()
    rows = C.random_rows(schema, 9, C.rng_for("append0"))
    path = workdir / "app0.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, []))
    before = path.read_bytes()
    gen_ok(arrow_gen, path, spec_for(schema, [(rows, {"a": "b"})]),
           append=True)
    _assert_prefix_kept(before, path.read_bytes())
    assert_file_is(path, schema, [(rows, {"a": "b"})])


def test_append_nothing(arrow_gen, workdir):
    """Appending zero batches leaves a valid file with the old batches."""
    schema = _append_schema()
    rows = C.random_rows(schema, 4, C.rng_for("append-nothing"))
    path = workdir / "app.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, [(rows, None)]))
    gen_ok(arrow_gen, path, spec_for(schema, []), append=True)
    assert_file_is(path, schema, [(rows, None)])


def test_append_to_pyarrow_file(arrow_gen, workdir):
    """Our writer appends to a file pyarrow wrote (which has an
    end-of-stream marker before its footer)."""
    schema = _append_schema()
    schema = pa.schema([f for f in schema if f.name != "iv"],
                       metadata=schema.metadata)
    rng = C.rng_for("append-pyarrow")
    old = [(C.random_rows(schema, 6, rng), {"from": "pyarrow"})]
    new = [(C.random_rows(schema, 5, rng), {"from": "arrow-gen"})]
    path = workdir / "py.arrow"
    with open(path, "wb") as f:
        w = ipc.new_file(f, schema)
        w.write_batch(J.batch_from_json(schema, old[0][0]),
                      custom_metadata=old[0][1])
        w.close()
    before = path.read_bytes()
    gen_ok(arrow_gen, path, spec_for(schema, new), append=True)
    _assert_prefix_kept(before, path.read_bytes())
    assert_file_is(path, schema, old + new)


def _other_schemas():
    base = _append_schema()
    fields = list(base)

    def replace(i, f):
        fs = list(fields)
        fs[i] = f
        return pa.schema(fs, metadata=base.metadata)
    return {
        "type_differs": replace(0, pa.field("id", pa.int32(),
                                            nullable=False)),
        "name_differs": replace(1, pa.field("nom", pa.string())),
        "nullability_differs": replace(0, pa.field("id", pa.int64())),
        "extra_column": pa.schema(fields + [pa.field("z", pa.int8())],
                                  metadata=base.metadata),
        "missing_column": pa.schema(fields[:-1], metadata=base.metadata),
        "columns_swapped": pa.schema([fields[1], fields[0]] + fields[2:],
                                     metadata=base.metadata),
        "list_child_type": replace(2, pa.field("tags",
                                               pa.list_(pa.large_string()))),
        "list_child_name": replace(2, pa.field(
            "tags", pa.list_(pa.field("element", pa.string())))),
        "list_kind": replace(2, pa.field("tags",
                                         pa.large_list(pa.string()))),
        "struct_child_nullability": replace(3, pa.field("p", pa.struct([
            pa.field("x", pa.float64(), nullable=False),
            ("y", pa.decimal128(10, 3))]))),
        "decimal_scale": replace(3, pa.field("p", pa.struct([
            ("x", pa.float64()), ("y", pa.decimal128(10, 2))]))),
        "timezone": replace(4, pa.field("ts", pa.timestamp("us",
                                                           tz="+05:30"))),
        "timezone_dropped": replace(4, pa.field("ts", pa.timestamp("us"))),
        "time_unit": replace(4, pa.field("ts", pa.timestamp(
            "ns", tz="Asia/Tokyo"))),
        "interval_unit": replace(5, pa.field("iv", J.interval_ym())),
        "dictionary_encoded": replace(1, pa.field(
            "name", pa.dictionary(pa.int32(), pa.string()))),
    }


OTHER_SCHEMAS = sorted(_other_schemas())


@pytest.mark.parametrize("name", OTHER_SCHEMAS)
def test_append_other_schema(arrow_gen, workdir, name):
    """Another schema: exit 1 with a message; the file unchanged."""
    schema = _append_schema()
    other = _other_schemas()[name]
    assert J.schema_to_json(other)["fields"] != \
        J.schema_to_json(schema)["fields"]
    rng = C.rng_for("append-other", name)
    path = workdir / "app.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, [(C.random_rows(schema, 5, rng),
                                               None)]))
    before = path.read_bytes()
    dicts = [{"id": 0, "values": ["x"]}] if name == "dictionary_encoded" \
        else None
    rows = C.random_rows(other, 4, rng)
    if dicts:
        rows = [dict(r, name=0) for r in rows]
    r = gen(arrow_gen, path, spec_for(other, [(rows, None)], dicts),
            append=True)
    assert r.rc == 1 and r.stderr.strip(), r.describe()
    assert path.read_bytes() == before, "file changed by a failed append"


def test_append_bad_value_restores_file(arrow_gen, workdir):
    """A value error in a later batch of an append: exit 1 and the file
    back as it was (arrow_writer_abort)."""
    schema = pa.schema([("a", pa.int8()), ("s", pa.string())])
    path = workdir / "app.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, [([{"a": 1, "s": "x"}], None)]))
    before = path.read_bytes()
    good = [{"a": i, "s": "y" * i} for i in range(100)]
    spec = spec_for(schema, [(good, None), (good, None),
                             ([{"a": 1000, "s": "z"}], None)])
    r = gen(arrow_gen, path, spec, append=True)
    assert r.rc == 1 and r.stderr.strip(), r.describe()
    assert path.read_bytes() == before, "file changed by a failed append"


@pytest.mark.parametrize("what", ["garbage", "truncated", "empty",
                                  "stream_format"])
def test_append_to_invalid_file(arrow_gen, workdir, what):
    """Appending to something that is not an Arrow file: exit 1 and the
    bytes left alone."""
    schema = pa.schema([("a", pa.int32())])
    path = workdir / "target.arrow"
    if what == "garbage":
        path.write_bytes(bytes(C.rng_for("g").getrandbits(8)
                               for _ in range(500)))
    elif what == "empty":
        path.write_bytes(b"")
    elif what == "truncated":
        gen_ok(arrow_gen, path, spec_for(schema, [([{"a": 1}], None)]))
        path.write_bytes(path.read_bytes()[:-7])
    else:
        with open(path, "wb") as f:
            w = ipc.new_stream(f, schema)
            w.write_batch(J.batch_from_json(schema, [{"a": 1}]))
            w.close()
    before = path.read_bytes()
    r = gen(arrow_gen, path, spec_for(schema, [([{"a": 2}], None)]),
            append=True)
    assert r.rc == 1 and r.stderr.strip(), r.describe()
    assert path.read_bytes() == before, "file changed by a failed append"


def _dict_file(arrow_gen, path):
    """A file with dictionary-encoded column d (id 0: "a", "b")."""
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string())),
                        ("n", pa.int64())])
    spec = J.make_spec(J.schema_to_json(schema),
                       [([{"d": 1, "n": 1}, {"d": None, "n": 2},
                          {"d": 0, "n": 3}], {"run": "1"})],
                       [{"id": 0, "values": ["a", "b"]}])
    gen_ok(arrow_gen, path, spec)
    return schema, [([{"d": "b", "n": 1}, {"d": None, "n": 2},
                      {"d": "a", "n": 3}], {"run": "1"})]


def test_append_dictionary_delta(arrow_gen, workdir):
    """Append with a delta dictionary batch ("delta": true): new indices
    reach the added values, old batches decode as before."""
    path = workdir / "dict.arrow"
    schema, old = _dict_file(arrow_gen, path)
    before = path.read_bytes()
    spec = J.make_spec(J.schema_to_json(schema),
                       [([{"d": 3, "n": 4}, {"d": 0, "n": 5},
                          {"d": 2, "n": 6}], None)],
                       [{"id": 0, "values": ["c", "日本"], "delta": True}])
    gen_ok(arrow_gen, path, spec, append=True)
    after = path.read_bytes()
    _assert_prefix_kept(before, after)
    assert len(L.read_footer(after)["dictionaries"]) == 2
    assert_file_is(path, schema, old + [([{"d": "日本", "n": 4},
                                          {"d": "a", "n": 5},
                                          {"d": "c", "n": 6}], None)])


def test_append_dictionary_replacement_refused(arrow_gen, workdir):
    """A non-delta dictionary for an id the file already has would be a
    replacement, which the file format does not allow: exit 1, file
    unchanged."""
    path = workdir / "dict.arrow"
    schema, _ = _dict_file(arrow_gen, path)
    before = path.read_bytes()
    spec = J.make_spec(J.schema_to_json(schema), [([{"d": 0, "n": 4}],
                                                   None)],
                       [{"id": 0, "values": ["x"]}])
    r = gen(arrow_gen, path, spec, append=True)
    assert r.rc == 1 and r.stderr.strip(), r.describe()
    assert path.read_bytes() == before, "file changed by a failed append"


def test_append_index_past_dictionary_refused(arrow_gen, workdir):
    """An index beyond the file's dictionary: exit 1, file unchanged."""
    path = workdir / "dict.arrow"
    schema, _ = _dict_file(arrow_gen, path)
    before = path.read_bytes()
    spec = J.make_spec(J.schema_to_json(schema), [([{"d": 2, "n": 4}],
                                                   None)])
    r = gen(arrow_gen, path, spec, append=True)
    assert r.rc == 1 and r.stderr.strip(), r.describe()
    assert path.read_bytes() == before, "file changed by a failed append"


def test_append_without_schema(arrow_gen, workdir):
    """With --append the spec may leave out "schema" (doc/arrow-json.md)."""
    schema = _append_schema()
    rng = C.rng_for("append-noschema")
    first = [(C.random_rows(schema, 4, rng), None)]
    second = [(C.random_rows(schema, 6, rng), {"x": "y"})]
    path = workdir / "app.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, first))
    before = path.read_bytes()
    spec = spec_for(schema, second)
    del spec["schema"]
    gen_ok(arrow_gen, path, spec, append=True)
    _assert_prefix_kept(before, path.read_bytes())
    assert_file_is(path, schema, first + second)


def test_dictionary_spec_delta(arrow_gen, workdir):
    """A new file whose spec has a dictionary and then a delta for it."""
    schema = pa.schema([("d", pa.dictionary(pa.int16(), pa.large_string()))])
    spec = J.make_spec(J.schema_to_json(schema),
                       [([{"d": 0}, {"d": 2}, {"d": None}], None)],
                       [{"id": 0, "values": ["p"]},
                        {"id": 0, "values": ["q", "r"], "delta": True}])
    path = workdir / "delta.arrow"
    gen_ok(arrow_gen, path, spec)
    assert_file_is(path, schema, [([{"d": "p"}, {"d": "r"}, {"d": None}],
                                   None)])


@pytest.mark.parametrize("index", [2, -1, 1 << 31],
                         ids=["past_end", "negative", "beyond_int32"])
def test_dictionary_index_out_of_range(arrow_gen, workdir, index):
    """A row index outside its dictionary (2 values): exit 1 with a
    message, not a file that readers must reject."""
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    spec = J.make_spec(J.schema_to_json(schema),
                       [([{"d": 0}, {"d": index}], None)],
                       [{"id": 0, "values": ["a", "b"]}])
    r = gen(arrow_gen, workdir / "d.arrow", spec)
    assert r.rc == 1 and r.stderr.strip(), r.describe()


def test_roundtrip_our_tools(arrow_gen, arrow_inspect, workdir):
    """Our writer's file read by our reader prints exactly the spec's
    schema (in the exact form), metadata and values."""
    schema = C.wide_schema(metadata={"round": "trip"})
    row_sets = _wide_row_sets("roundtrip")
    path = workdir / "rt.arrow"
    gen_ok(arrow_gen, path, spec_for(schema, row_sets))
    r = arrow_inspect("--json", path)
    assert r.rc == 0, r.describe()
    got = J.parse_inspect(r.text)
    problems = J.check_inspect(J.expected_form(
        schema, [(rows, md or {}) for rows, md in row_sets]), got)
    problems += J.check_exact_text(r.text)
    assert not problems, "\n".join(problems)
