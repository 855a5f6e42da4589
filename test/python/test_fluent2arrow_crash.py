"""fluent2arrow after a crash: nothing acknowledged lost, few duplicates
(issue 27, item 8).

After SIGKILL the sink replayed its whole current spool segment, so the rows
already in finished files came again: with the default 64 MB segment, 93.5 %
of the rows after 10 kills were duplicates.  The spool's checkpoint records
what has reached finished files, and a replay skips it.
"""
import collections
import os
import random
import socket
import threading
import time

import msgpack

from test_fluent2arrow import (Client, SIMPLE, make_sink, read_rows, route,  # noqa: F401
                               world)


def stream(s, senders, seconds, acked, state, lock):
    """Senders streaming 200-event PackedForward chunks for that long; a
    chunk that got no ack is sent again (as the agents do)."""
    until = time.time() + seconds

    def sender(w):
        while time.time() < until:
            try:
                c = Client(s.port, timeout=5)
            except OSError:
                time.sleep(0.05)
                continue
            try:
                while time.time() < until:
                    if not state["pending"][w]:
                        first = state["next"][w]
                        state["next"][w] += 200
                        state["pending"][w].append(list(range(first, first + 200)))
                    ids = state["pending"][w][0]
                    c.send(["k", b"".join(msgpack.packb([1700000000, {"id": i, "msg": "k"}])
                                          for i in ids), {"chunk": "c%d" % ids[0]}])
                    a = c.recv()
                    if a is None:
                        break
                    assert a == {"ack": "c%d" % ids[0]}
                    with lock:
                        acked.update(ids)
                    state["pending"][w].pop(0)
            except (OSError, socket.timeout):
                pass
            finally:
                c.close()
    ts = [threading.Thread(target=sender, args=(w,)) for w in range(senders)]
    for t in ts:
        t.start()
    return ts


def test_sigkill_replays_few_duplicates(world):
    """10 SIGKILLs at random moments while 3 senders stream, with the default
    spool segment: every acknowledged event is in the files, and under 1 % of
    the rows are duplicates (before: 93.5 %)."""
    d = world[0]
    rnd = random.Random(27)
    s = make_sink(world, route("k", "k", SIMPLE, "rotate_rows = 3000\nrotate_age = 300ms\n"))
    acked = set()
    lock = threading.Lock()
    state = {"pending": {w: [] for w in range(3)}, "next": {w: w * 10_000_000 for w in range(3)}}
    for _ in range(10):
        ts = stream(s, 3, 1.2 + rnd.random() * 0.6, acked, state, lock)
        time.sleep(0.6 + rnd.random() * 0.6)
        s.proc.kill()
        s.proc.wait()
        for t in ts:
            t.join()
        s.start()
    for t in stream(s, 3, 1.0, acked, state, lock):      # the resends go through
        t.join()
    assert s.stop() == 0
    ids = [r["id"] for r in read_rows(d, "k")]
    counts = collections.Counter(ids)
    dups = len(ids) - len(counts)
    missing = acked - set(counts)
    print("%d rows, %d duplicates (%.2f %%), %d acknowledged events" % (
        len(ids), dups, 100.0 * dups / max(len(ids), 1), len(acked)))
    assert len(acked) > 20_000
    assert not missing, "%d acknowledged events lost, e.g. %s" % (len(missing), sorted(missing)[:5])
    assert dups < 0.01 * len(ids), "%d of %d rows are duplicates (%.1f %%)" % (
        dups, len(ids), 100.0 * dups / len(ids))
    assert s.log().count("replayed") >= 10
    assert not [f for f in os.listdir(os.path.join(d, "spool")) if f.startswith("wal-")]


def send_frames(s, first, frames, per_frame):
    c = Client(s.port)
    for f in range(frames):
        ids = range(first + f * per_frame, first + (f + 1) * per_frame)
        c.send(["k", [[1700000000, {"id": i, "msg": "k"}] for i in ids], {"chunk": str(f)}])
        assert c.recv() == {"ack": str(f)}
    c.close()


def test_checkpoint_skips_exactly_and_a_torn_one_replays_all(world):
    """10 files finished, 50 rows in the open file, SIGKILL: the replay
    stores the 50 rows and nothing twice.  With the checkpoint torn, the
    replay stores everything left in the spool again: duplicates, never a
    loss."""
    d = world[0]
    s = make_sink(world, route("k", "k", SIMPLE, "rotate_rows = 100\n"))
    ckpt = os.path.join(d, "spool", "checkpoint")
    out = os.path.join(d, "out", "k")
    for torn in (False, True):
        base = 100_000 * torn
        send_frames(s, base, 10, 100)
        deadline = time.time() + 20
        while len([f for f in os.listdir(out) if f.endswith(".arrow")]) < 10 * (1 + torn) \
                and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)                         # the checkpoint follows the rename
        send_frames(s, base + 1000, 1, 50)
        s.proc.kill()
        s.proc.wait()
        if torn:
            with open(ckpt, "r+b") as f:
                f.seek(10)
                f.write(b"\xff")
        s.start()
        assert "replayed" in s.log()
        if not torn:                            # the replay's files are finished
            counts = collections.Counter(r["id"] for r in read_rows(d, "k"))
            assert counts == collections.Counter(range(1050)), "lost or duplicated rows"
        send_frames(s, base + 2000, 1, 10)      # after the replay: a new log
    assert s.stop() == 0
    counts = collections.Counter(r["id"] for r in read_rows(d, "k"))
    first = set(range(1050)) | set(range(2000, 2010))
    second = {100_000 + i for i in first}
    assert set(counts) == first | second
    # the torn checkpoint: every frame left in the spool came again
    assert counts[2000] == 2 and counts[100_000] == 2
