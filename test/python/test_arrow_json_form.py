"""
Self-tests of the suite's converters and comparisons (no C tools needed).

The interop tests are only as good as arrow_json_form: these tests pin its
conversions to hand-written JSON forms and to pyarrow's own Python
conversions, and prove that its comparisons reject every near miss (a test
that cannot fail is a defect).
"""

import datetime
import decimal
import math
import struct

import pyarrow as pa
import pytest

import arrow_json_form as J
import interop_cases as C


# ---------------------------------------------------------------------------
# scalar forms
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("unscaled,scale,text", [
    (0, 0, "0"), (-5, 2, "-0.05"), (12345, 2, "123.45"), (0, 3, "0.000"),
    (-12345, 0, "-12345"), (1, 38, "0." + "0" * 37 + "1"),
    (10 ** 38 - 1, 0, "9" * 38), (-(10 ** 38 - 1), 10, "-" + "9" * 28 + "." +
                                  "9" * 10),
])
def test_decimal_form(unscaled, scale, text):
    assert J.decimal_to_json(unscaled, scale) == text
    assert J.decimal_from_json(text, scale) == unscaled


@pytest.mark.parametrize("x,text", [
    (-0.0, "-0.0"), (0.0, "0"), (1.0, "1"), (0.1, "0.10000000000000001"),
    (struct.unpack("<f", struct.pack("<f", 0.1))[0], "0.10000000149011612"),
    (5e-324, "4.9406564584124654e-324"), (1e300, "1.0000000000000001e+300"),
    (65504.0, "65504"),
])
def test_float_text(x, text):
    assert J.format_float(x) == text
    assert struct.pack("<d", float(J.loads(text))) == struct.pack("<d", x)


def test_type_strings_round_trip():
    for c in C.CASES:
        s = J.type_to_json(c.type)
        kids = [pa.field(f.name, f.type, f.nullable)
                for f in J._type_children(c.type)]
        assert J.type_from_json(s, kids).equals(c.type), s
    assert J.type_to_json(pa.timestamp("us", tz="UTC")) == \
        "timestamp[us, tz=UTC]"
    assert J.type_to_json(pa.decimal128(10, 2)) == "decimal128(10, 2)"
    assert J.type_to_json(pa.time32("ms")) == "time32[ms]"
    assert J.type_to_json(pa.binary(4)) == "fixed_size_binary(4)"
    assert J.type_to_json(pa.list_(pa.int8(), 3)) == "fixed_size_list(3)"
    assert J.type_to_json(J.interval_dt()) == "interval[dt]"
    assert J.type_to_json(pa.float16()) == "float16"


def test_schema_form():
    schema = pa.schema([
        pa.field("a", pa.int32(), nullable=False, metadata={"k": "v"}),
        pa.field("l", pa.list_(pa.field("e", pa.dictionary(pa.int8(),
                                                           pa.string())))),
        pa.field("d", pa.dictionary(pa.int32(), pa.large_string(),
                                    ordered=True)),
    ], metadata={"s": "m"})
    assert J.schema_to_json(schema) == {
        "fields": [
            {"name": "a", "type": "int32", "nullable": False,
             "metadata": {"k": "v"}},
            {"name": "l", "type": "list", "nullable": True, "metadata": {},
             "children": [{"name": "e", "type": "utf8", "nullable": True,
                           "metadata": {},
                           "dictionary": {"id": 0, "index_type": "int8",
                                          "ordered": False}}]},
            {"name": "d", "type": "large_utf8", "nullable": True,
             "metadata": {},
             "dictionary": {"id": 1, "index_type": "int32",
                            "ordered": True}},
        ],
        "metadata": {"s": "m"}}
    assert J.schema_from_json(J.schema_to_json(schema)).equals(
        schema, check_metadata=True)


# ---------------------------------------------------------------------------
# array conversions against hand-written forms and pyarrow's own
# ---------------------------------------------------------------------------

