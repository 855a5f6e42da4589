"""What test_service_agg.py and test_service_scan.py share: the service's small
test clients (test/c/bin/agg_client and scan_client: built with make in a
checkout, taken as they are from the offline bundle), a pg_warp_service
started by hand on a temporary directory with the CPU engine (--no-gpu, two
threads), one run of a client with its output split into lines, and Arrow
files written with pyarrow.

A test module takes the fixtures with
    client = client_fixture("scan_client")
    svc = service_fixture()
"""
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager

import pyarrow.ipc as ipc
import pytest

from test_service import ROOT, Service, as_uid, wait_until

TEST_C = os.path.join(ROOT, "test", "c")

# make -C test/gpu scanfake: the service runs its GPU engine on fake_cuda.c's
# stand-in driver (on LD_LIBRARY_PATH), which does the kernels' work on the host
FAKE_GPU = os.environ.get("PG_WARP_TEST_FAKE_GPU") == "1"
ENGINE = 2 if FAKE_GPU else 1       # the WarpEngine that must run the tests' runs


def client_path(name):
    """The path of test/c/bin/NAME."""
    return os.path.join(TEST_C, "bin", name)


def client_fixture(name):
    """A module fixture: the path of the client NAME, built first with make
    in a checkout; the offline bundle (no test/c/Makefile) ships it built."""
    path = client_path(name)

    @pytest.fixture(scope="module")
    def client():
        if not os.path.exists(os.path.join(TEST_C, "Makefile")):
            assert os.access(path, os.X_OK), "no %s in the bundle" % path
            return path
        subprocess.run(["make", "-s", "-C", TEST_C, "bin/" + name],
                       check=True, capture_output=True)
        return path
    return client


def service_fixture():
    """A fixture: a pg_warp_service of the test's own (--no-gpu, two
    threads; the stand-in GPU with FAKE_GPU), which must still be running
    at the end of the test."""
    @pytest.fixture
    def svc(tmp_path):
        d = tmp_path / "svc"
        d.mkdir()
        s = Service(str(d), argv=["--threads", "2"] +
                    (["--fatbin", "fake"] if FAKE_GPU else ["--no-gpu"]))
        try:
            yield s
        finally:
            assert s.proc.poll() is None, "the service died:\n" + s.log()
            s.stop()
    return svc


def run_client(client, sock, what, files, *opts, timeout=120, uid=None):
    """Runs `client OPTS... SOCK WHAT FILES...` (as uid when given), which
    must exit 0; returns (lines, end, error): the output lines other than
    END and ERROR, each split at tabs; END's counters as a dict of strings
    (None without one); ERROR's (code, message) (None without one)."""
    r = subprocess.run([client, *map(str, opts), sock, what, *map(str, files)],
                       capture_output=True, text=True, timeout=timeout,
                       preexec_fn=None if uid is None else as_uid(uid))
    assert r.returncode == 0, r.stderr
    lines, end, error = [], None, None
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "END":
            end = dict(x.split("=", 1) for x in f[1:])
        elif f[0] == "ERROR":
            error = (int(f[1]), f[2])
        else:
            lines.append(f)
    return lines, end, error


def write(path, table, chunk=None, compression=None):
    """Writes table as the Arrow file path in record batches of at most
    chunk rows (none for an empty table); returns the path as a string."""
    opts = ipc.IpcWriteOptions(compression=compression)
    with ipc.new_file(str(path), table.schema, options=opts) as w:
        if table.num_rows:
            w.write_table(table, max_chunksize=chunk)
    return str(path)


def unused_uid():
    """A uid that no process has (so that its count of threads is the
    service's and its client's alone); no user of that uid need exist."""
    used = set()
    for p in os.listdir("/proc"):
        try:
            used.add(os.stat("/proc/" + p).st_uid)
        except OSError:
            pass
    first = 47000 + os.getpid() % 1000      # apart from another session's test
    return next(u for u in range(first, first + 1000) if u not in used)


def task_count(pid):
    """The threads of process pid now."""
    return len(os.listdir("/proc/%d/task" % pid))


@contextmanager
def thread_limited_service(argv):
    """A pg_warp_service of a uid of its own (root only) in a directory of
    that uid, and limit(allowed): from then on the service may start only
    `allowed` threads beyond its idle ones while one client of the uid runs
    (RLIMIT_NPROC, which counts the uid's threads: the service's and that
    client's).  Yields (service, uid, directory, limit); limit(None) lifts it."""
    uid = unused_uid()
    d = tempfile.mkdtemp(prefix="pg_warp_threads.", dir="/tmp")
    os.chmod(d, 0o755)
    os.chown(d, uid, -1)
    s = Service(d, argv=argv, uid=uid)
    idle = task_count(s.proc.pid)

    def limit(allowed):
        # the threads of the last run are gone first (joined when its replies went out)
        wait_until(lambda: task_count(s.proc.pid) == idle, 10, "the last run's threads to end")
        # the soft limit (None: the hard one), set by a process of the uid:
        # root may lack CAP_SYS_RESOURCE, which another uid's limits take
        with open("/proc/%d/limits" % s.proc.pid) as f:
            hard = next(ln.split()[3] for ln in f if ln.startswith("Max processes"))
        soft = hard if allowed is None else str(idle + 1 + allowed)
        subprocess.run(["prlimit", "--pid", str(s.proc.pid), "--nproc=%s:" % soft],
                       check=True, preexec_fn=as_uid(uid))
    try:
        yield s, uid, d, limit
    finally:
        assert s.proc.poll() is None, "the service died:\n" + s.log()
        s.stop()
        shutil.rmtree(d, ignore_errors=True)
