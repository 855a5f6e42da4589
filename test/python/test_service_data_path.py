"""The GPU input path's copies from Arrow files' registered page-cache
pages (src/service/file_reg.c, gpu_input.c), through SCAN_RUN on the
stand-in GPU (`make -C test/gpu scanfake`: fake_cuda.c registers nothing
for real and copies with memcpy, so the service's choice of path, its
fallback to pread and its bookkeeping run as they do on a GPU), with
pyarrow as the oracle.  Without the stand-in (the CPU engine) the tests are
skipped: the CPU engine reads files its own way (test_service_scan.py).

Every file is read back exactly, whatever path its bytes took: copied from
the registered pages (END's `mapped`, with --pinned-files), read with pread
when registration is off (the default) or the budget is too small for the
file, and never stale after the file is replaced or rewritten; a file
truncated while its pages are registered fails its run, not the service.
"""
import os
import threading

import pyarrow as pa
import pytest

from service_client import ENGINE, FAKE_GPU, client_fixture, write
from service_client import service_fixture
from test_service import Service
from test_service_scan import expected, rows_of, run

pytestmark = pytest.mark.skipif(not FAKE_GPU or ENGINE != 2,
                                reason="the GPU input path: make -C test/gpu scanfake")

client = client_fixture("scan_client")
svc = service_fixture()         # the default: nothing registered


def service_with(tmp_path, *argv):
    """A fixture body: the stand-in GPU service with argv added"""
    d = tmp_path / "svc"
    d.mkdir()
    s = Service(str(d), argv=["--threads", "2", "--fatbin", "fake", *argv])
    try:
        yield s
    finally:
        assert s.proc.poll() is None, "the service died:\n" + s.log()
        s.stop()


@pytest.fixture
def pinned(tmp_path):
    """Registration on (256 MiB), the GPU column cache on"""
    yield from service_with(tmp_path, "--pinned-files", "256")


@pytest.fixture
def nocache(tmp_path):
    """Registration on, no GPU column cache: every run reads the file"""
    yield from service_with(tmp_path, "--pinned-files", "256", "--gpu-cache-size", "0")


def table(n, seed=0):
    return pa.table({
        "a": pa.array([None if i % 7 == 3 else (i * 7919 + seed) % 1000 - 500
                       for i in range(n)], pa.int32()),
        "s": pa.array([None if i % 5 == 0 else "v%d-%d" % ((i + seed) % 97, seed)
                       for i in range(n)]),
        "f": pa.array([i * 0.25 - seed if i % 4 else None for i in range(n)], pa.float64()),
        "l": pa.array([i * 1000003 + seed for i in range(n)], pa.int64()),
    })


QUALS = {
    # field 0 (int32, NULLs) > 0: its validity and values on the GPU
    "pos": lambda b, i: b.column(0)[i].is_valid and b.column(0)[i].as_py() > 0,
    # field 1 (utf8, NULLs) > 'v5': offsets read and checked, data bytes copied
    "sgt": lambda b, i: b.column(1)[i].is_valid and b.column(1)[i].as_py().encode() > b"v5",
}


def scan_all(client, s, f, t, chunk):
    """Both quals over file f (table t in batches of chunk rows), compared
    with pyarrow; END's counters summed over both runs."""
    total = {}
    for qual, passes in QUALS.items():
        blocks, end, error = run(client, s, qual, [f])
        assert error is None, (qual, error)
        assert rows_of(blocks) == expected(t, chunk, passes), qual
        assert int(end["engine"]) == ENGINE
        for k, v in end.items():
            total[k] = total.get(k, 0) + int(v)
    return total


def test_copies_from_registered_pages(client, nocache, tmp_path):
    t = table(20000)
    f = write(tmp_path / "a.arrow", t, 1500)
    first = scan_all(client, nocache, f, t, 1500)
    # every buffer but the utf8 offsets (read into pinned memory, checked there)
    offsets = 4 * (20000 + 14)
    assert 0 < first["mapped"] <= first["bytes_read"] - offsets, first
    assert first["pinned"] > 0, first
    # kept for the next run: nothing registered again, the same bytes copied
    again = scan_all(client, nocache, f, t, 1500)
    assert again["pinned"] == 0 and again["mapped"] == first["mapped"], (first, again)
    # the stand-in took the launch's batched copies: it refuses malformed
    # ones (attributes, counts), and the service would log the refusal
    assert "refused batched copies" not in nocache.log()


