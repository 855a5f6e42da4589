"""A GPU fault loses the CUDA context: the service restarts, the cluster does not.

A kernel that faults (an illegal address, a launch failure, a device assert)
leaves the process's CUDA context unusable: every later driver call returns
the same error until the process ends.  The service must then fail the run
in progress with a clear error, take no more runs, and end, so that its
supervisor starts a new service with new contexts; PostgreSQL keeps running.

There is no GPU here: the service loads test/gpu's stand-in driver
(fake_cuda.c, one "GPU" whose memory is host memory) through
LD_LIBRARY_PATH, with PG_WARP_FAKE_CUDA_FAULT=700 so that every kernel
launch returns CUDA_ERROR_ILLEGAL_ADDRESS (700), as after a kernel fault.
"""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pyarrow as pa
import pytest

from engine_interrupt import alive
from pg_sql import Cluster, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
GPU_ON = ("SET pg_warp.engine_startup_cost = 0", "SET pg_warp.engine = gpu")
CPU_ON = ("SET pg_warp.engine_startup_cost = 0", "SET pg_warp.engine = cpu")
QUERY = "SELECT k, count(*), sum(v) FROM fault.t GROUP BY k ORDER BY k"


@pytest.fixture(scope="module")
def fake_driver():
    """test/gpu's libcuda.so.1 stand-in, in a directory the cluster's OS user
    reads: built from the source tree, or the offline bundle's prebuilt one."""
    lib = os.path.join(TOP, "test", "gpu", "bin", "fake", "libcuda.so.1")
    if os.path.exists(os.path.join(TOP, "test", "gpu", "fake_cuda.c")):
        r = subprocess.run(["make", "-s", "-C", os.path.join(TOP, "test", "gpu"),
                            "bin/fake/libcuda.so.1"], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.exists(lib), "no stand-in driver at " + lib
    d = tempfile.mkdtemp(prefix="pg_warp_fakecuda.")
    os.chmod(d, 0o755)
    shutil.copy(lib, d)
    os.chmod(os.path.join(d, "libcuda.so.1"), 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(fake_driver):
    saved = {k: os.environ.get(k) for k in ("LD_LIBRARY_PATH", "PG_WARP_FAKE_CUDA_FAULT")}
    os.environ["LD_LIBRARY_PATH"] = fake_driver
    os.environ["PG_WARP_FAKE_CUDA_FAULT"] = "700"
    data = tempfile.mkdtemp(prefix="pg_warp_fault.")
    os.chmod(data, 0o755)
    c = None
    try:
        c = Cluster()
        path = os.path.join(data, "t.arrow")
        t = pa.table({"k": pa.array(np.arange(20000, dtype=np.int32) % 7),
                      "v": pa.array(np.arange(20000, dtype=np.int64))})
        with pa.ipc.new_file(path, t.schema) as w:
            w.write_table(t, max_chunksize=5000)
        os.chmod(path, 0o644)
        c.sql("CREATE SCHEMA fault")
        c.sql("CREATE FOREIGN TABLE fault.t (k int4, v int8) SERVER arrow_fdw "
              "OPTIONS (file '%s')" % path)
        yield c
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if c is not None:
            c.destroy()
        shutil.rmtree(data, ignore_errors=True)


def test_fault_restarts_the_service_not_the_cluster(cluster):
    st = cluster.status()
    if st["engine"] != "gpu":
        pytest.skip("the service did not take the stand-in driver as a GPU: %s"
                    % st["engine_detail"])
    expect = cluster.sql("SET pg_warp.enabled = off; " + QUERY)
    old = int(st["pid"])
    started = cluster.sql("SELECT pg_postmaster_start_time()")
    # the faulting run fails with the driver's error, never a wrong answer
    r = cluster.run(QUERY, settings=GPU_ON)
    assert r.returncode != 0, r.stdout
    assert "CUDA_ERROR" in r.stderr and "(700)" in r.stderr, r.stderr
    # the service ends and its supervisor starts a new one; PostgreSQL did not restart
    cluster.new_service(old, timeout=30)
    wait_until(lambda: not alive(old), 15, "the old service to exit")
    assert cluster.sql("SELECT pg_postmaster_start_time()") == started
    log = cluster.log_text()
    assert "GPU fault" in log and "CUDA context is lost" in log, log[-3000:]
    assert "exited with exit code 3" in log, log[-3000:]
    # the new service serves: the same query on the CPU engine, and in PostgreSQL
    r = cluster.run(QUERY, settings=CPU_ON)
    assert r.returncode == 0 and r.stdout.strip() == expect, r.stderr
    assert cluster.sql("SET pg_warp.enabled = off; " + QUERY) == expect


def test_runs_after_the_restart_fail_the_same_clear_way(cluster):
    """Each GPU run on the faulting stand-in fails alike: no run hangs, no
    service keeps a lost context (the fault here is permanent, as on a GPU
    that faults on every launch)."""
    if cluster.status()["engine"] != "gpu":
        pytest.skip("no stand-in GPU")
    for _ in range(2):
        old = cluster.service_pid()
        r = cluster.run(QUERY, settings=GPU_ON, timeout=60)
        assert r.returncode != 0 and "(700)" in r.stderr, r.stdout + r.stderr
        cluster.new_service(old, timeout=30)
