"""Join tables in the warp service (JOIN_LOAD and the runs' join ids) end to
end, without PostgreSQL: pg_warp_service started by hand (the CPU engine, or
the stand-in GPU with PG_WARP_TEST_FAKE_GPU=1), fact tables written by
pyarrow, the join tables of the test dimensions (warp_client.h: WC_DIM_EVEN,
WC_DIM_TEXT) built by test/c/bin/agg_client with the xpu_join builder into
sealed memfds and loaded before its run, and the groups compared with the
same joins computed in Python over the pyarrow data.

Also the refusals: an unsealed memfd, a plain file's descriptor, a
table_len past the file's end, a corrupt table, an id never loaded, the id
of a connection that closed; the service survives each and serves the next
run.  The same joins as SCAN_RUN quals (test/c/bin/scan_client): the rows
that pass, which the stand-in GPU (make -C test/gpu scanfake's libcuda, with
PG_WARP_TEST_FAKE_GPU=1) filters through the service's GPU path, the tables
copied to its "device".  doc/service.md describes JOIN_LOAD."""
import os
import struct
import subprocess

import pyarrow as pa
import pytest

import service_client
from service_client import client_fixture, client_path, service_fixture, write
from test_service import wait_until
from test_service_agg import status as status_of

CLIENT = client_path("agg_client")
SCAN_CLIENT = client_path("scan_client")
ERR_PROTOCOL, ERR_BAD_FILE = 1, 6

# the stand-in GPU runs no aggregation in the service (its kern_agg_exec folds
# into heap_gpucheck's side table): there AGG_RUN asks for the CPU engine
AGG_OPTS = ("--engine", "1") if service_client.FAKE_GPU else ()
AGG_ENGINE = 1 if service_client.FAKE_GPU else service_client.ENGINE

client = client_fixture("agg_client")
scan_client = client_fixture("scan_client")
svc = service_fixture()


def run_client(svc, shape, files, *opts):
    """Runs agg_client; returns (groups: list of token lists, end: dict, error)."""
    lines, end, error = service_client.run_client(CLIENT, svc.sock, shape, files,
                                                  *AGG_OPTS, *opts)
    return [f[1:] for f in lines if f[0] == "G"], end, error


def fact_table(n=5000):
    """k int64 (some even keys of WC_DIM_EVEN, some beyond it, odd ones and
    NULLs), c text (keys of WC_DIM_TEXT and some it lacks), v int64"""
    return pa.table({
        "k": pa.array([None if i % 97 == 5 else (i * 37) % 2300 for i in range(n)],
                      pa.int64()),
        "c": pa.array([None if i % 89 == 7 else "c%d" % ((i * 11) % 60) for i in range(n)],
                      pa.string()),
        "v": pa.array([(i * 7919) % 1000 - 300 for i in range(n)], pa.int64()),
    })


def cnt_groups(rows):
    """The shape cnt's group: count(*), sum(v), min(v), max(v) over rows' v."""
    vs = [r["v"] for r in rows]
    if not vs:
        return [["0", "0:0", "0:", "0:"]]
    return [[str(len(vs)), "%d:%d" % (len(vs), sum(vs)), "%d:%d" % (len(vs), min(vs)),
             "%d:%d" % (len(vs), max(vs))]]


@pytest.mark.parametrize("fault, code, words", [
    ("unsealed", ERR_BAD_FILE, "not sealed"),
    ("plainfile", ERR_BAD_FILE, "not sealed"),
    ("short", ERR_BAD_FILE, "bytes, not"),
    ("corrupt", ERR_BAD_FILE, "invalid join table"),
    ("unknown", ERR_PROTOCOL, "is not loaded"),
    ("closed", ERR_PROTOCOL, "is not loaded"),
])
def test_refused_tables(client, svc, tmp_path, fault, code, words):
    """A table the service cannot trust, or an id it does not hold, is
    refused with ERROR; the service goes on serving runs."""
    t = fact_table(500)
    f = write(tmp_path / "fact.arrow", t)
    groups, end, error = run_client(svc, "cnt", [f], "--join", "even", "--join-fault", fault)
    assert end is None and error is not None
    assert error[0] == code and words in error[1], error
    groups, end, error = run_client(svc, "cnt", [f])
    assert error is None and end["status"] == "0"
    assert groups == cnt_groups(t.to_pylist())


