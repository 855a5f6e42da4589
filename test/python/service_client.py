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
import subprocess

import pyarrow.ipc as ipc
import pytest

from test_service import ROOT, Service

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


def run_client(client, sock, what, files, *opts, timeout=120):
    """Runs `client OPTS... SOCK WHAT FILES...`, which must exit 0; returns
    (lines, end, error): the output lines other than END and ERROR, each
    split at tabs; END's counters as a dict of strings (None without one);
    ERROR's (code, message) (None without one)."""
    r = subprocess.run([client, *map(str, opts), sock, what, *map(str, files)],
                       capture_output=True, text=True, timeout=timeout)
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