def test_values_by_hand():
    u = datetime.timezone.utc
    cols = [
        (pa.array([1, None, -2 ** 63], pa.int64()), [1, None, -2 ** 63]),
        (pa.array([2 ** 64 - 1], pa.uint64()), [2 ** 64 - 1]),
        (pa.array([True, None, False]), [True, None, False]),
        (pa.array([decimal.Decimal("-1.50"), None], pa.decimal128(5, 2)),
         ["-1.50", None]),
        (pa.array([datetime.date(1970, 1, 2), datetime.date(1969, 12, 31)],
                  pa.date32()), [1, -1]),
        (pa.array([datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=u)],
                  pa.timestamp("us", tz="UTC")), [1000000]),
        (pa.array([datetime.time(0, 0, 1)], pa.time64("ns")),
         [1000000000]),
        (pa.array([datetime.timedelta(milliseconds=-3)], pa.duration("ms")),
         [-3]),
        (pa.array([pa.MonthDayNano([1, -2, 3])],
                  pa.month_day_nano_interval()), [[1, -2, 3]]),
        (pa.array(["a\x00b", "日本", None]), ["a\x00b", "日本", None]),
        (pa.array([b"\x00\xff", b""], pa.large_binary()), ["00ff", ""]),
        (pa.array([b"\x01\x02"], pa.binary(2)), ["0102"]),
        (pa.array([[1, None], None, []], pa.list_(pa.int8())),
         [[1, None], None, []]),
        (pa.array([[1, 2], None], pa.list_(pa.int8(), 2)), [[1, 2], None]),
        (pa.array([{"x": 1, "y": None}, None],
                  pa.struct([("x", pa.int8()), ("y", pa.string())])),
         [{"x": 1, "y": None}, None]),
        (pa.array(["b", "a", None, "b"]).dictionary_encode(),
         ["b", "a", None, "b"]),
        (pa.array([1.5, -0.0, math.nan, math.inf], pa.float64()),
         [1.5, -0.0, "NaN", "Infinity"]),
        (pa.nulls(2), [None, None]),
    ]
    for arr, want in cols:
        got = J.array_to_json(arr)
        assert J.dumps(got) == J.dumps(want), arr.type


def _from_pylist(t, v):
    """JSON form from pyarrow's own to_pylist() value, for the types where
    that conversion is exact."""
    if v is None:
        return None
    if pa.types.is_decimal(t):
        return J.decimal_to_json(int(v.scaleb(
            t.scale, context=decimal.Context(prec=100))), t.scale)
    if pa.types.is_floating(t):
        return J.float_to_json(float(v))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or \
            pa.types.is_fixed_size_binary(t):
        return v.hex()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or \
            pa.types.is_fixed_size_list(t):
        return [_from_pylist(t.value_type, x) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: _from_pylist(t.field(i).type,
                                              v[t.field(i).name])
                for i in range(t.num_fields)}
    if t.equals(pa.month_day_nano_interval()):
        return [v.months, v.days, v.nanoseconds]
    return v


def _pylist_exact(t):
    if pa.types.is_temporal(t) or pa.types.is_null(t) or \
            pa.types.is_interval(t) or J.arrow_cdata.is_unwrappable(t):
        return False
    if pa.types.is_struct(t) or pa.types.is_list(t) or \
            pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return all(_pylist_exact(f.type) for f in J._type_children(t))
    return True


PYLIST_CASES = [c.id for c in C.CASES if _pylist_exact(c.type)]


@pytest.mark.parametrize("case_id", PYLIST_CASES)
def test_values_match_pyarrow_pylist(case_id):
    """Our buffer-level conversion equals pyarrow's to_pylist(), also for
    sliced arrays (non-zero offsets)."""
    case = C.CASE_BY_ID[case_id]
    schema, rows = C.variant_data(case, "values")
    arr = J.batch_from_json(schema, rows).column(0)
    arr.validate(full=True)
    for sub in (arr, arr.slice(3), arr.slice(5, 9), arr.slice(len(arr))):
        mine = J.array_to_json(sub)
        theirs = [_from_pylist(sub.type, v) for v in sub.to_pylist()]
        assert not J.check_rows(J.schema_to_json(schema),
                                [{"c": v} for v in theirs],
                                [{"c": v} for v in mine])