# the test dimensions of warp_client.h, as the client builds them
EVEN = {2 * i: {"g": None if i % 50 == 3 else i % 7, "name": "n%d" % (i % 5)}
        for i in range(999)}
TEXT = {"c%d" % i: {"h": 3 * i} for i in range(50)}


def key_token(v):
    """agg_client's form of a group key value."""
    if v is None:
        return "N"
    if isinstance(v, str):
        return "x" + v.encode().hex()
    return str(v)


def grouped(rows, key):
    """count(*), sum(v) GROUP BY key(row) in agg_client's form, sorted."""
    groups = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r["v"])
    return sorted([*map(key_token, k), str(len(vs)), "%d:%d" % (len(vs), sum(vs))]
                  for k, vs in groups.items())


def probe(table, k):
    """table's row of key k: None when k is NULL or absent (NULL never matches)."""
    return None if k is None else table.get(k)


def expected(shape, rows):
    if shape == "jinner":
        return grouped([r for r in rows if probe(EVEN, r["k"])],
                       lambda r: (EVEN[r["k"]]["g"],))
    if shape == "jtext":
        return grouped([r for r in rows if probe(EVEN, r["k"])],
                       lambda r: (EVEN[r["k"]]["name"],))
    if shape in ("jsemi", "janti"):
        keep = [r for r in rows if (probe(EVEN, r["k"]) is not None) == (shape == "jsemi")]
        return grouped(keep, lambda r: ())
    assert shape == "j2"
    return grouped([r for r in rows if probe(EVEN, r["k"]) and probe(TEXT, r["c"])],
                   lambda r: (EVEN[r["k"]]["g"], TEXT[r["c"]]["h"]))


@pytest.mark.parametrize("shape", ["jinner", "jsemi", "janti", "jtext", "j2"])
def test_join_results(client, svc, tmp_path, shape):
    """INNER, SEMI and ANTI probes, a text payload as a group key, two depths
    (an int8 key on a dense table, a text key on a hash table): the groups
    equal the same joins computed in Python, over several record batches
    and threads."""
    t = fact_table()
    f = write(tmp_path / "fact.arrow", t, chunk=700)
    groups, end, error = run_client(svc, shape, [f])
    assert error is None, error
    assert end["status"] == "0", end
    assert end["engine"] == str(AGG_ENGINE)
    assert sorted(groups) == expected(shape, t.to_pylist())
    assert int(end["rows_in"]) == t.num_rows


def test_join_key_type_mismatch(client, svc, tmp_path):
    """A program whose probe key type is not the table's is refused before
    it runs (xpu_program_join_check); the service goes on serving."""
    t = fact_table(300)
    f = write(tmp_path / "fact.arrow", t)
    groups, end, error = run_client(svc, "jbadkey", [f])
    assert end is None and error is not None and error[0] == ERR_PROTOCOL, error
    assert "join" in error[1]
    groups, end, error = run_client(svc, "jinner", [f])
    assert error is None and sorted(groups) == expected("jinner", t.to_pylist())


def test_join_table_shared_by_runs(client, svc, tmp_path):
    """Several files in one run, and runs one after another with their own
    loads: the same groups each time."""
    t = fact_table(3000)
    files = [write(tmp_path / ("f%d.arrow" % i), t.slice(i * 1000, 1000), chunk=300)
             for i in range(3)]
    want = expected("j2", t.to_pylist())
    for _ in range(3):
        groups, end, error = run_client(svc, "j2", files)
        assert error is None and sorted(groups) == want


