"""The metadata of large Arrow files' record batches in the cluster's shared
memory (src/fdw/meta_shared.c, arrow_batches_flat_copy and
arrow_file_open_flat in src/arrow/arrow_read_image.c): the first session
that opens a file of 64 batches or more lays its batches out there, with
each field's statistics and sizes, and every later session takes them as
they lie.  What must hold: the answer is the file's (pyarrow is the oracle)
with shared memory and without it (pg_warp.arrow_shared_metadata off), the
same batches skipped by their statistics; a file changed in any way
(replaced, written in place with its old size and modification time back,
appended to, truncated) is never served from the entry of the old one;
sessions that open a new file at once leave one entry; a full memory
leaves files to be opened as without it.

Each session is its own psql with client_min_messages = debug1, whose
messages say whether the batches were kept in shared memory or taken from
there.  The tests run on a cluster of their own, whose shared memory no
other test has filled.
"""
import os
import threading

import pyarrow as pa
import pytest

from pg_sql import Cluster
from test_arrow_meta_image import CHANGES, QUERY, ROWS, change, oracle, write

TAKEN = "from shared memory"
KEPT = "kept in shared memory"
FULL = "no room in shared memory"
OFF = "SET pg_warp.arrow_shared_metadata = off"
BATCHES = 80


def batches_table(k, n=BATCHES, cols=1):
    """n batches of ROWS rows; batch b's x holds [1000 b + k, 1000 b + k + ROWS)"""
    return [pa.record_batch({"x%s" % (c or ""): pa.array([1000 * b + k + i + c for i in range(ROWS)],
                                                         pa.int64()) for c in range(cols)})
            for b in range(n)]


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    yield c
    c.destroy()


def session(db, ftable, lo, settings=()):
    """one new session's answer to QUERY, and its messages"""
    rc, out, err = db.psql(QUERY % (ftable, lo), settings=("SET client_min_messages = debug1",)
                           + tuple(settings), check=False)
    assert rc == 0, err
    return out, err


def table(db, tmpdir, name, batches):
    path = os.path.join(tmpdir, name + ".arrow")
    write(path, batches)
    db.sql("DROP FOREIGN TABLE IF EXISTS %s; CREATE FOREIGN TABLE %s (%s) SERVER arrow_fdw "
           "OPTIONS (file '%s')" % (name, name, ", ".join(
               "%s int8" % f for f in batches[0].schema.names), path))
    return path


def skipped_lines(db, sql, settings=()):
    plan = db.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql, settings)
    return [ln.strip() for ln in plan.splitlines() if "Skipped" in ln or "Rows Removed" in ln]


def test_a_new_session_takes_the_batches(cluster, tmpdir_world):
    """CREATE opened the file and laid it out; every new session takes it,
    answers as pyarrow and skips the batches the statistics rule out as a
    session without shared memory does; a session with it off neither
    takes nor puts."""
    table(cluster, str(tmpdir_world), "shared_t", batches_table(0))
    want = oracle(batches_table(0), 41000)
    for _ in range(3):
        out, err = session(cluster, "shared_t", 41000)
        assert out == want and TAKEN in err and KEPT not in err, (out, err)
    out, err = session(cluster, "shared_t", 41000, (OFF,))
    assert out == want and TAKEN not in err and KEPT not in err, (out, err)
    sql = QUERY % ("shared_t", 41000)
    on, off = skipped_lines(cluster, sql), skipped_lines(cluster, sql, (OFF,))
    assert on and on == off, (on, off)
    # a plan's estimates from the shared sizes and statistics are the private ones
    plans = [cluster.sql("EXPLAIN " + sql, s) for s in ((), (OFF,))]
    assert plans[0] == plans[1], plans


