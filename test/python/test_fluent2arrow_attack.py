"""fluent2arrow under attack (issue 13): what an adversarial sender or a hostile
environment does to the sink, each case a regression test of a fix.

Uses the harness of test_fluent2arrow.py (the real program, its own directory
and configuration per test) and checks the files with pyarrow's full
validation, the dead-letter file and the spool.
"""
import gzip
import os
import signal
import struct
import subprocess
import zlib

import msgpack
import pyarrow as pa
import pyarrow.ipc as ipc

from conftest import _find_tool
from test_fluent2arrow import (Client, SIMPLE, TAG_TIME, make_sink, read_rows,  # noqa: F401
                               route, world)


def validated_files(d, name):
    """Every finished file of route name, after pyarrow's full validation"""
    out = os.path.join(d, "out", name)
    tables = []
    for f in sorted(os.listdir(out)):
        if not f.startswith("."):
            with pa.memory_map(os.path.join(out, f)) as m:
                t = ipc.open_file(m).read_all()
            t.validate(full=True)
            tables.append(t)
    return tables


def spool_bytes(d):
    sp = os.path.join(d, "spool")
    return sum(os.path.getsize(os.path.join(sp, f)) for f in os.listdir(sp) if f.startswith("wal-"))


def test_date64_takes_whole_days_only(world):
    """Arrow's date64 is whole days in ms: pyarrow refused files with 1 ms."""
    s = make_sink(world, route("a", "t", TAG_TIME + "column = id int64\ncolumn = d date64\n"))
    c = Client(s.port)
    c.send(["t", [[1, {"id": 1, "d": 86400000}], [1, {"id": 2, "d": 1}],
                  [1, {"id": 3, "d": -86400000}], [1, {"id": 4, "d": "2024-01-02"}]],
            {"chunk": "x"}])
    assert c.recv() == {"ack": "x"}
    assert s.stop() == 0
    tables = validated_files(world[0], "a")
    ids = sorted(i for t in tables for i in t.column("id").to_pylist())
    assert ids == [1, 3, 4]
    dead = s.dead()
    assert [x["record"]["id"] for x in dead] == [2]
    assert "whole number of days" in dead[0]["reason"]


def test_deadletter_write_failure_keeps_the_spool(world):
    """A dead letter that cannot be written must not be lost with its segment."""
    d = world[0]
    s = make_sink(world, route("a", "t", SIMPLE), settings="deadletter = /dev/full\n")
    c = Client(s.port)
    c.send(["t", [[1, {"id": 1, "msg": "kept"}], [1, {"id": "not an int"}]], {"chunk": "x"}])
    assert c.recv() == {"ack": "x"}
    c.close()
    assert s.stop() != 0                  # it says that something is pending
    assert spool_bytes(d) > 0             # the frame is still in the spool
    s.write_config(route("a", "t", SIMPLE))   # a writable dead-letter file again
    s.start()
    assert s.stop() == 0
    assert spool_bytes(d) == 0
    assert [r["id"] for r in read_rows(d, "a")] == [1, 1]    # at-least-once: once per run
    dead = s.dead()
    assert len(dead) == 1 and dead[0]["record"] == {"id": "not an int"}
    assert dead[0]["reason"] == "column \"id\": not an integer"


