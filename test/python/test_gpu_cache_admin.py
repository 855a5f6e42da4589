"""The GPU column cache as a tool (src/engine/gpu_cache_admin.c; doc/engine.md,
"The GPU column cache"): pgwarp.gpu_cache_info(),
pgwarp.gpu_cache_prewarm(regclass [, text[]]) and pgwarp.gpu_cache_drop().

Without a GPU: no rows, and prewarm refuses with the reason.  With one (the
bundle's tests on a GPU host): a prewarm reads each column the engine can read
into the cache (a NOTICE for the others), the info then names the table, file,
column and record batches of every cached column, a later query is served from
the cache (its plan says so, and the hits count it), a second prewarm reads
nothing, a file rewritten under the cache shows as not current, heap tables
are prewarmed by units, and the caller needs SELECT on the table.
"""
import os
import re
import shutil
import tempfile
import time

import pyarrow as pa
import pytest

from pg_sql import Cluster, Db

GPU = ("SET pg_warp.engine = gpu", "SET pg_warp.engine_startup_cost = 0",
       "SET max_parallel_workers_per_gather = 0")
N, CHUNK = 40000, 4000


@pytest.fixture(scope="module")
def cluster():
    return Db()


def has_gpu(c):
    return c.sql("SELECT engine FROM pgwarp.service_status()") == "gpu"


def write_arrow(path, shift=0):
    t = pa.table({
        "k": pa.array([i + shift for i in range(N)], pa.int64()),
        "v": pa.array([None if i % 7 == 0 else (i * 3) % 1000 for i in range(N)], pa.int32()),
        "f": pa.array([i / 8 for i in range(N)], pa.float64()),
        "t": pa.array(["s%d" % (i % 13) for i in range(N)]),
        "u": pa.array([[i, i + 1] for i in range(N)], pa.list_(pa.int32())),
    })
    with pa.ipc.new_file(path, t.schema) as w:
        for b in t.to_batches(max_chunksize=CHUNK):
            w.write_batch(b)
    os.chmod(path, 0o644)


def info(c, table):
    """table's cached columns, summed over the GPUs (with several, each holds
    its share of the batches): name, source, batches, bytes > 0, hits,
    current, file"""
    return [r.split("|") for r in c.sql(
        "SELECT column_name, min(source), sum(batches), bool_and(bytes > 0), sum(hits), "
        "bool_and(current), min(file) FROM pgwarp.gpu_cache_info() "
        "WHERE relation = '%s'::regclass GROUP BY column_name ORDER BY column_name"
        % table).splitlines() if r]


def test_without_gpu(cluster):
    """The CPU engine has no GPU cache: no rows, and a prewarm is refused."""
    if has_gpu(cluster):
        pytest.skip("the service has a GPU")
    assert cluster.sql("SELECT count(*) FROM pgwarp.gpu_cache_info()").strip() == "0"
    cluster.sql("DROP TABLE IF EXISTS gca_h; CREATE TABLE gca_h AS SELECT 1 AS x")
    r = cluster.psql("SELECT pgwarp.gpu_cache_prewarm('gca_h')", check=False)
    assert r[0] != 0 and "has no GPU" in r[2], r


def test_drop_needs_the_privilege(cluster):
    """Emptying the caches slows every session down: revoked from PUBLIC,
    for a role to be granted."""
    cluster.sql("DROP ROLE IF EXISTS gca_dropper; CREATE ROLE gca_dropper LOGIN")
    try:
        r = cluster.psql("SELECT * FROM pgwarp.gpu_cache_drop()", user="gca_dropper",
                         check=False)
        assert r[0] != 0 and "permission denied for function gpu_cache_drop" in r[2], r
        cluster.sql("GRANT USAGE ON SCHEMA pgwarp TO gca_dropper; "
                    "GRANT EXECUTE ON FUNCTION pgwarp.gpu_cache_drop() TO gca_dropper")
        r = cluster.psql("SELECT column_bytes >= 0 FROM pgwarp.gpu_cache_drop()",
                         user="gca_dropper")
        assert r[0] == 0 and r[1].strip() == "t", r
    finally:
        cluster.sql("REVOKE ALL ON FUNCTION pgwarp.gpu_cache_drop() FROM gca_dropper; "
                    "REVOKE ALL ON SCHEMA pgwarp FROM gca_dropper; DROP ROLE gca_dropper")