def test_statistics_keys_read_as_written(cluster, tmpdir_world):
    """The statistics laid out with the batches are read from each batch's
    metadata in one pass (arrow_batch_stats_all), and must be what a
    session without shared memory finds by looking up "pg_warp.min.N" and
    "pg_warp.max.N": keys that only look like them (another spelling of the
    field's number, a field beyond the schema, another prefix) are not
    statistics, and of a key written twice the first counts.  Batch 2 holds
    only look-alikes for field i that would skip it and look-alikes for j
    before its true keys, batch 4 its true range
    and then a false one, batch 6 keys of fields beyond the schema: a wrong
    reading skips a batch that holds rows."""
    n, chunk = 7000, 100
    nb = n // chunk
    path = os.path.join(str(tmpdir_world), "stat_keys.arrow")
    t = pa.table({"i": pa.array(range(n), pa.int32()),
                  "j": pa.array([k % 7 for k in range(n)], pa.int64()),
                  "k": pa.array([float(k) for k in range(n)], pa.float64())})
    false = "-5"
    with pa.ipc.new_file(path, t.schema) as w:
        for bn, b in enumerate(t.to_batches(max_chunksize=chunk)):
            md = []
            for f, name in enumerate(t.column_names):
                vals = b.column(f).to_pylist()
                lo, hi = min(vals), max(vals)
                lo, hi = (repr(lo), repr(hi)) if name == "k" else (str(lo), str(hi))
                if bn == 2 and f == 0:
                    md += [("pg_warp.%s.%s" % (m, num), false) for m in ("min", "max")
                           for num in ("00", "+0", " 0", "0x", "0 ", "-0", "", "4294967296")]
                    md += [("pg_warp.minimum.0", false), ("pg_warp.max0", false),
                           ("PG_WARP.min.0", false), ("pg_warp.mix.0", false)]
                    continue
                if bn == 2 and f == 1:
                    # look-alikes before the true keys: the first would count
                    md += [("pg_warp.%s.%s" % (m, num), false) for m in ("min", "max")
                           for num in ("01", "1x", "1 ", "+1", "1.0")]
                md += [("pg_warp.min.%d" % f, lo), ("pg_warp.max.%d" % f, hi)]
                if bn == 4 and f == 0:
                    md += [("pg_warp.min.0", false), ("pg_warp.max.0", false)]
            if bn == 6:
                md += [("pg_warp.min.3", false), ("pg_warp.max.3", false),
                       ("pg_warp.min.99", false), ("pg_warp.max.2147483648", false)]
            w.write_batch(b, custom_metadata=pa.KeyValueMetadata(md))
    os.chmod(path, 0o644)
    # pyarrow reads the duplicate keys as written
    md4 = pa.ipc.open_file(path).get_batch_with_custom_metadata(4)[1]
    assert [v for k, v in md4.items() if k == b"pg_warp.min.0"] == [b"400", false.encode()]
    cluster.sql("DROP FOREIGN TABLE IF EXISTS stat_keys; CREATE FOREIGN TABLE stat_keys "
                "(i int, j bigint, k float8) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    qs = [("SELECT count(*), sum(i) FROM stat_keys WHERE i BETWEEN 200 AND 299", nb - 1),
          ("SELECT count(*), sum(i) FROM stat_keys WHERE i BETWEEN 400 AND 499", nb - 2),
          ("SELECT count(*) FROM stat_keys WHERE i < 0", nb - 1),
          ("SELECT count(*), sum(j) FROM stat_keys WHERE i >= 550 AND j > 3", 4),
          ("SELECT count(*) FROM stat_keys WHERE k < 50.5", nb - 1),
          ("SELECT count(*), sum(j) FROM stat_keys WHERE j >= 0", 0)]
    for q, skips in qs:
        want = cluster.sql(q, ("SET pg_warp.arrow_stats_skip = off",))
        rc, out, err = cluster.psql(q, settings=("SET client_min_messages = debug1",), check=False)
        assert rc == 0 and out.strip() == want.strip() and TAKEN in err, (q, want, out, err)
        shared = skipped_lines(cluster, q)
        assert shared == skipped_lines(cluster, q, (OFF,)), q
        assert "Batches Skipped: %d" % skips in shared, (q, shared)


def test_a_small_file_is_not_laid_out(cluster, tmpdir_world):
    table(cluster, str(tmpdir_world), "shared_small", batches_table(0, n=63))
    out, err = session(cluster, "shared_small", 0)
    assert out == oracle(batches_table(0, n=63), 0) and KEPT not in err and TAKEN not in err, err


