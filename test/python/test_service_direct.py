"""The GPU input path's reads with cuFile (src/service/gpu_direct.c,
--gpudirect, --cufile-library), through SCAN_RUN on the stand-in GPU and
the stand-in libcufile (`make -C test/gpu scanfake`: fake_cuda.c's device
memory is host memory and fake_cufile.c's cuFileRead a pread into it), with
pyarrow as the oracle.  Without the stand-ins the tests are skipped.

Every file is read back exactly whichever way its bytes took; the bytes
END counts as read with cuFile are the ones the library read (its log);
auto reads nothing with cuFile where libcufile would run in compatibility
mode; on fails a run, not the service, when cuFile cannot be used or
refuses a file; a file truncated while runs read it fails them or is read
whole.
"""
import os

import pyarrow as pa
import pytest

from service_client import ENGINE, FAKE_GPU, client_fixture, write
from test_service import Service
from test_service_data_path import (QUALS, registered, replaced_then_rewritten, scan_all,
                                    table, truncated_during_runs,
                                    two_files_and_a_file_twice)
from test_service_scan import expected, rows_of, run

pytestmark = pytest.mark.skipif(not FAKE_GPU or ENGINE != 2,
                                reason="the cuFile path: make -C test/gpu scanfake")

client = client_fixture("scan_client")

FAKE_CUFILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "bin",
                           "fake", "libcufile.so.0")


@pytest.fixture
def cufile_log(tmp_path, monkeypatch):
    """The stand-in library's log of reads, for the services started after"""
    log = tmp_path / "cufile.log"
    monkeypatch.setenv("PG_WARP_FAKE_CUFILE_LOG", str(log))
    return log


def logged_reads(log):
    if not log.exists():
        return 0, 0
    lines = log.read_text().split("\n")
    return (sum(int(x.split()[1]) for x in lines if x.startswith("read ")),
            sum(1 for x in lines if x in ("register", "register O_DIRECT")))


def registered_o_direct(log):
    """The registrations of descriptors opened with O_DIRECT"""
    return log.read_text().split("\n").count("register O_DIRECT")


def o_direct_allowed(path):
    """Does the file system of file path take O_DIRECT opens"""
    try:
        os.close(os.open(str(path), os.O_RDONLY | os.O_DIRECT))
        return True
    except OSError:
        return False


def start(tmp_path, setting, library=FAKE_CUFILE, name="svc"):
    """The stand-in GPU service with --gpudirect setting; no file pages
    registered (they would serve the runs after the first)"""
    d = tmp_path / name
    d.mkdir()
    return Service(str(d), argv=["--threads", "2", "--fatbin", "fake", "--gpu-cache-size", "0",
                                 "--pinned-files", "0",
                                 "--gpudirect", setting, "--cufile-library", library])


def stop(s):
    assert s.proc.poll() is None, "the service died:\n" + s.log()
    s.stop()


@pytest.mark.parametrize("gds", [False, True], ids=["compat", "gds"])
def test_read_with_cufile(client, tmp_path, monkeypatch, cufile_log, gds):
    """on: every stored buffer but the utf8 offsets (checked on the host)
    is read with cuFile, in the mode the library reports"""
    assert os.path.exists(FAKE_CUFILE), "make -C test/gpu bin/fake/libcufile.so.0"
    if gds:
        monkeypatch.setenv("PG_WARP_FAKE_CUFILE_GDS", "1")
    s = start(tmp_path, "on")
    try:
        t = table(20000)
        f = write(tmp_path / "a.arrow", t, 1500)
        end = scan_all(client, s, f, t, 1500)
        offsets = 4 * (20000 + 14) * 2          # both runs read the utf8 offsets
        assert 0 < end["direct"] <= end["bytes_read"] - offsets, end
        assert end["mapped"] == 0, end
        # summed over the two runs: WARP_CUFILE_GDS 1, WARP_CUFILE_COMPAT 2 each
        assert end["direct_mode"] == (2 if gds else 4), end
        read, registered = logged_reads(cufile_log)
        assert read == end["direct"] and registered == 2, (read, registered, end)
        # O_DIRECT only for GPUDirect Storage: in compatibility mode the page cache serves
        assert registered_o_direct(cufile_log) == (2 if gds and o_direct_allowed(f) else 0)
        assert "files are read with cuFile" in s.log()
    finally:
        stop(s)