def scan_value(v):
    """A fact column's value as scan_client prints it (int64 or utf8)."""
    if v is None:
        return "N"
    if isinstance(v, str):
        return v.encode().hex()
    return v.to_bytes(8, "little", signed=True).hex()


@pytest.mark.parametrize("qual", ["jsemi", "janti", "j2"])
def test_join_scan(scan_client, svc, tmp_path, qual):
    """SCAN_RUN with join depths: the rows whose keys have (jsemi, j2) or lack
    (janti) matches, in order, every column."""
    t = fact_table(4000)
    f = write(tmp_path / "fact.arrow", t, chunk=900)
    lines, end, error = service_client.run_client(SCAN_CLIENT, svc.sock, qual, [f])
    assert error is None, error
    assert end["engine"] == str(service_client.ENGINE)
    got = [r[1:] for r in lines if r[0] == "R"]
    assert not any(r[0] == "B" and r[3] == "recheck" for r in lines)

    def passes(r):
        if qual == "janti":
            return probe(EVEN, r["k"]) is None
        return probe(EVEN, r["k"]) is not None and \
            (qual == "jsemi" or probe(TEXT, r["c"]) is not None)
    want = [[scan_value(r[c]) for c in ("k", "c", "v")] for r in t.to_pylist() if passes(r)]
    assert got == want
    assert int(end["rows_passed"]) == len(want)


def memory_in_use(svc):
    """STATUS's memory_in_use of the service now."""
    return status_of(svc)[4]


