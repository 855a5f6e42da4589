#!/usr/bin/env python3
"""Benchmark of fluent2arrow (issue 13): events/s and MB/s ingested with
acks on, 10 record keys per event (+ the event time column), 1 to 16
concurrent senders, side by side with the raw write rate of the same frames
through the same decoder and writer (fluent2arrow --ingest: no sockets, no
spool, no acks).

Each sender is a process that sends pre-encoded PackedForward frames (one
chunk of --chunk events each, EventTime times, a "chunk" option) and keeps
--window chunks in flight, counting only acknowledged events, so that the
client is not the bottleneck.  The sink runs with its spool and output in
--dir (the same disk).  Writes JSON (and a PNG chart) under bench/results/.

    python3 bench/fluent_bench.py [--seconds 5] [--senders 1,2,4,8,16] [--repeat N]
"""
import argparse
import json
import multiprocessing as mp
import os
import platform
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

CONFIG = """listen = 127.0.0.1:{port}
spool_dir = {dir}/spool
deadletter = {dir}/dead.jsonl
wal_segment = 256MB

[route bench]
match = bench.**
dir = {dir}/out
rotate_size = 256MB
rotate_age = 30s
time_column = time
column = host utf8
column = method utf8
column = path utf8
column = status int16
column = bytes int64
column = latency float64
column = user_id int32
column = ok bool
column = region utf8
column = ts timestamp[ms]
"""

METHODS = ["GET", "POST", "PUT", "DELETE"]
REGIONS = ["eu-west", "us-east", "ap-south"]


def record(i):
    return {"host": "web-%02d" % (i % 32), "method": METHODS[i % 4],
            "path": "/api/v1/items/%d" % (i % 1000), "status": 200 + (i % 5),
            "bytes": 1000 + i * 7 % 65536, "latency": (i % 1000) / 7.0,
            "user_id": i % 100000, "ok": i % 7 != 0, "region": REGIONS[i % 3],
            "ts": 1700000000000 + i}


