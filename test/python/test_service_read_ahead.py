"""AGG_FILL, the read-ahead of a run's Arrow columns into the GPU column
cache (xpu/protocol.h; what GpuJoin sends while it builds its inner tables,
src/engine/engine_scan.c), on the stand-in GPU (`make -C test/gpu
scanfake`: fake_cuda.c copies with memcpy, so the service's cache, slots
and copies run as they do on a GPU), with pyarrow as the oracle.

agg_client sends the read-ahead of its q1 shape (discount, quantity and
price); scan_client's `pos` qual then reads field 0, discount, as an int32:
the same cache entries.  A scan that reads fewer bytes than the same scan
over a copy of the file (another inode: nothing of it cached) took the
column from the cache (from_cache).  Every answer is checked against
pyarrow, whatever the path.
The waiting of a run for a read-ahead's entries is gpu_aggcheck's (a GPU):
the stand-in runs no aggregation kernel.
"""
import os
import shutil
import threading
import time

import pyarrow as pa
import pytest

from service_client import ENGINE, FAKE_GPU, client_fixture, run_client, write
from test_service import connect, error_of, hello, message, recv_message
from test_service_data_path import service_with
from test_service_scan import expected, rows_of, run

MSG_AGG_FILL, ERR_FILE_CHANGED = 37, 4

pytestmark = pytest.mark.skipif(not FAKE_GPU or ENGINE != 2,
                                reason="the GPU input path: make -C test/gpu scanfake")

client = client_fixture("scan_client")
agg = client_fixture("agg_client")


@pytest.fixture
def pinned(tmp_path):
    """Registration on (256 MiB), the GPU column cache on"""
    yield from service_with(tmp_path, "--pinned-files", "256")


def table(n, seed=0):
    """discount first (field 0: scan_client's `pos`), with NULLs"""
    return pa.table({
        "discount": pa.array([None if i % 7 == 3 else (i * 7919 + seed) % 21 - 10
                              for i in range(n)], pa.int32()),
        "s": pa.array(["v%d" % (i % 13) for i in range(n)]),
        "quantity": pa.array([(i * 31 + seed) % 50 for i in range(n)], pa.int32()),
        "price": pa.array([i * 1000003 + seed for i in range(n)], pa.int64()),
    })


def pos(b, i):
    return b.column(0)[i].is_valid and b.column(0)[i].as_py() > 0


def fill(agg, svc, f):
    """The read-ahead of q1 over file f: END as a dict of ints, or ERROR"""
    lines, end, error = run_client(agg, svc.sock, "q1", [f], "--fill", 1)
    assert lines == [], lines
    if error is not None:
        return None, error
    return {k: int(v) if v.lstrip("-").isdigit() else v for k, v in end.items()}, None


def scan_pos(client, svc, f, t, chunk):
    """`pos` over f (table t in batches of chunk rows), checked; END"""
    blocks, end, error = run(client, svc, "pos", [f])
    assert error is None, error
    assert rows_of(blocks) == expected(t, chunk, pos)
    assert int(end["engine"]) == ENGINE
    return {k: int(v) for k, v in end.items()}


def from_cache(client, svc, f, t, chunk):
    """Did `pos` over f (checked) take discount from the GPU column cache:
    read at least its values fewer bytes than the same scan over a copy of f"""
    end = scan_pos(client, svc, f, t, chunk)
    copy = str(f) + ".copy"
    shutil.copyfile(f, copy)
    control = scan_pos(client, svc, copy, t, chunk)
    os.unlink(copy)
    return control["bytes_read"] - end["bytes_read"] >= t.num_rows * 4