def test_drop_without_gpu(cluster):
    """The CPU engine has no column cache: nothing of it to free."""
    if has_gpu(cluster):
        pytest.skip("the service has a GPU")
    r = cluster.psql("SELECT column_bytes FROM pgwarp.gpu_cache_drop()")
    assert r[0] == 0 and r[1].strip() == "0", r


@pytest.fixture(scope="module")
def gpu(cluster):
    if not has_gpu(cluster):
        pytest.skip("the service has no GPU")
    # readable by the cluster's OS user (pytest's own tmp_path is root's only)
    d = tempfile.mkdtemp(prefix="pg_warp_%s." % __name__)
    os.chmod(d, 0o755)
    path = os.path.join(d, "gca.arrow")
    write_arrow(path)
    cluster.sql("DROP FOREIGN TABLE IF EXISTS gca_a; CREATE FOREIGN TABLE gca_a "
                "(k bigint, v int, f float8, t text, u int[]) SERVER arrow_fdw "
                "OPTIONS (file '%s')" % path)
    yield cluster, path
    shutil.rmtree(d, ignore_errors=True)


def test_prewarm_arrow_then_served_from_cache(gpu):
    c, path = gpu
    r = c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_a', ARRAY['k', 'v', 'f', 't'])")
    assert r[0] == 0, r
    rows = info(c, "gca_a")
    cols = {x[0]: x for x in rows}
    assert set(cols) == {"k", "v", "f", "t"}, rows
    for name, x in cols.items():
        assert x[1] == "arrow" and x[2] == str(N // CHUNK) and x[3] == "t", x
        assert x[5] == "t" and x[6] == path, x
    q = "SELECT count(*), sum(k), sum(v), sum(f), count(t) FROM gca_a WHERE v > 10"
    want = c.psql(q, settings=["SET pg_warp.enabled = off"])[1]
    plan = c.psql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + q,
                  settings=list(GPU))[1]
    # the node's own line comes first (the fallback scan below it never runs)
    read = re.search(r"Bytes Read: (\d+) bytes", plan)
    assert "Engine: GPU" in plan and read and read.group(1) == "0", plan
    assert "Bytes From GPU Cache" in plan, plan
    assert c.psql(q, settings=list(GPU))[1] == want
    hits = {x[0]: int(x[4]) for x in info(c, "gca_a")}
    assert all(hits[k] >= 2 * (N // CHUNK) for k in ("k", "v", "f", "t")), hits
    # everything is there: a second prewarm reads nothing
    r = c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_a', ARRAY['k', 'v', 'f', 't'])")
    assert r[0] == 0 and r[1].strip() == "0", r


def test_drop_empties_the_cache(gpu):
    """pgwarp.gpu_cache_drop() without a service restart: the columns leave
    the cache (it frees at least the bytes the info showed), and the next query
    reads the file again, with the same answer."""
    c, _ = gpu
    c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_a', ARRAY['k', 'v'])")
    held = int(c.sql("SELECT sum(bytes) FROM pgwarp.gpu_cache_info()"))
    assert {x[0] for x in info(c, "gca_a")} >= {"k", "v"}
    pid = c.sql("SELECT pid FROM pgwarp.service_status()")
    r = c.psql("SELECT column_bytes FROM pgwarp.gpu_cache_drop()")
    assert r[0] == 0 and int(r[1]) >= held > 0, (r, held)
    assert c.sql("SELECT count(*) FROM pgwarp.gpu_cache_info()").strip() == "0"
    assert c.sql("SELECT pid FROM pgwarp.service_status()") == pid
    q = "SELECT count(*), sum(k), sum(v) FROM gca_a WHERE v > 10"
    want = c.psql(q, settings=["SET pg_warp.enabled = off"])[1]
    plan = c.psql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + q,
                  settings=list(GPU))[1]
    # the node's own line comes first (the fallback scan below it reads 0)
    read = re.search(r"Bytes Read: (\d+) bytes", plan)
    assert "Engine: GPU" in plan and read and int(read.group(1)) > 0, plan
    assert c.psql(q, settings=list(GPU))[1] == want
    r = c.psql("SELECT column_bytes > 0 FROM pgwarp.gpu_cache_drop()")
    assert r[0] == 0 and r[1].strip() == "t", r


def test_prewarm_skips_what_the_engine_cannot_read(gpu):
    """Every column by default: the array column is skipped with a NOTICE."""
    c, _ = gpu
    r = c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_a') >= 0")
    assert r[0] == 0 and r[1].strip() == "t", r
    assert 'column "u" of "gca_a" was not prewarmed' in r[2], r


def test_prewarm_arguments(gpu):
    c, _ = gpu
    r = c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_a', ARRAY['nope'])", check=False)
    assert r[0] != 0 and 'column "nope" of relation "gca_a" does not exist' in r[2], r
    r = c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_a', ARRAY['k', NULL])", check=False)
    assert r[0] != 0 and "NULL" in r[2], r
    c.sql("DROP VIEW IF EXISTS gca_v; CREATE VIEW gca_v AS SELECT 1 AS x")
    r = c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_v')", check=False)
    assert r[0] != 0 and "neither a table nor an arrow_fdw foreign table" in r[2], r


def test_role_without_select(gpu):
    c, _ = gpu
    c.sql("DROP ROLE IF EXISTS gca_nobody; CREATE ROLE gca_nobody LOGIN")
    try:
        r = c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_a', ARRAY['k'])", user="gca_nobody",
                   check=False)
        assert r[0] != 0 and "permission denied" in r[2], r
        # the info leaves out what the role may not read
        r = c.psql("SELECT count(*) FROM pgwarp.gpu_cache_info() WHERE relation = "
                   "'gca_a'::regclass", user="gca_nobody")
        assert r[0] == 0 and r[1].strip() == "0", r
    finally:
        c.sql("DROP ROLE gca_nobody")


