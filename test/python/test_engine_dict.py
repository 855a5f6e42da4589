"""Dictionary-encoded text in the CPU engine (src/xpu/xpu_dict.h: a row's
text is its dictionary's value at its index; src/xpu/xpu_agg_index.h: GROUP
BY on the indices) against PostgreSQL as the oracle (pg_warp off, arrow_fdw's
own reader): quals, GROUP BY keys and aggregate arguments over columns that
pyarrow wrote dictionary-encoded, and the engine ran (EXPLAIN ANALYZE).

The table has record batches of 4096 rows and dictionary columns of several
index types (int8, int16, int32, uint8), with NULL indices, a NULL value
inside the dictionary, '' and multibyte values, texts longer than 16 bytes,
a one-value dictionary and one of more than 65,536 values; a second file
has a dictionary that grows by delta dictionary batches (its values added
batch after batch); a third has an index outside its dictionary (an error
with the engine on and off, never a read outside the dictionary).

Runs against the cluster that scripts/test.sh starts (pg_warp preloaded, so
the service runs; without a GPU it runs the CPU engine).
"""
import os
import random
import shutil
import tempfile

import pyarrow as pa
import pytest

from pg_sql import DB, FILTER, ON
from pg_sql import psql as pg_psql

N = 30000
BATCH = 4096
NODE = "GpuPreAgg"

FEW = ["AIR", "MAIL", "", None, "RAIL", "é日本", "sixteen-bytes-16",
       "a text longer than sixteen bytes"]
BIG = 70000                     # values of the large dictionary (> 65,536)


def dict_column(rnd, n, values, itype, null_frac, pick=None):
    """n rows indexing values (a NULL inside values is a NULL value), NULL
    indices at null_frac, as a dictionary array of index type itype"""
    dictionary = pa.array(values, pa.string())
    idx = [None if rnd.random() < null_frac else
           (pick(rnd) if pick else rnd.randrange(len(values))) for _ in range(n)]
    return pa.DictionaryArray.from_arrays(pa.array(idx, itype), dictionary)


def main_table(n, seed):
    rnd = random.Random(seed)
    big = ["v%05d" % i for i in range(BIG)]
    return pa.table({
        "d8": dict_column(rnd, n, FEW, pa.int8(), 0.05),
        "d16": dict_column(rnd, n, ["only"], pa.int16(), 0.1),
        "d32": dict_column(rnd, n, big, pa.int32(), 0.01,
                           pick=lambda r: r.randrange(BIG) if r.random() < 0.3 else
                           r.randrange(40)),
        "du8": dict_column(rnd, n, ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"],
                           pa.uint8(), 0.0),
        "p": pa.array([rnd.choice(["x", "y", None]) for _ in range(n)], pa.string()),
        "k": pa.array([rnd.randrange(7) for _ in range(n)], pa.int32()),
    })


def write_batches(path, schema, batches, deltas=False):
    tmp = path + ".tmp"
    opts = pa.ipc.IpcWriteOptions(emit_dictionary_deltas=deltas)
    with pa.ipc.new_file(tmp, schema, options=opts) as w:
        for b in batches:
            w.write_batch(b)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_table(path, table):
    """one dictionary for every batch (the file format's rule without deltas)"""
    write_batches(path, table.schema, table.combine_chunks().to_batches(max_chunksize=BATCH))