def test_read_ahead_fills_the_cache(client, agg, pinned, tmp_path):
    """The read-ahead reads every batch's columns into the cache once; a
    second finds them there; a run then reads its column from the cache,
    where a file not read ahead is read from the file"""
    t = table(30000)
    f = write(tmp_path / "a.arrow", t, 4000)
    first, err = fill(agg, pinned, f)
    assert err is None and first["status"] == 0 and first["engine"] == ENGINE, (first, err)
    assert first["batches"] == 8 and first["bytes_read"] > 0 and first["bytes_cached"] == 0
    assert first["groups"] == 0 and first["rows_in"] == 0      # no kernel ran
    # int32 discount and quantity (values and validity), int64 price
    assert first["bytes_read"] >= 30000 * (4 + 4 + 8), first
    again, err = fill(agg, pinned, f)
    assert err is None and again["bytes_read"] == 0, again
    assert again["bytes_cached"] == first["bytes_read"], (first, again)
    assert from_cache(client, pinned, f, t, 4000)


def test_read_ahead_through_pread(client, agg, tmp_path):
    """Without registration the read-ahead's slices are read with pread,
    copied to the slot's device buffer and placed in the cache entries
    from there (kern_copy_pieces): a run then takes discount from the
    cache (it reads fewer bytes than over the same file not read ahead)
    and answers as pyarrow does"""
    svc = next(gen := service_with(tmp_path, "--pinned-files", "0"))
    try:
        t = table(30000, 2)
        f = write(tmp_path / "a.arrow", t, 4000)
        first, err = fill(agg, svc, f)
        assert err is None and first["status"] == 0 and first["engine"] == ENGINE, (first, err)
        assert first["bytes_read"] >= 30000 * (4 + 4 + 8), first
        read_ahead = scan_pos(client, svc, f, t, 4000)
        g = write(tmp_path / "b.arrow", t, 4000)
        control = scan_pos(client, svc, g, t, 4000)
        assert control["bytes_read"] - read_ahead["bytes_read"] >= 30000 * 4, (read_ahead, control)
    finally:
        next(gen, None)


def thread_nices(pid):
    """{thread id: nice value} of process pid's threads now"""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as fh:
                # after "(comm)": state is field 3, nice field 19
                out[int(tid)] = int(fh.read().rsplit(")", 1)[1].split()[16])
        except (OSError, IndexError, ValueError):
            pass                # the thread ended meanwhile
    return out


def test_read_ahead_threads_yield_the_cpus(client, agg, tmp_path, monkeypatch):
    """A read-ahead's I/O threads run at nice 10 (GAGG_FILL_NICE: the
    builds of the inner tables, which the run waits for, take the CPUs
    first), the service's own threads stay at 0, and the cache it filled
    still serves a run that answers as pyarrow does.  The stand-in's copies
    are slowed (PG_WARP_FAKE_CUDA_COPY_DELAY_US) so that the threads live
    long enough to be seen."""
    monkeypatch.setenv("PG_WARP_FAKE_CUDA_COPY_DELAY_US", "40000")
    svc = next(gen := service_with(tmp_path, "--pinned-files", "0"))
    try:
        pid = svc.proc.pid
        before = thread_nices(pid)
        assert before and set(before.values()) == {0}, before
        t = table(30000, 3)
        f = write(tmp_path / "a.arrow", t, 4000)
        out = {}
        th = threading.Thread(target=lambda: out.update(r=fill(agg, svc, f)))
        th.start()
        seen = {}
        while th.is_alive():
            for tid, nice in thread_nices(pid).items():
                seen.setdefault(tid, set()).add(nice)
            time.sleep(0.002)
        th.join()
        first, err = out["r"]
        assert err is None and first["status"] == 0 and first["bytes_read"] > 0, (first, err)
        # an I/O thread starts at 0 and lowers its own priority first thing
        assert any(10 in n for tid, n in seen.items() if tid not in before), seen
        assert all(n == {0} for tid, n in seen.items() if tid in before), seen
        assert thread_nices(pid)[pid] == 0
        read_ahead = scan_pos(client, svc, f, t, 4000)
        control = scan_pos(client, svc, write(tmp_path / "b.arrow", t, 4000), t, 4000)
        assert control["bytes_read"] - read_ahead["bytes_read"] >= 30000 * 4, (read_ahead, control)
    finally:
        next(gen, None)


