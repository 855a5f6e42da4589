"""pg2arrow never loses or damages a user's file (issue 9, items 11 to 13).

- --append killed with SIGKILL at hundreds of random points: after recovery
  (by the next run, or pg2arrow --recover) pyarrow reads exactly the old rows
  or the old plus the new ones; power-loss-like states built by hand (a
  journal with the file cut at various points, a journal half written, a
  journal for another file) recover or are discarded as documented, and
  arrow_fdw names the interrupted append in its error.
- -o/--append refuse devices, FIFOs, sockets and directories, and write the
  file a symbolic link points to, keeping the link.
- Every catchable termination signal removes the temporary file; a temporary
  file of a pg2arrow that no longer runs is removed by the next run;
  "No space left on device" is printed once (on a small tmpfs).

Uses the running cluster of the environment (PGHOST, PGPORT, PGUSER), a
database of its own (dropped at the end) and the tool in PG_WARP_TOOLS.
"""
import glob
import os
import random
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import shutil
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.environ.get("PG_WARP_TOOLS", os.path.join(ROOT, "tools", "bin"))
PG2ARROW = os.path.join(TOOLS, "pg2arrow")
DB = "pg2arrow_safety_%d" % os.getpid()
JSUFFIX = ".pg2arrow-journal"

pytestmark = pytest.mark.skipif(not os.path.exists(PG2ARROW),
                                reason="pg2arrow is not built")

OLD_SQL = "SELECT id, s FROM kt WHERE id <= 1000"
NEW_SQL = "SELECT id, s FROM kt"
SMALL_SQL = "SELECT id, s FROM kt WHERE id <= 7"
SLOW_SQL = ("SELECT id, s, CASE WHEN id % 49 = 0 THEN slow(id) END AS x "
            "FROM kt WHERE id <= 20000 AND id % 2 = $(WORKER_ID)")


def psql(sql, db=DB, check=True):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                       capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def p2a(*args, check=True, timeout=60):
    r = subprocess.run([PG2ARROW, "-d", DB] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def read(path):
    with ipc.open_file(str(path)) as f:
        return f.read_all()


def readable(path):
    try:
        read(path)
        return True
    except (pa.ArrowInvalid, OSError):
        return False


def leftovers(d):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(str(d), "*")))


@pytest.fixture(scope="module", autouse=True)
def database():
    psql("DROP DATABASE IF EXISTS %s" % DB, db="postgres")
    psql("CREATE DATABASE %s" % DB, db="postgres")
    psql("""
        CREATE TABLE kt AS SELECT i AS id, md5(i::text) AS s
            FROM generate_series(1, 200000) i;
        CREATE FUNCTION slow(int) RETURNS int LANGUAGE sql AS
            'SELECT pg_sleep(0.05); SELECT $1';
        CREATE EXTENSION pg_warp;
        ANALYZE kt;
    """)
    yield
    psql("DROP DATABASE IF EXISTS %s" % DB, db="postgres")


@pytest.fixture
def world_dir():
    """A directory the server (another OS user) can read."""
    d = tempfile.mkdtemp(prefix="pg2arrow_safety.")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- item 11

def tail_offset(data):
    """Where an append starts overwriting: the end-of-stream marker before the footer."""
    footer_len = struct.unpack("<i", data[-10:-6])[0]
    start = len(data) - 10 - footer_len
    if data[start - 8:start] == b"\xff\xff\xff\xff\x00\x00\x00\x00":
        start -= 8
    return start


