"""AGG_RUN end to end, without PostgreSQL: pg_warp_service started by hand
with --no-gpu (the CPU engine), Arrow files written by pyarrow, requests
built and sent by test/c/bin/agg_client (fixed query shapes, programs made
with the xpu_build.c API), and the groups compared with group-bys computed
in Python from the same files read by pyarrow (the oracle).

Also the request's robustness (truncated and mutated payloads, bad
offsets, a file changed after planning, a FIFO, a corrupt file), cancel,
a closed connection, and STATUS and other runs served while a run
executes.  doc/service.md describes AGG_RUN."""
import datetime
import math
import os
import random
import socket
import struct
import subprocess
import time
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pytest

import service_client
from service_client import client_fixture, client_path, service_fixture, write
from test_service import STATUS_HEAD, connect, error_of, hello, message, recv_message, wait_until

CLIENT = client_path("agg_client")
MSG_STATUS, MSG_ERROR, MSG_CANCEL, MSG_AGG_RUN, MSG_AGG_RESULT = 2, 3, 20, 22, 23
ERR_PROTOCOL, ERR_UNSUPPORTED, ERR_FILE_CHANGED, ERR_IO, ERR_BAD_FILE, ERR_OUT_OF_MEMORY, \
    ERR_CANCELED = 1, 3, 4, 5, 6, 7, 8
XPU_ERR_DIVISION_BY_ZERO, XPU_ERR_FALLBACK = 4, 8
RESULT_HEAD = struct.Struct("<IIiI")        # n_groups, flags, status, engine
RESULT_SIZE = 96 + 128 + 8 + 16 * 16 + 16 + 8 + 8 * 56 + 16  # sizeof(WarpAggResult): join_depths, join_in/out[16], the data path, the GPUs, cuFile


client = client_fixture("agg_client")
svc = service_fixture()


def run_client(svc, shape, files, *opts, timeout=120):
    """Runs agg_client; returns (groups: list of token lists, end: dict, error)."""
    lines, end, error = service_client.run_client(CLIENT, svc.sock, shape, files, *opts,
                                                  timeout=timeout)
    return [f[1:] for f in lines if f[0] == "G"], end, error


def dump(shape, files, *opts):
    """The AGG_RUN payload agg_client builds."""
    out = "/tmp/agg_dump.%d" % os.getpid()
    subprocess.run([CLIENT, "--dump", out, *map(str, opts), "-", shape, *map(str, files)],
                   check=True, capture_output=True)
    with open(out, "rb") as f:
        data = f.read()
    os.unlink(out)
    return data


def send_raw(svc, payload, timeout=30):
    """Sends AGG_RUN with payload; returns the replies up to the last one."""
    with connect(svc.sock, timeout) as c:
        hello(c)
        c.sendall(message(MSG_AGG_RUN, payload))
        replies = []
        while True:
            m = recv_message(c)
            assert m is not None, "the service closed the connection:\n" + svc.log()
            replies.append(m)
            if m[0] == MSG_ERROR or (m[0] == MSG_AGG_RESULT and
                                     RESULT_HEAD.unpack_from(m[1])[1] & 1):
                return replies


def status(svc):
    with connect(svc.sock) as c:
        hello(c)
        c.sendall(message(MSG_STATUS))
        mtype, payload = recv_message(c)
        assert mtype == MSG_STATUS
        return STATUS_HEAD.unpack_from(payload)


# --- the oracle: values as agg_client prints them, parsed back ---

def parse_num(tok):
    return Decimal(tok)


def parse_float(tok):
    return float(tok)


def fkey(x):
    """A float key as PostgreSQL groups it: -0 is 0, every NaN one value."""
    if x is None:
        return None
    if math.isnan(x):
        return "nan"
    return x + 0.0


def parse_key(tok, kind):
    if tok == "N":
        return None
    if kind == "s":
        return bytes.fromhex(tok[1:]).decode()
    if kind == "f":
        return fkey(float(tok))
    if kind == "n":
        return Decimal(tok)
    return int(tok)


def feq(a, b):
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def fmin(vals):
    """min/max in PostgreSQL's float order: NaN above everything."""
    return min(vals, key=lambda x: (math.isnan(x), x)) if vals else None


