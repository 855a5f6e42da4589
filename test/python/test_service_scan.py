"""SCAN_RUN of pg_warp_service (src/service/scan.c), spoken by
test/c/bin/scan_client, against pyarrow as the oracle.

The service is started by hand on a temporary directory (--no-gpu, two CPU
threads).  Every test writes Arrow files with pyarrow, asks the service to
filter them, and compares the rows that come back, column by column in their
Arrow layout (fixed-width values and variable-length bytes as hex, booleans as
bits, NULLs), with what pyarrow computes from the same files: the passing
rows, in file and batch order, of the requested columns only.
"""
import os
import re
import struct

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import service_client
from service_client import ENGINE, client_fixture, run_client, service_fixture, write

client = client_fixture("scan_client")
svc = service_fixture()


def run(client, svc, qual, files, *opts, timeout=120, uid=None):
    """(blocks: list of (n_rows, n_cols, recheck, rows), end: dict, error)."""
    lines, end, error = run_client(client, svc.sock, qual, files, *opts, timeout=timeout,
                                   uid=uid)
    blocks = []
    for f in lines:
        if f[0] == "B":
            blocks.append((int(f[1]), int(f[2]), f[3] == "recheck", []))
        elif f[0] == "R":
            blocks[-1][3].append(f[1:])
    return blocks, end, error


def value(arr, i):
    """Row i of a pyarrow array as scan_client prints it."""
    if not arr[i].is_valid:
        return "N"
    t = arr.type
    if pa.types.is_boolean(t):
        return "1" if arr[i].as_py() else "0"
    if (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t)):
        v = arr[i].as_py()
        return (v.encode() if isinstance(v, str) else v).hex()
    width = t.bit_width // 8
    buf = arr.buffers()[1]
    return buf.to_pybytes()[(arr.offset + i) * width:(arr.offset + i + 1) * width].hex()


def expected(table, chunk, passes, outs=None):
    """The rows of table, batch by batch, where passes(batch, i)."""
    rows = []
    for b in table.to_batches(max_chunksize=chunk):
        cols = b.columns[:outs] if outs is not None else b.columns
        for i in range(b.num_rows):
            if passes(b, i):
                rows.append([value(c, i) for c in cols])
    return rows


def table(n, seed=1):
    a = pc.cast(pc.floor(pc.subtract(pc.multiply(pc.random(n, initializer=seed), 200), 100)),
                pa.int32())
    mask = pa.array([i % 7 == 3 for i in range(n)])
    return pa.table({
        "a": pc.if_else(mask, pa.scalar(None, pa.int32()), a),
        "z": pa.array([(i * 13) % 9 - 4 for i in range(n)], pa.int32()),
        "s": pa.array([None if i % 5 == 0 else "s%d" % (i * 7919 % 1000) for i in range(n)]),
        "b": pa.array([None if i % 11 == 0 else i % 3 == 0 for i in range(n)]),
        "f": pa.array([i * 0.5 if i % 4 else None for i in range(n)], pa.float64()),
        "d": pa.array([None if i % 6 == 0 else i * 1000 - 7 for i in range(n)],
                      pa.decimal128(20, 3)),
        "ls": pa.array(["x" * (i % 17) for i in range(n)], pa.large_string()),
        "ts": pa.array([i * 1000003 for i in range(n)], pa.timestamp("us")),
        "u2": pa.array([i % 65536 for i in range(n)], pa.uint16()),
    })


def rows_of(blocks):
    return [r for _, _, _, rows in blocks for r in rows]


def test_every_row_every_column(client, svc, tmp_path):
    t = table(3000)
    files = [write(tmp_path / "a.arrow", t, 256), write(tmp_path / "b.arrow", t.slice(17), 1000)]
    blocks, end, error = run(client, svc, "none", files)
    assert error is None, error
    want = expected(t, 256, lambda b, i: True) + expected(t.slice(17), 1000, lambda b, i: True)
    assert rows_of(blocks) == want
    assert int(end["rows_in"]) == int(end["rows_passed"]) == 3000 + 2983
    assert int(end["recheck"]) == 0 and int(end["engine"]) == ENGINE


