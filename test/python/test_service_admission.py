"""Admission of runs in the warp service (pg_warp.max_async_tasks, the
service's --max-async-tasks) and the TASKS message behind
pgwarp.service_tasks() and service_status()'s queued_tasks (doc/service.md).

At most max_async_tasks runs execute at once; later ones wait in a FIFO
queue, each right when it runs; a queued run is cancelled by CANCEL or by
closing its connection, and leaves the queue at once.  First against
pg_warp_service started by hand (agg_client and raw messages), then through
PostgreSQL: 32 concurrent GpuPreAgg queries with pg_warp.max_async_tasks = 2,
and pg_cancel_backend() of a query that waits in the queue."""
import os
import struct
import subprocess
import tempfile
import shutil
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from test_service import (ROOT, Cluster, Service, connect, error_of, hello, message,
                          recv_message, wait_until, STATUS_HEAD)
from test_service_agg import CLIENT, bench_table, client, dump, write  # noqa: F401

MSG_STATUS, MSG_CANCEL, MSG_AGG_RUN, MSG_AGG_RESULT, MSG_TASKS = 2, 20, 22, 23, 30
ERR_CANCELED = 8
TASKS_HEAD = struct.Struct("<IIII")          # n_running, n_queued, max_async_tasks, n_entries
TASK = struct.Struct("<IHHIIQq")             # pid, kind, state, queue_position, pad, rows, since
RUNNING, QUEUED = 1, 2


def tasks(svc):
    """(n_running, n_queued, max_async_tasks, [entries as tuples])."""
    with connect(svc.sock) as c:
        hello(c)
        c.sendall(message(MSG_TASKS))
        mtype, payload = recv_message(c)
        assert mtype == MSG_TASKS, (mtype, payload)
        n_run, n_q, limit, n = TASKS_HEAD.unpack_from(payload)
        assert len(payload) == TASKS_HEAD.size + n * TASK.size
        return n_run, n_q, limit, [TASK.unpack_from(payload, TASKS_HEAD.size + i * TASK.size)
                                   for i in range(n)]


def running_tasks(svc):
    with connect(svc.sock) as c:
        hello(c)
        c.sendall(message(MSG_STATUS))
        return STATUS_HEAD.unpack_from(recv_message(c)[1])[5]


@pytest.fixture
def svc2(tmp_path):
    d = tmp_path / "svc"
    d.mkdir()
    s = Service(str(d), argv=["--no-gpu", "--threads", "1", "--max-async-tasks", "2"])
    try:
        yield s
    finally:
        assert s.proc.poll() is None, "the service died:\n" + s.log()
        s.stop()


def expected_text2(f, reps):
    t = ipc.open_file(f).read_all()
    g = t.group_by(["s1", "s2"]).aggregate([([], "count_all")]).to_pylist()
    return sorted("%s\t%s\t%d" % ("N" if r["s1"] is None else "x" + r["s1"].encode().hex(),
                                  "x" + r["s2"].encode().hex(), r["count_all"] * reps) for r in g)


def test_queue_fifo_status_and_results(client, svc2, tmp_path):
    """32 runs with --max-async-tasks 2: never more than 2 run, the others
    are listed as queued (positions 1, 2, ...), and every run is right."""
    f = write(tmp_path / "t.arrow", bench_table(50000, 3), chunk=8192)
    reps = 4
    procs = [subprocess.Popen([client, "--threads", "1", svc2.sock, "text2", *[f] * reps],
                              stdout=subprocess.PIPE, text=True) for _ in range(32)]
    pids = {p.pid for p in procs}
    seen_queued = 0
    try:
        while any(p.poll() is None for p in procs):
            n_run, n_q, limit, entries = tasks(svc2)
            assert limit == 2 and n_run <= 2, (n_run, n_q)
            assert len(entries) == n_run + n_q
            run = [e for e in entries if e[2] == RUNNING]
            queued = [e for e in entries if e[2] == QUEUED]
            # running first, then the queue in order: positions 1, 2, ...
            assert entries == run + queued
            assert [e[3] for e in queued] == list(range(1, len(queued) + 1))
            assert all(e[0] in pids and e[1] == 1 for e in entries), entries
            assert [e[6] for e in queued] == sorted(e[6] for e in queued)
            seen_queued = max(seen_queued, len(queued))
            time.sleep(0.02)
    finally:
        outs = [p.communicate(timeout=300)[0] for p in procs]
    assert seen_queued >= 10, seen_queued
    want = expected_text2(f, reps)
    for out in outs:
        lines = out.splitlines()
        assert lines and lines[-1].startswith("END\tstatus=0"), out[-500:]
        assert sorted("\t".join(l.split("\t")[1:4]) for l in lines[:-1]) == want
    assert tasks(svc2)[:2] == (0, 0) and running_tasks(svc2) == 0