def fmax(vals):
    return max(vals, key=lambda x: (math.isnan(x), x)) if vals else None


def state(tok):
    """count, rest (the value part after ':', or None)."""
    c, _, rest = tok.partition(":")
    assert not c.endswith("!"), "overflow flag in " + tok
    return int(c), rest


# --- the query shapes, computed in Python ---

ALL_KEYS = "ifffnniii"    # ki ks kf kg kn kd kt kb kh: parse kinds (ks below)
ALL_KINDS = ["i", "s", "f", "f", "n", "i", "i", "i", "i"]

EPOCH_DAYS = 10957
EPOCH_US = 946684800000000


def days(d):
    return None if d is None else (d - datetime.date(2000, 1, 1)).days


def usecs(t):
    if t is None:
        return None
    return (t - datetime.datetime(2000, 1, 1)) // datetime.timedelta(microseconds=1)


def all_table(n, seed):
    rnd = random.Random(seed)
    nan = float("nan")
    combos = []
    for _ in range(40):
        combos.append((
            rnd.choice([None, -1, 0, 1, 2**31 - 1, -2**31]),
            rnd.choice([None, "", "a", "é", "a\tb", "x" * 40]),
            rnd.choice([None, 0.0, -0.0, nan, 1.5, -math.inf]),
            rnd.choice([None, -0.0, 0.0, nan, 2.5]),
            rnd.choice([None, Decimal("1.50"), Decimal("-0.01"), Decimal("9999999999.99")]),
            rnd.choice([None, datetime.date(2000, 1, 1), datetime.date(1970, 1, 1),
                        datetime.date(2100, 12, 31)]),
            rnd.choice([None, datetime.datetime(2000, 1, 1),
                        datetime.datetime(1999, 12, 31, 23, 59, 59, 999999)]),
            rnd.choice([None, True, False]),
            rnd.choice([None, -32768, 32767])))
    rows = [combos[rnd.randrange(40)] for _ in range(n)]
    col = lambda i: [r[i] for r in rows]

    def maybe(v, p=0.1):
        return None if rnd.random() < p else v
    return pa.table({
        "ki": pa.array(col(0), pa.int32()),
        "ks": pa.array(col(1), pa.utf8()),
        "kf": pa.array(col(2), pa.float64()),
        "kg": pa.array(col(3), pa.float32()),
        "kn": pa.array(col(4), pa.decimal128(12, 2)),
        "kd": pa.array(col(5), pa.date32()),
        "kt": pa.array(col(6), pa.timestamp("us")),
        "kb": pa.array(col(7), pa.bool_()),
        "kh": pa.array(col(8), pa.int16()),
        "vi": pa.array([maybe(rnd.choice([rnd.randint(-1000, 1000), 2**62, -2**62 + 1,
                                          2**63 - 1]))
                        for _ in range(n)], pa.int64()),
        "vn": pa.array([maybe(Decimal(rnd.randint(-10**17, 10**17)) / 1000) for _ in range(n)],
                       pa.decimal128(20, 3)),
        "vf": pa.array([maybe(rnd.choice([rnd.uniform(-1e6, 1e6), nan, -0.0, 1e100]), 0.05)
                        for _ in range(n)], pa.float64()),
        "vg": pa.array([maybe(rnd.choice([float(rnd.randint(-100, 100)) / 4, nan]))
                        for _ in range(n)], pa.float32()),
        "vd": pa.array([maybe(datetime.date(2000, 1, 1) + datetime.timedelta(rnd.randint(-9999, 9999)))
                        for _ in range(n)], pa.date32()),
        "vs": pa.array([maybe(rnd.randint(-32768, 32767)) for _ in range(n)], pa.int16()),
    })


