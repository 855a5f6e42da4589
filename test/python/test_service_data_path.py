"""The GPU input path's copies from Arrow files' registered page-cache
pages (src/service/file_reg.c, gpu_input.c), through SCAN_RUN on the
stand-in GPU (`make -C test/gpu scanfake`: fake_cuda.c registers nothing
for real and copies with memcpy, so the service's choice of path, its
fallback to pread and its bookkeeping run as they do on a GPU), with
pyarrow as the oracle.  Without the stand-in (the CPU engine) the tests are
skipped: the CPU engine reads files its own way (test_service_scan.py).

Every file is read back exactly, whatever path its bytes took: read with
pread by the first run, which queues the file's regions (END's `to_pin`)
for the service's registering thread; copied from the registered pages by
the runs after (END's `mapped`, registration on by default); read with
pread when registration is off (--pinned-files 0) or the budget is too
small for the file; never stale after the file is replaced or rewritten.
A file truncated while its pages are registered fails its run, not the
service.  The registrations outlive a restart of the service (its list in
the data directory): the first run after one copies from the pages,
unless the file changed meanwhile.
"""
import os
import struct
import threading
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from service_client import ENGINE, FAKE_GPU, client_fixture, write
from service_client import service_fixture
from test_service import (MSG_STATUS, STATUS_HEAD, Service, connect, hello, message,
                          recv_message)
from test_service_scan import expected, rows_of, run

pytestmark = pytest.mark.skipif(not FAKE_GPU or ENGINE != 2,
                                reason="the GPU input path: make -C test/gpu scanfake")

client = client_fixture("scan_client")
svc = service_fixture()         # the default: registration on (auto)


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


def pin_status(svc):
    """STATUS's (files_pinned, files_to_pin) of service svc: the bytes of
    file pages registered, and those queued to be"""
    with connect(svc.sock, 30) as c:
        hello(c)
        c.sendall(message(MSG_STATUS))
        mtype, payload = recv_message(c)
        assert mtype == MSG_STATUS
        return STATUS_HEAD.unpack_from(payload)[9:11]


def registered(svc, timeout=30):
    """Waits until svc's registering thread has done all it was queued;
    the bytes registered then"""
    deadline = time.monotonic() + timeout
    while True:
        pinned, queued = pin_status(svc)
        if queued == 0:
            return pinned
        assert time.monotonic() < deadline, "%d bytes still queued to be registered" % queued
        time.sleep(0.01)


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


def first_run(client, svc, f, t, chunk):
    """The first run over file f (table t in batches of chunk rows), checked:
    it reads with pread and queues the file's regions; then waits until they
    are registered (and checks that some are).  The registering thread may
    finish a region while the run goes on, so its later batches may copy
    from the pages: its first were read."""
    blocks, end, error = run(client, svc, "pos", [f])
    assert error is None, error
    assert rows_of(blocks) == expected(t, chunk, QUALS["pos"])
    assert int(end["mapped"]) < int(end["bytes_read"]) and int(end["to_pin"]) > 0, end
    assert registered(svc) > 0
    return end


def test_copies_from_registered_pages(client, nocache, tmp_path):
    t = table(20000)
    f = write(tmp_path / "a.arrow", t, 1500)
    first_run(client, nocache, f, t, 1500)
    # one 16 MiB region, the whole file's pages
    assert registered(nocache) == (os.path.getsize(f) + 4095) // 4096 * 4096
    then = scan_all(client, nocache, f, t, 1500)
    # every buffer but the utf8 offsets (read into pinned memory, checked there)
    offsets = 4 * (20000 + 14)
    assert 0 < then["mapped"] <= then["bytes_read"] - offsets, then
    assert then["to_pin"] == 0, then
    # kept for the next run: nothing queued again, the same bytes copied
    again = scan_all(client, nocache, f, t, 1500)
    assert again["to_pin"] == 0 and again["mapped"] == then["mapped"], (then, again)
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
        first_run(client, s, f, t, 1500)
        for _ in range(2):
            assert scan_all(client, s, f, t, 1500)["mapped"] > 0
        assert s.log().count("refused batched copies") == 1, s.log()