def test_rows_done_grows(client, svc2, tmp_path):
    f = write(tmp_path / "t.arrow", bench_table(50000, 5), chunk=4096)
    # long enough (some 20 M rows on one thread) that the run is still going
    # at the second look, on a fast host too
    p = subprocess.Popen([client, "--threads", "1", svc2.sock, "text2", *[f] * 400],
                         stdout=subprocess.PIPE, text=True)
    try:
        first = wait_until(lambda: [e for e in tasks(svc2)[3] if e[5] > 0], 20, "rows read")
        later = wait_until(lambda: [e for e in tasks(svc2)[3] if e[5] > first[0][5]], 20,
                           "more rows read")
        assert later[0][0] == p.pid and later[0][2] == RUNNING
    finally:
        out = p.communicate(timeout=300)[0]
    assert out.splitlines()[-1].startswith("END\tstatus=0")


def test_cancel_and_close_while_queued(client, svc2, tmp_path):
    """With two long runs executing, a third waits; CANCEL answers CANCELED
    at once and takes it out of the queue; a queued run whose connection
    closes leaves the queue too; the running ones are unaffected."""
    f = write(tmp_path / "long.arrow", bench_table(100000, 9), chunk=16384)
    reps = 30
    payload = dump("text2", [f] * reps, "--threads", 1)
    small = dump("cnt", [write(tmp_path / "s.arrow", pa.table({"v": pa.array([4], pa.int64())}))])
    procs = [subprocess.Popen([client, "--threads", "1", svc2.sock, "text2", *[f] * reps],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        wait_until(lambda: tasks(svc2)[0] == 2, 20, "two runs")
        with connect(svc2.sock) as c:
            hello(c)
            c.sendall(message(MSG_AGG_RUN, payload))
            st = wait_until(lambda: tasks(svc2)[1] == 1 and tasks(svc2), 5, "a queued run")
            assert [e[2:4] for e in st[3] if e[2] == QUEUED] == [(QUEUED, 1)]
            t0 = time.monotonic()
            c.sendall(message(MSG_CANCEL))
            code, msg = error_of(recv_message(c))
            assert code == ERR_CANCELED and "admission" in msg, msg
            assert time.monotonic() - t0 < 1
            assert tasks(svc2)[:2] == (2, 0)
            # the connection serves requests again: a run after the cancel
            c.sendall(message(MSG_AGG_RUN, small))
            wait_until(lambda: tasks(svc2)[1] == 1, 5, "the next run queued")
        # closed while queued: it leaves the queue
        wait_until(lambda: tasks(svc2)[1] == 0, 5, "the closed connection's run to leave")
        assert all(p.poll() is None for p in procs)
        with connect(svc2.sock) as c:
            hello(c)
            c.sendall(message(MSG_AGG_RUN, small))
            c.close()
        wait_until(lambda: tasks(svc2)[1] == 0, 5, "the closed connection's run to leave")
    finally:
        outs = [p.communicate(timeout=300)[0] for p in procs]
    want = expected_text2(f, reps)
    for out in outs:
        lines = out.splitlines()
        assert lines[-1].startswith("END\tstatus=0")
        assert sorted("\t".join(l.split("\t")[1:4]) for l in lines[:-1]) == want
    wait_until(lambda: tasks(svc2)[:2] == (0, 0), 10, "the service to be idle")


# --- through PostgreSQL ---

@pytest.fixture(scope="module")
def pg2():
    """A cluster with pg_warp.max_async_tasks = 2 and an Arrow table t, big
    enough that a run lasts several of the 50 ms polls below (at 400,000
    rows a run took about 12 ms on a 2-core machine, and 32 of them could all
    pass between two polls)."""
    c = Cluster()
    d = tempfile.mkdtemp(prefix="pg_warp_adm.")
    os.chmod(d, 0o755)
    try:
        c.sql("ALTER SYSTEM SET pg_warp.max_async_tasks = 2")
        c.stop()
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "cluster.sh"), "start", c.dir],
                       env=c.env, check=True, capture_output=True)
        n = 4_000_000
        path = os.path.join(d, "t.arrow")
        t = pa.table({"k": pa.array([i % 7 for i in range(n)], pa.int32()),
                      "v": pa.array([(i * 7919) % 100003 for i in range(n)], pa.int64())})
        with ipc.new_file(path, t.schema) as w:
            w.write_table(t, max_chunksize=200000)
        os.chmod(path, 0o644)
        c.sql("CREATE FOREIGN TABLE t (k int4, v int8) SERVER arrow_fdw "
              "OPTIONS (file '%s')" % path)
        yield c
    finally:
        c.destroy()
        shutil.rmtree(d, ignore_errors=True)