def test_buffers_of_several_slices(client, tmp_path, cufile_log):
    """One batch whose utf8 data (2.9 MB) takes two of the I/O threads'
    2 MiB slices: each slice lands at its place"""
    s = start(tmp_path, "on")
    try:
        n = 120000
        t = pa.table({"a": pa.array(range(n), pa.int32()),
                      "s": pa.array([None if i % 11 == 0 else "v%d-%022d" % (i % 97, i)
                                     for i in range(n)])})
        assert t.column(1).chunks[0].buffers()[2].size > 2 << 20
        f = write(tmp_path / "a.arrow", t, n)
        blocks, end, error = run(client, s, "sgt", [f])
        assert error is None, error
        assert rows_of(blocks) == expected(t, n, QUALS["sgt"])
        assert int(end["direct"]) > 2 << 20, end
        assert logged_reads(cufile_log)[0] == int(end["direct"])
    finally:
        stop(s)


def test_two_files_and_a_file_twice(client, tmp_path, cufile_log):
    s = start(tmp_path, "on")
    try:
        end = two_files_and_a_file_twice(client, s, tmp_path)
        assert int(end["direct"]) > 0 and logged_reads(cufile_log)[1] == 3
    finally:
        stop(s)


def test_registered_pages_come_first(client, tmp_path, cufile_log):
    """With --pinned-files the first run reads with cuFile and queues the
    file's pages; once they are registered they serve the stored buffers,
    and nothing more is read with cuFile"""
    d = tmp_path / "svc"
    d.mkdir()
    s = Service(str(d), argv=["--threads", "2", "--fatbin", "fake", "--gpu-cache-size", "0",
                              "--pinned-files", "256", "--gpudirect", "on",
                              "--cufile-library", FAKE_CUFILE])
    try:
        t = table(20000)
        f = write(tmp_path / "a.arrow", t, 1500)
        blocks, first, error = run(client, s, "pos", [f])
        assert error is None and rows_of(blocks) == expected(t, 1500, QUALS["pos"])
        assert int(first["direct"]) > 0 and int(first["to_pin"]) > 0, first
        assert registered(s) > 0
        end = scan_all(client, s, f, t, 1500)
        assert end["mapped"] > 0 and end["direct"] == 0, end
        assert logged_reads(cufile_log)[0] == int(first["direct"])
    finally:
        stop(s)


def test_replaced_or_rewritten_file_is_read_again(client, tmp_path, cufile_log):
    """Each run registers the file it opened: a file replaced under its
    name, or rewritten in place, is read as it is now"""
    s = start(tmp_path, "on")
    try:
        assert replaced_then_rewritten(client, s, tmp_path, "direct")["direct"] > 0
    finally:
        stop(s)


@pytest.mark.parametrize("setting", ["off", "auto"])
def test_pread_unless_on(client, tmp_path, cufile_log, setting):
    """off never loads cuFile; auto loads it only with the nvidia-fs driver
    (absent here), and reads with pread"""
    if os.path.exists("/proc/driver/nvidia-fs/version") and setting == "auto":
        pytest.skip("this machine has nvidia-fs: auto reads with cuFile")
    s = start(tmp_path, setting)
    try:
        t = table(20000)
        f = write(tmp_path / "a.arrow", t, 1500)
        end = scan_all(client, s, f, t, 1500)
        assert end["direct"] == 0 and end["direct_mode"] == 0 and end["bytes_read"] > 0, end
        assert logged_reads(cufile_log) == (0, 0)
        if setting == "auto":
            assert "not used (no nvidia-fs driver)" in s.log()
    finally:
        stop(s)


