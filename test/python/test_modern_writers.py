"""arrow_fdw on files from today's writers (issue 9, item 10).

Polars writes string and binary views by default; pyarrow and DuckDB also
produce Decimal256, run-end encoded arrays, maps and list views.  Each file
is imported with IMPORT FOREIGN SCHEMA and every value is compared with what
pyarrow reads from the same file, through the documented mapping: views as
text/bytea, list views as arrays, run-end encoded as its values, Decimal256
as numeric, Map as a jsonb object (keys as text).

Runs against the cluster of scripts/test.sh (PGHOST, PGPORT, PGUSER in the
environment); files go to a world-readable temporary directory because the
server runs as another OS user.
"""
import decimal
import json
import os

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from pg_sql import psql

ODD = ["", "a", "exactly12byt", "thirteen byte", "a string well over twelve bytes",
       "日本語の文字列です", "x" * 300]


@pytest.fixture(scope="module", autouse=True)
def setup():
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS modern CASCADE; CREATE SCHEMA modern")
    yield
    psql("DROP SCHEMA IF EXISTS modern CASCADE")


def write_pyarrow(path, batches, schema, compression=None):
    opts = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_file(path, schema, options=opts) as w:
        for b in batches:
            w.write_batch(b)
    os.chmod(path, 0o644)