def event_time(i):
    return msgpack.ExtType(0, struct.pack(">II", 1700000000 + i // 1000, (i % 1000) * 1000000))


def make_frames(n_frames, per_chunk, base, with_chunk=True):
    """Pre-encoded PackedForward frames of per_chunk events each"""
    frames = []
    for f in range(n_frames):
        start = base + f * per_chunk
        entries = b"".join(msgpack.packb([event_time(i), record(i)])
                           for i in range(start, start + per_chunk))
        opt = {"chunk": "c%d-%d" % (base, f), "size": per_chunk} if with_chunk else {}
        frames.append(msgpack.packb(["bench.access", entries, opt] if opt
                                    else ["bench.access", entries]))
    return frames


def sender(port, seconds, per_chunk, window, idx, out):
    frames = make_frames(16, per_chunk, idx * 10_000_000)
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    unp = msgpack.Unpacker()
    inflight, acked, acked_bytes, k = [], 0, 0, 0
    end = time.time() + seconds
    while time.time() < end:
        while len(inflight) < window:
            fr = frames[k % len(frames)]
            k += 1
            s.sendall(fr)
            inflight.append(len(fr))
        data = s.recv(65536)
        if not data:
            break
        unp.feed(data)
        for _ in unp:
            acked += per_chunk
            acked_bytes += inflight.pop(0)
    s.close()
    out.put((acked, acked_bytes))


def run_senders(port, n, seconds, per_chunk, window):
    q = mp.Queue()
    ps = [mp.Process(target=sender, args=(port, seconds, per_chunk, window, i, q))
          for i in range(n)]
    t0 = time.time()
    for p in ps:
        p.start()
    res = [q.get() for _ in ps]
    for p in ps:
        p.join()
    dt = time.time() - t0
    ev = sum(r[0] for r in res)
    by = sum(r[1] for r in res)
    return {"senders": n, "events": ev, "bytes": by, "seconds": round(dt, 3),
            "events_per_s": round(ev / seconds), "mb_per_s": round(by / seconds / 1e6, 1)}


def raw_rate(tool, d, per_chunk, n_events):
    """fluent2arrow --ingest over a file of the same frames"""
    path = os.path.join(d, "frames.msgpack")
    with open(path, "wb") as f:
        for fr in make_frames(max(1, n_events // per_chunk), per_chunk, 0, with_chunk=False):
            f.write(fr)
    shutil.rmtree(os.path.join(d, "out"), ignore_errors=True)
    r = subprocess.run([tool, "-c", os.path.join(d, "f.conf"), "--ingest", path],
                       capture_output=True, text=True, check=True)
    os.unlink(path)
    return json.loads(r.stdout)


def chart(result, path):
    from canvas import Canvas
    rows = result["runs"]
    raw = result["raw"]["events_per_s"]
    top = max([raw] + [r["events_per_s"] for r in rows]) * 1.1
    c = Canvas(80 + 70 * (len(rows) + 1), 300)
    c.text(10, 8, "MEPS", 2)      # the canvas font has few letters
    for i, r in enumerate(rows + [dict(senders="RAW", events_per_s=raw)]):
        x = 60 + 70 * i
        h = int(220 * r["events_per_s"] / top)
        c.rect(x, 270 - h, x + 45, 270, (60, 120, 200) if i < len(rows) else (60, 170, 90))
        c.text(x, 276, str(r["senders"]), 2)
        c.text(x, 255 - h, "%.2f" % (r["events_per_s"] / 1e6), 2)
    c.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--senders", default="1,2,4,8,16")
    ap.add_argument("--chunk", type=int, default=2000, help="events per chunk")
    ap.add_argument("--window", type=int, default=4, help="chunks in flight per sender")
    ap.add_argument("--raw-events", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each measurement; the best is kept (noisy shared hosts)")
    ap.add_argument("--port", type=int, default=55190)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--tool", default=os.path.join(REPO, "tools", "bin", "fluent2arrow"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "fluent_bench"))
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="fluent_bench.")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f.conf"), "w") as f:
        f.write(CONFIG.format(port=a.port, dir=d))
    result = {"machine": platform.node(), "cpus": os.cpu_count(),
              "loadavg_before": os.getloadavg(),
              "chunk_events": a.chunk, "window": a.window, "columns": 11,
              "repeat": a.repeat, "runs": []}
    result["raw"] = max((raw_rate(a.tool, d, a.chunk, a.raw_events) for _ in range(a.repeat)),
                        key=lambda r: r["events_per_s"])
    print("raw write:", result["raw"], flush=True)
    shutil.rmtree(os.path.join(d, "out"), ignore_errors=True)
    sink = subprocess.Popen([a.tool, "-c", os.path.join(d, "f.conf")],
                            stderr=open(os.path.join(d, "sink.log"), "w"))
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", a.port)).close()
                break
            except OSError:
                time.sleep(0.05)
        for n in [int(x) for x in a.senders.split(",")]:
            r = max((run_senders(a.port, n, a.seconds, a.chunk, a.window)
                     for _ in range(a.repeat)), key=lambda r: r["events_per_s"])
            r["vs_raw"] = round(r["events_per_s"] / result["raw"]["events_per_s"], 3)
            print(r, flush=True)
            result["runs"].append(r)
    finally:
        sink.terminate()
        sink.wait(timeout=120)
    result["loadavg_after"] = os.getloadavg()
    result["best_events_per_s"] = max(r["events_per_s"] for r in result["runs"])
    with open(a.out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    chart(result, a.out + ".png")
    if not a.dir:
        shutil.rmtree(d, ignore_errors=True)
    print(json.dumps({"best_events_per_s": result["best_events_per_s"],
                      "raw_events_per_s": result["raw"]["events_per_s"]}))


if __name__ == "__main__":
    main()