@pytest.fixture
def nvfs(tmp_path, monkeypatch):
    """The services started after see the nvidia-fs driver loaded (a file
    in place of /proc/driver/nvidia-fs/version)"""
    path = tmp_path / "nvidia-fs-version"
    path.write_text("version: 2.17\n")
    monkeypatch.setenv("PG_WARP_TEST_NVFS_PROC", str(path))


@pytest.mark.parametrize("how", ["gds", "compat", "file refused"])
def test_auto_with_nvidia_fs(client, tmp_path, monkeypatch, cufile_log, nvfs, how):
    """auto where the nvidia-fs driver is loaded: cuFile reads the files when
    libcufile runs GPUDirect Storage; in compatibility mode it is not used;
    a file it refuses is read with pread, the run right (the first refusal
    logged), and so is the next run"""
    if how != "compat":
        monkeypatch.setenv("PG_WARP_FAKE_CUFILE_GDS", "1")
    if how == "file refused":
        monkeypatch.setenv("PG_WARP_FAKE_CUFILE_REFUSE", "1")
    s = start(tmp_path, "auto")
    try:
        t = table(20000)
        f = write(tmp_path / "a.arrow", t, 1500)
        for _ in range(2):
            end = scan_all(client, s, f, t, 1500)
            if how == "gds":
                # WARP_CUFILE_GDS (1) in each of the quals' runs
                assert end["direct"] > 0 and end["direct_mode"] == len(QUALS), end
            else:
                assert end["direct"] == 0 and end["direct_mode"] == 0, end
                assert end["bytes_read"] > 0, end
        if how == "gds":
            assert "files are read with cuFile (%s, GPUDirect Storage)" % FAKE_CUFILE in s.log()
            assert logged_reads(cufile_log)[0] == 2 * end["direct"]     # both rounds
        elif how == "compat":
            assert "runs in compatibility mode here; files are read with pread" in s.log()
            assert logged_reads(cufile_log) == (0, 0)
        else:
            assert "is read with pread, not cuFile: cuFileHandleRegister failed: error 5027" \
                in s.log()
            assert s.log().count("is read with pread, not cuFile") == 1
            assert logged_reads(cufile_log)[0] == 0
    finally:
        stop(s)


def fails_with(client, s, f, words):
    blocks, end, error = run(client, s, "pos", [f])
    assert error is not None and words in error[1], (error, end)


@pytest.mark.parametrize("how", ["no library", "no driver", "file refused"])
def test_on_fails_the_run_when_cufile_cannot_read(client, tmp_path, monkeypatch, how):
    """on, and cuFile unusable or refusing the file: the run fails with
    why (the next run too), the service lives on"""
    library = FAKE_CUFILE
    if how == "no library":
        library = str(tmp_path / "no-such-libcufile.so")
    elif how == "no driver":
        monkeypatch.setenv("PG_WARP_FAKE_CUFILE_NO_DRIVER", "1")
    else:
        monkeypatch.setenv("PG_WARP_FAKE_CUFILE_REFUSE", "1")
    s = start(tmp_path, "on", library)
    t = table(5000)
    f = write(tmp_path / "a.arrow", t, 1000)
    words = {"no library": "cuFile cannot be used: could not load",
             "no driver": "cuFile cannot be used: cuFileDriverOpen failed: error 5001",
             "file refused": "with cuFile: cuFileHandleRegister failed: error 5027"}[how]
    try:
        for _ in range(2):
            fails_with(client, s, f, words)
    finally:
        stop(s)


def test_truncated_during_cufile_runs(client, tmp_path, cufile_log):
    """A file truncated while runs read it with cuFile: each run returns
    the file's rows exactly or fails saying so; the service lives on"""
    s = start(tmp_path, "on")
    try:
        outcomes, end = truncated_during_runs(client, s, tmp_path)
        for o in outcomes - {"read whole", "client refused the file"}:
            assert "truncated" in o or "cuFile" in o, outcomes
        assert int(end["direct"]) > 0, end
    finally:
        stop(s)
