"""The warp service (doc/service.md): pg_warp_service, its supervisor
background worker, the protocol of src/xpu/protocol.h and
pgwarp.service_status().

Most tests run against a cluster of their own (scripts/cluster.sh, pg_warp
preloaded), since they kill and stop processes; the protocol tests start the
service program by hand in a temporary directory.  As root (CI), the cluster
runs as the unprivileged user of cluster.sh, which lets the tests check that
the service refuses other users."""
import os
import resource
import signal
import socket
import stat
import struct
import subprocess
import time
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from pg_sql import CLUSTER, ON, ROOT, Cluster, alive, free_port, wait_until  # noqa: F401
from test_extension import plain_cluster, psql as plain_psql  # noqa: F401 (fixture)

IS_ROOT = os.geteuid() == 0

# xpu/protocol.h
MAGIC = 0x50524157
VERSION = 11
# On a GPU the service allocates each GPU's two slots' pinned buffers when it
# starts (gpu_agg_prewarm: 336 MiB each), so idle it holds them; without a
# GPU it holds nothing until queries run
SLOTS_PINNED_MAX = 2 * (512 << 20)


def idle_memory_ok(mem, devices):
    """STATUS's memory_in_use of a service that has run nothing"""
    return mem == 0 if devices == 0 else 0 < mem <= devices * SLOTS_PINNED_MAX
HEADER = struct.Struct("<IHHII")            # magic, version, type, length, reserved
MSG_HELLO, MSG_STATUS, MSG_ERROR, MSG_AGG_RESULT, MSG_DEVICES = 1, 2, 3, 23, 31
DEVICES_SELFTEST = 0x0001
DRIVER_READY, DRIVER_ABSENT, DRIVER_FAILED = 1, 2, 3
DEVICES_HEAD = struct.Struct("<II192s")     # WarpDevices: driver, n_devices, detail
DEVICE_DETAIL_SIZE = 120 + 32 + 16 + 240    # WarpDeviceDetail
ERR_PROTOCOL, ERR_VERSION, ERR_UNSUPPORTED = 1, 2, 3
STATUS_HEAD = struct.Struct("<IIqqQIIIIQQ")  # WarpStatus up to engine_detail
STATUS_SIZE = 64 + 192 + 16 * 120


def service_program():
    libdir = subprocess.run(["pg_config", "--pkglibdir"], check=True,
                            capture_output=True, text=True).stdout.strip()
    return os.path.join(libdir, "pg_warp_service")


def parent_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        yield c
    finally:
        c.destroy()


@pytest.fixture
def own_cluster():
    """A cluster for one test that stops or crash-restarts it."""
    c = Cluster()
    try:
        yield c
    finally:
        c.destroy()