def fnv1a64(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def make_journal(old, inode):
    """The journal pg2arrow --append writes before touching a file (doc/pg2arrow.md)."""
    tail = tail_offset(old)
    body = b"PGWJRNL1" + struct.pack("<QQQ", len(old), tail, inode) + old[tail:]
    return body + struct.pack("<Q", fnv1a64(body))


def test_append_killed_at_random_points(tmp_path):
    """300 SIGKILLs spread uniformly over an append: never a lost or mixed file."""
    f = tmp_path / "k.arrow"
    journal = str(f) + JSUFFIX
    p2a("-o", f, "-c", OLD_SQL)
    old_bytes = f.read_bytes()
    old = read(f)
    small = read_query_file(tmp_path, SMALL_SQL)
    durations = []
    for _ in range(3):
        f.write_bytes(old_bytes)
        t0 = time.monotonic()
        p2a("--append", f, "-s", "256k", "-c", NEW_SQL)
        durations.append(time.monotonic() - t0)
    new = read(f)
    assert new.num_rows == old.num_rows + 200000
    duration = sorted(durations)[1]
    rng = random.Random(20261124)
    kills = 300
    mid_append = 0              # killed with the journal there and the file unreadable
    outcomes = {"old": 0, "new": 0}
    for i in range(kills):
        f.write_bytes(old_bytes)
        proc = subprocess.Popen([PG2ARROW, "-d", DB, "--append", str(f), "-s", "256k",
                                 "-c", NEW_SQL], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, duration))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        had_journal = os.path.exists(journal)
        if had_journal and not readable(f):
            mid_append += 1
        if i % 4 == 0:
            # the next run recovers by itself, then appends
            r = p2a("--append", f, "-c", SMALL_SQL)
            if had_journal:
                assert "interrupted --append" in r.stderr or "removed" in r.stderr, r.stderr
            t = read(f)
            if t.equals(pa.concat_tables([old, small])):
                outcomes["old"] += 1
            else:
                assert t.equals(pa.concat_tables([new, small])), "kill %d: a mixed file" % i
                outcomes["new"] += 1
        else:
            r = subprocess.run([PG2ARROW, "--recover", str(f)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            t = read(f)
            if t.equals(old):
                outcomes["old"] += 1
            else:
                assert t.equals(new), "kill %d: a mixed file" % i
                outcomes["new"] += 1
        assert leftovers(tmp_path) == ["k.arrow", "small.arrow"]
    # the kills did land in the dangerous window, many times
    print("kills", kills, "mid-append", mid_append, outcomes, "append takes %.3f s" % duration)
    assert mid_append >= kills // 10, (mid_append, outcomes, duration)


def read_query_file(tmp_path, sql):
    out = tmp_path / "small.arrow"
    p2a("-o", out, "-c", sql)
    return read(out)


def kill_mid_append(f, orig_size):
    """Starts an append of f and SIGKILLs it once its first batch is in the file."""
    for _ in range(20):
        proc = subprocess.Popen([PG2ARROW, "-d", DB, "--append", str(f), "-s", "64k",
                                 "-c", NEW_SQL + " WHERE id % 5000 <> 0 OR slow(id) > 0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while proc.poll() is None:
            if os.path.exists(str(f) + JSUFFIX) and os.path.getsize(f) > orig_size:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return
            time.sleep(0.001)
        raise AssertionError("the append ended before it could be killed")


def test_arrow_fdw_names_interrupted_append(world_dir):
    f = os.path.join(world_dir, "t.arrow")
    p2a("-o", f, "-c", OLD_SQL)
    os.chmod(f, 0o644)
    old_bytes = open(f, "rb").read()
    psql("CREATE FOREIGN TABLE t_mid (id int4, s text) SERVER arrow_fdw "
         "OPTIONS (file '%s')" % f)
    assert psql("SELECT count(*), sum(id) FROM t_mid").stdout.strip() == "1000|500500"
    kill_mid_append(f, len(old_bytes))
    journal = f + JSUFFIX
    # the journal on disk is exactly the documented one
    assert open(journal, "rb").read() == make_journal(old_bytes, os.stat(f).st_ino)
    for sql in ["SELECT count(*) FROM t_mid",
                "CREATE FOREIGN TABLE t_mid2 (id int4, s text) SERVER arrow_fdw "
                "OPTIONS (file '%s'); SELECT count(*) FROM t_mid2" % f]:
        r = psql(sql, check=False)
        assert r.returncode != 0
        assert "interrupted pg2arrow --append" in r.stderr and journal in r.stderr, r.stderr
        assert "pg2arrow --recover %s" % f in r.stderr, r.stderr
    r = recover(f)
    assert r.returncode == 0 and "restored" in r.stderr, r.stderr
    assert open(f, "rb").read() == old_bytes and not os.path.exists(journal)
    assert psql("SELECT count(*), sum(id) FROM t_mid").stdout.strip() == "1000|500500"
    psql("DROP FOREIGN TABLE t_mid")


def recover(path):
    return subprocess.run([PG2ARROW, "--recover", str(path)], capture_output=True, text=True)


def test_recover_power_loss_states(tmp_path):
    """Journals and files as a power loss could leave them, built by hand."""
    f = tmp_path / "p.arrow"
    journal = tmp_path / ("p.arrow" + JSUFFIX)
    p2a("-o", f, "-c", OLD_SQL)
    old = f.read_bytes()
    tail = tail_offset(old)
    inode = os.stat(f).st_ino
    good = make_journal(old, inode)
    garbage = bytes(range(256)) * 64

    # complete journal; the file cut (or extended) anywhere from the tail on
    for size in [tail, tail + 1, tail + 9, len(old) - 1, len(old), len(old) + 5,
                 len(old) + 4096, len(old) + len(garbage)]:
        with open(f, "r+b") as fh:
            fh.seek(tail)
            fh.write(garbage[:max(0, size - tail)])
            fh.truncate(size)
        journal.write_bytes(good)
        r = recover(f)
        assert r.returncode == 0 and "restored" in r.stderr, r.stderr
        assert f.read_bytes() == old and not journal.exists()
        assert read(f).num_rows == 1000

    # the same state, recovered by the next export run on the file
    with open(f, "r+b") as fh:
        fh.seek(tail)
        fh.write(garbage)
    journal.write_bytes(good)
    r = p2a("--append", f, "-c", SMALL_SQL)
    assert "interrupted --append" in r.stderr
    assert read(f).num_rows == 1007 and not journal.exists()
    p2a("-o", f, "-c", OLD_SQL)
    old = f.read_bytes()
    inode = os.stat(f).st_ino
    good = make_journal(old, inode)
    with open(f, "r+b") as fh:
        fh.seek(tail_offset(old))
        fh.write(garbage)
    journal.write_bytes(good)
    r = p2a("-o", f, "-c", SMALL_SQL)
    assert "interrupted --append" in r.stderr and not journal.exists()
    assert read(f).num_rows == 7
    p2a("-o", f, "-c", OLD_SQL)
    old = f.read_bytes()
    good = make_journal(old, os.stat(f).st_ino)

    # a journal cut short or torn: the file was never touched, only the journal goes
    for cut in [0, 1, 8, 31, 40, len(good) // 2, len(good) - 1]:
        journal.write_bytes(good[:cut])
        r = recover(f)
        assert r.returncode == 0 and "removed" in r.stderr, r.stderr
        assert f.read_bytes() == old and not journal.exists()
    torn = bytearray(good)
    torn[len(torn) // 2] ^= 0x40
    journal.write_bytes(bytes(torn))
    r = recover(f)
    assert r.returncode == 0 and "removed" in r.stderr and f.read_bytes() == old

    # a journal of another file (this one was replaced since): the file is not touched
    journal.write_bytes(make_journal(old, inode + 12345))
    r = recover(f)
    assert r.returncode == 0 and "removed" in r.stderr and f.read_bytes() == old

    # a file shorter than the untouched part cannot be restored: error, journal kept
    journal.write_bytes(good)
    with open(f, "r+b") as fh:
        fh.truncate(tail_offset(old) - 100)
    cut = f.read_bytes()
    r = recover(f)
    assert r.returncode != 0 and "cannot recover" in r.stderr, r.stderr
    assert f.read_bytes() == cut and journal.exists()
    r = p2a("--append", f, "-c", SMALL_SQL, check=False)
    assert r.returncode != 0 and "cannot recover" in r.stderr
    assert f.read_bytes() == cut and journal.exists()

    # the file is gone: the journal is removed
    f.unlink()
    r = recover(f)
    assert r.returncode == 0 and "removed" in r.stderr and leftovers(tmp_path) == []

    # nothing to do
    p2a("-o", f, "-c", OLD_SQL)
    r = recover(f)
    assert r.returncode == 0 and "no interrupted --append" in r.stderr


def test_append_with_live_appender_is_not_recovered(tmp_path):
    """A journal of an append still running belongs to it: --recover refuses."""
    f = tmp_path / "l.arrow"
    p2a("-o", f, "-c", OLD_SQL)
    proc = subprocess.Popen([PG2ARROW, "-d", DB, "--append", str(f), "-s", "64k", "-c",
                             NEW_SQL + " WHERE slow(id) > 0 AND id <= 40"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(str(f) + JSUFFIX):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        r = recover(f)
        assert r.returncode != 0 and "another process" in r.stderr, r.stderr
        assert os.path.exists(str(f) + JSUFFIX)
    finally:
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert read(f).num_rows == 1040 and leftovers(tmp_path) == ["l.arrow"]


# ---------------------------------------------------------------- item 12

def test_refuses_targets_that_are_not_regular_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(sock_path))
    directory = tmp_path / "dir"
    directory.mkdir()
    # a null device of our own: a regression must not be able to replace /dev/null
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    try:
        for target, kind, test in [(str(null), "character device", stat.S_ISCHR),
                                   (str(fifo), "FIFO", stat.S_ISFIFO),
                                   (str(sock_path), "socket", stat.S_ISSOCK),
                                   (str(directory), "directory", stat.S_ISDIR)]:
            for opt in ["-o", "--append"]:
                r = p2a(opt, target, "-c", SMALL_SQL, check=False, timeout=20)
                assert r.returncode != 0, (opt, target)
                assert "is a %s" % kind in r.stderr and "regular files only" in r.stderr, r.stderr
                assert test(os.stat(target).st_mode), (opt, target)
            assert glob.glob(target + ".pg2arrow-*") == []
        assert leftovers(tmp_path) == ["dir", "fifo", "null", "sock"]
        # a link to a device is refused too, and the link stays
        os.symlink(str(null), tmp_path / "null-link")
        r = p2a("-o", tmp_path / "null-link", "-c", SMALL_SQL, check=False)
        assert r.returncode != 0 and "character device" in r.stderr
        assert os.path.islink(tmp_path / "null-link")
        assert stat.S_ISCHR(os.stat(null).st_mode)
    finally:
        sock.close()


def test_symlink_target_is_written_and_link_kept(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    real = b / "real.arrow"
    os.symlink("../b/real.arrow", a / "rel-link")          # relative, dangling at first
    os.symlink(str(a / "rel-link"), tmp_path / "chain")    # absolute, to another link
    p2a("-o", a / "rel-link", "-c", OLD_SQL)
    assert os.path.islink(a / "rel-link") and real.is_file()
    assert read(real).num_rows == 1000
    p2a("-o", tmp_path / "chain", "-c", SMALL_SQL)
    assert os.path.islink(tmp_path / "chain") and os.path.islink(a / "rel-link")
    assert read(real).num_rows == 7
    p2a("--append", tmp_path / "chain", "-c", OLD_SQL)
    assert os.path.islink(tmp_path / "chain") and read(real).num_rows == 1007
    assert leftovers(a) == ["rel-link"] and leftovers(b) == ["real.arrow"]
    # an interrupted append through the link is recovered through the link too
    before = real.read_bytes()
    kill_mid_append(real, len(before))
    assert os.path.exists(str(real) + JSUFFIX)
    r = recover(tmp_path / "chain")
    assert r.returncode == 0 and "restored" in r.stderr, r.stderr
    assert real.read_bytes() == before and leftovers(b) == ["real.arrow"]
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    r = p2a("-o", tmp_path / "loop1", "-c", SMALL_SQL, check=False)
    assert r.returncode != 0 and "symbolic links" in r.stderr


# ---------------------------------------------------------------- item 13

TERM_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGXFSZ,
                signal.SIGXCPU, signal.SIGVTALRM, signal.SIGPROF, signal.SIGPWR]


def start_slow_export(out, *extra):
    return subprocess.Popen([PG2ARROW, "-d", DB, "-n", "2", "-s", "16k", *extra,
                             "-c", SLOW_SQL] + (["-o", str(out)] if out else []),
                            stderr=subprocess.PIPE, text=True)


def wait_for(pred, proc, timeout=20):
    deadline = time.monotonic() + timeout
    while not pred():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.01)


@pytest.mark.parametrize("signo", TERM_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signal_removes_temporary_file(tmp_path, signo):
    out = tmp_path / "s.arrow"
    proc = start_slow_export(out)
    wait_for(lambda: glob.glob(str(out) + ".pg2arrow-*.tmp"), proc)
    time.sleep(0.1)
    proc.send_signal(signo)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 1 and "interrupted by signal %d" % signo in err, err
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("signo", [signal.SIGHUP, signal.SIGQUIT])
def test_signal_during_append_restores_file(tmp_path, signo):
    f = tmp_path / "a.arrow"
    p2a("-o", f, "-c", OLD_SQL)
    old = f.read_bytes()
    proc = subprocess.Popen([PG2ARROW, "-d", DB, "--append", str(f), "-s", "16k", "-c",
                             "SELECT id, s FROM kt WHERE id <= 20000 AND "
                             "(id % 49 <> 0 OR slow(id) > 0)"],
                            stderr=subprocess.PIPE, text=True)
    wait_for(lambda: os.path.getsize(f) > len(old), proc)
    proc.send_signal(signo)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 1 and "is unchanged" in err, err
    assert f.read_bytes() == old and leftovers(tmp_path) == ["a.arrow"]


def test_stale_temporary_files_are_removed(tmp_path):
    out = tmp_path / "x.arrow"
    # a real one: an export killed with SIGKILL leaves its temporary file
    proc = start_slow_export(out)
    wait_for(lambda: glob.glob(str(out) + ".pg2arrow-*.tmp"), proc)
    proc.kill()
    proc.communicate()
    killed = "x.arrow.pg2arrow-%d.tmp" % proc.pid
    assert leftovers(tmp_path) == [killed]
    # and one of a live process (this one), one of another file
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = "x.arrow.pg2arrow-%d.tmp" % os.getpid()
    other = "y.arrow.pg2arrow-%d.tmp" % dead.pid
    for name in [live, other, "x.arrow.pg2arrow-12abc.tmp"]:
        (tmp_path / name).write_bytes(b"partial")
    r = p2a("-o", out, "-c", SMALL_SQL)
    assert "removed \"%s\"" % (tmp_path / killed) in r.stderr, r.stderr
    assert "no longer runs" in r.stderr
    assert leftovers(tmp_path) == sorted(["x.arrow", live, other, "x.arrow.pg2arrow-12abc.tmp"])
    # --append and --recover clean up too
    (tmp_path / ("x.arrow.pg2arrow-%d.tmp" % dead.pid)).write_bytes(b"partial")
    p2a("--append", out, "-c", SMALL_SQL)
    assert leftovers(tmp_path) == sorted(["x.arrow", live, other, "x.arrow.pg2arrow-12abc.tmp"])
    (tmp_path / ("x.arrow.pg2arrow-%d.tmp" % dead.pid)).write_bytes(b"partial")
    assert recover(out).returncode == 0
    assert leftovers(tmp_path) == sorted(["x.arrow", live, other, "x.arrow.pg2arrow-12abc.tmp"])


def test_sigpipe_does_not_stop_an_export(tmp_path):
    """SIGPIPE is ignored (EPIPE is handled where it matters): the export completes."""
    out = tmp_path / "p.arrow"
    proc = subprocess.Popen([PG2ARROW, "-d", DB, "-s", "16k", "-o", str(out), "-c",
                             "SELECT id, s FROM kt WHERE id <= 2000 AND "
                             "(id % 199 <> 0 OR slow(id) > 0)"],
                            stderr=subprocess.PIPE, text=True)
    wait_for(lambda: glob.glob(str(out) + ".pg2arrow-*.tmp"), proc)
    proc.send_signal(signal.SIGPIPE)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert read(out).num_rows == 2000 and leftovers(tmp_path) == ["p.arrow"]


@pytest.fixture
def small_fs(tmp_path):
    """A 512 kB tmpfs (needs root; skipped where mounting is not allowed)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + r.stderr.strip())
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_disk_full_said_once(small_fs):
    out = small_fs / "full.arrow"
    for extra in [["-n", "2"], []]:
        r = p2a("-t", "kt", "-s", "64k", "-o", out, *extra, check=False)
        assert r.returncode != 0 and r.stderr.count("No space left on device") == 1, r.stderr
        assert os.listdir(small_fs) == []
    p2a("-o", out, "-c", "SELECT id, s FROM kt WHERE id <= 100")
    original = out.read_bytes()
    r = p2a("--append", out, "-s", "64k", "-c", NEW_SQL, check=False)
    assert r.returncode != 0 and r.stderr.count("No space left on device") == 1, r.stderr
    assert out.read_bytes() == original and os.listdir(small_fs) == ["full.arrow"]


def test_errors_name_the_output_not_the_temporary_file(tmp_path, small_fs):
    """Issue 27, item 11: pg2arrow writes FILE.pg2arrow-PID.tmp first, but an
    error names FILE, the only name the user knows (create, write, finish)."""
    missing = tmp_path / "no_such_dir" / "x.arrow"
    r = p2a("-o", missing, "-c", SMALL_SQL, check=False)
    assert r.returncode != 0 and '"%s"' % missing in r.stderr, r.stderr
    assert ".pg2arrow-" not in r.stderr and ".tmp" not in r.stderr, r.stderr
    out = small_fs / "full.arrow"
    r = p2a("-t", "kt", "-s", "64k", "-o", out, check=False)
    assert r.returncode != 0 and "No space left on device" in r.stderr, r.stderr
    assert str(out) in r.stderr and ".pg2arrow-" not in r.stderr, r.stderr


def test_user_option_like_psql(tmp_path):
    """Issue 27, item 11: -U USER as psql has it (and -u, as before)."""
    psql("DROP ROLE IF EXISTS p2a_user; CREATE ROLE p2a_user LOGIN")
    try:
        for flag in ["-U", "-u", "--user"]:
            out = tmp_path / ("u%s.arrow" % flag.strip("-"))
            p2a(flag, "p2a_user", "-o", out, "-c", "SELECT current_user::text AS u")
            assert read(out).column("u").to_pylist() == ["p2a_user"], flag
    finally:
        psql("DROP ROLE IF EXISTS p2a_user")