def test_rewritten_file_is_not_current(gpu):
    """Rewritten in place (same inode, another mtime): the cached version
    shows as not current until a run drops it; replaced by another inode:
    the old version names no table."""
    c, path = gpu
    c.psql("SELECT pgwarp.gpu_cache_prewarm('gca_a', ARRAY['k'])")
    assert [x[5] for x in info(c, "gca_a") if x[0] == "k"] == ["t"]
    new = path + ".new"
    write_arrow(new, shift=5)
    with open(new, "rb") as src, open(path, "r+b") as dst:
        dst.write(src.read())
        dst.truncate()
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10 ** 9))
    assert [x[5] for x in info(c, "gca_a") if x[0] == "k"] == ["f"]
    q = "SELECT count(*), sum(k) FROM gca_a"
    want = c.psql(q, settings=["SET pg_warp.enabled = off"])[1]
    assert want.startswith("%d|" % N) and c.psql(q, settings=list(GPU))[1] == want
    assert [x[5] for x in info(c, "gca_a") if x[0] == "k"] == ["t"]
    write_arrow(new, shift=9)
    os.replace(new, path)
    assert info(c, "gca_a") == []
    want = c.psql(q, settings=["SET pg_warp.enabled = off"])[1]
    assert c.psql(q, settings=list(GPU))[1] == want


def test_prewarm_heap(gpu):
    """Heap tables are prewarmed by units: a cluster of its own, the table
    settled (all-visible, written out, out of shared buffers, unchanged for a
    second: test_heap_gpu_cache's rules), then a query is served its units."""
    from test_heap_gpu_cache import SERIAL, counter, explain, make_table, settle
    c = Cluster()
    try:
        make_table(c, 170000)
        settle(c)
        r = c.psql("SELECT pgwarp.gpu_cache_prewarm('hc', ARRAY['k', 'v'])")
        assert r[0] == 0 and int(r[1]) > 0, r
        rows = [x[:3] for x in info(c, "hc")]
        assert [x[:2] for x in rows] == [["k", "heap"], ["v", "heap"]], rows
        assert all(int(x[2]) >= 3 for x in rows), rows
        p = explain(c, "SELECT k, count(*), sum(v) FROM hc GROUP BY k", SERIAL)
        assert counter(p, "Units from GPU Cache") == counter(p, "Units Probed") > 0, p
    finally:
        c.destroy()