def all_oracle(table):
    """{key tuple: states} of the 'all' shape over table."""
    d = table.to_pydict()
    groups = {}
    for i in range(table.num_rows):
        key = (d["ki"][i], d["ks"][i], fkey(d["kf"][i]), fkey(d["kg"][i]), d["kn"][i],
               days(d["kd"][i]), usecs(d["kt"][i]),
               None if d["kb"][i] is None else int(d["kb"][i]), d["kh"][i])
        groups.setdefault(key, []).append(i)
    out = {}
    for key, rows in groups.items():
        nn = lambda c: [d[c][i] for i in rows if d[c][i] is not None]
        out[key] = (len(rows), nn("vi"), nn("vs"), nn("vn"), nn("vf"), nn("vg"),
                    [days(x) for x in nn("vd")])
    return out


def check_all(groups, oracle):
    assert len(groups) == len(oracle)
    for g in groups:
        key = tuple(parse_key(t, k) for t, k in zip(g[:9], ALL_KINDS))
        assert key in oracle, key
        n, vi, vs, vn, vf, vg, vd = oracle[key]
        st = [state(t) for t in g[9:]]
        assert st[0] == (n, "")
        assert st[1][0] == len(vi) and st[2] == (len(vi), str(sum(vi)))
        assert st[3] == (len(vs), str(sum(vs)))
        assert st[4][0] == len(vn) and Decimal(st[4][1]) == sum(vn, Decimal(0))
        assert st[5][0] == len(vf) and feq(float(st[5][1]), math.fsum(vf) if all(
            math.isfinite(x) for x in vf) else sum(vf))
        s1, s2 = map(float, st[6][1].split(":"))
        assert st[6][0] == len(vg) and feq(s1, sum(vg)) and feq(s2, sum(x * x for x in vg))
        assert st[7] == (len(vi), str(min(vi)) if vi else "")
        assert st[8] == (len(vi), str(max(vi)) if vi else "")
        assert st[9][0] == len(vf) and (not vf or feq(float(st[9][1]), fmin(vf)))
        assert st[10][0] == len(vf) and (not vf or feq(float(st[10][1]), fmax(vf)))
        assert st[11][0] == len(vn) and (not vn or Decimal(st[11][1]) == min(vn))
        assert st[12][0] == len(vn) and (not vn or Decimal(st[12][1]) == max(vn))
        assert st[13] == (len(vd), str(min(vd)) if vd else "")
        assert st[14][0] == len(vg) and (not vg or feq(float(st[14][1]), fmax(vg)))
        assert st[15] == (len(vf), "")


# --- results against the oracle ---

def test_all_key_types_and_aggregates(client, svc, tmp_path):
    """Keys of every type with NULLs, -0/+0, NaN, equal numerics and text;
    every aggregate kind; several batches, several files, zstd and lz4
    compressed batches and a zero-row file; 1 and 3 threads."""
    t = all_table(6000, 7)
    files = [write(tmp_path / "a.arrow", t.slice(0, 2500), chunk=333),
             write(tmp_path / "b.arrow", t.slice(2500, 2000), chunk=700, compression="zstd"),
             write(tmp_path / "c.arrow", t.slice(4500), chunk=1000, compression="lz4"),
             write(tmp_path / "e.arrow", t.slice(0, 0))]
    oracle = all_oracle(t)
    for threads in (1, 3):
        groups, end, err = run_client(svc, "all", files, "--threads", threads)
        assert err is None and end["status"] == "0", (err, end)
        check_all(groups, oracle)
        assert int(end["rows_in"]) == 6000 and int(end["rows_passed"]) == 6000
        assert int(end["groups"]) == len(oracle)
        assert int(end["batches"]) == 8 + 3 + 2
        assert int(end["threads"]) == threads and end["engine"] == "1"


def bench_table(n, seed):
    rnd = random.Random(seed)
    pri = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW", None]
    mode = ["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"]
    return pa.table({
        "price": pa.array([rnd.randint(90000, 10000000) for _ in range(n)], pa.int64()),
        "discount": pa.array([rnd.choice([None] + list(range(11))) for _ in range(n)],
                             pa.int32()),
        "quantity": pa.array([rnd.randint(1, 50) for _ in range(n)], pa.int32()),
        "s1": pa.array([rnd.choice(pri) for _ in range(n)]),
        "s2": pa.array([rnd.choice(mode) for _ in range(n)]),
        "rev": pa.array([rnd.randint(-10**12, 10**12) for _ in range(n)], pa.int64()),
        "qty": pa.array([rnd.choice([None, 1, 25, 50]) for _ in range(n)], pa.int32()),
        "cost": pa.array([rnd.randint(1000, 100000) for _ in range(n)], pa.int32()),
    })