@contextmanager
def stopped(pid):
    """SIGSTOP pid for the duration of the block (SIGCONT on every exit)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


# --- the protocol, spoken directly ---

def message(mtype, payload=b"", version=VERSION, magic=MAGIC):
    return HEADER.pack(magic, version, mtype, len(payload), 0) + payload


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_message(sock):
    """(type, payload), or None at end of stream."""
    try:
        head = recv_exact(sock, HEADER.size)
    except ConnectionResetError:
        return None
    if head is None:
        return None
    magic, version, mtype, length, _ = HEADER.unpack(head)
    assert (magic, version) == (MAGIC, VERSION)
    return mtype, recv_exact(sock, length)


def error_of(reply):
    assert reply is not None and reply[0] == MSG_ERROR, reply
    code = struct.unpack_from("<I", reply[1])[0]
    return code, reply[1][8:].split(b"\0")[0].decode()


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def hello(sock):
    sock.sendall(message(MSG_HELLO, struct.pack("<II", os.getpid(), VERSION)))
    mtype, payload = recv_message(sock)
    assert mtype == MSG_HELLO
    return struct.unpack("<II", payload)        # service pid, protocol version


def as_uid(uid):
    """A preexec_fn that makes the child run as uid (and its gid), without
    supplementary groups; the caller must be root."""
    def switch():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return switch


class Service:
    """pg_warp_service started by hand on directory d (as this user, or as
    uid when given: root only, and only a client of that uid is served);
    max_files limits its file descriptors."""

    def __init__(self, d, argv=(), wait=True, max_files=None, max_memory=None, uid=None):
        self.dir = d
        self.sock = os.path.join(d, "pg_warp.sock")
        self.logpath = os.path.join(d, "service.log")
        self.logf = open(self.logpath, "ab")
        self.uid = uid

        def limit():
            if max_files:
                resource.setrlimit(resource.RLIMIT_NOFILE, (max_files, max_files))
            if max_memory:
                resource.setrlimit(resource.RLIMIT_AS, (max_memory, max_memory))
            if uid is not None:
                as_uid(uid)()
        self.proc = subprocess.Popen([service_program(), "-D", d, *argv],
                                     stdout=self.logf, stderr=self.logf,
                                     preexec_fn=limit if max_files or max_memory or
                                     uid is not None else None)
        if wait:
            wait_until(self.answers, 10, "the service to listen")

    def answers(self):
        if self.uid is not None:
            # a connection of this user's would be refused: the log says it listens
            return "listening on" in self.log() or (self.proc.poll() is not None and pytest.fail(
                "the service exited with %s:\n%s" % (self.proc.returncode, self.log())))
        try:
            with connect(self.sock, 2) as s:
                return hello(s)[0] == self.proc.pid
        except OSError:
            return self.proc.poll() is not None and pytest.fail(
                "the service exited with %s:\n%s" % (self.proc.returncode, self.log()))

    def log(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(10)
        self.logf.close()
        return rc


@pytest.fixture
def service(tmp_path):
    s = Service(str(tmp_path))
    try:
        yield s
    finally:
        s.stop()


# --- pgwarp.service_status() and the process tree ---

def test_status(cluster):
    st = cluster.status()
    pid = int(st["pid"])
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = f.read().split(b"\0")
    assert argv[0].endswith(b"/pg_warp_service")
    assert argv[1:3] == [b"-D", cluster.data.encode()]
    # the service is the supervisor's child, not the postmaster's
    supervisor = parent_of(pid)
    assert supervisor != cluster.postmaster_pid()
    assert parent_of(supervisor) == cluster.postmaster_pid()
    with open("/proc/%d/cmdline" % supervisor, "rb") as f:
        assert b"pg_warp service supervisor" in f.read()
    assert st["protocol_version"] == str(VERSION)
    assert st["running_tasks"] == "0"
    assert idle_memory_ok(int(st["memory_in_use"]), int(st["device_count"])), st
    assert st["pinned_file_bytes"] == st["pinned_file_bytes_queued"] == "0", st
    assert int(st["connections"]) >= 1
    if st["engine"] == "cpu only":
        # no GPU (CI): a normal state with its reason, not an error
        assert st["device_count"] == "0" and st["devices"] == "{}"
        assert st["engine_detail"].startswith("no GPU")
    else:
        assert st["engine"] == "gpu" and int(st["device_count"]) >= 1
        assert st["devices"] not in ("{}", "")
    assert cluster.sql("SELECT started_at <= now() AND uptime >= '0' AND "
                       "started_at >= pg_postmaster_start_time() - interval '1 min' "
                       "FROM pgwarp.service_status()") == "t"


def test_status_is_public(cluster):
    # the schema's grants are the extension's business; the function's own
    # EXECUTE privilege is PUBLIC
    cluster.sql("DROP ROLE IF EXISTS svc_nobody; CREATE ROLE svc_nobody LOGIN; "
                "GRANT USAGE ON SCHEMA pgwarp TO svc_nobody")
    r = cluster.run("SET ROLE svc_nobody; SELECT engine <> '' FROM pgwarp.service_status()")
    assert r.returncode == 0 and r.stdout.strip() == "t", r.stderr


def test_kill_service_does_not_restart_cluster(cluster):
    started = cluster.sql("SELECT pg_postmaster_start_time()")
    postmaster = cluster.postmaster_pid()
    old = cluster.service_pid()
    # a session that stays open across the service's death
    env = dict(cluster.env, PGAPPNAME="svc_keep")
    keep = subprocess.Popen(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        keep.stdin.write("SELECT 'before';\n")
        keep.stdin.flush()
        backend = wait_until(lambda: cluster.sql(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'svc_keep'"),
            what="the kept session")
        os.kill(old, signal.SIGKILL)
        new = cluster.new_service(old)
        assert not alive(old)               # reaped by the supervisor
        assert cluster.sql("SELECT pid FROM pg_stat_activity "
                           "WHERE application_name = 'svc_keep'") == backend
        out, err = keep.communicate("SELECT 'after', pid FROM pgwarp.service_status();\n",
                                    timeout=30)
        assert keep.returncode == 0, err
        assert out.split() == ["before", "after|%d" % new]
    finally:
        if keep.poll() is None:
            keep.kill()
            keep.wait()
    assert cluster.sql("SELECT pg_postmaster_start_time()") == started
    assert cluster.postmaster_pid() == postmaster
    log = cluster.log_text()
    assert "terminating any other active server processes" not in log
    assert "pg_warp service (pid %d) was terminated by signal 9" % old in log


def test_run_connection_serves_the_next_run(cluster):
    """A backend keeps the connection of an Arrow run whose replies all came
    for its next run: a session's engine queries use one connection to the
    service (two with the status query's own), not one each.  One the
    service closed (killed and restarted by its supervisor) is replaced: the
    query after the restart answers as before."""
    path = os.path.join(cluster.base, "kept_run.arrow")    # readable by the server
    n = 50_000
    t = pa.table({"g": pa.array(np.arange(n) % 7, pa.int32()),
                  "v": pa.array(np.arange(n), pa.int64())})
    with ipc.new_file(path, t.schema) as w:
        for b in t.to_batches(max_chunksize=10_000):
            w.write_batch(b)
    os.chmod(path, 0o644)
    cluster.sql("DROP FOREIGN TABLE IF EXISTS kept_run; "
                "CREATE FOREIGN TABLE kept_run (g int, v bigint) SERVER arrow_fdw "
                "OPTIONS (file '%s')" % path)
    q = "SELECT g, sum(v) FROM kept_run WHERE v % 3 = 0 GROUP BY g ORDER BY g"
    want = "\n".join("%d|%d" % (g, sum(v for v in range(n) if v % 7 == g and v % 3 == 0))
                      for g in range(7))
    cpu = ON + ("SET pg_warp.engine = cpu",)
    assert cluster.engine_ran(q, "GpuPreAgg", settings=cpu, engine="CPU")
    conns = "SELECT 'conns', connections FROM pgwarp.service_status()"
    # no other backend's connection left: the status query's own alone
    wait_until(lambda: cluster.status()["connections"] == "1", what="other connections to close")
    env = dict(cluster.env, PGAPPNAME="svc_kept_run")
    keep = subprocess.Popen(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        script = [x + ";" for x in cpu] + [q + ";"] * 3 + [conns + ";"] + \
            [q + ";"] * 3 + [conns + ";"]
        keep.stdin.write("\n".join(script) + "\n\\echo done\n")
        keep.stdin.flush()
        lines = []
        while not lines or lines[-1] != "done":
            lines.append(keep.stdout.readline().rstrip("\n"))
        got = "\n".join(lines)
        assert got.count(want) == 6, got
        # the session's kept connection and the status query's own
        assert [x for x in lines if x.startswith("conns|")] == ["conns|2", "conns|2"], got
        old = cluster.service_pid()
        os.kill(old, signal.SIGKILL)
        cluster.new_service(old)
        out, err = keep.communicate(q + ";\n" + q + ";\n" + conns + ";\n", timeout=60)
        assert keep.returncode == 0, err
        assert out.count(want) == 2, out
        assert out.strip().endswith("conns|2"), out
    finally:
        if keep.poll() is None:
            keep.kill()
            keep.wait()
        cluster.sql("DROP FOREIGN TABLE IF EXISTS kept_run")
        os.unlink(path)


def test_outage_is_a_clear_error(cluster):
    old = cluster.service_pid()
    supervisor = parent_of(old)
    with stopped(supervisor):               # no restart while we look
        os.kill(old, signal.SIGKILL)
        wait_until(lambda: not alive(old), what="the service to die")  # a zombie
        t0 = time.monotonic()
        r = cluster.run("SELECT * FROM pgwarp.service_status()")
        assert time.monotonic() - t0 < 5
        assert r.returncode != 0
        assert "ERROR:  pg_warp service is not running" in r.stderr
        assert "HINT:  The pg_warp supervisor restarts the service" in r.stderr
        # the same error code every time, for applications that retry
        r = cluster.run("SELECT * FROM pgwarp.service_status()",
                        settings=["\\set VERBOSITY verbose"])
        assert "08006" in r.stderr
    cluster.new_service(old)


def test_wait_is_bounded_and_interruptible(cluster):
    pid = cluster.service_pid()
    with stopped(pid):                      # accepts connections, never answers
        t0 = time.monotonic()
        r = cluster.run("SELECT * FROM pgwarp.service_status()",
                        settings=["SET pg_warp.service_timeout = '500ms'"])
        assert "pg_warp service did not answer within 500 ms" in r.stderr
        assert time.monotonic() - t0 < 5
        t0 = time.monotonic()
        r = cluster.run("SELECT * FROM pgwarp.service_status()",
                        settings=["SET statement_timeout = '300ms'"])
        assert "canceling statement due to statement timeout" in r.stderr
        assert time.monotonic() - t0 < 5
        # a cancel from another session reaches the waiting backend
        env = dict(cluster.env, PGAPPNAME="svc_wait")
        waiter = subprocess.Popen(["psql", "-XAtq", "-c", "SELECT * FROM pgwarp.service_status()"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        wait_until(lambda: cluster.sql("SELECT count(*) FROM pg_stat_activity WHERE "
                                       "application_name = 'svc_wait' AND wait_event = 'Extension'")
                   == "1", what="the backend to wait for the service")
        cluster.sql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = 'svc_wait'")
        _, err = waiter.communicate(timeout=5)
        assert "canceling statement due to user request" in err
    assert cluster.service_pid() == pid     # the service itself was fine all along


def test_catalog_queries_never_wait_for_the_service(cluster):
    # planning a grouping asks the service whether it has a GPU (heap tables
    # are offered to GpuPreAgg only then); a grouping over the system's own
    # tables and views is never offered, so it never waits for a service that
    # does not answer (as the queries of the tests around it and of monitoring
    # tools do)
    pid = cluster.service_pid()
    with stopped(pid):                      # accepts connections, never answers
        for sql in ("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'Extension'",
                    "SELECT relkind, count(*) FROM pg_class GROUP BY 1",
                    "SELECT count(*) FROM information_schema.tables"):
            t0 = time.monotonic()
            r = cluster.run(sql)
            assert r.returncode == 0, (sql, r.stderr)
            assert time.monotonic() - t0 < 3, sql
    assert cluster.service_pid() == pid


def test_many_concurrent_clients(cluster, tmp_path):
    pid = cluster.service_pid()
    script = tmp_path / "status.sql"
    script.write_text("SELECT pid, engine, connections FROM pgwarp.service_status();\n")
    r = subprocess.run(["pgbench", "-n", "-c", "32", "-j", "4", "-T", "4", "-f", str(script)],
                       env=cluster.env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    processed = int(r.stdout.split("number of transactions actually processed: ")[1].split()[0])
    assert processed >= 32 * 4, r.stdout
    assert "number of failed transactions: 0 " in r.stdout, r.stdout
    assert cluster.service_pid() == pid


def test_socket_mode_and_owner(cluster):
    st = os.lstat(cluster.sock)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.stat(cluster.data).st_uid


@pytest.mark.skipif(not IS_ROOT, reason="needs root to act as other users")
def test_other_users_are_refused(cluster):
    owner = os.stat(cluster.data).st_uid
    assert owner != 0
    # root passes the file permission check: the service's uid check refuses it
    with connect(cluster.sock) as s:
        try:
            s.sendall(message(MSG_HELLO, struct.pack("<II", os.getpid(), VERSION)))
        except BrokenPipeError:
            pass
        assert recv_message(s) is None
    assert "refused a connection from uid 0" in cluster.log_text()
    # an ordinary other user does not get past the socket's mode
    probe = ("import socket; s = socket.socket(socket.AF_UNIX)\n"
             "try:\n    s.connect(%r)\nexcept PermissionError:\n    print('denied')\n"
             % cluster.sock)
    r = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", probe],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "denied", r.stdout + r.stderr
    # the owner is served
    py = ("import socket, struct; s = socket.socket(socket.AF_UNIX); s.connect(%r)\n"
          "s.sendall(struct.pack('<IHHII', %d, %d, %d, 8, 0) + struct.pack('<II', 1, %d))\n"
          "print(struct.unpack('<IHHII', s.recv(16))[2])\n"
          % (cluster.sock, MAGIC, VERSION, MSG_HELLO, VERSION))
    owner_name = subprocess.run(["id", "-nu", str(owner)], capture_output=True,
                                text=True).stdout.strip()
    r = subprocess.run(["runuser", "-u", owner_name, "--", "/usr/bin/python3", "-c", py],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == str(MSG_HELLO), r.stdout + r.stderr


def test_terminated_supervisor_comes_back(cluster):
    """SIGTERM to the supervisor (what the postmaster sends at shutdown): it
    stops its service and exits with code 1; while the cluster runs, the
    postmaster starts it again (bgw_restart_time), without a cluster restart."""
    started = cluster.sql("SELECT pg_postmaster_start_time()")
    old = cluster.service_pid()
    supervisor = parent_of(old)
    os.kill(supervisor, signal.SIGTERM)
    wait_until(lambda: not alive(old), 10, "the old service to stop")
    new = cluster.new_service(old)
    assert parent_of(new) != supervisor
    assert cluster.sql("SELECT pg_postmaster_start_time()") == started


# --- stopping and crashing the cluster ---

def test_stopping_the_cluster_stops_the_service(own_cluster):
    pid = own_cluster.service_pid()
    supervisor = parent_of(pid)
    own_cluster.stop()
    wait_until(lambda: not alive(pid), 10, "the service to exit")
    assert not alive(supervisor)
    assert not os.path.exists(own_cluster.sock)


def test_killed_supervisor_takes_its_service_along(own_cluster):
    """kill -9 of the supervisor is a crash of a postmaster child: PostgreSQL
    restarts the cluster.  The old service must not outlive its supervisor,
    and the new supervisor starts a new one."""
    old = own_cluster.service_pid()
    os.kill(parent_of(old), signal.SIGKILL)
    wait_until(lambda: not alive(old), 10, "the old service to exit")
    wait_until(lambda: own_cluster.run("SELECT 1").returncode == 0, 30,
               "the cluster to restart")
    own_cluster.new_service(old, timeout=30)


# --- without shared_preload_libraries ---

def test_status_without_preload(plain_cluster):  # noqa: F811 (fixture)
    env = plain_cluster
    plain_psql(env, "CREATE EXTENSION IF NOT EXISTS pg_warp")
    r = subprocess.run(["psql", "-XAtq", "-c", "SELECT * FROM pgwarp.service_status()"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "ERROR:  pg_warp service is not available" in r.stderr
    assert "shared_preload_libraries" in r.stderr


def test_gpu_functions_without_preload(plain_cluster):  # noqa: F811 (fixture)
    """Without the service the GPUs are not known: gpu_devices() says so in
    a WARNING and returns no rows, gpu_selftest() is an error."""
    env = plain_cluster
    plain_psql(env, "CREATE EXTENSION IF NOT EXISTS pg_warp")
    r = subprocess.run(["psql", "-XAtq", "-c", "SELECT count(*) FROM pgwarp.gpu_devices()"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == "0", r.stderr
    assert "WARNING:  could not ask the pg_warp service for its GPUs: " \
        "pg_warp service is not available" in r.stderr, r.stderr
    r = subprocess.run(["psql", "-XAtq", "-c", "SELECT * FROM pgwarp.gpu_selftest()"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "ERROR:  pg_warp service is not available" in r.stderr


# --- the service program and its protocol, without PostgreSQL ---

def test_protocol(service):
    with connect(service.sock) as s:
        pid, version = hello(s)
        assert (pid, version) == (service.proc.pid, VERSION)
        s.sendall(message(MSG_STATUS))
        mtype, payload = recv_message(s)
        assert mtype == MSG_STATUS and len(payload) == STATUS_SIZE
        (spid, sversion, started, uptime, mem, tasks, conns, engine,
         ndev, files_pinned, files_to_pin) = STATUS_HEAD.unpack_from(payload)
        assert (spid, sversion, tasks, conns) == (service.proc.pid, VERSION, 0, 1)
        assert (files_pinned, files_to_pin) == (0, 0)
        assert idle_memory_ok(mem, ndev), (mem, ndev)
        assert abs(started / 1e6 - time.time()) < 60 and uptime >= 0
        assert engine in (1, 2) and (ndev == 0) == (engine == 1)
        # a reply type is no request: an ERROR, the session goes on
        s.sendall(message(MSG_AGG_RESULT, b"x" * 10))
        assert error_of(recv_message(s)) == (ERR_UNSUPPORTED, "message type 23 is not a request")
        s.sendall(message(MSG_STATUS))
        assert recv_message(s)[0] == MSG_STATUS


def test_protocol_errors_close_the_session(service):
    cases = [
        (message(MSG_HELLO, struct.pack("<II", 1, 99), version=99), ERR_VERSION,
         "protocol version mismatch: the service speaks version %d, the client version 99" % VERSION),
        (message(MSG_STATUS), ERR_PROTOCOL, "message type 2 before HELLO"),
        (message(MSG_HELLO, b"abc"), ERR_PROTOCOL, "HELLO of 3 bytes"),
        (message(MSG_HELLO, magic=0x12345678), ERR_PROTOCOL, "bad magic"),
        (HEADER.pack(MAGIC, VERSION, MSG_HELLO, 1 << 30, 0), ERR_PROTOCOL, "too long"),
    ]
    for raw, code, text in cases:
        with connect(service.sock) as s:
            s.sendall(raw)
            got = error_of(recv_message(s))
            assert got[0] == code and text in got[1], got
            assert recv_message(s) is None      # closed after the error
    assert service.answers()


def test_unused_message_numbers_are_unknown(service):
    """16 to 19 and 21 (once reserved for query messages never served) are
    unknown types: ERROR, and the session closes."""
    for mtype in (16, 17, 18, 19, 21):
        with connect(service.sock) as s:
            hello(s)
            s.sendall(message(mtype, b"x" * 10))
            assert error_of(recv_message(s)) == (ERR_PROTOCOL, "unknown message type %d" % mtype)
            assert recv_message(s) is None
    assert service.answers()


def test_slow_and_dead_clients_do_not_block_others(service):
    slow = connect(service.sock)
    slow.sendall(message(MSG_HELLO, struct.pack("<II", 1, VERSION))[:7])   # half a header
    dead = connect(service.sock)
    hello(dead)
    dead.sendall(message(MSG_STATUS) * 200)     # replies it never reads
    t0 = time.monotonic()
    for _ in range(20):
        assert service.answers()
    assert time.monotonic() - t0 < 5
    dead.close()
    # the slow client finishes its message later and is served
    slow.sendall(message(MSG_HELLO, struct.pack("<II", 1, VERSION))[7:])
    assert recv_message(slow)[0] == MSG_HELLO
    slow.close()


def test_no_gpu_option(tmp_path):
    """--no-gpu serves with the CPU engine and never loads the GPU driver."""
    s = Service(str(tmp_path), argv=["--no-gpu"])
    try:
        with connect(s.sock) as c:
            hello(c)
            c.sendall(message(MSG_STATUS))
            mtype, payload = recv_message(c)
            engine, ndev = STATUS_HEAD.unpack_from(payload)[7:9]
            assert (mtype, engine, ndev) == (MSG_STATUS, 1, 0)
        with open("/proc/%d/maps" % s.proc.pid) as f:
            assert "libcuda" not in f.read()
        assert "no GPU: started with --no-gpu; the CPU engine serves" in s.log()
    finally:
        s.stop()


def devices_request(flags=0, path=b""):
    return message(MSG_DEVICES, struct.pack("<II", flags, len(path)) + path)


def test_devices_without_gpu(tmp_path):
    """DEVICES (pgwarp.gpu_devices(), gpu_selftest()) on a service without a
    GPU: no devices, the reason, the driver absent (not failed); a malformed
    request is an ERROR and the session goes on."""
    s = Service(str(tmp_path), argv=["--no-gpu"])
    try:
        with connect(s.sock) as c:
            hello(c)
            for req in (devices_request(), devices_request(DEVICES_SELFTEST, b"/x/pg_warp.fatbin")):
                c.sendall(req)
                mtype, payload = recv_message(c)
                assert mtype == MSG_DEVICES and len(payload) == DEVICES_HEAD.size
                driver, ndev, detail = DEVICES_HEAD.unpack(payload)
                assert (driver, ndev) == (DRIVER_ABSENT, 0)
                assert detail.split(b"\0")[0] == b"no GPU: started with --no-gpu"
            for bad in (message(MSG_DEVICES, b"abc"), devices_request(0x80),
                        devices_request(DEVICES_SELFTEST),
                        message(MSG_DEVICES, struct.pack("<II", 0, 9) + b"ab")):
                c.sendall(bad)
                assert error_of(recv_message(c))[0] == ERR_PROTOCOL
            c.sendall(devices_request())
            assert recv_message(c)[0] == MSG_DEVICES
    finally:
        s.stop()


def test_gpu_devices_come_from_the_service(cluster):
    """pgwarp.gpu_devices() lists the service's GPUs; the backend never
    loads the CUDA driver itself (the service's loader is the only one)."""
    r = cluster.run("SELECT count(*) FROM pgwarp.gpu_devices(); "
                    "SELECT device_count FROM pgwarp.service_status(); "
                    "SELECT pg_read_file('/proc/self/maps') LIKE '%libcuda%'")
    assert r.returncode == 0, r.stderr
    ndev, service_ndev, backend_cuda = r.stdout.split()
    assert ndev == service_ndev and backend_cuda == "f"
    assert "WARNING" not in r.stderr, r.stderr


def test_gpu_functions_while_the_service_is_down(cluster):
    """With the service down, gpu_devices() warns and returns no rows (it
    never fails), gpu_selftest() fails with the service's error."""
    pid = cluster.service_pid()
    with stopped(pid):
        r = cluster.run("SET pg_warp.service_timeout = 500; "
                        "SELECT count(*) FROM pgwarp.gpu_devices()")
        assert r.returncode == 0 and r.stdout.strip() == "0", r.stderr
        assert "WARNING:  could not ask the pg_warp service for its GPUs" in r.stderr, r.stderr
        r = cluster.run("SET pg_warp.service_timeout = 500; SELECT * FROM pgwarp.gpu_selftest()")
        assert r.returncode != 0 and "pg_warp service did not answer" in r.stderr, r.stderr


def test_out_of_file_descriptors(tmp_path):
    """Out of descriptors, the service waits for a connection to close (no
    busy loop); the clients beyond the limit wait in the listen queue.  With
    --no-gpu: under a limit of 16 descriptors, the CUDA driver of a GPU host
    takes descriptors of its own (and fails), so the count would not be ours."""
    s = Service(str(tmp_path), argv=["--no-gpu"], max_files=16)
    clients = []
    try:
        for _ in range(20):
            c = connect(s.sock, timeout=0.3)
            c.sendall(message(MSG_HELLO, struct.pack("<II", 1, VERSION)))
            clients.append(c)
        served = []
        for c in clients:
            try:
                served.append(recv_message(c) is not None)
            except socket.timeout:
                served.append(False)
        assert 4 <= served.count(True) < 20, served
        waiting = [c for c, ok in zip(clients, served) if not ok]
        for c, ok in zip(clients, served):
            if ok:
                c.close()
        for c in waiting:
            c.settimeout(10)
            try:
                reply = recv_message(c)
            except socket.timeout:
                pytest.fail("a waiting client got no HELLO after the others closed; "
                            "served %s; service log:\n%s" % (served, s.log()))
            assert reply[0] == MSG_HELLO
        # one warning per pause, not a loop of them
        assert 1 <= s.log().count("waiting for a connection to close") <= len(waiting)
    finally:
        for c in clients:
            c.close()
        s.stop()


def test_sigterm_removes_the_socket(tmp_path):
    s = Service(str(tmp_path))
    assert s.stop() == 0
    assert not os.path.exists(s.sock)
    assert "shut down" in s.log()


def test_stale_socket_is_replaced(tmp_path):
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(tmp_path / "pg_warp.sock"))
    stale.close()                               # the file stays, nobody listens
    s = Service(str(tmp_path))
    try:
        assert "removing the stale socket" in s.log()
    finally:
        s.stop()


def test_live_socket_is_left_alone(service):
    second = Service(service.dir, wait=False)
    assert second.proc.wait(10) == 1
    assert "another pg_warp service is listening" in second.log()
    assert service.answers()


def test_other_file_is_left_alone(tmp_path):
    path = tmp_path / "pg_warp.sock"
    path.write_text("not a socket")
    s = Service(str(tmp_path), wait=False)
    assert s.proc.wait(10) == 1
    assert "is not a socket" in s.log()
    assert path.read_text() == "not a socket"


def test_service_exits_with_its_parent(tmp_path):
    # a shell that starts the service with itself as the parent, then dies
    shell = subprocess.Popen(["sh", "-c", '"$0" -D "$1" --parent-pid $$ & echo $!; exec sleep 600',
                              service_program(), str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    pid = int(shell.stdout.readline())
    sock = str(tmp_path / "pg_warp.sock")
    wait_until(lambda: os.path.exists(sock), 10, "the service to listen")
    assert alive(pid)
    shell.kill()
    shell.wait()
    wait_until(lambda: not alive(pid), 10, "the service to exit after its parent")
    assert not os.path.exists(sock)


def test_service_refuses_to_start_without_its_parent(tmp_path):
    # the parent it is told about has exited already
    gone = subprocess.Popen(["true"])
    gone.wait()
    r = subprocess.run([service_program(), "-D", str(tmp_path), "--parent-pid", str(gone.pid)],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and "is gone; not starting" in r.stderr
    assert not os.path.exists(tmp_path / "pg_warp.sock")