def test_tables_live_with_their_connection(client, svc, tmp_path):
    """A loaded table counts in STATUS's memory_in_use while the connection
    that loaded it is open, and is gone once it closes."""
    f = write(tmp_path / "fact.arrow", fact_table(300))
    base = memory_in_use(svc)
    p = subprocess.Popen([CLIENT, *AGG_OPTS, "--hold-ms", "20000", svc.sock, "j2", f],
                         stdout=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in p.stdout:
            lines.append(line)
            if line == "HELD\n":
                break
        assert lines[-1] == "HELD\n" and lines[-2].startswith("END\t"), lines
        held = memory_in_use(svc)
        # the two tables (WC_DIM_EVEN alone has 1000 rows)
        assert held - base > 16 * 1000, (base, held)
    finally:
        p.kill()
        p.wait()
    wait_until(lambda: memory_in_use(svc) == base, 10, "the tables to be freed")


def held_tables(svc, shape, f):
    """agg_client running shape over file f and then holding its connection
    (and join tables) open: (process, {depth: join id})."""
    p = subprocess.Popen([CLIENT, *AGG_OPTS, "--hold-ms", "30000", svc.sock, shape, f],
                         stdout=subprocess.PIPE, text=True)
    ids = {}
    for line in p.stdout:
        if line.startswith("JOIN\t"):
            ids[int(line.split("\t")[1])] = int(line.split("\t")[2])
        if line == "HELD\n":
            return p, ids
    p.kill()
    pytest.fail("agg_client did not hold its tables")


def jinner_head(f, join_id, n_joins=1):
    """An AGG_RUN's head without files: jinner's keys, aggregates and program
    (agg_client --dump over file f), then n_joins join ids, all join_id."""
    from test_service_agg import dump, file_offset

    good = dump("jinner", [f])
    ids_at = file_offset(good)
    head = bytearray(good[:ids_at] + struct.pack("<Q", join_id) * n_joins)
    struct.pack_into("<I", head, 0, 0)                  # n_files
    struct.pack_into("<I", head, 20, AGG_ENGINE)        # engine
    struct.pack_into("<I", head, 44, n_joins)           # n_joins
    return bytes(head)


def jinner_heap_payload(f, join_id):
    """HEAP_RUN's payload: jinner_head, then a heap part of (k int8, v int8)
    tuples as test_service_heap.py ships them."""
    from test_service_heap import SLOT_PAGES, N_SLOTS, slot_size

    heap = struct.pack("<IIQIIIIII", N_SLOTS, SLOT_PAGES, slot_size(SLOT_PAGES), 2, 0, 0,
                       0, 0, 0)
    heap += struct.pack("<hBBIII", 8, 8, 0, 0, 0, 0) * 2     # k, v: int8
    heap += struct.pack("<hh", 1, 2) + b"\0" * 4             # chunk columns -> attributes
    return jinner_head(f, join_id) + heap


def heap_pages(seed):
    """Nine heap pages of (k, v) tuples, and jinner's groups {g: (count, sum
    of v)} over their visible tuples (heap_visible)."""
    from test_service_heap import page_bytes, tuple_bytes

    rows = [[(None if (p * 31 + t) % 23 == 0 else (p * 131 + t * 7 + seed) % 2100, t - p)
             for t in range(120)] for p in range(9)]
    want = {}
    for p, r in enumerate(rows):
        for t, (k, v) in enumerate(r):
            if heap_visible(p, t) and probe(EVEN, k):
                cnt, s = want.get(EVEN[k]["g"], (0, 0))
                want[EVEN[k]["g"]] = (cnt + 1, s + v)
    return [(page_bytes([tuple_bytes(k, v) for k, v in r]), len(r)) for r in rows], want


def heap_visible(p, t):
    return (p + t) % 4 != 0


def test_heap_run_probes_tables_of_another_connection(client, svc, tmp_path):
    """A HEAP_RUN (heap pages through the chunk ring) with the jinner program
    probes a table that another connection loaded and holds (as a parallel
    worker probes the leader's): the groups of the visible tuples that
    match, by the table's payload."""
    from test_service_heap import make_ring, results, ship, start

    f = write(tmp_path / "fact.arrow", fact_table(200))
    holder, ids = held_tables(svc, "jinner", f)
    try:
        pages, want = heap_pages(0)
        assert len(want) == 8       # g 0 .. 6 and NULL
        fd, ring = make_ring()
        c = start(svc, jinner_heap_payload(f, ids[0]), fd)
        os.close(fd)
        ship(c, ring, pages, heap_visible)
        groups, status = results(c)
        c.close()
        assert status == 0 and groups == want
    finally:
        holder.kill()
        holder.wait()


def test_shared_run_parts_and_finish_share_join_ids(client, svc, tmp_path):
    """A parallel query's shared run: the parts (HEAP_RUNs) and the finish
    carry the same join ids; a finish naming another table (the same rows
    loaded again) is refused as another spec, the one with the parts' ids
    returns every part's groups merged."""
    from test_service_heap import SHARE_FINISH, SHARE_PART, make_ring, open_share, results, \
        ship, shared, start
    from test_service import connect, hello, message

    f = write(tmp_path / "fact.arrow", fact_table(200))
    holder, ids = held_tables(svc, "jinner", f)
    other, other_ids = held_tables(svc, "jinner", f)
    sid = 0x10AD0000BEEF0001
    owner, reply = open_share(svc, sid, 2)
    try:
        want = {}
        for part in range(2):
            pages, part_want = heap_pages(part)
            for g, (cnt, s) in part_want.items():
                c0, s0 = want.get(g, (0, 0))
                want[g] = (c0 + cnt, s0 + s)
            fd, ring = make_ring()
            c = start(svc, shared(jinner_heap_payload(f, ids[0]), sid, SHARE_PART), fd)
            os.close(fd)
            ship(c, ring, pages, heap_visible)
            assert results(c) == ({}, 0)
            c.close()

        def finish(join_id):
            c = connect(svc.sock, 30)
            hello(c)
            c.sendall(message(22, shared(jinner_head(f, join_id), sid, SHARE_FINISH)))
            try:
                return results(c)
            finally:
                c.close()
        groups, err = finish(other_ids[0])
        assert groups is None and err[0] == ERR_PROTOCOL and "other keys" in err[1], err
        assert finish(ids[0]) == (want, 0)
    finally:
        owner.close()
        for p in (holder, other):
            p.kill()
            p.wait()