def test_column_cache_first(client, pinned, tmp_path):
    """With the GPU column cache, the second run reads nothing from the
    file, though its pages are registered by then"""
    t = table(20000)
    f = write(tmp_path / "a.arrow", t, 1500)
    assert scan_all(client, pinned, f, t, 1500)["to_pin"] > 0
    assert registered(pinned) > 0
    # (bytes_read still counts the CPU workers' loads of the passing rows)
    again = scan_all(client, pinned, f, t, 1500)
    assert again["mapped"] == 0 and again["to_pin"] == 0, again


def test_registered_pages_take_no_pinned_room(client, tmp_path, monkeypatch):
    """A launch's pieces copied from registered pages take no room in the
    slot's pinned buffer: only what is read with pread (or copied from a
    loaded batch) passes through it.  The stand-in refuses pinned
    allocations over 3 MiB (PG_WARP_FAKE_CUDA_HOST_MAX, so the service
    keeps no pinned buffers from its start either).  A run over a file of
    a million int32 values (4 MB of them in one launch) then fails while
    the file is not registered, its reads needing pinned room for them;
    the service goes on and registers the file's pages, which the run
    asked for before it failed, and the next run copies every value from
    them and answers as pyarrow does."""
    monkeypatch.setenv("PG_WARP_FAKE_CUDA_HOST_MAX", str(3 << 20))
    n, chunk = 1000000, 100000
    a = pc.cast(pc.floor(pc.subtract(pc.multiply(pc.random(n, initializer=7), 2000), 1000)),
                pa.int32())
    t = pa.table({"a": pc.if_else(pc.equal(pc.bit_wise_and(pa.array(range(n)), 7), 3),
                                  pa.scalar(None, pa.int32()), a)})
    f = write(tmp_path / "a.arrow", t, chunk)
    want = [[struct.pack("<i", v).hex()] for v in pc.filter(t["a"], pc.greater(t["a"], 0))
            .to_pylist()]
    for s in service_with(tmp_path, "--pinned-files", "256", "--gpu-cache-size", "0"):
        blocks, end, error = run(client, s, "pos", [f])
        assert error is not None and "out of pinned host memory" in error[1], (error, end)
        assert registered(s) == (os.path.getsize(f) + 4095) // 4096 * 4096
        blocks, end, error = run(client, s, "pos", [f])
        assert error is None, error
        assert rows_of(blocks) == want
        # the values and validity of every batch
        assert int(end["mapped"]) >= 4 * n + n // 8, end
        assert int(end["to_pin"]) == 0, end


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_compressed_batches(client, pinned, tmp_path, codec):
    """A compressed file's batches are loaded (decompressed) by the service
    and their buffers copied to the GPU from the slot's pinned buffer, utf8
    offsets checked there; the run after takes them from the GPU column
    cache.  Nothing of such a file comes from registered pages."""
    t = table(20000, 6)
    f = write(tmp_path / "a.arrow", t, 1500, compression=codec)
    first = scan_all(client, pinned, f, t, 1500)
    again = scan_all(client, pinned, f, t, 1500)
    assert first["mapped"] == again["mapped"] == 0, (first, again)


@pytest.fixture
def preads(tmp_path):
    """No registration (every slice read with pread), the GPU column cache on"""
    yield from service_with(tmp_path, "--pinned-files", "0")


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


def two_files_and_a_file_twice(client, svc, tmp_path, settle=None):
    """One run over two files, the first of them twice, checked; its END
    (with settle: settle(svc) after it, and the END of a second such run)"""
    t1, t2 = table(9000, 1), table(13000, 2)
    f1, f2 = write(tmp_path / "a.arrow", t1, 1000), write(tmp_path / "b.arrow", t2, 4096)
    for again in (False, True):
        blocks, end, error = run(client, svc, "sgt", [f1, f2, f1])
        assert error is None, error
        passes = QUALS["sgt"]
        assert rows_of(blocks) == (expected(t1, 1000, passes) + expected(t2, 4096, passes) +
                                   expected(t1, 1000, passes))
        if settle is None or again:
            return end
        settle(svc)


def test_two_files_and_a_file_twice(client, nocache, tmp_path):
    assert int(two_files_and_a_file_twice(client, nocache, tmp_path, registered)["mapped"]) > 0