def delta_batches(seed):
    """batches whose dictionary grows: batch i sees values 0 .. 3 + 4 i"""
    rnd = random.Random(seed)
    values = ["w%02d" % i for i in range(40)]
    values[5] = None            # a NULL value, added by a delta
    values[9] = ""
    schema = pa.schema([("dl", pa.dictionary(pa.int16(), pa.string())), ("k", pa.int32())])
    out = []
    for i in range(9):
        nv = 4 + 4 * i
        idx = [None if rnd.random() < 0.03 else rnd.randrange(nv) for _ in range(2000)]
        dl = pa.DictionaryArray.from_arrays(pa.array(idx, pa.int16()),
                                            pa.array(values[:nv], pa.string()))
        k = pa.array([rnd.randrange(5) for _ in range(2000)], pa.int32())
        out.append(pa.record_batch([dl, k], schema=schema))
    return schema, out


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_dict.")
    os.chmod(d, 0o755)
    write_table(os.path.join(d, "t.arrow"), main_table(N, 11))
    schema, batches = delta_batches(12)
    write_batches(os.path.join(d, "delta.arrow"), schema, batches, deltas=True)
    # an index outside its 3-value dictionary in the second batch
    bad_schema = pa.schema([("b", pa.dictionary(pa.int8(), pa.string())), ("k", pa.int32())])
    dic = pa.array(["a", "b", "c"], pa.string())
    good = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None] * 10, pa.int8()), dic)
    bad = pa.DictionaryArray.from_arrays(pa.array([0, 1, 50, 2] * 10, pa.int8()), dic,
                                         safe=False)
    ks = pa.array(list(range(40)), pa.int32())
    write_batches(os.path.join(d, "bad.arrow"), bad_schema,
                  [pa.record_batch([good, ks], schema=bad_schema),
                   pa.record_batch([bad, ks], schema=bad_schema)])
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp; DROP SCHEMA IF EXISTS gdk CASCADE; "
            "CREATE SCHEMA gdk; "
            "CREATE FOREIGN TABLE gdk.t (d8 text, d16 varchar(8), d32 text, du8 text, "
            "p text, k int4) SERVER arrow_fdw OPTIONS (file '%s/t.arrow'); "
            "CREATE FOREIGN TABLE gdk.tv (d8 varchar(5), d16 varchar(4), k int4) "
            "SERVER arrow_fdw OPTIONS (file '%s/t.arrow'); "
            "CREATE FOREIGN TABLE gdk.dl (dl text, k int4) SERVER arrow_fdw "
            "OPTIONS (file '%s/delta.arrow'); "
            "CREATE FOREIGN TABLE gdk.bad (b text, k int4) SERVER arrow_fdw "
            "OPTIONS (file '%s/bad.arrow')" % (d, d, d, d))
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gdk CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def test_files_are_dictionary_encoded(tables):
    """the oracle's files are what the tests mean (pyarrow reads them back)"""
    t = pa.ipc.open_file(os.path.join(tables, "t.arrow")).read_all()
    for name, itype in [("d8", pa.int8()), ("d16", pa.int16()), ("d32", pa.int32()),
                        ("du8", pa.uint8())]:
        assert t.schema.field(name).type == pa.dictionary(itype, pa.string()), name
    r = pa.ipc.open_file(os.path.join(tables, "delta.arrow"))
    assert r.num_record_batches == 9
    assert len(r.get_batch(8).column(0).dictionary) == 36


GROUPINGS = [
    "d8",                 # NULL index, NULL value, '', multibyte, long texts
    "d8, du8",            # two dictionary keys: combined indices
    "du8, d8",
    "d8, d16",            # a one-value dictionary
    "d32",                # more than 65,536 values
    "d32, d8",
    "d8, k",              # a dictionary key beside an integer (hash probe)
    "p, d8",              # beside a plain text
    "d8, du8, d16",       # three keys: the hash probe over the dictionary values
]


@pytest.mark.parametrize("keys", GROUPINGS)
def test_group_by_dictionary(keys):
    ordinals = ", ".join(str(i + 1) for i in range(keys.count(",") + 1))
    rows = DB.same("SELECT %s, count(*), count(d8), sum(k) FROM gdk.t GROUP BY %s"
                   % (keys, ordinals), NODE)
    assert len(rows) > 1


@pytest.mark.parametrize("keys", ["d8", "d8, du8", "d32"])
def test_group_by_dictionary_filtered(keys):
    """rows that do not pass inside a block of the index grouping"""
    DB.same("SELECT %s, count(*), min(k) FROM gdk.t WHERE k %% 3 <> 1 GROUP BY %s"
            % (keys, keys), NODE)


@pytest.mark.parametrize("agg", ["count(d8)", "min(d8)", "max(d32)", "min(du8)",
                                 "max(d16)", "count(*)"])
def test_dictionary_aggregate_argument(agg):
    DB.same("SELECT k, %s FROM gdk.t GROUP BY k" % agg, NODE)


def test_dictionary_key_and_argument():
    """a key that an aggregate also reads is loaded (never left to the indices)"""
    DB.same("SELECT d8, min(d8), max(d8), count(d8) FROM gdk.t GROUP BY d8", NODE)