def test_read_ahead_of_a_replaced_file(client, agg, pinned, tmp_path):
    """A file replaced (renamed over) after its read-ahead: read ahead
    again, and the run answers the new contents"""
    t = table(20000, 1)
    f = write(tmp_path / "a.arrow", t, 3000)
    first, err = fill(agg, pinned, f)
    assert err is None and first["bytes_read"] > 0
    t2 = table(20000, 2)
    write(tmp_path / "b.arrow", t2, 3000)
    os.replace(tmp_path / "b.arrow", f)
    second, err = fill(agg, pinned, f)
    assert err is None and second["bytes_read"] == first["bytes_read"], (first, second)
    assert second["bytes_cached"] == 0
    assert from_cache(client, pinned, f, t2, 3000)


@pytest.mark.parametrize("argv,why", [(["--gpu-cache-size", "0"], "the cache off"),
                                      (["--gpu-cache-size", "1"], "more than half of it")],
                         ids=["cache-off", "cache-too-small"])
def test_read_ahead_reads_nothing(client, agg, tmp_path, argv, why):
    """With the cache off, or columns larger than half of it, the
    read-ahead reads nothing (a run reads them itself, and answers)"""
    gen = service_with(tmp_path, "--pinned-files", "256", *argv)
    svc = next(gen)
    try:
        t = table(120000)
        f = write(tmp_path / "a.arrow", t, 20000)
        end, err = fill(agg, svc, f)
        assert err is None and end["status"] == 0 and end["bytes_read"] == 0, (why, end)
        assert not from_cache(client, svc, f, t, 20000), why
    finally:
        next(gen, None)


def test_read_ahead_of_a_truncated_file(client, agg, pinned, tmp_path):
    """A file cut short after the backend made the request: the read-ahead
    fails with why (the file changed), the service lives on, and the whole
    file is read ahead again once it is back"""
    t = table(60000)
    f = write(tmp_path / "a.arrow", t, 5000)
    with open(f, "rb") as src:
        whole = src.read()
    dump = tmp_path / "fill.bin"
    run_client(agg, "-", "q1", [f], "--dump", dump)
    os.truncate(f, len(whole) // 2)
    with connect(pinned.sock, 30) as c:
        hello(c)
        c.sendall(message(MSG_AGG_FILL, dump.read_bytes()))
        code, why = error_of(recv_message(c))
    assert code == ERR_FILE_CHANGED and f in why, (code, why)
    with open(f, "wb") as dst:
        dst.write(whole)
    end, err = fill(agg, pinned, f)
    assert err is None and end["bytes_read"] > 0, (end, err)
    assert from_cache(client, pinned, f, t, 5000)


def test_read_ahead_beside_runs(client, agg, pinned, tmp_path):
    """A read-ahead and two runs of one cold file at once, twice: a
    run waits for the columns the read-ahead is filling, the read-ahead
    leaves alone those a run fills.  Every answer is right, every
    read-ahead ends without error, and afterwards the file is all in the
    cache (no entry was lost between them)."""
    t = table(60000, 3)
    base = write(tmp_path / "base.arrow", t, 5000)
    for round_ in range(2):
        f = str(tmp_path / ("r%d.arrow" % round_))
        shutil.copyfile(base, f)            # a new inode: cold in the cache
        out = {}

        def ahead():
            out["fill"] = fill(agg, pinned, f)

        def scan(name):
            out[name] = scan_pos(client, pinned, f, t, 5000)
        threads = [threading.Thread(target=ahead)] + \
            [threading.Thread(target=scan, args=("scan%d" % i,)) for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        end, err = out["fill"]
        assert err is None and end["status"] == 0, (round_, end, err)
        assert "scan0" in out and "scan1" in out, out      # both answered right
        again, err = fill(agg, pinned, f)
        assert err is None and again["bytes_read"] == 0, (round_, again)
        assert from_cache(client, pinned, f, t, 5000)
    assert pinned.proc.poll() is None, pinned.log()
