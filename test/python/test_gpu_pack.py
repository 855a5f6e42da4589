"""Integer columns packed for the bus (doc/service.md, "Integer columns
packed for the bus"; pg_warp.gpu_transfer_packing) through SQL, against
PostgreSQL.

An Arrow table of int4, int8, date and timestamp columns whose record
batches pack into every width (and some that do not: a column spanning all
of int4, frames at the types' ends), with NULLs, is aggregated and filtered
by GpuPreAgg and GpuScan with packing on and off; each answer must be
PostgreSQL's.  Where the service has a GPU the first run over a fresh file
must say in EXPLAIN ANALYZE that it packed (and into fewer bytes), and
nothing with the setting off; without one (CI's CPU engine, which reads the
files in place) the answers are still checked.  The stand-in GPU's tests
(test_service_pack.py) check the service's packing value by value.
"""
import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import Cluster

ON = "SET pg_warp.engine_startup_cost = 0"
OFF = "SET pg_warp.enabled = off"
# batches of an odd number of rows: packed int32 buffers of 3 bytes a
# value end unaligned, and the next one's must start aligned all the same
ROWS, BATCH = 200_000, 50_001
FRAME = 65_536


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        yield c
    finally:
        c.destroy()


@pytest.fixture(scope="module")
def data_dir():
    d = tempfile.mkdtemp(prefix="pg_warp_pack.")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def framed(rng, kinds, dtype):
    """ROWS values, frame by frame, frame f uniform in kinds[f % len(kinds)]
    (both ends present)"""
    out = np.empty(ROWS, np.int64)
    for f, at in enumerate(range(0, ROWS, FRAME)):
        lo, hi = kinds[f % len(kinds)]
        m = min(FRAME, ROWS - at)
        v = rng.integers(lo, hi, m, dtype=np.int64, endpoint=True)
        v[0], v[-1] = lo, hi
        out[at:at + m] = v
    return out.astype(dtype)


def nulls(every):
    m = np.zeros(ROWS, bool)
    m[5::every] = True
    return m


def table(seed):
    rng = np.random.default_rng(seed)
    i4min, i4max, i8min, i8max = -2**31, 2**31 - 1, -2**63, 2**63 - 1
    return pa.table({
        "g": pa.array(rng.integers(0, 7, ROWS, dtype=np.int32)),
        "a": pa.array(framed(rng, [(0, 200), (-30000, 30000), (0, 10_000_000)], np.int32),
                      mask=nulls(9)),
        "b": pa.array(framed(rng, [(i4min, i4min + 255), (i4max - 65535, i4max), (i4min, i4max)],
                             np.int32)),
        "c": pa.array(framed(rng, [(1_700_000_000_000, 1_700_000_000_000 + 2**32 - 1),
                                   (i8min, i8min + 255), (-2**40, 2**40)], np.int64),
                      mask=nulls(13)),
        "d": pa.array(framed(rng, [(8000, 11000)], np.int32), mask=nulls(7)).cast(pa.date32()),
        "t": pa.array(framed(rng, [(1_600_000_000_000_000, 1_600_000_000_000_000 + 2**24 - 1)],
                             np.int64), pa.timestamp("us")),
        "m": pa.array(framed(rng, [(i8max - 1000, i8max)], np.int64)),
    })


DDL = ("CREATE FOREIGN TABLE pk.%s (g int4, a int4, b int4, c int8, d date, t timestamp, m int8) "
       "SERVER arrow_fdw OPTIONS (file '%s')")

QUERIES = [
    # GpuPreAgg: every packed column through an aggregate, grouped
    ("GpuPreAgg", "SELECT g, count(*), count(a), sum(a), min(b), max(b), sum(b::int8), "
                  "sum(c), min(c), max(c), min(d), max(d), min(t), max(t), max(m), min(m) "
                  "FROM pk.%s GROUP BY g ORDER BY g"),
    # the values as keys: every distinct value of a narrow frame's column
    ("GpuPreAgg", "SELECT a, count(*) FROM pk.%s WHERE a < 300 GROUP BY a ORDER BY a"),
    # GpuScan: quals on packed columns, the rows back
    ("GpuScan", "SELECT g, a, b, c, d, t, m FROM pk.%s "
                "WHERE b > 2147418112 AND a IS NOT NULL AND d > date '1995-01-01' ORDER BY a, b, c"),
]


def fresh(c, data_dir, name, seed):
    """a file of its own (never in the GPU column cache) as table pk.name"""
    path = os.path.join(data_dir, "%s.arrow" % name)
    write(path, table(seed), BATCH)
    c.sql("CREATE SCHEMA IF NOT EXISTS pk; DROP FOREIGN TABLE IF EXISTS pk.%s; " % name +
          DDL % (name, path))


def data_path(c, sql, settings):
    """(Bytes Read, Bytes Packed, Packed Bytes) of the GPU node of sql's
    EXPLAIN ANALYZE (FORMAT JSON)"""
    out = c.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) " + sql, settings)

    def walk(n):
        if "Bytes Packed" in n:
            yield n
        for sub in n.get("Plans", []):
            yield from walk(sub)
    import json
    nodes = list(walk(json.loads(out)[0]["Plan"]))
    assert nodes, out
    return tuple(sum(int(n[k]) for n in nodes) for k in ("Bytes Read", "Bytes Packed",
                                                        "Packed Bytes"))


@pytest.mark.parametrize("packing", ["on", "off"])
def test_answers_are_postgresqls(cluster, data_dir, packing):
    """Each query's first run over a fresh file (packed, or not) and its
    runs after (the GPU column cache) give PostgreSQL's rows"""
    setting = "SET pg_warp.gpu_transfer_packing = %s" % packing
    for i, (node, q) in enumerate(QUERIES):
        name = "t_%s_%d" % (packing, i)
        fresh(cluster, data_dir, name, 10 + i)
        cluster.same(q % name, node, on=(ON, setting), off=(OFF,), ordered=True)


def test_first_runs_say_what_they_packed(cluster, data_dir):
    """On a GPU: a first run packs into fewer bytes than it read, and packs
    nothing with the setting off"""
    st = cluster.status()
    if st["engine"] != "gpu":
        pytest.skip("the service has no GPU (%s): nothing crosses a bus" % st["engine_detail"])
    q = QUERIES[0][1]
    fresh(cluster, data_dir, "x_on", 3)
    read, packed, packed_len = data_path(cluster, q % "x_on",
                                         (ON, "SET pg_warp.gpu_transfer_packing = on"))
    assert 0 < packed_len < packed < read, (read, packed, packed_len)
    fresh(cluster, data_dir, "x_off", 3)
    read_off, packed, packed_len = data_path(cluster, q % "x_off",
                                             (ON, "SET pg_warp.gpu_transfer_packing = off"))
    assert read_off == read and packed == packed_len == 0, (read_off, packed, packed_len)