QUERY = "SELECT k, count(*), sum(v), max(v) FROM t WHERE v % 3 <> 1 GROUP BY k ORDER BY k"


def test_max_async_tasks_setting(pg2):
    assert pg2.sql("SHOW pg_warp.max_async_tasks") == "2"
    assert pg2.sql("SELECT queued_tasks, max_async_tasks FROM pgwarp.service_status()") == "0|2"
    assert pg2.sql("SELECT count(*) FROM pgwarp.service_tasks()") == "0"
    r = pg2.run("SET pg_warp.max_async_tasks = 3")
    assert r.returncode != 0 and "cannot be changed without restarting" in r.stderr


def test_32_concurrent_queries_with_2_at_once(pg2):
    plan = pg2.sql("EXPLAIN (COSTS OFF) " + QUERY)
    assert "GpuPreAgg" in plan, plan
    want = pg2.sql("SET pg_warp.enabled = off; " + QUERY)
    procs = [subprocess.Popen(["psql", "-XAtq", "-c", QUERY], env=pg2.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(32)]
    max_queued = 0
    try:
        while any(p.poll() is None for p in procs):
            row = pg2.sql("SELECT running_tasks, queued_tasks, "
                          "(SELECT count(*) FROM pgwarp.service_tasks() WHERE state = 'queued') "
                          "FROM pgwarp.service_status()")
            running, queued, listed = map(int, row.split("|"))
            assert running <= 2, row
            max_queued = max(max_queued, queued, listed)
            time.sleep(0.05)
    finally:
        res = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for o, e in res if e][:3]
    assert all(o.strip() == want for o, e in res)
    assert max_queued >= 1, "no query was ever seen queued"


@pytest.fixture
def big_table(pg2):
    """An Arrow table tb of 20 M rows, so that runs last long enough (tens of
    milliseconds even on 16 CPU threads) for a third one to be seen waiting."""
    d = tempfile.mkdtemp(prefix="pg_warp_adm_big.")
    os.chmod(d, 0o755)
    n = 20_000_000
    i = np.arange(n, dtype=np.int64)
    path = os.path.join(d, "tb.arrow")
    t = pa.table({"k": pa.array((i % 7).astype(np.int32)), "v": pa.array((i * 7919) % 100003)})
    with ipc.new_file(path, t.schema) as w:
        w.write_table(t, max_chunksize=1 << 20)
    os.chmod(path, 0o644)
    pg2.sql("CREATE FOREIGN TABLE tb (k int4, v int8) SERVER arrow_fdw "
            "OPTIONS (file '%s')" % path)
    try:
        yield "tb"
    finally:
        pg2.sql("DROP FOREIGN TABLE tb")
        shutil.rmtree(d, ignore_errors=True)