def test_benchmark_shapes(client, svc, tmp_path):
    """The two queries of the engine benchmark: a sum under a 2-conjunct
    qual (NULL discounts fail it) and a 2-text-key GROUP BY."""
    t = bench_table(30000, 3)
    f = write(tmp_path / "q.arrow", t, chunk=4096)
    groups, end, err = run_client(svc, "q1", [f])
    mask = pc.and_(pc.and_(pc.greater_equal(t["discount"], 1), pc.less_equal(t["discount"], 3)),
                   pc.less(t["quantity"], 25))
    sel = t.filter(mask)
    want = sum(p * d for p, d in zip(sel["price"].to_pylist(), sel["discount"].to_pylist()))
    assert err is None and groups == [[str(sel.num_rows), "%d:%d" % (sel.num_rows, want)]]
    assert int(end["rows_passed"]) == sel.num_rows and int(end["rows_in"]) == 30000

    groups, end, err = run_client(svc, "text2", [f], "--threads", 4)
    assert err is None and text2_groups(groups) == text2_want(t)


def text2_want(t):
    """pyarrow's answer to the client's text2 query over bench_table t, in
    the client's printed form"""
    g = t.group_by(["s1", "s2"], use_threads=False).aggregate(
        [([], "count_all"), ("rev", "sum"), ("qty", "sum"), ("qty", "count"),
         ("cost", "max")]).to_pylist()
    return {(r["s1"], r["s2"]): ("%d" % r["count_all"], "%d:%d" % (r["count_all"], r["rev_sum"]),
                                 "%d:%d" % (r["qty_count"], r["qty_sum"] or 0),
                                 "%d:%d" % (r["count_all"], r["cost_max"])) for r in g}


def text2_groups(groups):
    """the client's text2 groups, keyed by their two texts"""
    return {(parse_key(k1, "s"), parse_key(k2, "s")): tuple(rest) for k1, k2, *rest in groups}


def test_uneven_batches_are_shared_by_idle_threads(client, svc, tmp_path):
    """One batch of 13 slices and five tiny ones on 4 threads: the threads
    left without a batch run slices of the big one beside its owner
    (agg.c's helpers); the groups are exact however the slices fall, and the
    counters count each row once (repeated, for the races)."""
    t = bench_table(200_000, 7)
    f = str(tmp_path / "uneven.arrow")
    with pa.ipc.new_file(f, t.schema) as w:
        for b in t.slice(0, 196_000).to_batches(max_chunksize=196_000):
            w.write_batch(b)
        for b in t.slice(196_000).to_batches(max_chunksize=800):
            w.write_batch(b)
    assert pa.ipc.open_file(f).num_record_batches == 6
    want = text2_want(t)
    for _ in range(5):
        groups, end, err = run_client(svc, "text2", [f], "--threads", 4)
        assert err is None and text2_groups(groups) == want
        assert int(end["rows_in"]) == 200_000 and int(end["threads"]) == 4


@pytest.mark.skipif(os.geteuid() != 0, reason="the service runs as a uid of its own: root only")
def test_threads_that_cannot_start(client):
    """Worker threads that cannot start (the service's uid at its
    RLIMIT_NPROC: pthread_create fails with EAGAIN) do not fail the run
    (threads.h): the threads that started do the work, and when none did
    the run's thread runs one worker itself; the groups are exact and END's
    threads counts the workers that ran.  When even the run's thread cannot
    start, the request is refused with OUT_OF_MEMORY and the service serves
    the next one."""
    with service_client.thread_limited_service(["--no-gpu", "--threads", "4"]) as (s, uid, d,
                                                                                   limit):
        t = bench_table(40_000, 11)
        f = write(os.path.join(d, "t.arrow"), t, chunk=5000)
        want = text2_want(t)
        # allowed threads: the run's own, then workers
        for allowed, ran in ((1, 1), (3, 2), (5, 4)):
            limit(allowed)
            lines, end, err = service_client.run_client(CLIENT, s.sock, "text2", [f],
                                                        "--threads", 4, uid=uid)
            groups = [g[1:] for g in lines if g[0] == "G"]
            assert err is None and text2_groups(groups) == want, (allowed, err, s.log())
            assert int(end["threads"]) == ran and int(end["rows_in"]) == 40_000, (allowed, end)
        assert "could not start thread 1 of 4" in s.log()
        assert "could not start thread 3 of 4" in s.log()
        limit(0)
        lines, end, err = service_client.run_client(CLIENT, s.sock, "text2", [f], uid=uid)
        assert err == (ERR_OUT_OF_MEMORY, "could not start a thread"), (err, s.log())
        limit(None)
        lines, end, err = service_client.run_client(CLIENT, s.sock, "text2", [f],
                                                    "--threads", 4, uid=uid)
        assert err is None and int(end["threads"]) == 4