def expected(value, t):
    """A value pyarrow read, in the form row_to_json gives the column."""
    if value is None:
        return None
    if pa.types.is_run_end_encoded(t):
        return expected(value, t.value_type)
    if pa.types.is_map(t):
        return {str(k): expected(v, t.item_type) for k, v in value}
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t)
            or pa.types.is_large_list_view(t)):
        return [expected(v, t.value_type) for v in value]
    if pa.types.is_binary_view(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "\\x" + value.hex()
    if pa.types.is_decimal(t):
        return decimal.Decimal(value)
    return value


def read_back(table):
    """Every row of the foreign table, in file order, as row_to_json gives them."""
    _, out, _ = psql("SET max_parallel_workers_per_gather = 0; "
                     "SELECT row_to_json(t) FROM modern.%s t" % table)
    return [json.loads(line, parse_float=decimal.Decimal) for line in out.splitlines()]


def check_file(path, name):
    """IMPORT the file as modern.<name>; compare every value with pyarrow's."""
    psql("DROP FOREIGN TABLE IF EXISTS modern.%s; IMPORT FOREIGN SCHEMA %s FROM SERVER "
         "arrow_fdw INTO modern OPTIONS (file '%s')" % (name, name, path))
    with pa.ipc.open_file(path) as r:
        t = r.read_all()
    want = [{f.name: expected(row[f.name], f.type) for f in t.schema}
            for row in t.to_pylist()]
    got = read_back(name)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, (name, i, g, w)
    return t


def null_at_odd(values):
    return [None if i % 2 else v for i, v in enumerate(values)]


@pytest.mark.parametrize("compression", ["uncompressed", "lz4", "zstd"])
def test_polars_default_views(tmpdir_world, compression):
    strings = ODD * 3
    n = len(strings)
    part = pl.DataFrame({
        "rid": list(range(n)),
        "s": null_at_odd(strings),
        "b": [None if i % 3 == 0 else s.encode() for i, s in enumerate(strings)],
        "l": [None if i % 4 == 1 else [s, None, s[:13]] for i, s in enumerate(strings)],
        "i": null_at_odd(list(range(n))),
    })
    df = pl.concat([part, part.with_columns(pl.col("rid") + n), part.head(0)], rechunk=False)
    path = os.path.join(tmpdir_world, "polars.arrow")
    df.write_ipc(path, compression=compression)
    os.chmod(path, 0o644)
    t = check_file(path, "pol_" + compression)
    assert pa.types.is_string_view(t.schema.field("s").type)
    assert pa.types.is_binary_view(t.schema.field("b").type)
    cols = psql("SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) "
                "FROM pg_attribute WHERE attrelid = 'modern.pol_%s'::regclass AND attnum > 0"
                % compression)[1]
    assert cols == "bigint,text,bytea,text[],bigint", cols


def test_pyarrow_views_variadic_sliced_empty(tmpdir_world):
    a1 = pa.array(["x" * 20, None, "exactly12byt"], pa.string_view())
    a2 = pa.array(["z" * 25, "", None, "thirteen byte"], pa.string_view())
    s = pa.concat_arrays([a1, a2])              # two data buffers
    assert len(s.buffers()) >= 4
    b = pa.array([None if v is None else v.encode() for v in s.to_pylist()], pa.binary_view())
    b = pa.concat_arrays([b.slice(0, 3), b.slice(3)])
    schema = pa.schema([("rid", pa.int32()), ("s", pa.string_view()), ("b", pa.binary_view()),
                        ("ls", pa.list_(pa.string_view()))])
    ls = pa.array([[v, None] for v in s.to_pylist()], pa.list_(pa.string_view()))

    def batch(lo, hi):
        return pa.record_batch([pa.array(range(lo, hi), pa.int32()), s.slice(lo, hi - lo),
                                b.slice(lo, hi - lo), ls.slice(lo, hi - lo)], schema=schema)
    batches = [batch(0, 0), batch(0, 3), batch(3, 3), batch(1, 7)]    # sliced, empty
    for comp in (None, "zstd"):
        path = os.path.join(tmpdir_world, "views_%s.arrow" % comp)
        write_pyarrow(path, batches, schema, compression=comp)
        check_file(path, "pa_views_%s" % (comp or "plain"))


def test_pyarrow_decimal256_ree_map_list_views(tmpdir_world):
    n = 2000
    big = decimal.Decimal("-" + "9" * 66 + "." + "1234567890")
    d256 = pa.array([None if i % 7 == 3 else (big if i % 2 else decimal.Decimal(i) / 8)
                     for i in range(n)], pa.decimal256(76, 10))
    dneg = pa.array([decimal.Decimal(i * 100) if i % 5 else None for i in range(n)],
                    pa.decimal256(40, -2))
    ends = pa.array(list(range(3, n + 1, 3)) + ([n] if n % 3 else []), pa.int32())
    ree = pa.RunEndEncodedArray.from_arrays(
        ends, pa.array([None if k % 4 == 1 else k for k in range(len(ends))], pa.int64()))
    m = pa.array([None if i % 11 == 5 else
                  [("k%d" % i, None if i % 2 else i), ("z", i * 2)] if i % 3 else []
                  for i in range(n)], pa.map_(pa.string(), pa.int64()))
    child = pa.array(range(50), pa.int32())
    offs = pa.array([(i * 7) % 40 for i in range(n)], pa.int32())        # overlapping,
    sizes = pa.array([i % 10 for i in range(n)], pa.int32())              # out of order
    lv = pa.ListViewArray.from_arrays(offs, sizes, child)
    llv = pa.LargeListViewArray.from_arrays(pa.array(offs.to_pylist(), pa.int64()),
                                            pa.array(sizes.to_pylist(), pa.int64()), child)
    sree = pa.RunEndEncodedArray.from_arrays(pa.array([n // 2, n], pa.int16()),
                                             pa.array(["first half", None]))
    t = pa.table({"rid": pa.array(range(n), pa.int32()), "d256": d256, "dneg": dneg,
                  "ree": ree, "sree": sree, "m": m, "lv": lv, "llv": llv})
    for comp in (None, "lz4"):
        path = os.path.join(tmpdir_world, "newer_%s.arrow" % comp)
        write_pyarrow(path, t.to_batches(max_chunksize=700), t.schema, compression=comp)
        check_file(path, "pa_newer_%s" % (comp or "plain"))
    cols = psql("SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) "
                "FROM pg_attribute WHERE attrelid = 'modern.pa_newer_plain'::regclass AND attnum > 0")[1]
    # a negative scale keeps its typmod, as for Decimal128
    assert cols == "integer,numeric(76,10),numeric(40,-2),bigint,text,jsonb,integer[],integer[]", cols
    # the values compare as numbers too, not only as text
    assert psql("SELECT count(*) FROM modern.pa_newer_plain WHERE d256 = %s" % big)[1] == str(
        sum(1 for i in range(n) if i % 7 != 3 and i % 2))
    assert psql("SELECT sum(ree) FROM modern.pa_newer_plain")[1] == str(
        sum(v for v in ree.to_pylist() if v is not None))


def test_duckdb_views_list_views_maps(tmpdir_world):
    con = duckdb.connect()
    # views need Arrow format 1.4 in DuckDB's export; list views their own switch
    con.execute("SET arrow_output_version = '1.4'; SET produce_arrow_string_view = true;"
                " SET arrow_output_list_view = true")
    t = con.sql("""
        SELECT i::INTEGER AS rid,
               CASE WHEN i % 2 = 1 THEN NULL ELSE repeat('ab', i % 9) END AS s,
               CASE WHEN i % 5 = 2 THEN NULL ELSE [i, NULL, i * 2] END AS l,
               CASE WHEN i % 4 = 3 THEN NULL
                    ELSE MAP {'k' || i: i, 'n': NULL::INTEGER} END AS m,
               (i * 1.25)::DECIMAL(20, 2) AS d
        FROM range(300) r(i)""").to_arrow_table()
    assert pa.types.is_string_view(t.schema.field("s").type)
    assert pa.types.is_list_view(t.schema.field("l").type)
    assert pa.types.is_map(t.schema.field("m").type)
    path = os.path.join(tmpdir_world, "duck.arrow")
    write_pyarrow(path, t.to_batches(max_chunksize=128), t.schema)
    check_file(path, "duck")


def test_map_into_json_and_text_column(tmpdir_world):
    m = pa.array([[("a", 1), ("a", 2)], None, []], pa.map_(pa.string(), pa.int32()))
    path = os.path.join(tmpdir_world, "m.arrow")
    write_pyarrow(path, [pa.record_batch([m], names=["m"])], pa.schema([("m", m.type)]))
    psql("CREATE FOREIGN TABLE modern.mj (m json) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    # json keeps both equal keys, as the file has them; jsonb keeps the last
    assert psql("SELECT m::text FROM modern.mj")[1].splitlines() == ['{"a": 1, "a": 2}', "", "{}"]
    psql("CREATE FOREIGN TABLE modern.mb (m jsonb) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    assert psql("SELECT m::text FROM modern.mb")[1].splitlines() == ['{"a": 2}', "", "{}"]
    rc, _, err = psql("CREATE FOREIGN TABLE modern.mt (m text) SERVER arrow_fdw"
                      " OPTIONS (file '%s')" % path, check=False)
    assert rc != 0 and "HV004" in err and "json or jsonb" in err, err


def test_map_values_convert_through_their_default_types(tmpdir_world):
    """Values that are lists, timestamps or maps become JSON through to_jsonb
    of their default type; a map of structs (no default type) is refused at
    IMPORT, not at the first SELECT."""
    t = pa.table({
        "ml": pa.array([[(1, [1, 2]), (2, None)]], pa.map_(pa.int32(), pa.list_(pa.int64()))),
        "mm": pa.array([[("o", [("i", 1.5)])]], pa.map_(pa.string(), pa.map_(pa.string(), pa.float64()))),
    })
    path = os.path.join(tmpdir_world, "mx.arrow")
    write_pyarrow(path, t.to_batches(), t.schema)
    psql("IMPORT FOREIGN SCHEMA mx FROM SERVER arrow_fdw INTO modern OPTIONS (file '%s')" % path)
    assert psql("SELECT ml::text, mm::text FROM modern.mx")[1] == \
        '{"1": [1, 2], "2": null}|{"o": {"i": 1.5}}'
    s = pa.array([[("a", {"x": 1})]], pa.map_(pa.string(), pa.struct([("x", pa.int32())])))
    path = os.path.join(tmpdir_world, "ms.arrow")
    write_pyarrow(path, [pa.record_batch([s], names=["ms"])], pa.schema([("ms", s.type)]))
    rc, _, err = psql("IMPORT FOREIGN SCHEMA ms FROM SERVER arrow_fdw INTO modern"
                      " OPTIONS (file '%s')" % path, check=False)
    assert rc != 0 and "HV004" in err and '"value" is a struct' in err, err


def sliced_table(n):
    """Columns of every buffer shape a slice can leave oversized: validity and
    boolean bitmaps, offsets of strings and lists (32 and 64 bit), list
    children, struct children, dictionary indices, fixed-size lists."""
    rows = range(n)
    return pa.table({
        "rid": pa.array(rows, pa.int32()),
        "i": pa.array([None if r % 7 == 3 else r * 3 for r in rows], pa.int64()),
        "b": pa.array([None if r % 5 == 1 else r % 3 == 0 for r in rows], pa.bool_()),
        "s": pa.array([None if r % 4 == 2 else ODD[r % len(ODD)] for r in rows]),
        "e": pa.array([""] * n),                        # offsets all 0: compress best
        "ls": pa.array([ODD[r % len(ODD)] * 2 for r in rows], pa.large_string()),
        "bin": pa.array([None if r % 6 == 0 else b"\x00" * (r % 5) for r in rows]),
        "l": pa.array([None if r % 3 == 1 else [r, None, r + 1][:r % 4] for r in rows],
                      pa.list_(pa.int32())),
        "ll": pa.array([[ODD[r % len(ODD)]] for r in rows], pa.large_list(pa.string())),
        "m": pa.array([None if r % 9 == 4 else [("k%d" % r, r)][:r % 2] for r in rows],
                      pa.map_(pa.string(), pa.int32())),
        "d": pa.array([ODD[r % 3] for r in rows]).dictionary_encode(),
        "fl": pa.array([[r, r + 1] for r in rows], pa.list_(pa.int16(), 2)),
    }).combine_chunks()


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_pyarrow_compressed_slices(tmpdir_world, compression):
    """
    Issue 27, item 3: record batches that are slices of a larger one, written
    with compression, read back as pyarrow reads them.  pyarrow keeps the
    parent's whole offsets buffer for an empty slice (it once failed with
    'compressed buffer declares 12004 bytes, 0 values need at most 4'); non-empty
    slices keep bitmaps up to their 64-byte padding.
    """
    n = 3000
    whole = sliced_table(n).to_batches()[0]
    shapes = [(0, 0), (1234, 0), (n, 0), (0, 10), (8, 10), (5, 10), (2990, 10),
              (0, 64), (3, 700), (0, n), (1500, 1500)]
    batches = [whole.slice(k, m) for k, m in shapes]
    path = os.path.join(tmpdir_world, "slices_%s.arrow" % compression)
    write_pyarrow(path, batches, whole.schema, compression=compression)
    with pa.ipc.open_file(path) as r:
        r.read_all().validate(full=True)
    check_file(path, "pa_slices_%s" % compression)
