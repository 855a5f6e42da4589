"""float2 inside GpuPreAgg (src/engine/gpu_preagg.c, the service's AGG_RUN and
HEAP_RUN) against PostgreSQL as the oracle (`SET pg_warp.enabled = off`).

float2 group keys, float2 quals and sum/avg/min/max/stddev/variance of float2
over an Arrow file (Float16 columns written by pyarrow) and over a heap table
with the same rows: the plan must be a GpuPreAgg that the engine ran (no
fallback), and the rows must be PostgreSQL's.  The data has NULLs, NaNs of
several bit patterns, both zeros, both infinities, the largest and the
smallest halves; -0 and +0 are one group and all NaNs one group, as
PostgreSQL groups them.  Finite values are multiples of 1/4 below 2^11 (and
a few exact extremes), so that float4 sums are exact in any order; avg,
stddev and variance are compared within a relative 1e-12 (their float8
rounding depends on the order rows are combined, as between PostgreSQL's own
parallel plans).

Runs in a database of its own on the cluster of the environment.
"""
import os
import random
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import Db
from pg_sql import psql as _psql

DB = "float2_gpa_%d" % os.getpid()
F2 = Db(dict(os.environ, PGDATABASE=DB))     # the suite's own database
N = 5000
BATCH = 700

# halves as bits: zeros, NaNs (quiet, signalling payload, negative), infinities,
# the extremes, subnormals, ordinary multiples of 1/4
KEY_BITS = [0x0000, 0x8000, 0x7e00, 0x7c01, 0xfe00, 0x7c00, 0xfc00, 0x7bff, 0xfbff,
            0x0001, 0x8001, 0x3c00, 0xbc00, 0x3e00, 0x4100, None]
ON = ("SET pg_warp.engine_startup_cost = 0", "SET pg_warp.engine_row_cost = 0",
      "SET max_parallel_workers_per_gather = 0")


def psql(sql, check=True):
    return _psql(sql, check=check, db=DB)


def half_bits(x):
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def half_array(bits):
    valid = [b is not None for b in bits]
    raw = np.array([0 if b is None else b for b in bits], dtype=np.uint16)
    mask = pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.float16(), len(bits), [mask, pa.py_buffer(raw.tobytes())],
                                 null_count=valid.count(False))


def make_rows():
    rnd = random.Random(20261125)
    rows = []
    for i in range(N):
        k = KEY_BITS[i % len(KEY_BITS)]
        # v: finite multiples of 1/4 in [-512, 512), NULLs; w adds NaN and infinities
        v = None if i % 17 == 0 else half_bits(rnd.randrange(-2048, 2048) / 4.0)
        w = [None, 0x7e00, 0x7c00, 0xfc00, 0x8000][i % 5] if i % 97 == 0 else v
        rows.append((i + 1, i % 7, k, v, w))
    return rows



@pytest.fixture(scope="module")
def tables():
    _psql("DROP DATABASE IF EXISTS %s" % DB)
    _psql("CREATE DATABASE %s" % DB)
    psql("CREATE EXTENSION pg_warp; ALTER DATABASE %s SET search_path = public, pgwarp" % DB)
    d = tempfile.mkdtemp(prefix="pg_warp_f2gpa.")
    os.chmod(d, 0o755)
    rows = make_rows()
    path = os.path.join(d, "f2.arrow")
    table = pa.table({
        "id": pa.array([r[0] for r in rows], pa.int32()),
        "g": pa.array([r[1] for r in rows], pa.int32()),
        "k": half_array([r[2] for r in rows]),
        "v": half_array([r[3] for r in rows]),
        "w": half_array([r[4] for r in rows]),
    })
    write(path, table, BATCH)
    psql("CREATE FOREIGN TABLE af (id int4, g int4, k float2, v float2, w float2) "
         "SERVER arrow_fdw OPTIONS (file '%s')" % path)
    # the heap table: the very bits, through float2's binary input
    psql("CREATE TABLE hf (id int4, g int4, k float2, v float2, w float2); "
         "INSERT INTO hf SELECT * FROM af; ANALYZE hf")
    same_bits = psql("SELECT count(*) FROM af JOIN hf USING (id) WHERE "
                     "float2send(af.k) IS NOT DISTINCT FROM float2send(hf.k) AND "
                     "float2send(af.w) IS NOT DISTINCT FROM float2send(hf.w)")[1]
    assert same_bits == str(N)
    yield
    _psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB)
    shutil.rmtree(d, ignore_errors=True)