def test_many_groups(client, svc, tmp_path):
    """A million groups over two files and two threads (the tables grow,
    the replies span many AGG_RESULT messages)."""
    n, k = 1_200_000, 1_000_000
    rnd = random.Random(5)
    keys = list(range(k)) + [rnd.randrange(k) for _ in range(n - k)]
    rnd.shuffle(keys)
    t = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(range(n), pa.int64())})
    files = [write(tmp_path / "m1.arrow", t.slice(0, n // 2), chunk=100000),
             write(tmp_path / "m2.arrow", t.slice(n // 2), chunk=100000)]
    groups, end, err = run_client(svc, "many", files, "--threads", 2)
    assert err is None and end["status"] == "0"
    got = {int(g[0]): (g[1], g[2]) for g in groups}
    o = t.group_by("k").aggregate([("v", "sum"), ("v", "count")])
    want = {kk: ("%d" % c, "%d:%d" % (c, s)) for kk, s, c in
            zip(o["k"].to_pylist(), o["v_sum"].to_pylist(), o["v_count"].to_pylist())}
    assert len(got) == k == int(end["groups"]) and got == want


def test_many_groups_spilled(client, tmp_path, monkeypatch):
    """The workers' tables spill (PG_WARP_AGG_SPILL_GROUPS in the service's
    environment; off by default): 150,000 groups through tables of at most
    1,000 before they move into 64 partitions, merged into 64 disjoint parts
    of the result: every group once, its count and sum pyarrow's"""
    from test_service import Service
    monkeypatch.setenv("PG_WARP_AGG_SPILL_GROUPS", "1000")
    d = tmp_path / "svc"
    d.mkdir()
    s = Service(str(d), argv=["--no-gpu", "--threads", "2"])
    try:
        n, k = 400_000, 150_000
        rnd = random.Random(7)
        keys = [rnd.randrange(k) for _ in range(n)]
        t = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(range(n), pa.int64())})
        f = write(tmp_path / "s.arrow", t, chunk=50000)
        groups, end, err = run_client(s, "many", [f], "--threads", 2)
        assert err is None and end["status"] == "0", (err, end)
        got = {int(g[0]): (g[1], g[2]) for g in groups}
        o = t.group_by("k").aggregate([("v", "sum"), ("v", "count")])
        want = {kk: ("%d" % c, "%d:%d" % (c, sm)) for kk, sm, c in
                zip(o["k"].to_pylist(), o["v_sum"].to_pylist(), o["v_count"].to_pylist())}
        assert len(groups) == len(want) == int(end["groups"]) and got == want
    finally:
        s.stop()


def test_no_rows(client, svc, tmp_path):
    """No GROUP BY over no rows (zero-row file, no file): one group of
    count 0 and NULL min/max, as PostgreSQL's one row."""
    f = write(tmp_path / "z.arrow", pa.table({"v": pa.array([], pa.int64())}))
    for files in ([f], []):
        groups, end, err = run_client(svc, "cnt", files)
        assert err is None and groups == [["0", "0:0", "0:", "0:"]], (groups, err)
        assert end["rows_in"] == "0" and end["batches"] == "0"


def test_program_errors(client, svc, tmp_path):
    """A division by zero and a numeric sum beyond int128 end the run with a
    status (the backend then runs the query in PostgreSQL), no groups."""
    t = pa.table({"v": pa.array([1, 2, 3], pa.int64()), "z": pa.array([1, 0, 1], pa.int64())})
    groups, end, err = run_client(svc, "divzero", [write(tmp_path / "d.arrow", t)])
    assert groups == [] and int(end["status"]) == XPU_ERR_DIVISION_BY_ZERO
    assert "division by zero" in end["msg"]
    big = Decimal(10**38 - 1)
    t = pa.table({"n": pa.array([big, big], pa.decimal128(38, 0))})
    groups, end, err = run_client(svc, "numsum", [write(tmp_path / "n.arrow", t)])
    assert groups == [] and int(end["status"]) == XPU_ERR_FALLBACK
    t = pa.table({"n": pa.array([big, Decimal(1 - 10**38), big], pa.decimal128(38, 0))})
    groups, end, err = run_client(svc, "numsum", [write(tmp_path / "n2.arrow", t)])
    assert end["status"] == "0" and groups == [["3:%d" % big]]


def test_no_gpu(client, svc, tmp_path):
    f = write(tmp_path / "z.arrow", pa.table({"v": pa.array([1], pa.int64())}))
    _, _, err = run_client(svc, "cnt", [f], "--engine", 2)
    assert err == (ERR_UNSUPPORTED, "no GPU")
    _, end, err = run_client(svc, "cnt", [f], "--engine", 1)
    assert err is None and end["engine"] == "1"


def test_read_ahead_on_the_cpu_engine(client, svc, tmp_path):
    """AGG_FILL (the read-ahead into the GPU column cache) under the CPU
    engine: one reply, no groups, nothing read; the service then serves the
    run as before.  With the join depths of the request not loaded (ids 0,
    as the backend sends it while it builds them) it is no error.  (The GPU
    side: test_service_data_path.py and gpu_aggcheck.)"""
    t = bench_table(5000, 4)
    f = write(tmp_path / "q.arrow", t, chunk=1000)
    groups, end, err = run_client(svc, "q1", [f], "--fill", 1)
    assert err is None and groups == [], (groups, err)
    assert end["status"] == "0" and end["engine"] == "1", end
    assert end["bytes_read"] == "0" and end["batches"] == "0" and end["groups"] == "0", end
    groups, end, err = run_client(svc, "q1", [f])
    assert err is None and len(groups) == 1 and end["rows_in"] == "5000"
    payload = bytearray(dump("q1", []))     # a shared run's finish: no files
    payload[32:40] = struct.pack("<Q", 1)                   # share_id
    payload[40:44] = struct.pack("<I", 2)                   # share_role WARP_SHARE_FINISH
    with connect(svc.sock, 30) as c:
        hello(c)
        c.sendall(message(37, bytes(payload)))
        m = recv_message(c)
        assert error_of(m) == (ERR_PROTOCOL, "AGG_FILL names a shared run"), m


# --- malformed requests ---

def test_truncated_and_mutated_payloads(client, svc, tmp_path):
    """Every truncation of a valid payload is ERROR (protocol); random byte
    mutations give ERROR or a result, never a crash; the service keeps
    serving."""
    f = write(tmp_path / "a.arrow", all_table(300, 1), chunk=100)
    good = dump("all", [f, f])
    step = max(1, len(good) // 97)
    for cut in list(range(0, len(good), step)) + [len(good) - 1]:
        replies = send_raw(svc, good[:cut])
        assert len(replies) == 1 and error_of(replies[0])[0] == ERR_PROTOCOL, cut
    assert error_of(send_raw(svc, good + b"\0" * 9)[0])[0] == ERR_PROTOCOL
    rnd = random.Random(11)
    for _ in range(300):
        b = bytearray(good)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        replies = send_raw(svc, bytes(b))
        assert replies[-1][0] in (MSG_ERROR, MSG_AGG_RESULT)
    assert svc.proc.poll() is None
    groups, end, err = run_client(svc, "all", [f])
    assert err is None and end["status"] == "0"


def patch(payload, offset, fmt, value):
    b = bytearray(payload)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


def file_offset(payload):
    """Offset of the first WarpAggFile in a payload."""
    n_files, n_keys, n_aggs, prog_len = struct.unpack_from("<IIII", payload)
    off = 48  # sizeof(WarpAggRequest)
    off = (off + n_keys * 2 + 7) // 8 * 8
    off = (off + n_aggs * 8 + 15) // 16 * 16
    return (off + prog_len + 7) // 8 * 8


def test_bad_offsets_and_counts(client, svc, tmp_path):
    f = write(tmp_path / "a.arrow", all_table(100, 2))
    good = dump("all", [f])
    fo = file_offset(good)
    bad = {
        "n_files": patch(good, 0, "<I", 2),
        "n_keys": patch(good, 4, "<I", 33),
        "n_aggs": patch(good, 8, "<I", 65),
        "prog_len": patch(good, 12, "<I", 0xFFFFFF00),
        "max_buffer_size": patch(good, 24, "<q", -1),
        "path_len": patch(good, fo + 32, "<I", 0xFFFFFFFF),
        "n_batches": patch(good, fo + 36, "<I", 1 << 30),
        "n_cols": patch(good, fo + 40, "<I", 3),
        "key out": patch(good, 32, "<H", 200),
        "agg kind": patch(good, 56, "<B", 99),
    }
    for what, p in bad.items():
        replies = send_raw(svc, p)
        assert len(replies) == 1 and error_of(replies[0])[0] == ERR_PROTOCOL, what
    # a batch or field the file lacks, a field of another type: refused
    # after the file is opened, naming it
    path_len, n_batches = struct.unpack_from("<II", good, fo + 32)
    boff = (fo + 48 + path_len + 7) // 8 * 8
    foff = (boff + 4 * n_batches + 7) // 8 * 8
    for p in (patch(good, boff, "<i", 5), patch(good, foff, "<i", 99),
              patch(good, foff, "<i", 1)):
        code, msg = error_of(send_raw(svc, p)[0])
        assert code == ERR_PROTOCOL and f in msg, msg
    # the program: a copy whose header is broken
    prog_off = file_offset(good) - ((struct.unpack_from("<I", good, 12)[0] + 7) // 8 * 8)
    code, msg = error_of(send_raw(svc, patch(good, prog_off, "<I", 0))[0])
    assert code == ERR_PROTOCOL and "invalid program" in msg


# --- files ---

def test_file_changed_fifo_and_corrupt(client, svc, tmp_path):
    t = all_table(2000, 4)
    f = write(tmp_path / "a.arrow", t, chunk=500, compression="zstd")
    payload = dump("all", [f])
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    code, msg = error_of(send_raw(svc, payload)[0])
    assert code == ERR_FILE_CHANGED and f in msg
    # corrupt bytes inside the batches, identity restored: a clear error
    with open(f, "r+b") as fh:
        fh.seek(st.st_size // 2)
        fh.write(random.Random(1).randbytes(256))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    code, msg = error_of(send_raw(svc, payload)[0])
    assert code == ERR_BAD_FILE and f in msg, msg
    # a FIFO in the file's place: refused without blocking
    os.unlink(f)
    os.mkfifo(f)
    code, msg = error_of(send_raw(svc, payload, timeout=10)[0])
    assert code == ERR_IO and "not a regular file" in msg
    os.unlink(f)
    code, msg = error_of(send_raw(svc, payload)[0])
    assert code == ERR_IO and f in msg


# --- runs alongside other work ---

def long_file(tmp_path):
    """A file and how many times to name it so that a run takes seconds (60
    times took 0.3 s on one thread of the 2-core development machine once the
    CPU engine grouped text keys faster: test_concurrent_runs_and_status then
    found its runs done when it looked)."""
    f = write(tmp_path / "long.arrow", bench_table(200000, 9), chunk=16384)
    return f, 240


def test_cancel_and_close(client, svc, tmp_path):
    """CANCEL mid-run answers CANCELED within about a batch per thread; a
    connection closed mid-run cancels it; the service keeps serving."""
    f, reps = long_file(tmp_path)
    payload = dump("text2", [f] * reps, "--threads", 1)
    with connect(svc.sock) as c:
        hello(c)
        c.sendall(message(MSG_AGG_RUN, payload))
        time.sleep(0.2)
        assert status(svc)[5] == 1
        t0 = time.monotonic()
        c.sendall(message(MSG_CANCEL))
        reply = recv_message(c)
        elapsed = time.monotonic() - t0
    assert error_of(reply)[0] == ERR_CANCELED and elapsed < 2, elapsed
    wait_until(lambda: status(svc)[5] == 0, 10, "running_tasks to drop")
    with connect(svc.sock) as c:
        hello(c)
        c.sendall(message(MSG_AGG_RUN, payload))
        time.sleep(0.2)
    wait_until(lambda: status(svc)[5] == 0, 5, "the orphaned run to end")
    # a CANCEL that arrives after the last reply is ignored
    small = dump("cnt", [write(tmp_path / "s.arrow", pa.table({"v": pa.array([4], pa.int64())}))])
    with connect(svc.sock) as c:
        hello(c)
        c.sendall(message(MSG_AGG_RUN, small))
        assert recv_message(c)[0] == MSG_AGG_RESULT
        c.sendall(message(MSG_CANCEL) + message(MSG_STATUS))
        assert recv_message(c)[0] == MSG_STATUS
        # anything but CANCEL during a run is a protocol error
        c.sendall(message(MSG_AGG_RUN, payload) + message(MSG_STATUS))
        code, msg = error_of(recv_message(c))
        assert code == ERR_PROTOCOL and "in progress" in msg
    wait_until(lambda: status(svc)[5] == 0, 5, "the run to end")
    groups, end, err = run_client(svc, "cnt", [tmp_path / "s.arrow"])
    assert groups == [["1", "1:4", "1:4", "1:4"]]


def test_concurrent_runs_and_status(client, svc, tmp_path):
    """Two runs at once, each right; STATUS answers promptly meanwhile and
    counts them."""
    f, reps = long_file(tmp_path)
    procs = [subprocess.Popen([CLIENT, "--threads", "1", svc.sock, "text2", *[f] * reps],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    time.sleep(0.3)
    t0 = time.monotonic()
    st = status(svc)
    assert time.monotonic() - t0 < 0.5
    assert st[5] == 2, st
    outs = [p.communicate(timeout=120)[0] for p in procs]
    t = ipc.open_file(f).read_all()
    g = t.group_by(["s1", "s2"]).aggregate([([], "count_all")]).to_pylist()
    want = sorted("%s\t%s\t%d" % ("N" if r["s1"] is None else "x" + r["s1"].encode().hex(),
                                  "x" + r["s2"].encode().hex(), r["count_all"] * reps) for r in g)
    for out in outs:
        lines = out.splitlines()
        assert lines[-1].startswith("END\tstatus=0")
        assert sorted("\t".join(l.split("\t")[1:4]) for l in lines[:-1]) == want
    assert status(svc)[5] == 0


def test_out_of_memory_is_a_fallback(client, tmp_path):
    """A run the service has no memory for (an address-space limit of 250
    MB, 3 M groups) ends with a FALLBACK and says why: the backend runs
    PostgreSQL's plan instead of failing with 53200 (issue 27, item 13);
    the service lives on and serves the next run."""
    from test_service import Service
    d = tmp_path / "svc"
    d.mkdir()
    s = Service(str(d), argv=["--no-gpu", "--threads", "2"], max_memory=250 * 1024 * 1024)
    try:
        n = 3_000_000
        t = pa.table({"k": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.int64())})
        f = write(tmp_path / "big.arrow", t, chunk=100000)
        groups, end, err = run_client(s, "many", [f], "--threads", 2)
        assert err is None and groups == [], (err, s.log())
        assert int(end["status"]) == XPU_ERR_FALLBACK, end
        assert end["msg"].startswith("the service ran out of memory"), end
        small = write(tmp_path / "small.arrow", t.slice(0, 1000))
        groups, end, err = run_client(s, "many", [small])
        assert err is None and end["status"] == "0" and len(groups) == 1000
        assert s.proc.poll() is None, s.log()
    finally:
        s.stop()
