"""HEAP_RUN end to end without PostgreSQL: pg_warp_service started by hand
(--no-gpu), heap pages built here byte by byte in PostgreSQL 15's on-disk
format, shipped through a sealed memfd passed with SCM_RIGHTS, and the
groups compared with the same grouping computed in Python.  The program is
agg_client's "many" shape (GROUP BY k int8: count(*), sum(v int8)) with
its file part replaced by the heap part (xpu/protocol.h, HEAP_RUN).

Also the service's robustness against a misbehaving backend: no memfd, an
unsealed or short memfd, a truncated request, a chunk of a bad slot, and
pages or tuples that do not decode (a FALLBACK, never a crash).
"""
import array
import fcntl
import mmap
import os
import random
import socket
import struct
import time

import pytest

from test_service import connect, error_of, hello, message, recv_message, wait_until
from test_service_agg import (RESULT_HEAD, RESULT_SIZE, all_table, client, dump,  # noqa: F401
                              file_offset, svc, write)
from test_service_agg import status as status_of

import pyarrow as pa

MSG_ERROR, MSG_AGG_RESULT = 3, 23
MSG_HEAP_RUN, MSG_HEAP_CHUNK, MSG_HEAP_DONE, MSG_HEAP_END = 24, 25, 26, 27
ERR_PROTOCOL = 1
XPU_ERR_FALLBACK = 8
PAGE, VIS = 8192, 40
SLOT_PAGES, N_SLOTS = 4, 2
SLOT_SIZE = (SLOT_PAGES * (PAGE + VIS) + PAGE - 1) // PAGE * PAGE


def tuple_bytes(k, v):
    """A heap tuple of (k int8, v int8); None is NULL."""
    nulls = k is None or v is None
    bits = (0 if k is None else 1) | (0 if v is None else 2)
    head = bytearray(24)
    struct.pack_into("<HHB", head, 18, 2, 1 if nulls else 0, 24)
    if nulls:
        head[23] = bits
    return bytes(head) + b"".join(struct.pack("<q", x) for x in (k, v) if x is not None)


def page_bytes(tuples):
    """A heap page holding tuples (bytes each) from its end, MAXALIGN'ed."""
    p = bytearray(PAGE)
    upper = PAGE
    for i, t in enumerate(tuples):
        upper = (upper - len(t)) // 8 * 8
        p[upper:upper + len(t)] = t
        struct.pack_into("<I", p, 24 + 4 * i, upper | (1 << 15) | (len(t) << 17))
    struct.pack_into("<HHHH", p, 12, 24 + 4 * len(tuples), upper, PAGE, PAGE | 4)
    return bytes(p)


def vis_bytes(n, visible):
    b = bytearray(VIS)
    for i in range(n):
        if visible(i):
            b[i >> 3] |= 1 << (i & 7)
    return bytes(b)


def heap_payload(client_dir, tmp_path, n_slots=N_SLOTS, engine=1, flags=0, slot_pages=SLOT_PAGES,
                 path=None, seg_blocks=0):
    """HEAP_RUN's payload: the "many" program, then the heap part (engine 1: CPU;
    flags 1: WARP_HEAP_SCAN, 2: WARP_HEAP_UNITS with path and seg_blocks)."""
    f = write(tmp_path / "shape.arrow", pa.table({"k": pa.array([1], pa.int64()),
                                                   "v": pa.array([1], pa.int64())}))
    good = dump("many", [f])
    head = bytearray(good[:file_offset(good)])
    struct.pack_into("<I", head, 0, 0)                  # n_files
    struct.pack_into("<I", head, 20, engine)            # engine
    raw = (path or "").encode()
    heap = struct.pack("<IIQIIIIII", n_slots, slot_pages, slot_size(slot_pages), 2, 0, flags,
                       len(raw), seg_blocks, 0)
    heap += struct.pack("<hBBIII", 8, 8, 0, 0, 0, 0) * 2     # k, v: int8
    heap += struct.pack("<hh", 1, 2) + b"\0" * 4             # chunk columns -> attributes
    heap += raw + b"\0" * (-len(raw) % 8)                     # the segment path (units)
    return bytes(head) + heap