def test_registered_by_default(client, svc, tmp_path):
    """Without --pinned-files (auto: a quarter of the memory) the first run
    queues the file's pages, and the next copies from them"""
    t = table(20000, 4)
    f = write(tmp_path / "a.arrow", t, 1500)
    first_run(client, svc, f, t, 1500)
    assert scan_all(client, svc, f, t, 1500)["mapped"] > 0


@pytest.mark.parametrize("argv", [["--pinned-files", "0"], ["--pinned-files", "1"]],
                         ids=["off", "budget-too-small"])
def test_pread_when_not_registered(client, tmp_path, argv):
    """With --pinned-files 0: every buffer read with pread, nothing queued;
    1 MiB: the file's region (its size, over 1 MiB) is queued but does not
    fit, and every run reads with pread"""
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
            assert end["mapped"] == 0 and end["bytes_read"] > 0, end
            assert (end["to_pin"] > 0) == (argv[1] == "1"), end
            assert registered(s) == 0
        assert s.proc.poll() is None, s.log()
    finally:
        s.stop()


def replaced_then_rewritten(client, svc, tmp_path, key, settle=None):
    """Reads a file, then the file replaced under its name (a new inode),
    then rewritten in place with the same size, inode and modification
    time: each read as it is now (scan_all checks the rows); END's key
    nonzero for the first two runs.  With settle: settle(svc) after the
    first read of the first two versions, and each read once more, from
    its registered pages, before it changes."""
    t = table(12000, 1)
    f = write(tmp_path / "a.arrow", t, 2000)
    assert scan_all(client, svc, f, t, 2000)[key] > 0
    if settle is not None:
        settle(svc)
        assert scan_all(client, svc, f, t, 2000)["mapped"] > 0
    t2 = table(12000, 2)
    write(tmp_path / "b.arrow", t2, 2000)
    os.replace(tmp_path / "b.arrow", f)
    assert scan_all(client, svc, f, t2, 2000)[key] > 0
    if settle is not None:
        settle(svc)
        assert scan_all(client, svc, f, t2, 2000)["mapped"] > 0
    return scan_all(client, svc, f, rewritten(f, tmp_path), 2000)


def rewritten(f, tmp_path):
    """File f (table(12000, _) in 2000-row batches) rewritten in place with
    table(12000, 3): the same size, inode and modification time; that table"""
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
    return t3


def test_replaced_or_rewritten_file_is_read_again(client, nocache, tmp_path):
    """Registered pages are never served stale (the replaced file's pages
    are queued anew)"""
    replaced_then_rewritten(client, nocache, tmp_path, "to_pin", registered)


def test_truncated_while_registered(client, nocache, tmp_path):
    """The file's pages stay registered after a run; the file is truncated
    and rewritten in place, shorter: the next runs read the new file, and
    the service drops the old registration (of pages the file no longer
    has) without harm"""
    svc = nocache
    t = table(30000)
    f = write(tmp_path / "a.arrow", t, 3000)
    first_run(client, svc, f, t, 3000)
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
    assert scan_all(client, svc, f, small, 1000)["to_pin"] > 0
    registered(svc)
    assert scan_all(client, svc, f, small, 1000)["mapped"] > 0


def truncated_during_runs(client, svc, tmp_path, settle=None):
    """A file truncated while runs read it: each run returns the file's
    rows exactly or fails (errors: the messages); the set of outcomes.
    With settle: each time the file is written whole, a run reads it and
    settle(svc) follows, before the run that the truncation cuts."""
    t = table(200000)
    f = write(tmp_path / "a.arrow", t, 5000)
    with open(f, "rb") as src:
        whole = src.read()
    want = expected(t, 5000, QUALS["pos"])
    outcomes = set()
    for delay in (0.0, 0.002, 0.005, 0.01, 0.02):
        with open(f, "wb") as dst:
            dst.write(whole)
        if settle is not None:
            assert run(client, svc, "pos", [f])[2] is None
            settle(svc)
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
    truncated_during_runs(client, nocache, tmp_path, registered)


# --- the registrations kept across restarts (file_reg.c: FILE_REG_LIST) ---