@pytest.mark.skipif(os.geteuid() != 0, reason="the service runs as a uid of its own: root only")
@pytest.mark.skipif(ENGINE != 1, reason="the CPU engine's workers")
def test_threads_that_cannot_start(client):
    """Workers that cannot start (RLIMIT_NPROC of the service's uid) do not
    fail a SCAN_RUN (threads.h): the ones that started filter every batch,
    or the run's thread alone when none did; the rows are exact and the
    reply counts the workers that ran."""
    with service_client.thread_limited_service(["--no-gpu", "--threads", "4"]) as (s, uid, d,
                                                                                   limit):
        t = table(3000)
        # small batches: a worker lives for many of them, so that it has
        # not ended (and left its place under the limit) before the next one starts
        f = write(os.path.join(d, "a.arrow"), t, 16)
        want = expected(t, 16, lambda b, i: True)

        def scan(allowed):
            limit(allowed)
            logged = len(s.log())
            blocks, end, error = run(client, s, "none", [f], "--threads", 4, uid=uid)
            assert error is None and rows_of(blocks) == want, (allowed, error, s.log())
            ran, new = int(end["threads"]), s.log()[logged:]
            # the reply's count is the log's: a run short of workers says so
            if ran < 4:
                assert re.search(r"could not start thread \d of 4 \(.*\): %d run the work" % ran,
                                 new), (allowed, ran, new)
            else:
                assert "could not start thread" not in new, (allowed, new)
            return ran

        # none may start: the run's own thread does the work
        assert scan(1) == 1
        # two may start.  RLIMIT_NPROC counts live threads, so a worker that
        # ended early makes room for one more: the count is the log's, and two
        # of four is seen within a few runs
        assert 2 in [scan(3) for _ in range(5)]
        assert scan(None) == 4


def test_passing_rows_of_requested_columns(client, svc, tmp_path):
    t = table(5000, seed=3)
    f = write(tmp_path / "a.arrow", t, 333)

    def pos(b, i):
        v = b.column(0)[i].as_py()
        return v is not None and v > 0

    for outs in (0, 1, 3, 9):
        blocks, end, error = run(client, svc, "pos", [f], "--outs", outs)
        assert error is None, error
        want = expected(t, 333, pos, outs)
        assert rows_of(blocks) == want, outs
        assert all(nc == outs and not rc for _, nc, rc, _ in blocks)
        assert int(end["rows_passed"]) == len(want)