def test_cancel_of_a_queued_query(pg2, big_table):
    """Two queries run; a third waits in the service's queue; its backend,
    cancelled, fails with 57014 at once and its run leaves the queue; the
    two others finish right.  The runs use the CPU engine on a big table:
    on a GPU, from its column cache, they end too fast to be seen waiting."""
    query = QUERY.replace("FROM t ", "FROM %s " % big_table)
    want = pg2.sql("SET pg_warp.enabled = off; " + query)
    env = dict(pg2.env, PGOPTIONS="-c pg_warp.engine=cpu")
    procs = [subprocess.Popen(["psql", "-XAtq", "-c", query, "-c", query, "-c", query,
                               "-c", query],
                              env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(3)]
    try:
        def queued_pid():
            r = pg2.run("SELECT pid FROM pgwarp.service_tasks() WHERE state = 'queued' LIMIT 1")
            return r.returncode == 0 and r.stdout.strip() and int(r.stdout)
        pid = wait_until(queued_pid, 30, "a queued query")
        assert pg2.sql("SELECT pg_cancel_backend(%d)" % pid) == "t"
        wait_until(lambda: pg2.sql("SELECT count(*) FROM pgwarp.service_tasks() "
                                   "WHERE pid = %d AND state = 'queued'" % pid) == "0",
                   5, "the cancelled run to leave the queue")
    finally:
        res = [p.communicate(timeout=300) for p in procs]
    canceled = [e for o, e in res if "canceling statement due to user request" in e]
    assert len(canceled) == 1, [e for o, e in res]
    w = want.split("\n")
    for o, e in res:
        lines = o.strip().split("\n")
        runs = 3 if "canceling" in e else 4
        assert lines == w * runs, (e, o)


def engine_threads(db, sql):
    """The CPU engine's threads of sql's GpuPreAgg (EXPLAIN ANALYZE), after
    checking that the answer is PostgreSQL's and that the CPU engine ran it."""
    cpu = ("SET pg_warp.engine = cpu", "SET max_parallel_workers_per_gather = 0")
    db.same(sql, "GpuPreAgg", cpu, ordered=True, engine="CPU")
    plan = db.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, cpu)
    found = [line.split(":")[1].strip() for line in plan.splitlines()
             if line.strip().startswith("Engine Threads:")]
    assert len(found) == 1, plan
    return int(found[0])


def test_service_threads_setting(pg2):
    """pg_warp.service_threads sets the CPU engine's threads per run (the
    service's --threads); its default 0 is one per CPU the server may run on:
    started under taskset on one CPU, the service runs one thread."""
    cluster_sh = os.path.join(ROOT, "scripts", "cluster.sh")
    assert pg2.sql("SHOW pg_warp.service_threads") == "0"
    r = pg2.run("SET pg_warp.service_threads = 2")
    assert r.returncode != 0 and "cannot be changed without restarting" in r.stderr
    # a run starts no more threads than t has record batches (20)
    allowed = min(len(os.sched_getaffinity(0)), 4_000_000 // 200_000)
    assert engine_threads(pg2, QUERY) == allowed
    try:
        pg2.sql("ALTER SYSTEM SET pg_warp.service_threads = 3")
        pg2.restart()
        assert pg2.sql("SHOW pg_warp.service_threads") == "3"
        assert engine_threads(pg2, QUERY) == 3
        pg2.sql("ALTER SYSTEM RESET pg_warp.service_threads")
        pg2.stop()
        one = str(min(os.sched_getaffinity(0)))
        subprocess.run(["taskset", "-c", one, "bash", cluster_sh, "start", pg2.dir],
                       env=pg2.env, check=True, capture_output=True)
        assert engine_threads(pg2, QUERY) == 1
    finally:
        pg2.sql("ALTER SYSTEM RESET pg_warp.service_threads")
        pg2.restart()
    assert engine_threads(pg2, QUERY) == allowed