LIST = "pg_warp_pinned_files"
NOCACHE = ("--pinned-files", "256", "--gpu-cache-size", "0")
OFFSETS = 4 * (20000 + 14)      # table(20000)'s utf8 offsets in 1500-row batches


def started(d, *argv):
    """The stand-in GPU service on directory d (made when missing)"""
    os.makedirs(d, exist_ok=True)
    return Service(str(d), argv=["--threads", "2", "--fatbin", "fake", *argv])


def killed(s):
    """Service s killed (SIGKILL: no end of its own)"""
    s.proc.kill()
    s.proc.wait(10)
    s.logf.close()


def saved_list(d, lines, timeout=30):
    """The list of registered files of the service on directory d once it
    has this many lines (its header included)"""
    path = os.path.join(d, LIST)
    deadline = time.monotonic() + timeout
    while True:
        if os.path.exists(path):
            with open(path) as f:
                got = f.read().splitlines()
            if len(got) == lines:
                assert got[0] == "pg_warp pinned files 1", got
                return got
        assert time.monotonic() < deadline, "no list of %d lines in %s" % (lines, d)
        time.sleep(0.01)


def restored_line(s):
    """The log line of service s (the log is shared by the services started
    on its directory) that says what it queued again at its start"""
    found = [ln for ln in s.log().splitlines()
             if "pinned before the restart" in ln and "[%d]" % s.proc.pid in ln]
    assert len(found) == 1, s.log()
    return found[0]


def test_registrations_restored(client, tmp_path):
    """A file's registered regions are registered again when the service
    starts after an orderly stop or a crash (SIGKILL): the first run after
    the restart copies every buffer but the utf8 offsets from the pages and
    queues nothing, with pyarrow's rows"""
    t = table(20000)
    f = write(tmp_path / "a.arrow", t, 1500)
    t2 = table(20000, 2)
    f2 = write(tmp_path / "b.arrow", t2, 1500)
    d = tmp_path / "svc"
    s = started(d, *NOCACHE)
    try:
        first_run(client, s, f, t, 1500)
        pinned = registered(s)
        lines = saved_list(d, 2)
        assert lines[1].endswith("\t" + os.path.realpath(f)) and " 0-0\t" in lines[1], lines
    finally:
        s.stop()
    s = started(d, *NOCACHE)
    try:
        assert registered(s) == pinned
        assert "1 file(s) pinned before the restart queued to be pinned again" in restored_line(s)
        then = scan_all(client, s, f, t, 1500)
        assert then["to_pin"] == 0 and 0 < then["mapped"] <= then["bytes_read"] - OFFSETS, then
        # a second file registered, then a crash: the list written when the
        # registering thread ran out of work names both
        first_run(client, s, f2, t2, 1500)
        both = registered(s)
        assert both > pinned
        saved_list(d, 3)
    finally:
        killed(s)
    s = started(d, *NOCACHE)
    try:
        assert registered(s) == both
        assert "2 file(s) pinned before the restart" in restored_line(s)
        for path, tab in ((f, t), (f2, t2)):
            then = scan_all(client, s, path, tab, 1500)
            assert then["to_pin"] == 0 and then["mapped"] > 0, (path, then)
    finally:
        s.stop()


def test_changed_files_not_restored(client, tmp_path):
    """A file rewritten in place while the service was down (same size,
    inode and modification time) is not registered again, nor is the name
    of a file now a FIFO (which does not stop the start): the first run reads
    the new contents with pread"""
    t = table(12000, 1)
    f = write(tmp_path / "a.arrow", t, 2000)
    f2 = write(tmp_path / "b.arrow", t, 2000)
    d = tmp_path / "svc"
    s = started(d, *NOCACHE)
    try:
        for path in (f, f2):
            assert scan_all(client, s, path, t, 2000)["to_pin"] > 0
        assert registered(s) > 0
        saved_list(d, 3)
    finally:
        s.stop()
    t3 = rewritten(f, tmp_path)
    os.unlink(f2)
    os.mkfifo(f2)
    s = started(d, *NOCACHE)
    try:
        assert registered(s) == 0
        assert "0 file(s) pinned before the restart" in restored_line(s)
        assert "2 changed or gone" in restored_line(s)
        # nothing registered at the start: the first run queues the file anew
        blocks, end, error = run(client, s, "pos", [f])
        assert error is None, error
        assert rows_of(blocks) == expected(t3, 2000, QUALS["pos"])
        assert int(end["to_pin"]) > 0, end
        assert scan_all(client, s, f, t3, 2000)["bytes_read"] > 0
    finally:
        s.stop()


