"""The engine under faults and load (issue 11, item 7): GpuPreAgg runs that are
cancelled, time out, or lose the warp service mid-run, and many sessions
running engine queries at once (pgbench) with no error and no leaked memory.

Each test uses a cluster of its own (test_service.Cluster: pg_warp preloaded,
so the service runs), since some kill the service.  The data is a large
Arrow file written with pyarrow, so that a run lasts long enough to be
interrupted on this machine's CPU engine.
"""
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pyarrow as pa
import pytest

from engine_interrupt import (cancel_in_flight, in_flight, kill_service_mid_run,
                              running_tasks, start_slow, statement_timeout)
from pg_sql import Cluster

ROWS = int(os.environ.get("PG_WARP_FAULT_ROWS", 24_000_000))
SOAK_SECONDS = int(os.environ.get("PG_WARP_SOAK_SECONDS", 60))
ON = ("SET pg_warp.engine_startup_cost = 0",)
# interrupted runs use the CPU engine: over 24 M rows it runs long enough to be
# interrupted on any host, where a GPU ends the run in milliseconds (the GPU
# runner checks the same cancel flag between batches)
SLOW_ON = ON + ("SET pg_warp.engine = cpu",)

# a grouping over every row: slow enough to interrupt
SLOW = ("SELECT k, count(*), sum(v), max(w) FROM faults.big "
        "WHERE v % 7 <> 3 GROUP BY k")