QUALS = [
    "d8 = 'AIR'",
    "d8 <> ''",
    "d8 = ''",
    "d8 IS NULL",
    "d8 IS NOT NULL",
    "d8 LIKE 'a%'",
    "d8 IN ('AIR', 'MAIL', 'é日本')",
    "length(d8) > 3",
    "d32 > 'v69990'",
    "d16 = 'only'",
    "du8 < '3'",
    "d8 = du8",
]


@pytest.mark.parametrize("qual", QUALS)
def test_dictionary_quals_aggregated(qual):
    DB.same("SELECT count(*), count(d8), min(d32) FROM gdk.t WHERE %s" % qual, NODE)


@pytest.mark.parametrize("qual", ["d8 = 'MAIL'", "d8 IS NULL", "d32 LIKE 'v0000%'",
                                  "du8 >= '4'"])
def test_dictionary_quals_in_scan_filter(qual):
    """arrow_fdw's scan with the engine's filter (the backend binds the column)"""
    DB.same("SELECT k, p FROM gdk.t WHERE %s" % qual, FILTER)


def test_delta_dictionaries():
    rows = DB.same("SELECT dl, count(*), sum(k) FROM gdk.dl GROUP BY dl", NODE)
    assert len(rows) == 36      # 35 texts ('' among them), NULL (value and index)
    DB.same("SELECT k, dl, count(*) FROM gdk.dl GROUP BY k, dl", NODE)
    DB.same("SELECT count(*) FROM gdk.dl WHERE dl > 'w30' OR dl = ''", NODE)


def test_empty_input():
    DB.same("SELECT d8, du8, count(*) FROM gdk.t WHERE k < 0 GROUP BY d8, du8", NODE)
    DB.same("SELECT count(*), min(d8) FROM gdk.t WHERE k < 0", NODE)


def test_index_outside_the_dictionary_is_an_error():
    """both readers refuse the batch (Arrow's loader checks every index);
    the engine never reads outside the dictionary"""
    for settings in (ON, ("SET pg_warp.enabled = off",)):
        got = DB.result("SELECT b, count(*) FROM gdk.bad GROUP BY b", settings)
        assert got[0] == "error", got
        assert "outside the dictionary" in got[1], got
    assert pg_psql("SELECT 1")[1] == "1"


def test_dictionaries_run_on_the_cpu_engine():
    """the GPU kernels read no dictionaries: with pg_warp.engine = auto a
    GpuPreAgg over a dictionary column runs on the CPU engine, also where the
    service has a GPU (the run moves to the CPU engine: service/agg.c,
    dict_to_cpu)"""
    DB.same("SELECT d8, du8, count(*) FROM gdk.t GROUP BY d8, du8", NODE, engine="CPU")
    DB.same("SELECT count(*) FROM gdk.t WHERE d8 = 'MAIL'", NODE, engine="CPU")


def test_gpu_asked_for_dictionaries_is_an_error():
    """pg_warp.engine = gpu over a dictionary column: an error (where the
    service has a GPU, the run says only the CPU engine reads it), never a
    GPU kernel over the indices"""
    gpu = DB.sql("SELECT engine FROM pgwarp.service_status()") == "gpu"
    got = DB.result("SELECT d8, count(*) FROM gdk.t GROUP BY d8",
                    ON + ("SET pg_warp.engine = gpu",))
    if gpu:
        assert got[0] == "error" and "only the CPU engine reads" in got[1], got
    else:
        assert got[0] == "error" or "GPU" not in DB.sql(
            "EXPLAIN (ANALYZE) SELECT d8, count(*) FROM gdk.t GROUP BY d8",
            ON + ("SET pg_warp.engine = gpu",)), got


def test_varchar_limit():
    """varchar(n) over a dictionary: one whose values all fit n (d16,
    'only' in varchar(4)) groups on the indices; one with longer values (d8
    in varchar(5)) is PostgreSQL's answer or error, as without the engine"""
    DB.same("SELECT d16, count(*) FROM gdk.tv GROUP BY d16", NODE)
    DB.same_answer("SELECT d8, count(*) FROM gdk.tv GROUP BY d8", NODE, rechecked=True)