@pytest.mark.parametrize("case_id,variant", C.variant_params(),
                         ids=["%s-%s" % p for p in C.variant_params()])
def test_build_and_convert_back(case_id, variant):
    """JSON form -> pyarrow -> JSON form is the identity, and pyarrow's
    full validation accepts what we build."""
    schema, rows = C.variant_data(C.CASE_BY_ID[case_id], variant)
    b = J.batch_from_json(schema, rows)
    b.validate(full=True)
    assert b.schema.equals(schema, check_metadata=True)
    assert not J.check_rows(J.schema_to_json(schema), rows,
                            J.batch_to_json(b))


def test_sliced_conversion_of_every_type():
    schema = C.wide_schema()
    rows = C.wide_rows(100, C.rng_for("slices"))
    b = J.batch_from_json(schema, rows)
    sj = J.schema_to_json(schema)
    for off, n in [(1, 10), (7, 50), (63, 37), (99, 1)]:
        assert not J.check_rows(sj, rows[off:off + n],
                                J.batch_to_json(b.slice(off, n)))


# ---------------------------------------------------------------------------
# the comparison rejects near misses
# ---------------------------------------------------------------------------

def _schema(ts, children=None):
    f = {"name": "c", "type": ts, "nullable": True}
    if children:
        f["children"] = children
    return {"fields": [f], "metadata": {}}


_child = [{"name": "item", "type": "int32", "nullable": True}]
_kids = [{"name": "a", "type": "int32", "nullable": True},
         {"name": "b", "type": "utf8", "nullable": True}]

NEAR_MISSES = [
    # (type, children, expected value, wrong value)
    ("int32", None, 1, True),
    ("int32", None, 1, 1.0),
    ("int32", None, 1, "1"),
    ("int64", None, 2 ** 53 + 1, 2 ** 53),
    ("int64", None, 2 ** 53 + 1, float(2 ** 53 + 1)),
    ("uint64", None, 2 ** 64 - 1, 2 ** 64 - 2),
    ("int8", None, 1, 1000),
    ("bool", None, True, 1),
    ("bool", None, False, None),
    ("float64", None, -0.0, 0.0),
    ("float64", None, -0.0, 0),
    ("float64", None, 0.1, 0.1000000000000001),
    ("float64", None, "NaN", None),
    ("float64", None, "Infinity", 1.7976931348623157e308),
    ("float64", None, "NaN", "nan"),
    ("float32", None, 0.10000000149011612, 0.1),
    ("float16", None, 65504.0, 65505.0),
    ("decimal128(5, 2)", None, "1.50", "1.5"),
    ("decimal128(5, 2)", None, "-0.05", "-.05"),
    ("decimal128(5, 2)", None, "0.00", "-0.00"),
    ("decimal128(5, 2)", None, "1.00", 1.0),
    ("decimal128(5, 0)", None, "12", "12."),
    ("decimal128(5, 0)", None, "12", "012"),
    ("binary", None, "00ff", "00FF"),
    ("binary", None, "00ff", "0ff"),
    ("fixed_size_binary(2)", None, "00ff", "00ff00"),
    ("utf8", None, "e\u0301", "\u00e9"),
    ("utf8", None, "a\x00b", "ab"),
    ("utf8", None, "", None),
    ("interval[dt]", None, [1, 2], [2, 1]),
    ("interval[dt]", None, [1, 2], [1, 2, 0]),
    ("interval[mdn]", None, [1, 2, 3], {"months": 1}),
    ("list", _child, [1, None], [1]),
    ("list", _child, [], None),
    ("list", _child, [None], []),
    ("fixed_size_list(2)", _child, [1, 2], [1, 2, 3]),
    ("struct", _kids, {"a": 1, "b": "x"}, {"b": "x", "a": 1}),
    ("struct", _kids, {"a": 1, "b": "x"}, {"a": 1}),
    ("struct", _kids, {"a": None, "b": None}, None),
    ("date32", None, 19000, 19000.0),
    ("timestamp[ns, tz=UTC]", None, -2 ** 63, -2 ** 63 + 1),
]


