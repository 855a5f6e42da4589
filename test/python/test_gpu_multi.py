"""GpuPreAgg over Arrow files spread over several GPUs (src/service/gpu_multi.c;
doc/service.md, "Several GPUs").

Runs where the service has a GPU (the bundle's tests on a GPU host) and skips
elsewhere.  A throwaway cluster is started with pg_warp.gpus naming the first
GPU twice, which the service then uses as two devices: every run over Arrow
files of more than one record batch is split between them and their groups
merged, exactly as on a host with two GPUs.  On a host with two GPUs the same
tests run with pg_warp.gpus = '0,1' as well.  Every answer is compared with
PostgreSQL's (pg_warp.enabled = off), the plan must say the GPU ran, and the
column cache must hold each record batch on one device only.
"""
import os
import re
import shutil
import tempfile
import decimal

import pyarrow as pa
import pytest

from pg_sql import Cluster, Db, find_nodes

N, CHUNK = 120000, 5000
GPU = ("SET pg_warp.engine = gpu", "SET pg_warp.engine_startup_cost = 0",
       "SET max_parallel_workers_per_gather = 0")
OFF = ("SET pg_warp.enabled = off",)

QUERIES = [
    "SELECT count(*), sum(v), sum(f), sum(n), min(d), max(d) FROM gm_a",
    "SELECT g, count(*), sum(v), avg(f), min(n), count(t) FROM gm_a WHERE v % 3 <> 0 "
    "GROUP BY g ORDER BY g",
    "SELECT t, count(v), sum(n) FROM gm_a GROUP BY t ORDER BY t",
    "SELECT d.name, count(*), sum(a.v) FROM gm_a a JOIN gm_dim d ON a.g % 50 = d.k "
    "GROUP BY d.name ORDER BY d.name",
    "SELECT count(*) FROM gm_a WHERE v < -1",
    # RIGHT: each GPU marks its share's matches, the run emits the rest once
    "SELECT r.name, count(*), count(a.v), sum(a.v) FROM gm_a a RIGHT JOIN gm_rd r "
    "ON a.g = r.k GROUP BY r.name ORDER BY r.name",
]


def gpu_count():
    out = Db().psql("SELECT count(*) FROM pgwarp.gpu_devices()", check=False)
    return int(out[1]) if out[0] == 0 and out[1].isdigit() else 0


def settings_to_test():
    n = gpu_count()
    return ["0,0"] + (["0,1"] if n >= 2 else [])


@pytest.fixture(scope="module", params=settings_to_test())
def multi(request):
    if Db().sql("SELECT engine FROM pgwarp.service_status()") != "gpu":
        pytest.skip("the service has no GPU")
    c = Cluster()
    # readable by the cluster's OS user (pytest's own tmp_path is root's only)
    d = tempfile.mkdtemp(prefix="pg_warp_%s." % __name__)
    os.chmod(d, 0o755)
    try:
        c.sql("ALTER SYSTEM SET pg_warp.gpus = '%s'" % request.param)
        c.restart()
        path = os.path.join(d, "gm.arrow")
        t = pa.table({
            "g": pa.array([i % 997 for i in range(N)], pa.int32()),
            "v": pa.array([None if i % 11 == 0 else (i * 7) % 1001 - 500 for i in range(N)],
                          pa.int64()),
            "f": pa.array([(i % 113) / 7 for i in range(N)], pa.float64()),
            "n": pa.array([decimal.Decimal(i % 5000) / 100 for i in range(N)],
                          pa.decimal128(12, 2)),
            "t": pa.array(["w%d" % (i % 17) for i in range(N)]),
            "d": pa.array([i % 3650 for i in range(N)], pa.date32()),
        })
        with pa.ipc.new_file(path, t.schema) as w:
            for b in t.to_batches(max_chunksize=CHUNK):
                w.write_batch(b)
        os.chmod(path, 0o644)
        c.sql("CREATE FOREIGN TABLE gm_a (g int, v bigint, f float8, n numeric(12,2), t text, "
              "d date) SERVER arrow_fdw OPTIONS (file '%s')" % path)
        c.sql("CREATE TABLE gm_dim (k int PRIMARY KEY, name text); INSERT INTO gm_dim "
              "SELECT i, 'n' || (i % 7) FROM generate_series(0, 49) i; ANALYZE gm_dim")
        c.sql("CREATE TABLE gm_rd (k int PRIMARY KEY, name text); INSERT INTO gm_rd "
              "SELECT i, 'r' || (i % 5) FROM generate_series(0, 1199) i; ANALYZE gm_rd")
        yield c, request.param
    finally:
        c.destroy()
        shutil.rmtree(d, ignore_errors=True)


def test_both_devices_listed(multi):
    c, gpus = multi
    assert c.sql("SELECT count(*) FROM pgwarp.gpu_devices()") == "2", gpus
    assert c.status()["device_count"] == "2"


@pytest.mark.parametrize("q", QUERIES)
def test_answers_and_engine(multi, q):
    """PostgreSQL's answer (float sums within 1e-12: the devices' shares
    add in another order), the engine on the GPU; twice: the first run
    fills both caches, the second reads them."""
    c, _ = multi
    for _ in range(2):
        c.same(q, "GpuPreAgg", on=GPU, ordered=True, rel_tol=1e-12, engine="GPU")
    if " JOIN " in q:
        # the rows into and out of each depth: the devices' counts summed
        gpu = find_nodes(c.engine_ran(q, "GpuPreAgg", GPU, engine="GPU"), "GpuPreAgg")[0]
        cpu = find_nodes(c.engine_ran(q, "GpuPreAgg", ("SET pg_warp.engine = cpu",
                                                       "SET max_parallel_workers_per_gather = 0"),
                                      engine="CPU"), "GpuPreAgg")[0]
        assert gpu["Join Rows"] == cpu["Join Rows"], (gpu, cpu)


def test_each_batch_cached_on_one_device(multi):
    c, _ = multi
    c.psql(QUERIES[0], settings=GPU)
    rows = [r.split("|") for r in c.sql(
        "SELECT device, column_name, batches FROM pgwarp.gpu_cache_info() "
        "WHERE relation = 'gm_a'::regclass AND column_name = 'v'").splitlines()]
    per_device = {int(r[0]): int(r[2]) for r in rows}
    assert set(per_device) == {0, 1} and sum(per_device.values()) == N // CHUNK, rows
    plan = c.psql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + QUERIES[0],
                  settings=GPU)[1]
    # the node's own line comes first (the fallback scan below it never runs)
    read = re.search(r"Bytes Read: (\d+) bytes", plan)
    assert read and read.group(1) == "0" and "Bytes From GPU Cache" in plan, plan


def test_error_from_one_device(multi):
    """An error raised on one device's share is the run's (PostgreSQL's error)."""
    c, _ = multi
    q = "SELECT sum(v / (g - 500)) FROM gm_a"
    off = c.result(q, settings=OFF)
    on = c.result(q, settings=GPU)
    assert off[0] == "error" and on == off, (on, off)
