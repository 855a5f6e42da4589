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

GPU discovery and the self-test (pgwarp.gpu_devices(), gpu_selftest())
go through the service too: they are checked here on the stand-in GPU,
faulting and (a cluster of its own) healthy.
"""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pyarrow as pa
import pytest

from engine_interrupt import alive
from test_service import Cluster, wait_until

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


def stand_in_cluster(driver, fault):
    """A preloaded cluster whose service (and backends) find the stand-in
    driver, each launch failing with driver result fault (None: working)."""
    saved = {k: os.environ.get(k) for k in ("LD_LIBRARY_PATH", "PG_WARP_FAKE_CUDA_FAULT")}
    os.environ["LD_LIBRARY_PATH"] = driver
    os.environ.pop("PG_WARP_FAKE_CUDA_FAULT", None)
    if fault:
        os.environ["PG_WARP_FAKE_CUDA_FAULT"] = fault
    try:
        return Cluster()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def cluster(fake_driver):
    data = tempfile.mkdtemp(prefix="pg_warp_fault.")
    os.chmod(data, 0o755)
    c = None
    try:
        c = stand_in_cluster(fake_driver, "700")
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


def stand_in_row(c):
    """gpu_devices()'s row for the stand-in, with its attributes as the
    service reported them (fake_cuda.c's cuDeviceGetAttribute)"""
    st = c.sql("SELECT devices[1] FROM pgwarp.service_status()")
    assert st == "fake GPU (host memory)", st
    return c.sql("SELECT device_index, name, total_memory, multiprocessors, "
                 "compute_capability, pci_bus_id FROM pgwarp.gpu_devices()")


def test_gpu_devices_of_the_service(cluster):
    """gpu_devices() shows the service's GPU (bus id in lower case), and the
    backend that asked has no CUDA driver loaded: one loader, the service's."""
    if cluster.status()["engine"] != "gpu":
        pytest.skip("no stand-in GPU")
    row = stand_in_row(cluster).split("|")
    assert row[:3] == ["0", "fake GPU (host memory)", "8589934592"], row
    assert row[5] == "0000:0f:00.0", row
    assert int(row[3]) > 0 and row[4].count(".") == 1, row
    assert cluster.sql("SELECT count(*) FROM pgwarp.gpu_devices(); "
                       "SELECT pg_read_file('/proc/self/maps') LIKE '%libcuda%'"
                       ).split() == ["1", "f"]


def test_selftest_on_a_faulting_gpu_is_a_clear_error(cluster):
    """The self-test's launch faults: an ERROR naming the device and the
    driver's error; the service restarts as after any GPU fault, not the
    cluster."""
    if cluster.status()["engine"] != "gpu":
        pytest.skip("no stand-in GPU")
    old = cluster.service_pid()
    started = cluster.sql("SELECT pg_postmaster_start_time()")
    r = cluster.run("SELECT * FROM pgwarp.gpu_selftest()")
    assert r.returncode != 0, r.stdout
    assert "GPU self-test failed on device 0 (fake GPU (host memory))" in r.stderr, r.stderr
    assert "cuLaunchKernel" in r.stderr and "(700)" in r.stderr, r.stderr
    cluster.new_service(old, timeout=30)
    assert cluster.sql("SELECT pg_postmaster_start_time()") == started


@pytest.fixture(scope="module")
def healthy(fake_driver):
    c = stand_in_cluster(fake_driver, None)
    try:
        yield c
    finally:
        c.destroy()


def test_selftest_through_the_service(healthy):
    """On a working (stand-in) GPU the service runs the self-test kernel and
    checks its million elements: one row, 'ok'; a fatbin that is not there
    is the backend's clear error before the service is asked."""
    if healthy.status()["engine"] != "gpu":
        pytest.skip("no stand-in GPU")
    assert healthy.sql("SELECT device_index, name, result, elapsed_ms > 0 "
                       "FROM pgwarp.gpu_selftest()") == "0|fake GPU (host memory)|ok|t"
    r = healthy.run("SET pg_warp.fatbin_path = '/nonexistent/pg_warp.fatbin'; "
                    "SELECT * FROM pgwarp.gpu_selftest()")
    assert r.returncode != 0
    assert 'could not open GPU code file "/nonexistent/pg_warp.fatbin"' in r.stderr, r.stderr
    # the service is the one it was: the test released what it took
    pid = healthy.service_pid()
    assert healthy.sql("SELECT result FROM pgwarp.gpu_selftest()") == "ok"
    assert healthy.service_pid() == pid