def slot_size(slot_pages):
    return (slot_pages * (PAGE + VIS) + PAGE - 1) // PAGE * PAGE


def make_ring(size=N_SLOTS * SLOT_SIZE, seal=True):
    fd = os.memfd_create("heap test", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd, mmap.mmap(fd, size)


def start(svc, payload, fd):
    c = connect(svc.sock, 30)
    hello(c)
    fds = [] if fd is None else [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
    c.sendmsg([message(MSG_HEAP_RUN, payload)], fds)
    return c


def results(c, n_aggs=2):
    """The groups {key: (count, sum)} and the last AGG_RESULT's status."""
    groups = {}
    while True:
        m = recv_message(c)
        assert m is not None
        if m[0] == MSG_HEAP_DONE:
            continue
        if m[0] == MSG_ERROR:
            return None, error_of(m)
        n, flags, status, _ = RESULT_HEAD.unpack_from(m[1])
        off = RESULT_SIZE
        for _ in range(n):
            klen = struct.unpack_from("<I", m[1], off)[0]
            key = m[1][off + 4:off + 4 + klen]
            soff = off + (4 + klen + 15) // 16 * 16
            cnt = struct.unpack_from("<q", m[1], soff)[0]
            s = int.from_bytes(m[1][soff + 32 + 16:soff + 32 + 32], "little", signed=True)
            k = None if key[0] == 0 else struct.unpack_from("<q", key, 1)[0]
            groups[k] = (cnt, s)
            off = soff + 32 * n_aggs
        if flags & 1:
            return groups, status


def groups_of(rows, visible):
    """{k: (count, sum of v)} over the rows (k, v) of one page whose tuple index is visible"""
    want = {}
    for t, (k, v) in enumerate(rows):
        if visible(t):
            cnt, s = want.get(k, (0, 0))
            want[k] = (cnt + 1, s + v)
    return want


def ship(c, ring, pages, visible, take=None, sent=None):
    """Sends the pages through the ring, a chunk of SLOT_PAGES at a time;
    take() waits for a HEAP_DONE and returns its slot (default: any
    HEAP_DONE's), sent[slot] records each chunk's first page and pages.
    Returns the number of chunks not given back yet."""
    free = list(range(N_SLOTS))
    for i in range(0, len(pages), SLOT_PAGES):
        if not free:
            if take:
                free.append(take())
            else:
                m = recv_message(c)
                assert m[0] == MSG_HEAP_DONE, m
                free.append(struct.unpack_from("<I", m[1])[0])
        slot = free.pop()
        base = slot * SLOT_SIZE
        part = pages[i:i + SLOT_PAGES]
        if sent is not None:
            sent[slot] = (i, part)
        for j, (p, n) in enumerate(part):
            ring[base + j * PAGE:base + (j + 1) * PAGE] = p
            vb = base + SLOT_PAGES * PAGE + j * VIS
            ring[vb:vb + VIS] = vis_bytes(n, lambda t: visible(i + j, t))
        c.sendall(message(MSG_HEAP_CHUNK, struct.pack("<IIIIq", slot, len(part), 0, 0, 0)))
    c.sendall(message(MSG_HEAP_END))
    return N_SLOTS - len(free)


def test_heap_run_against_python(client, svc, tmp_path):
    rnd = random.Random(3)
    rows, pages = [], []
    for _ in range(37):
        page_rows = [(rnd.choice([None, 1, 2, 3, -5]), rnd.choice([None, 10, -7, 2**40]))
                     for _ in range(rnd.randint(0, 180))]
        rows.append(page_rows)
        pages.append((page_bytes([tuple_bytes(k, v) for k, v in page_rows]), len(page_rows)))

    def visible(p, t):
        return (p * 7 + t) % 5 != 0

    want = {}
    for p, page_rows in enumerate(rows):
        for t, (k, v) in enumerate(page_rows):
            if visible(p, t):
                c, s = want.get(k, (0, 0))
                want[k] = (c + 1, s + (v or 0))
    fd, ring = make_ring()
    c = start(svc, heap_payload(client, tmp_path), fd)
    os.close(fd)
    ship(c, ring, pages, visible)
    groups, status = results(c)
    c.close()
    assert status == 0 and groups == want


def test_heap_scan_run_returns_pass_bitmaps(client, svc, tmp_path):
    """WARP_HEAP_SCAN (GpuScan): each chunk comes back in a HEAP_DONE with its
    pass bitmaps, the last reply is an AGG_RESULT without groups.  The
    program has no qual, so the bits are exactly the visible tuples."""
    rnd = random.Random(5)
    pages = []
    for _ in range(2 * SLOT_PAGES * N_SLOTS + 1):
        page_rows = [(rnd.choice([None, 1, 2]), rnd.choice([None, 10, -7]))
                     for _ in range(rnd.randint(0, 200))]
        pages.append((page_bytes([tuple_bytes(k, v) for k, v in page_rows]), len(page_rows)))

    def visible(p, t):
        return (p * 3 + t) % 4 != 0

    fd, ring = make_ring()
    c = start(svc, heap_payload(client, tmp_path, flags=1), fd)
    os.close(fd)
    got = {}
    sent = {}

    def take_done():
        m = recv_message(c)
        assert m[0] == MSG_HEAP_DONE, m
        slot, n_pages, flags, n_passed = struct.unpack_from("<IIII", m[1])
        assert flags == 0 and n_pages == len(sent[slot][1])
        assert len(m[1]) == 16 + n_pages * VIS
        bits = 0
        for j, p in enumerate(sent[slot][1]):
            got[sent[slot][0] + j] = m[1][16 + j * VIS:16 + (j + 1) * VIS]
            bits += sum(bin(x).count("1") for x in got[sent[slot][0] + j])
        assert bits == n_passed
        return slot

    for _ in range(ship(c, ring, pages, visible, take_done, sent)):
        take_done()
    m = recv_message(c)
    assert m[0] == MSG_AGG_RESULT, m
    n, flags, status, _ = RESULT_HEAD.unpack_from(m[1])
    c.close()
    assert (n, flags & 1, status) == (0, 1, 0)
    for p, (_, n_rows) in enumerate(pages):
        assert got[p] == vis_bytes(n_rows, lambda t: visible(p, t)), p


# 10: an unknown bit (8) beside WARP_HEAP_UNITS; 4: WARP_HEAP_SERVICE_READS without WARP_HEAP_UNITS
@pytest.mark.parametrize("flags", [10, 4])
def test_heap_scan_bad_flags(client, svc, tmp_path, flags):
    fd, ring = make_ring()
    c = start(svc, heap_payload(client, tmp_path, flags=flags), fd)
    os.close(fd)
    code, msg = error_of(recv_message(c))
    c.close()
    assert code == ERR_PROTOCOL and "flags" in msg, msg


@pytest.mark.parametrize("engine", [0, 2])
def test_heap_run_engine_choice(client, svc, tmp_path, engine):
    """A heap run may ask for the service's choice (auto: here, without a GPU, the
    CPU engine runs it) or for the GPU (refused by a service without one)."""
    rows = [(k % 3, k) for k in range(50)]
    fd, ring = make_ring()
    c = start(svc, heap_payload(client, tmp_path, engine=engine), fd)
    os.close(fd)
    if engine == 2:
        code, msg = error_of(recv_message(c))
        c.close()
        assert code == 3 and "no GPU" in msg, msg  # WARP_ERR_UNSUPPORTED
        return
    ship(c, ring, [(page_bytes([tuple_bytes(k, v) for k, v in rows]), len(rows))],
         lambda p, t: t % 4 != 1)
    groups, status = results(c)
    c.close()
    assert status == 0 and groups == groups_of(rows, lambda t: t % 4 != 1)


def test_bad_rings_and_requests(client, svc, tmp_path):
    payload = heap_payload(client, tmp_path)
    # no memfd with the request
    c = start(svc, payload, None)
    assert error_of(recv_message(c))[0] == ERR_PROTOCOL
    c.close()
    # an unsealed memfd (the backend could shrink it under the service) and a short one
    for size, seal in ((N_SLOTS * SLOT_SIZE, False), (SLOT_SIZE, True)):
        fd, ring = make_ring(size, seal)
        c = start(svc, payload, fd)
        code, msg = error_of(recv_message(c))
        assert code == ERR_PROTOCOL and "memfd" in msg, msg
        c.close()
        os.close(fd)
    # truncated requests
    fd, ring = make_ring()
    for cut in range(len(payload) - 1, 0, -37):
        c = start(svc, payload[:cut], fd)
        assert error_of(recv_message(c))[0] == ERR_PROTOCOL, cut
        c.close()
    # a chunk of a slot that does not exist, and one of more pages than a slot holds
    for chunks in ([(N_SLOTS, 1)], [(0, SLOT_PAGES + 1)]):
        c = start(svc, payload, fd)
        for slot, n in chunks:
            c.sendall(message(MSG_HEAP_CHUNK, struct.pack("<IIIIq", slot, n, 0, 0, 0)))
        assert error_of(recv_message(c))[0] == ERR_PROTOCOL
        c.close()
    os.close(fd)
    assert svc.proc.poll() is None


UNIT = 2048                     # WARP_HEAP_UNIT_BLOCKS
PROBE, WHOLE_UNIT, SERVED, NO_CACHE = 1, 2, 4, 8


def unit_chunk(slot, n_pages, unit, flags):
    return message(MSG_HEAP_CHUNK, struct.pack("<IIIIq", slot, n_pages, unit, flags, 0))


def test_units_on_the_cpu_engine(client, svc, tmp_path):
    """WARP_HEAP_UNITS: the CPU engine keeps no units, so a probe comes back
    at once with PROBE | NO_CACHE and its unit, a unit's pages shipped as
    WARP_CHUNK_UNIT are aggregated as any chunk, and the groups are right."""
    rows = [(k % 5, k * 3) for k in range(120)]
    fd, ring = make_ring(N_SLOTS * slot_size(UNIT))
    c = start(svc, heap_payload(client, tmp_path, flags=2, slot_pages=UNIT,
                                path="base/1/16384", seg_blocks=131072), fd)
    os.close(fd)
    c.sendall(unit_chunk(1, 0, 3 * UNIT, PROBE))
    m = recv_message(c)
    assert m[0] == MSG_HEAP_DONE and struct.unpack_from("<IIII", m[1]) == \
        (1, 0, 3 * UNIT, PROBE | NO_CACHE), m
    ring[0:PAGE] = page_bytes([tuple_bytes(k, v) for k, v in rows])
    ring[UNIT * PAGE:UNIT * PAGE + VIS] = vis_bytes(len(rows), lambda t: t % 3 != 0)
    c.sendall(unit_chunk(0, 1, 3 * UNIT, WHOLE_UNIT))
    c.sendall(message(MSG_HEAP_END))
    groups, status = results(c)
    c.close()
    assert status == 0 and groups == groups_of(rows, lambda t: t % 3 != 0)


@pytest.mark.parametrize("case", ["no units", "small slots", "absolute path", "climbs out",
                                  "no path", "odd segments", "probe with pages",
                                  "unit not aligned", "two flags", "unknown flag"])
def test_bad_unit_requests(client, svc, tmp_path, case):
    """A run that asks for units wrongly, or a chunk whose unit flags the run
    does not allow, is a protocol error, never a crash."""
    good = dict(flags=2, slot_pages=UNIT, path="base/1/16384", seg_blocks=131072)
    args = dict(good)
    chunk = unit_chunk(0, 0, UNIT, PROBE)
    if case == "no units":
        args = {}
    elif case == "small slots":
        args["slot_pages"] = UNIT - 1
    elif case == "absolute path":
        args["path"] = "/etc/passwd"
    elif case == "climbs out":
        args["path"] = "base/../../x"
    elif case == "no path":
        args["path"] = None
    elif case == "odd segments":
        args["seg_blocks"] = UNIT + 1
    elif case == "probe with pages":
        chunk = unit_chunk(0, 1, UNIT, PROBE)
    elif case == "unit not aligned":
        chunk = unit_chunk(0, 0, UNIT + 8, PROBE)
    elif case == "two flags":
        chunk = unit_chunk(0, 0, UNIT, PROBE | WHOLE_UNIT)
    else:
        chunk = unit_chunk(0, 0, UNIT, SERVED)
    fd, ring = make_ring(N_SLOTS * slot_size(UNIT))
    c = start(svc, heap_payload(client, tmp_path, **args), fd)
    os.close(fd)
    c.sendall(chunk)
    code, msg = error_of(recv_message(c))
    c.close()
    assert code == ERR_PROTOCOL, (case, msg)
    assert svc.proc.poll() is None


@pytest.mark.parametrize("damage", ["lp_outside", "hoff", "natts", "length"])
def test_damaged_pages_fall_back(client, svc, tmp_path, damage):
    t = bytearray(tuple_bytes(1, 2))
    p = bytearray(page_bytes([bytes(t)] * 3))
    if damage == "lp_outside":
        struct.pack_into("<I", p, 24, 8180 | (1 << 15) | (40 << 17))
    elif damage == "hoff":
        off = struct.unpack_from("<I", p, 24)[0] & 0x7FFF
        p[off + 22] = 200
    elif damage == "natts":
        # a null bitmap of 200 attributes does not fit before t_hoff
        off = struct.unpack_from("<I", p, 24)[0] & 0x7FFF
        struct.pack_into("<HH", p, off + 18, 200, 1)
    else:
        w = struct.unpack_from("<I", p, 24)[0]
        struct.pack_into("<I", p, 24, (w & 0x1FFFF) | (30 << 17))
    fd, ring = make_ring()
    c = start(svc, heap_payload(client, tmp_path), fd)
    os.close(fd)
    ship(c, ring, [(bytes(p), 3)], lambda pg, t: True)
    groups, status = results(c)
    c.close()
    assert status == XPU_ERR_FALLBACK and groups == {}
    assert svc.proc.poll() is None


# ---------------- a query's shared run (SHARE_OPEN, WARP_SHARE_PART / _FINISH) ----------------

MSG_AGG_RUN, MSG_SHARE_OPEN = 22, 32
SHARE_PART, SHARE_FINISH = 1, 2


def shared(payload, share_id, role):
    """payload (an AGG_RUN's or HEAP_RUN's) as a part or the finish of shared run share_id"""
    b = bytearray(payload)
    struct.pack_into("<QI", b, 32, share_id, role)      # WarpAggRequest.share_id, share_role
    return bytes(b)


def finish_payload(client, tmp_path, share_id):
    """the finish: the heap payload's keys, aggregates and program, no source"""
    good = dump("many", [write(tmp_path / "shape.arrow", pa.table({
        "k": pa.array([1], pa.int64()), "v": pa.array([1], pa.int64())}))])
    head = bytearray(good[:file_offset(good)])
    struct.pack_into("<I", head, 0, 0)                  # n_files
    return shared(bytes(head), share_id, SHARE_FINISH)


def open_share(svc, share_id, participants=3):
    c = connect(svc.sock, 30)
    hello(c)
    c.sendall(message(MSG_SHARE_OPEN, struct.pack("<QII", share_id, participants, 0)))
    return c, recv_message(c)


def run_part(client, svc, tmp_path, share_id, pages, visible):
    fd, ring = make_ring()
    c = start(svc, shared(heap_payload(client, tmp_path), share_id, SHARE_PART), fd)
    os.close(fd)
    ship(c, ring, pages, visible)
    return results(c)


def finish(client, svc, tmp_path, share_id):
    c = connect(svc.sock, 30)
    hello(c)
    c.sendall(message(MSG_AGG_RUN, finish_payload(client, tmp_path, share_id)))
    try:
        return results(c)
    finally:
        c.close()


def test_shared_run_returns_the_parts_groups_once(client, svc, tmp_path):
    """Three parts on connections of their own leave their groups in the
    run (their last replies carry none); the finish returns every part's
    groups merged, each key once; a second finish finds none left."""
    rnd = random.Random(5)
    sid = rnd.getrandbits(64) | 1
    before = status_of(svc)[4]                          # memory_in_use
    owner, reply = open_share(svc, sid)
    assert reply == (MSG_SHARE_OPEN, struct.pack("<QII", sid, 3, 0)), reply
    want = {}
    for part in range(3):
        rows = [[(rnd.choice([None, 1, 2, 3, 1000 + part]), rnd.choice([None, 5, -3, 2**50]))
                 for _ in range(rnd.randint(1, 150))] for _ in range(9)]
        pages = [(page_bytes([tuple_bytes(k, v) for k, v in r]), len(r)) for r in rows]
        for r in rows:
            for k, v in r:
                cnt, s = want.get(k, (0, 0))
                want[k] = (cnt + 1, s + (v or 0))
        groups, status = run_part(client, svc, tmp_path, sid, pages, lambda p, t: True)
        assert status == 0 and groups == {}, (groups, status)
    # the groups waiting in the run are memory the service holds (STATUS)
    assert status_of(svc)[4] > before
    groups, status = finish(client, svc, tmp_path, sid)
    assert status == 0 and groups == want
    assert finish(client, svc, tmp_path, sid) == ({}, 0)
    owner.close()
    wait_until(lambda: status_of(svc)[4] == before, 10, "the shared run's memory to go")


def test_shared_run_refusals(client, svc, tmp_path):
    """A part or a finish naming no open run, a second SHARE_OPEN of an id,
    a finish of other aggregates, a run whose owner closed: ERROR
    (protocol), and the service keeps serving."""
    sid = 0x5EED0000F00D0001
    pages = [(page_bytes([tuple_bytes(1, 2)]), 1)]
    groups, err = run_part(client, svc, tmp_path, sid, pages, lambda p, t: True)
    assert groups is None and err[0] == ERR_PROTOCOL and "not open" in err[1], err
    owner, reply = open_share(svc, sid)
    assert reply[0] == MSG_SHARE_OPEN
    other, reply = open_share(svc, sid)
    assert reply[0] == MSG_ERROR and error_of(reply)[0] == ERR_PROTOCOL, reply
    other.close()
    # a share id without its role, a scan as a part, a part as an AGG_RUN: refused
    for bad in (shared(heap_payload(client, tmp_path), sid, 0),
                shared(heap_payload(client, tmp_path, flags=1), sid, SHARE_PART),
                shared(heap_payload(client, tmp_path), sid, 3)):
        fd, _ = make_ring()
        c = start(svc, bad, fd)
        os.close(fd)
        m = recv_message(c)
        assert m[0] == MSG_ERROR and error_of(m)[0] == ERR_PROTOCOL, m
        c.close()
    assert run_part(client, svc, tmp_path, sid, pages, lambda p, t: True) == ({}, 0)
    # the finish of another spec: the "all" shape's aggregates
    good = dump("all", [write(tmp_path / "a.arrow", all_table(10, 1))])
    c = connect(svc.sock, 30)
    hello(c)
    head = bytearray(good[:file_offset(good)])
    struct.pack_into("<I", head, 0, 0)
    c.sendall(message(MSG_AGG_RUN, shared(bytes(head), sid, SHARE_FINISH)))
    m = recv_message(c)
    assert m[0] == MSG_ERROR and error_of(m)[0] == ERR_PROTOCOL and "other" in error_of(m)[1], m
    c.close()
    owner.close()
    # the owner's connection closed: the run and its groups are gone
    time.sleep(0.2)
    groups, err = finish(client, svc, tmp_path, sid)
    assert groups is None and err[0] == ERR_PROTOCOL and "not open" in err[1], err
    assert svc.proc.poll() is None