def test_batched_copies_refused(client, tmp_path, monkeypatch):
    """A driver that refuses cuMemcpyBatchAsync (the stand-in with
    PG_WARP_FAKE_CUDA_NO_BATCH): the copies from registered pages are queued
    one call each, with the same answers, and the log says so once"""
    monkeypatch.setenv("PG_WARP_FAKE_CUDA_NO_BATCH", "1")
    t = table(20000)
    f = write(tmp_path / "a.arrow", t, 1500)
    for s in service_with(tmp_path, "--pinned-files", "256", "--gpu-cache-size", "0"):
        for _ in range(2):
            assert scan_all(client, s, f, t, 1500)["mapped"] > 0
        assert s.log().count("refused batched copies") == 1, s.log()


def test_column_cache_first(client, pinned, tmp_path):
    """With the GPU column cache, the second run reads nothing from the file"""
    t = table(20000)
    f = write(tmp_path / "a.arrow", t, 1500)
    assert scan_all(client, pinned, f, t, 1500)["mapped"] > 0
    # (bytes_read still counts the CPU workers' loads of the passing rows)
    assert scan_all(client, pinned, f, t, 1500)["mapped"] == 0


@pytest.fixture
def preads(tmp_path):
    """No registration (every slice read with pread), the GPU column cache on"""
    yield from service_with(tmp_path)


def test_column_cache_first_through_pread(client, preads, tmp_path):
    """Read with pread, a run's slices are copied to the slot's device
    buffer and the cache entries they fill are placed from there
    (kern_copy_pieces): the second run takes every referenced column from
    the cache and answers as pyarrow does"""
    t = table(20000, 3)
    f = write(tmp_path / "a.arrow", t, 1500)
    first = scan_all(client, preads, f, t, 1500)
    again = scan_all(client, preads, f, t, 1500)
    # bytes_read keeps the CPU workers' loads of the passing rows: the
    # GPU's reads of field 0 (values, validity) and field 1 (offsets, data) are gone
    assert first["bytes_read"] - again["bytes_read"] >= 20000 * (4 + 4), (first, again)
    assert first["mapped"] == again["mapped"] == 0, (first, again)


def two_files_and_a_file_twice(client, svc, tmp_path):
    """One run over two files, the first of them twice, checked; its END"""
    t1, t2 = table(9000, 1), table(13000, 2)
    f1, f2 = write(tmp_path / "a.arrow", t1, 1000), write(tmp_path / "b.arrow", t2, 4096)
    blocks, end, error = run(client, svc, "sgt", [f1, f2, f1])
    assert error is None, error
    passes = QUALS["sgt"]
    assert rows_of(blocks) == (expected(t1, 1000, passes) + expected(t2, 4096, passes) +
                               expected(t1, 1000, passes))
    return end


def test_two_files_and_a_file_twice(client, pinned, tmp_path):
    assert int(two_files_and_a_file_twice(client, pinned, tmp_path)["mapped"]) > 0


@pytest.mark.parametrize("argv", [[], ["--pinned-files", "0"], ["--pinned-files", "1"]],
                         ids=["default", "off", "budget-too-small"])
def test_pread_when_not_registered(client, tmp_path, argv):
    """By default and with --pinned-files 0: every buffer read with pread;
    1 MiB: the file's region (its size, over 1 MiB) does not fit, and its
    copies become preads after the registration was refused"""
    d = tmp_path / "svc"
    d.mkdir()
    s = Service(str(d), argv=["--threads", "2", "--fatbin", "fake", "--gpu-cache-size", "0"] +
                argv)
    try:
        t = table(60000)
        f = write(tmp_path / "a.arrow", t, 7000)
        assert os.path.getsize(f) > 1 << 20
        for _ in range(2):
            end = scan_all(client, s, f, t, 7000)
            assert end["mapped"] == 0 and end["pinned"] == 0, end
            assert end["bytes_read"] > 0
        assert s.proc.poll() is None, s.log()
    finally:
        s.stop()