def test_error_batches_come_back_whole(client, svc, tmp_path):
    """a / z > 0: a batch where z = 0 beside a non-NULL a raises division by
    zero; it comes back whole (every column, every row) flagged recheck."""
    n, chunk = 4000, 100
    a = pa.array([None if i % 7 == 3 else (i % 50) - 20 for i in range(n)], pa.int32())
    z = pa.array([0 if i in (151, 1999, 3900) else (i % 5) + 1 for i in range(n)], pa.int32())
    t = pa.table({"a": a, "z": z, "s": pa.array(["v%d" % i for i in range(n)])})
    f = write(tmp_path / "a.arrow", t, chunk)
    blocks, end, error = run(client, svc, "div", [f], "--outs", 1)
    assert error is None, error
    bad = {151 // chunk, 1999 // chunk, 3900 // chunk}
    want = []
    for k, b in enumerate(t.to_batches(max_chunksize=chunk)):
        if k in bad:
            want += [[value(c, i) for c in b.columns] for i in range(b.num_rows)]
            continue
        for i in range(b.num_rows):
            av, zv = b.column(0)[i].as_py(), b.column(1)[i].as_py()
            if av is not None and int(av / zv) > 0:
                want.append([value(b.column(0), i)])
    assert rows_of(blocks) == want
    assert sum(1 for _, _, rc, _ in blocks if rc) == 3
    assert int(end["recheck"]) == 3


def test_blocks_split_at_the_message_limit(client, svc, tmp_path):
    """Passing rows of more than 1 MiB in one batch come back in several
    blocks, in order."""
    n = 60000
    t = pa.table({"a": pa.array([1 + i % 3 for i in range(n)], pa.int32()),
                  "s": pa.array(["%040d" % i for i in range(n)])})
    f = write(tmp_path / "a.arrow", t, n)
    blocks, end, error = run(client, svc, "pos", [f])
    assert error is None, error
    assert len(blocks) > 2
    assert rows_of(blocks) == expected(t, n, lambda b, i: True)


def test_empty_file_and_empty_result(client, svc, tmp_path):
    t = table(10)
    f0 = write(tmp_path / "empty.arrow", t.slice(0, 0), 10)
    neg = t.set_column(0, "a", pa.array([-1] * 10, pa.int32()))
    f1 = write(tmp_path / "neg.arrow", neg, 3)
    blocks, end, error = run(client, svc, "pos", [f0, f1])
    assert error is None and blocks == [] and int(end["rows_in"]) == 10, (error, end)


def test_malformed_and_changed(client, svc, tmp_path):
    t = table(100)
    f = write(tmp_path / "a.arrow", t, 10)
    _, _, error = run(client, svc, "none", [f], "--outs", 99)
    assert error is not None and error[0] == 1, error      # WARP_ERR_PROTOCOL
    # a dictionary-encoded column has no flat layout: refused
    dict_t = pa.table({"a": pa.array([1, 2], pa.int32()),
                       "k": pa.array(["x", "y"]).dictionary_encode()})
    fd = write(tmp_path / "dict.arrow", dict_t, 10)
    _, _, error = run(client, svc, "pos", [fd])
    assert error is not None and "flat layout" in error[1], error


def test_damaged_utf8_offsets(client, svc, tmp_path):
    """A utf8 column's offsets changed in the file (one batch of 600,000
    rows: its offsets span two 2 MiB read slices, whose threads check them
    as they read on the GPU path, the pair across them checked after): a
    decrease inside each slice and across their boundary, a first offset
    below 0 and a last one past the data are each refused naming the file,
    and the file as written passes."""
    n, width = 600000, 7
    t = pa.table({"a": pa.array(range(n), pa.int32()),
                  "s": pa.array(["v%06d" % i for i in range(n)])})
    good = write(tmp_path / "good.arrow", t)
    with open(good, "rb") as fh:
        data = fh.read()
    # offset i is width * i: offsets 1000..1002 found, offset 0 before them
    at = data.find(struct.pack("<3i", 1000 * width, 1001 * width, 1002 * width)) - 4000
    assert at > 0 and data.find(struct.pack("<3i", 1000 * width, 1001 * width,
                                            1002 * width), at + 4004) < 0
    assert struct.unpack_from("<2i", data, at) == (0, width)
    blocks, end, error = run(client, svc, "sgt", [good])
    assert error is None, error
    assert rows_of(blocks) == expected(t, n, lambda b, i: b.column(1)[i].as_py() > "v5")
    assert int(end["engine"]) == ENGINE
    per_slice = (2 << 20) // 4
    damage = {
        "inside the first slice": (1000, 999 * width - 1),
        "across the slices": (per_slice, (per_slice - 1) * width - 1),
        "inside the second slice": (n - 10, (n - 11) * width - 1),
        "first below 0": (0, -1),
        "last past the data": (n, n * width + 64),
    }
    for what, (i, v) in damage.items():
        b = bytearray(data)
        struct.pack_into("<i", b, at + 4 * i, v)
        f = str(tmp_path / ("bad%d.arrow" % i))
        with open(f, "wb") as fh:
            fh.write(b)
        blocks, end, error = run(client, svc, "sgt", [f])
        assert error is not None and error[0] == 6 and f in error[1], (what, error)
        # the GPU path refuses the batch before its kernel runs (the CPU
        # engine's load of the batch has words of its own)
        assert ("record batch 0 has invalid utf8 offsets" if ENGINE == 2 else "offset") \
            in error[1], (what, error)


def test_cancel(client, svc, tmp_path):
    n = 400000
    t = pa.table({"a": pa.array(range(n), pa.int32()),
                  "s": pa.array(["%030d" % i for i in range(n)])})
    f = write(tmp_path / "big.arrow", t, 1000)
    blocks, end, error = run(client, svc, "pos", [f, f, f], "--cancel-ms", 1)
    # canceled, unless it finished within the millisecond
    assert (error is not None and error[0] == 8) or end is not None, (error, end)
    blocks, end, error = run(client, svc, "pos", [f])
    assert error is None and int(end["rows_passed"]) == n - 1