@pytest.fixture(scope="module")
def data():
    d = tempfile.mkdtemp(prefix="pg_warp_faults.")
    os.chmod(d, 0o755)
    rng = np.random.default_rng(7)
    path = os.path.join(d, "big.arrow")
    schema = pa.schema([("k", pa.int32()), ("v", pa.int64()), ("w", pa.float64())])
    with pa.ipc.new_file(path, schema) as w:
        left = ROWS
        while left > 0:
            n = min(left, 1 << 20)
            w.write_batch(pa.record_batch([
                pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
                pa.array(rng.integers(-10**9, 10**9, n, dtype=np.int64)),
                pa.array(rng.random(n))], schema=schema))
            left -= n
    os.chmod(path, 0o644)
    small = os.path.join(d, "small.arrow")
    with pa.ipc.new_file(small, schema) as w:
        w.write_batch(pa.record_batch([pa.array(np.arange(5000, dtype=np.int32) % 50),
                                       pa.array(np.arange(5000, dtype=np.int64)),
                                       pa.array(np.linspace(0, 1, 5000))], schema=schema))
    os.chmod(small, 0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(data):
    c = Cluster()
    try:
        c.sql("CREATE SCHEMA faults")
        for t in ("big", "small"):
            c.sql("CREATE FOREIGN TABLE faults.%s (k int4, v int8, w float8) SERVER arrow_fdw "
                  "OPTIONS (file '%s/%s.arrow')" % (t, data, t))
        yield c
    finally:
        c.destroy()


def test_plan_is_gpupreagg(cluster):
    r = cluster.run("EXPLAIN (COSTS OFF) " + SLOW, settings=ON)
    assert r.returncode == 0 and "GpuPreAgg" in r.stdout, r.stdout + r.stderr


def test_cancel_stops_the_run(cluster):
    p = start_slow(cluster, "gpa_cancel", SLOW_ON, SLOW)
    cancel_in_flight(cluster, p, in_flight(cluster, "gpa_cancel"))
    # the service serves the next query
    assert cluster.sql("SELECT count(*) FROM faults.small") == "5000"


def test_statement_timeout(cluster):
    statement_timeout(cluster, SLOW, SLOW_ON)


def test_service_killed_mid_run(cluster):
    kill_service_mid_run(cluster, "gpa_kill", SLOW_ON, SLOW)
    # the next engine query works
    r = cluster.run("SELECT count(*), sum(v) FROM faults.small", settings=ON)
    assert r.returncode == 0 and r.stdout.strip() == "5000|12497500", r.stderr


def copy_of_big(cluster, data, name):
    """A copy of big.arrow (data/NAME.arrow) and a foreign table over it
    (faults.NAME): its path and the table's name."""
    path = os.path.join(data, name + ".arrow")
    shutil.copyfile(os.path.join(data, "big.arrow"), path)
    os.chmod(path, 0o644)
    cluster.sql("CREATE FOREIGN TABLE faults.%s (k int4, v int8, w float8) SERVER arrow_fdw "
                "OPTIONS (file '%s')" % (name, path))
    return path, "faults." + name


def start_in_flight(cluster, app, mapped, sql):
    """sql started on the CPU engine (pg_warp.map_arrow_files = mapped) in
    session app; returns its Popen once the service runs it."""
    p = start_slow(cluster, app, SLOW_ON + ("SET pg_warp.map_arrow_files = %s" % mapped,), sql)
    in_flight(cluster, app)
    return p


@pytest.mark.parametrize("mapped", ["on", "off"])
def test_file_truncated_mid_run(cluster, data, mapped):
    """The Arrow file shrinks to a quarter while the service's CPU engine
    reads it, through a mapping (pg_warp.map_arrow_files, where a read past
    the new end raises SIGBUS in the service) or through pread: the query
    fails with "changed during scan", the same service serves the next
    query (it did not die), and the rows read before are never an answer."""
    path, table = copy_of_big(cluster, data, "shrink_" + mapped)
    pid = cluster.service_pid()
    p = start_in_flight(cluster, "gpa_shrink_" + mapped, mapped, SLOW.replace("faults.big", table))
    os.truncate(path, os.path.getsize(path) // 4)
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0 and out.strip() == "", out
    # mapped: the SIGBUS handler's flag (file_map.c); read: pread's end of file
    why = "(it shrank, or a page of it could not be read)" if mapped == "on" else "(it shrank)"
    assert "55000" in err and 'file "%s" changed during scan %s' % (path, why) in err, err
    assert cluster.service_pid() == pid, "the service died"
    r = cluster.run("SELECT count(*), sum(v) FROM faults.small", settings=ON)
    assert r.returncode == 0 and r.stdout.strip() == "5000|12497500", r.stderr
    cluster.sql("DROP FOREIGN TABLE " + table)


@pytest.mark.parametrize("mapped", ["on", "off"])
def test_file_written_mid_run(cluster, data, mapped):
    """A MiB of the Arrow file overwritten in place (same size) while the
    service's CPU engine reads it, mapped or through pread: never a silent
    mix of old and new bytes. The query fails with "changed during scan (it
    was written)" (the service compares the file's modification time when
    its workers are done), or, if the run ended before the write, returns
    the old file's answer; the service lives on."""
    path, table = copy_of_big(cluster, data, "written_" + mapped)
    sql = ("SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) FROM (%s) x"
           % SLOW.replace("faults.big", table))
    old = cluster.run(sql, settings=("SET pg_warp.enabled = off",), timeout=120)
    assert old.returncode == 0, old.stderr
    pid = cluster.service_pid()
    p = start_in_flight(cluster, "gpa_written_" + mapped, mapped, sql)
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        f.write(os.urandom(1 << 20))
    out, err = p.communicate(timeout=60)
    if p.returncode == 0:
        assert out.strip() == old.stdout.strip(), "a changed answer without an error"
    else:
        assert "55000" in err and \
            'file "%s" changed during scan (it was written)' % path in err, err
    assert cluster.service_pid() == pid, "the service died"
    cluster.sql("DROP FOREIGN TABLE " + table)


def service_rss_kb(cluster):
    with open("/proc/%d/status" % cluster.service_pid()) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def test_many_sessions_soak(cluster, data, tmp_path):
    """32 sessions run engine queries (GpuPreAgg and engine filters) for
    SOAK_SECONDS: no error, every answer right, and the service's memory
    does not grow after the first round."""
    script = tmp_path / "engine.sql"
    script.write_text(
        "SET pg_warp.engine_startup_cost = 0;\n"
        "SELECT count(*), sum(v) FROM faults.small WHERE k < 25;\n"
        "SELECT k, count(*), avg(v), min(w) FROM faults.small GROUP BY k;\n"
        "SELECT count(*) FROM faults.small WHERE v % 3 = 0 AND w > 0.5;\n")
    expect = cluster.sql("SET pg_warp.enabled = off; "
                         "SELECT count(*), sum(v) FROM faults.small WHERE k < 25")
    r = cluster.run("SELECT count(*), sum(v) FROM faults.small WHERE k < 25", settings=ON)
    assert r.stdout.strip() == expect
    env = dict(cluster.env)

    def bench(seconds):
        return subprocess.run(["pgbench", "-n", "-c", "32", "-j", "4", "-T", str(seconds),
                               "-f", str(script)], env=env, capture_output=True, text=True,
                              timeout=seconds + 120)

    first = bench(5)
    assert first.returncode == 0, first.stderr
    rss0 = service_rss_kb(cluster)
    soak = bench(SOAK_SECONDS)
    assert soak.returncode == 0, soak.stderr
    assert "number of failed transactions: 0" in soak.stdout or \
        re.search(r"number of transactions actually processed: [1-9]", soak.stdout), soak.stdout
    assert "ERROR" not in soak.stderr, soak.stderr
    rss1 = service_rss_kb(cluster)
    assert rss1 < rss0 * 1.25 + 8192, "service RSS grew from %d kB to %d kB" % (rss0, rss1)
    assert running_tasks(cluster) == 0
    assert int(cluster.status()["connections"]) <= 1