@pytest.mark.parametrize("ts,children,want,wrong", NEAR_MISSES,
                         ids=["%d-%s" % (i, m[0])
                              for i, m in enumerate(NEAR_MISSES)])
def test_near_misses_are_rejected(ts, children, want, wrong):
    sj = _schema(ts, children)
    assert not J.check_rows(sj, [{"c": want}], [{"c": want}])
    assert J.check_rows(sj, [{"c": want}], [{"c": wrong}])


def test_any_nan_equals_nan_and_number_forms():
    sj = _schema("float64")
    assert not J.check_rows(sj, [{"c": 1.0}], [{"c": 1}])
    assert not J.check_rows(sj, [{"c": "NaN"}], [{"c": "NaN"}])
    assert not J.check_rows(sj, [{"c": 12345678901234567.0}],
                            [{"c": 12345678901234568}])


def test_row_keys_must_match():
    sj = {"fields": [{"name": "a", "type": "int8", "nullable": True},
                     {"name": "b", "type": "int8", "nullable": True}],
          "metadata": {}}
    assert J.check_rows(sj, [{"a": 1, "b": 2}], [{"b": 2, "a": 1}])
    assert J.check_rows(sj, [{"a": 1, "b": 2}], [{"a": 1}])
    assert J.check_rows(sj, [{"a": 1, "b": 2}], [{"a": 1, "b": 2, "c": 3}])
    assert J.check_rows(sj, [{"a": 1, "b": 2}], [])


def test_strict_json_text():
    for bad in ['{"a": NaN}', '{"a": Infinity}', '{"a": 1, "a": 2}',
                '{"a": -Infinity}']:
        with pytest.raises((J.FormError, ValueError)):
            J.loads(bad)
    assert J.loads('{"a": 18446744073709551615}')["a"] == 2 ** 64 - 1


def _inspect_text(lines):
    return "".join(J.dumps(x) + "\n" for x in lines)


def test_parse_inspect_structure():
    schema = {"fields": [{"name": "x", "type": "int8", "nullable": True}],
              "metadata": {}}
    good = [{"schema": schema}, {"batch": 0, "rows": 1, "metadata": {}},
            {"row": {"x": 1}}, {"batch": 1, "rows": 0, "metadata": {}}]
    got = J.parse_inspect(_inspect_text(good))
    assert [b["rows"] for b in got["batches"]] == [1, 0]
    bad_variants = [
        good[:2],                                   # row missing
        good[:3] + [{"row": {"x": 2}}] + good[3:],  # row extra
        [good[0], {"batch": 1, "rows": 1, "metadata": {}}, good[2]],
        good[1:],                                   # no schema line
        [good[0], {"batch": 0, "rows": 1}, good[2]],   # no metadata
        [good[0], {"batch": 0, "rows": 1, "metadata": {}, "x": 1}, good[2]],
        [{"schema": dict(schema, extra=1)}],
        [{"schema": {"fields": [{"name": "x", "type": "int8"}]}}],
    ]
    for v in bad_variants:
        with pytest.raises(J.FormError):
            J.parse_inspect(_inspect_text(v))
    with pytest.raises(J.FormError):
        J.parse_inspect(_inspect_text(good)[:-1])   # no final newline
    with pytest.raises(J.FormError):
        J.parse_inspect("")


def test_check_inspect_finds_differences():
    schema = pa.schema([("x", pa.int8())], metadata={"k": "v"})
    exp = J.expected_form(schema, [([{"x": 1}], {"m": "1"})])
    assert not J.check_inspect(exp, exp)
    import copy
    for mutate in [
        lambda g: g["schema"]["metadata"].update(k="w"),
        lambda g: g["schema"]["fields"][0].update(nullable=False),
        lambda g: g["schema"]["fields"][0].update(type="int16"),
        lambda g: g["schema"]["fields"][0]["metadata"].update(a="b"),
        lambda g: g["batches"][0]["metadata"].clear(),
        lambda g: g["batches"][0]["values"][0].update(x=2),
        lambda g: g["batches"].append(copy.deepcopy(g["batches"][0])),
    ]:
        got = copy.deepcopy(exp)
        mutate(got)
        assert J.check_inspect(exp, got)