@pytest.mark.parametrize("how", CHANGES)
def test_changed_file_not_served_from_the_old_entry(cluster, tmpdir_world, how):
    """After the file changed, a new session reads it (not the old entry,
    whose statistics would skip the new rows), answers for the new contents
    and lays the new file out; the next session takes that."""
    name = "shared_" + how
    path = table(cluster, str(tmpdir_world), name, batches_table(0))
    assert TAKEN in session(cluster, name, 0)[1]
    new = change(path, how, batches_table(500), write)
    lo = 40500
    out, err = session(cluster, name, lo)
    assert out == oracle(new, lo) and TAKEN not in err and KEPT in err, (how, out, err)
    out, err = session(cluster, name, lo)
    assert out == oracle(new, lo) and TAKEN in err, (how, out, err)


def test_truncated_file_fails_as_without_shared_memory(cluster, tmpdir_world):
    """A file cut short after its batches were laid out: the same error as
    a session without shared memory, never the old batches."""
    path = table(cluster, str(tmpdir_world), "shared_cut", batches_table(0))
    assert TAKEN in session(cluster, "shared_cut", 0)[1]
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    results = [cluster.result(QUERY % ("shared_cut", 0), s) for s in ((), (OFF,))]
    assert results[0][0] == "error" and results[0] == results[1], results


def test_sessions_at_once_leave_one_entry(cluster, tmpdir_world):
    """Eight sessions open a new file at once: every answer right, one
    entry put (the others read the file or take it), and later sessions
    take it."""
    name = "shared_race"
    path = os.path.join(str(tmpdir_world), name + ".arrow")
    # CREATE opens the file: a small one (not laid out), replaced by the large one
    write(path, batches_table(7, n=2))
    cluster.sql("DROP FOREIGN TABLE IF EXISTS %s; CREATE FOREIGN TABLE %s (x int8) SERVER "
                "arrow_fdw OPTIONS (file '%s')" % (name, name, path))
    write(path, batches_table(7))
    want = oracle(batches_table(7), 20000)
    results = [None] * 8
    go = threading.Barrier(8)

    def one(i):
        go.wait()
        results[i] = session(cluster, name, 20000)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(out == want for out, _ in results), results
    assert sum(err.count(KEPT) for _, err in results) == 1, [err for _, err in results]
    out, err = session(cluster, name, 20000)
    assert out == want and TAKEN in err, err


def test_full_memory_leaves_files_as_without_it(tmpdir_world):
    """A cluster with 1 MB for it: a file whose batches need more is not
    laid out (DEBUG1 says so each time, the server log once) and is read by
    every session, answers right; a file that fits still is."""
    c = Cluster()
    try:
        c.sql("ALTER SYSTEM SET pg_warp.arrow_shared_metadata_size = 1")
        c.restart()
        assert c.sql("SHOW pg_warp.arrow_shared_metadata_size") == "1MB"
        big = batches_table(0, n=1500, cols=8)
        table(c, str(tmpdir_world), "shared_big", big)
        for _ in range(2):
            out, err = session(c, "shared_big", 41000)
            assert out == oracle(big, 41000) and FULL in err and TAKEN not in err, (out, err)
        # the server's log is told once, with the setting to raise
        said = [ln for ln in c.log_text().splitlines() if FULL in ln and "LOG:" in ln]
        assert len(said) == 1 and "restarts" in said[0], said
        assert "arrow_shared_metadata_size" in c.log_text(), c.log_text()[-2000:]
        table(c, str(tmpdir_world), "shared_fits", batches_table(0))
        out, err = session(c, "shared_fits", 41000)
        assert out == oracle(batches_table(0), 41000) and TAKEN in err, (out, err)
    finally:
        c.destroy()


def test_off_without_preload_or_size(tmpdir_world):
    """pg_warp.arrow_shared_metadata_size = 0: no memory, files opened as
    before, answers right."""
    c = Cluster()
    try:
        c.sql("ALTER SYSTEM SET pg_warp.arrow_shared_metadata_size = 0")
        c.restart()
        table(c, str(tmpdir_world), "shared_none", batches_table(0))
        for _ in range(2):
            out, err = session(c, "shared_none", 41000)
            assert out == oracle(batches_table(0), 41000), out
            assert TAKEN not in err and KEPT not in err, err
    finally:
        c.destroy()