def test_damaged_list_ignored(client, tmp_path):
    """A list that is not one (a foreign file), or with lines that name no
    file, a relative path, other numbers, ranges beyond the file's regions or
    a last line cut short: the service starts, registers only the regions of
    the file that is there and answers right"""
    t = table(20000)
    f = write(tmp_path / "a.arrow", t, 1500)
    real = os.path.realpath(f)
    st = os.stat(f)
    ident = "%d %d %d %d %d" % (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    d = tmp_path / "svc"
    os.makedirs(d)
    with open(d / LIST, "wb") as out:
        out.write(b"\x00\xffnot a list\n" + ident.encode() + b" 0-0\t" + real.encode() + b"\n")
    s = started(d, *NOCACHE)
    try:
        assert registered(s) == 0
        assert "is not a list of pinned files: ignored" in s.log()
    finally:
        s.stop()
    with open(d / LIST, "w") as out:
        out.write("pg_warp pinned files 1\n"
                  "garbage\n"
                  "%s 0-0\t%s\n" % (ident, "a.arrow") +                    # relative
                  "%s 0-0\t%s\n" % (ident, str(tmp_path / "none.arrow")) +
                  "1 2 3 4 5 0-0\t%s\n" % real +                          # another identity
                  "%s 0-0 9-99999999999 -5-7\t%s\n" % (ident, "/dev/null") +
                  "%s 0-0\t/%s\n" % (ident, "x" * 9000) +                 # too long
                  "%s -5-0 3-1000000 x\t%s\n" % (ident, real) +
                  "%s 0-0\t%s" % (ident, real))                           # cut short
    s = started(d, *NOCACHE)
    try:
        # the one region of the file there, from the line whose ranges go beyond it
        assert registered(s) == (st.st_size + 4095) // 4096 * 4096
        assert "1 file(s) pinned before the restart" in restored_line(s)
        assert "6 changed or gone" in restored_line(s)
        then = scan_all(client, s, f, t, 1500)
        assert then["to_pin"] == 0 and then["mapped"] > 0, then
    finally:
        s.stop()


def listed(client, tmp_path):
    """table(20000) as a file, registered by a first run of a service on
    tmp_path/svc, then stopped: (the table, the file, the service's
    directory, its list's lines)"""
    t = table(20000)
    f = write(tmp_path / "a.arrow", t, 1500)
    d = tmp_path / "svc"
    s = started(d, *NOCACHE)
    try:
        first_run(client, s, f, t, 1500)
        lines = saved_list(d, 2)
    finally:
        s.stop()
    return t, f, d, lines


def nothing_restored(s):
    """Service s registered nothing at its start and logged no restore"""
    assert registered(s) == 0
    assert "[%d] pg_warp service LOG:  pinned files" % s.proc.pid not in s.log()


def test_no_list_without_registration(client, tmp_path):
    """With --pinned-files 0 the service writes no list and registers
    nothing from one that is there"""
    t, f, d, lines = listed(client, tmp_path)
    s = started(d, "--pinned-files", "0")
    try:
        nothing_restored(s)
        assert scan_all(client, s, f, t, 1500)["mapped"] == 0
    finally:
        s.stop()
    with open(d / LIST) as got:
        assert got.read().splitlines() == lines


def test_restore_off(client, tmp_path):
    """With --pinned-files-restore off the service registers nothing from
    the list at its start (its first run reads with pread and queues the
    file), and still keeps the list for later starts"""
    t, f, d, lines = listed(client, tmp_path)
    s = started(d, *NOCACHE, "--pinned-files-restore", "off")
    try:
        nothing_restored(s)
        first_run(client, s, f, t, 1500)
    finally:
        s.stop()
    s = started(d, *NOCACHE)
    try:
        assert registered(s) > 0 and "1 file(s)" in restored_line(s)
    finally:
        s.stop()
    assert saved_list(d, 2) == lines