def same(sql, fuzzy=()):
    """sql over the Arrow table (`{t}` af) and the heap table (hf) gives
    PostgreSQL's rows, in order, with a GpuPreAgg that the engine ran
    (pg_sql.Db.same); columns in fuzzy (0-based) within a relative 1e-12.
    Returns the Arrow table's rows."""
    result = None
    for t in ("af", "hf"):
        rows = F2.same(sql.replace("{t}", t), "GpuPreAgg", on=ON, ordered=True,
                       rel_tol=1e-12 if fuzzy else 0.0, fuzzy=fuzzy)
        result = rows if result is None else result
    return result


# the key as text with -0 shown as 0 (the group's first row decides which zero
# PostgreSQL prints; the engine keeps +0)
KEY = "(k + '0'::float2)::text"


def test_group_by_float2_key(tables):
    rows = same("SELECT %s, count(*), count(v), min(id), max(id) FROM {t} GROUP BY k "
                "ORDER BY 1" % KEY)
    keys = [r.split("|")[0] for r in rows]
    # one group for both zeros, one for every NaN, one for NULL
    assert keys.count("0") == 1 and keys.count("NaN") == 1 and keys.count("") == 1, rows
    assert "Infinity" in keys and "-Infinity" in keys and "65500" in keys, rows  # 65504, in float2's shortest form


def test_float2_aggregates_per_group(tables):
    same("SELECT g, count(v), sum(v), min(v), max(v), sum(w), min(w), max(w) FROM {t} "
         "GROUP BY g ORDER BY g")
    same("SELECT g, avg(v), stddev(v), stddev_samp(v), stddev_pop(v), variance(v), "
         "var_samp(v), var_pop(v) FROM {t} GROUP BY g ORDER BY g", fuzzy=range(1, 8))
    # w has NaN and infinities: avg and the rest are NaN or infinite alike
    same("SELECT g, avg(w), stddev(w), var_pop(w) FROM {t} GROUP BY g ORDER BY g",
         fuzzy=range(1, 4))


def test_float2_key_and_aggregates_together(tables):
    same("SELECT %s, g, count(*), sum(v), min(w), max(w), avg(v) FROM {t} GROUP BY k, g "
         "ORDER BY 1, 2" % KEY, fuzzy=(6,))


def test_result_types_are_postgresqls(tables):
    out = same("SELECT pg_typeof(sum(v))::text, pg_typeof(min(v))::text, "
               "pg_typeof(avg(v))::text, pg_typeof(stddev(v))::text, pg_typeof(k)::text "
               "FROM {t} GROUP BY k ORDER BY 1 LIMIT 1")
    assert out == ["real|float2|double precision|double precision|float2"], out


def test_float2_quals_inside_the_grouping(tables):
    same("SELECT g, count(*), sum(v), max(v) FROM {t} WHERE v > '1.5'::float2 AND k <> 'NaN' "
         "GROUP BY g ORDER BY g")
    same("SELECT %s, count(*) FROM {t} WHERE w = 'NaN' OR w < '-Infinity'::float2 OR k = '-0' "
         "GROUP BY k ORDER BY 1" % KEY)
    same("SELECT count(*), sum(v), min(k), max(k) FROM {t} WHERE v::float4 * 2 > k")


def test_no_group_by(tables):
    same("SELECT count(*), count(k), sum(v), min(v), max(v), sum(w), min(k), max(k) FROM {t}")
    same("SELECT avg(v), stddev(v), var_samp(v) FROM {t}", fuzzy=range(3))


def test_empty_and_single_row_inputs(tables):
    # no row: one row of NULLs (and count 0); grouped, no row at all
    out = same("SELECT count(v), sum(v), min(v), max(v), avg(v), stddev(v), var_pop(v) "
               "FROM {t} WHERE v > 'Infinity'")
    assert out == ["0||||||"], out
    assert same("SELECT k, sum(v) FROM {t} WHERE id < 0 GROUP BY k") == []
    # one row: stddev_samp is NULL, stddev_pop 0
    out = same("SELECT %s, sum(v), min(v), max(v), avg(v), stddev_samp(v), stddev_pop(v) "
               "FROM {t} WHERE id = 2 GROUP BY k" % KEY)
    assert len(out) == 1, out
    # the NULL key's row, and a row whose values are NaN and infinite
    same("SELECT %s, count(*), sum(w), max(w) FROM {t} WHERE id IN (16, 98) GROUP BY k "
         "ORDER BY 1" % KEY)


def test_having_and_expressions_over_float2_groups(tables):
    same("SELECT %s, sum(v) * 2, max(v)::float8 + 1 FROM {t} GROUP BY k "
         "HAVING min(v) < 0 AND max(k) > '-1' ORDER BY 1" % KEY)