def replaced_then_rewritten(client, svc, tmp_path, key):
    """Reads a file, then the file replaced under its name (a new inode),
    then rewritten in place with the same size, inode and modification
    time: each read as it is now (scan_all checks the rows); END's key
    nonzero for the first two runs"""
    t = table(12000, 1)
    f = write(tmp_path / "a.arrow", t, 2000)
    assert scan_all(client, svc, f, t, 2000)[key] > 0
    t2 = table(12000, 2)
    write(tmp_path / "b.arrow", t2, 2000)
    os.replace(tmp_path / "b.arrow", f)
    assert scan_all(client, svc, f, t2, 2000)[key] > 0
    t3 = table(12000, 3)
    write(tmp_path / "c.arrow", t3, 2000)
    with open(tmp_path / "c.arrow", "rb") as src:
        data = src.read()
    assert len(data) == os.path.getsize(f)
    st = os.stat(f)
    with open(f, "r+b") as dst:
        dst.write(data)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))     # the same modification time
    assert os.stat(f).st_ino == st.st_ino
    return scan_all(client, svc, f, t3, 2000)


def test_replaced_or_rewritten_file_is_read_again(client, nocache, tmp_path):
    """Registered pages are never served stale (the replaced file's pages
    are registered anew)"""
    replaced_then_rewritten(client, nocache, tmp_path, "pinned")


def test_truncated_while_registered(client, nocache, tmp_path):
    """The file's pages stay registered after a run; the file is truncated
    and rewritten in place, shorter: the next runs read the new file, and
    the service drops the old registration (of pages the file no longer
    has) without harm"""
    svc = nocache
    t = table(30000)
    f = write(tmp_path / "a.arrow", t, 3000)
    assert scan_all(client, svc, f, t, 3000)["mapped"] > 0
    small = table(7000, 5)
    write(tmp_path / "b.arrow", small, 1000)
    with open(tmp_path / "b.arrow", "rb") as src:
        data = src.read()
    ino = os.stat(f).st_ino
    with open(f, "r+b") as dst:
        dst.truncate(0)
        dst.write(data)
    assert os.stat(f).st_ino == ino
    for _ in range(2):
        assert scan_all(client, svc, f, small, 1000)["mapped"] > 0


def truncated_during_runs(client, svc, tmp_path):
    """A file truncated while runs read it: each run returns the file's
    rows exactly or fails (errors: the messages); the set of outcomes"""
    t = table(200000)
    f = write(tmp_path / "a.arrow", t, 5000)
    with open(f, "rb") as src:
        whole = src.read()
    want = expected(t, 5000, QUALS["pos"])
    outcomes = set()
    for delay in (0.0, 0.002, 0.005, 0.01, 0.02):
        with open(f, "wb") as dst:
            dst.write(whole)
        cut = threading.Timer(delay, os.truncate, (f, len(whole) // 3))
        cut.start()
        try:
            blocks, end, error = run(client, svc, "pos", [f])
        except AssertionError:
            outcomes.add("client refused the file")      # truncated before it opened it
            continue
        finally:
            cut.join()
        if error is not None:
            outcomes.add(error[1])
            continue
        assert rows_of(blocks) == want, delay
        outcomes.add("read whole")
    assert outcomes, outcomes
    # the whole file again: read as before
    with open(f, "wb") as dst:
        dst.write(whole)
    blocks, end, error = run(client, svc, "pos", [f])
    assert error is None and rows_of(blocks) == want, error
    return outcomes, end


def test_truncated_during_runs(client, nocache, tmp_path):
    """truncated_during_runs with registered pages; the service lives on
    (the fixture checks)"""
    truncated_during_runs(client, nocache, tmp_path)