SHIM = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
/* every final name is taken */
int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned int flags) { errno = EEXIST; return -1; }
"""


def test_final_names_all_taken_keeps_the_spool(world, monkeypatch):
    """When no final name is free the file is not finished: its events stay spooled."""
    d = world[0]
    src = os.path.join(d, "shim.c")
    with open(src, "w") as f:
        f.write(SHIM)
    so = os.path.join(d, "shim.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", so, src], check=True)
    monkeypatch.setenv("LD_PRELOAD", so)
    s = make_sink(world, route("a", "t", SIMPLE))
    monkeypatch.delenv("LD_PRELOAD")
    c = Client(s.port)
    c.send(["t", [[1, {"id": i, "msg": "m"}] for i in range(10)], {"chunk": "x"}])
    assert c.recv() == {"ack": "x"}
    c.close()
    assert s.stop() != 0
    assert spool_bytes(d) > 0
    s.start()                             # no shim: the replay finishes the files
    assert s.stop() == 0
    assert [r["id"] for r in read_rows(d, "a")] == list(range(10))


def peak_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def test_gzip_bomb_entry_is_bounded(world):
    """One packed entry of 100 M nils (97 kB of gzip) took 2.9 GB of msgpack objects."""
    s = make_sink(world, route("a", "t", SIMPLE))
    n = 100 * 1000 * 1000
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = co.compress(b"\x92\x01\xdd" + struct.pack(">I", n))
    block = b"\xc0" * (1 << 20)
    for _ in range(n >> 20):
        bomb += co.compress(block)
    bomb += co.compress(b"\xc0" * (n - ((n >> 20) << 20))) + co.flush()
    c = Client(s.port, timeout=60)
    good = msgpack.packb([1, {"id": 1, "msg": "before"}])
    c.send(["t", gzip.compress(good) + bomb, {"chunk": "b", "compressed": "gzip"}])
    assert c.recv() == {"ack": "b"}
    assert peak_rss_kb(s.proc.pid) < 1024 * 1024
    assert s.stop() == 0
    assert [r["id"] for r in read_rows(world[0], "a")] == [1]
    dead = s.dead()
    assert len(dead) == 1 and "larger than max_frame" in dead[0]["reason"]


def test_packed_stream_rest_and_bad_times_are_in_the_dead_letter(world):
    """The dead letter keeps what was rejected: the rest of a broken stream, a bad time."""
    s = make_sink(world, route("a", "t", SIMPLE))
    c = Client(s.port)
    ents = msgpack.packb([1, {"id": 1}]) + msgpack.packb([1, {"id": 2}])
    tail = msgpack.packb([1, {"id": 3}]) + msgpack.packb([1, {"id": 4}])[:-2]
    c.send(["t", ents + tail, {"chunk": "a"}])
    assert c.recv() == {"ack": "a"}
    c.send(["t", ents + b"\xc1" + tail, {"chunk": "b"}])
    assert c.recv() == {"ack": "b"}
    c.send(["t", [["2024-01-01", {"id": 5}]], {"chunk": "c"}])
    assert c.recv() == {"ack": "c"}
    c.send(["t", {"id": 6}, {"x": 1}, {"chunk": "d"}])    # a map where the time goes
    assert c.recv() == {"ack": "d"}
    assert s.stop() == 0
    assert [r["id"] for r in read_rows(world[0], "a")] == [1, 1, 2, 2, 3]
    dead = s.dead()
    assert len(dead) == 4
    assert dead[0]["reason"].startswith("truncated entry stream")
    assert dead[0]["record"].encode("latin-1") == msgpack.packb([1, {"id": 4}])[:-2]
    assert dead[1]["reason"].startswith("malformed entry stream")
    assert dead[1]["record"].encode("latin-1") == b"\xc1" + tail
    assert dead[2]["reason"] == "invalid event time" and dead[2]["time"] == "2024-01-01"
    assert dead[3]["time"] == {"id": 6} and dead[3]["record"] == {"x": 1}


def test_config_refuses_prefixes_that_are_no_file_names(world):
    d = world[0]
    tool = str(_find_tool("fluent2arrow"))
    conf = os.path.join(d, "bad.conf")
    body = "match = a\ndir = x\ncolumn = c int8\n"
    for text, msg in [("[route a]\nprefix = sub/x\n" + body, "prefix"),
                      ("[route a]\nprefix = .hidden\n" + body, "prefix"),
                      ("[route a/b]\n" + body, "no file name prefix"),
                      ("max_frame = 2G\n[route a]\n" + body, "more than 1GB")]:
        with open(conf, "w") as f:
            f.write(text)
        r = subprocess.run([tool, "-c", conf, "--check"], capture_output=True, text=True)
        assert r.returncode == 1 and msg in r.stderr, (text, r.stderr)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        t = f.read().rsplit(")", 1)[1].split()
    return int(t[11]) + int(t[12])


def test_descriptor_exhaustion_neither_spins_nor_floods_the_log(world):
    """Out of descriptors the listener stayed ready: 100% CPU; each refusal was a log line."""
    import resource
    import socket
    import time
    s = make_sink(world, route("a", "t", SIMPLE))
    soft, hard = resource.prlimit(s.proc.pid, resource.RLIMIT_NOFILE)
    resource.prlimit(s.proc.pid, resource.RLIMIT_NOFILE, (40, hard))
    socks = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(100)]
    before = cpu_ticks(s.proc.pid)
    time.sleep(2)
    assert cpu_ticks(s.proc.pid) - before < 50      # 2 s at 100% CPU is 200 ticks
    for k in socks:
        k.close()
    # max_connections: 300 refusals are not 300 log lines
    resource.prlimit(s.proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
    s.write_config(route("a", "t", SIMPLE), "max_connections = 20\n")
    s.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 30      # a loaded machine may take a while
    while "configuration reloaded" not in s.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "configuration reloaded" in s.log(), s.log()
    socks = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(300)]
    time.sleep(0.5)
    for k in socks:
        k.close()
    time.sleep(0.3)
    c = Client(s.port)                               # it serves again
    c.send(["t", 1, {"id": 7, "msg": "m"}, {"chunk": "z"}])
    assert c.recv() == {"ack": "z"}
    c.close()
    assert s.stop() == 0
    assert [r["id"] for r in read_rows(world[0], "a")] == [7]
    refusals = [ln for ln in s.log().splitlines() if "refusing" in ln]
    assert any("max_connections (20)" in ln for ln in refusals), s.log()
    assert len(refusals) <= 10, refusals


def test_config_refuses_own_files_in_an_output_directory(world):
    """The spool, dead letters, log or socket in a route's dir break arrow_fdw's dir scan."""
    d = world[0]
    tool = str(_find_tool("fluent2arrow"))
    conf = os.path.join(d, "bad.conf")
    os.makedirs(os.path.join(d, "out"))
    body = "[route a]\nmatch = a\ndir = out/\ncolumn = c int8\n"
    for setting, msg in [("spool_dir = out", "spool_dir is"),
                         ("spool_dir = %s/./out" % d, "spool_dir is"),
                         ("deadletter = out/dead.jsonl", "dead-letter file is"),
                         ("log = %s/out/sink.log" % d, "log file is"),
                         ("unix_socket = out/f.sock", "unix_socket is")]:
        with open(conf, "w") as f:
            f.write(setting + "\n" + body)
        r = subprocess.run([tool, "-c", conf, "--check"], capture_output=True, text=True)
        assert r.returncode == 1 and msg in r.stderr, (setting, r.stderr)
    with open(conf, "w") as f:
        f.write("spool_dir = out/spool\n" + body)    # a subdirectory is fine
    r = subprocess.run([tool, "-c", conf, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_sender_that_never_reads_its_acks_is_bounded(world):
    """Acks for a peer that does not read them piled up: 2.7 GB in 15 s."""
    import socket
    import time
    s = make_sink(world, route("a", "t", SIMPLE))
    c = Client(s.port, timeout=1)
    frame = msgpack.packb(["t", 1, {"id": 1, "msg": "m"}, {"chunk": "c" * 120}])
    batch = frame * 1000
    sent = 0
    t0 = time.time()
    try:
        while time.time() - t0 < 3:
            c.s.sendall(batch)
            sent += 1000
    except socket.timeout:
        pass                                        # the sink stopped reading: right
    assert peak_rss_kb(s.proc.pid) < 300 * 1024
    # the peer reads now: the rest comes in and every frame it could send is acked
    c.s.settimeout(30)
    c.s.setblocking(True)
    got = 0
    while got < sent:
        o = c.recv()
        assert o == {"ack": "c" * 120}
        got += 1
    c.close()
    assert s.stop() == 0
