"""The metadata prewarm at the server's start (pg_warp.arrow_metadata_prewarm,
src/fdw/meta_shared.c's background worker, src/service/file_meta.c's
svc_file_meta_prewarm, arrow_image_file_recent in
src/arrow/arrow_image_file.c): a restart empties the shared memory that
holds large Arrow files' record batches, so the worker lays out again the
files of the images kept in the data directory, those a session used last
first, in at most half of the memory; the service reads the same files'
metadata into its own cache.  What must hold: after a restart the first
session takes a file it used before from shared memory, and answers as
pyarrow and as a session without shared memory; a file changed or gone
while the server was down is left out (and a FIFO at its path does not stop
the start); the files used last are the ones laid out, and the rest of the
memory is left to the sessions; off, the first session lays the file out
itself.

Each session is its own psql with client_min_messages = debug1, whose
messages say whether the batches were kept in shared memory or taken from
there (test_arrow_meta_shared.py).  The tests run on clusters of their own.
"""
import os

import pyarrow as pa
import pytest

from pg_sql import Cluster, wait_until
from test_arrow_meta_image import CHANGES, QUERY, ROWS, change, oracle, write
from test_arrow_meta_shared import (BATCHES, FULL, KEPT, OFF, TAKEN, batches_table, session,
                                    table)

LAID = "laid out in shared memory at the start"


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    yield c
    c.destroy()


def restart(c, laid=None, gone=None):
    """c restarted; once the prewarm has said that it laid out `laid` files
    and found `gone` changed or gone (when given), the log since the restart"""
    n = len(c.log_text())
    c.restart()
    if laid is None:
        return c.log_text()[n:]
    want = "%d large Arrow file(s) %s" % (laid, LAID)
    wait_until(lambda: want in c.log_text()[n:], 30, "the metadata prewarm")
    log = c.log_text()[n:]
    said = [ln for ln in log.splitlines() if LAID in ln]
    assert len(said) == 1 and said[0].endswith("%d changed or gone" % gone), said
    return log


def test_restart_lays_out_the_files_used(cluster, tmpdir_world):
    """Two files opened before a restart: the prewarm lays both out, the
    first session after it takes them (nothing to read, nothing to lay
    out) and answers as pyarrow, as a session without shared memory does,
    with the same batches skipped; the service read both from their images."""
    d = str(tmpdir_world)
    files = {"pre_a": batches_table(0), "pre_b": batches_table(3, cols=2)}
    for name, batches in files.items():
        table(cluster, d, name, batches)
    # beside the images: a FIFO and a file that is no image, which neither
    # stop the prewarm nor count
    images = os.path.join(cluster.data, "pg_warp", "arrow_meta")
    os.mkfifo(os.path.join(images, "fifo-1"), 0o644)
    with open(os.path.join(images, "junk-2"), "wb") as f:
        f.write(b"pgwarpM1" + b"\xff" * 100)
    log = restart(cluster, laid=2, gone=0)
    # and the service's, before any run could put a file in its cache first
    wait_until(lambda: "2 file(s) read from their images at the start, 0 left out" in
               cluster.log_text(), 30, "the service's metadata prewarm")
    for name, batches in files.items():
        out, err = session(cluster, name, 41000)
        assert out == oracle(batches, 41000) and TAKEN in err and KEPT not in err, (out, err)
        off, err_off = session(cluster, name, 41000, (OFF,))
        assert off == out and TAKEN not in err_off, (off, err_off)
    plans = [cluster.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " +
                         QUERY % ("pre_a", 41000), s) for s in ((), (OFF,))]
    assert plans[0] == plans[1] and "Skipped" in plans[0], plans
    assert "error" not in log.lower(), log


def test_a_file_that_cannot_be_laid_out_is_passed_over(cluster, tmpdir_world):
    """A file with a dictionary-encoded column has an image but no lay-out:
    used last, it does not stop the prewarm from laying out the file used
    before it (nor count as changed), and both answer as pyarrow."""
    d = str(tmpdir_world)
    plain = batches_table(7)
    table(cluster, d, "pre_plain", plain)
    path = os.path.join(d, "pre_dict.arrow")
    words = pa.array(["w%d" % i for i in range(5)])
    batches = [pa.record_batch({"x": pa.array([1000 * b + i for i in range(ROWS)], pa.int64()),
                                "s": pa.DictionaryArray.from_arrays(
                                    pa.array([i % 5 for i in range(ROWS)], pa.int32()), words)})
               for b in range(BATCHES)]
    with pa.ipc.new_file(path + ".w", batches[0].schema) as w:
        for b in batches:
            w.write_batch(b)
    os.chmod(path + ".w", 0o644)
    os.replace(path + ".w", path)
    cluster.sql("DROP FOREIGN TABLE IF EXISTS pre_dict; CREATE FOREIGN TABLE pre_dict "
                "(x int8, s text) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    xs = [x for b in batches for x, w in zip(b.column(0).to_pylist(), b.column(1).to_pylist())
          if w == "w3"]
    want = "%d|%d" % (len(xs), sum(xs))
    dict_query = "SELECT count(*), sum(x) FROM pre_dict WHERE s = 'w3'"
    n = len(cluster.log_text())
    cluster.restart()
    wait_until(lambda: LAID in cluster.log_text()[n:], 30, "the metadata prewarm")
    said = [ln for ln in cluster.log_text()[n:].splitlines() if LAID in ln]
    assert len(said) == 1 and " 0 changed or gone" in said[0], said
    out, err = session(cluster, "pre_plain", 41000)
    assert out == oracle(plain, 41000) and TAKEN in err and KEPT not in err, (out, err)
    for settings in ((), ("SET pg_warp.enabled = off",)):
        assert cluster.sql(dict_query, settings) == want, settings


@pytest.mark.parametrize("how", CHANGES)
def test_file_changed_while_down_is_left_out(cluster, tmpdir_world, how):
    """A file changed while the server was down is not laid out from its old
    image (its statistics would skip the new rows): the log counts it as
    changed, the first session reads the new file, answers for it and lays
    it out."""
    name = "pre_" + how
    path = table(cluster, str(tmpdir_world), name, batches_table(0))
    assert TAKEN in session(cluster, name, 0)[1]
    cluster.stop()
    new = change(path, how, batches_table(500), write)
    n = len(cluster.log_text())
    cluster.start()
    wait_until(lambda: LAID in cluster.log_text()[n:], 30, "the metadata prewarm")
    said = [ln for ln in cluster.log_text()[n:].splitlines() if LAID in ln]
    assert len(said) == 1 and not said[0].endswith(" 0 changed or gone"), said
    out, err = session(cluster, name, 40500)
    assert out == oracle(new, 40500) and TAKEN not in err and KEPT in err, (how, out, err)


def test_fifo_in_place_of_a_file(cluster, tmpdir_world):
    """The file removed and a FIFO made at its path while the server was
    down: the prewarm and the service start without opening it, and the
    query fails as it does with the prewarm off (the same error)."""
    name = "pre_fifo"
    path = table(cluster, str(tmpdir_world), name, batches_table(0))
    cluster.stop()
    os.unlink(path)
    os.mkfifo(path, 0o644)
    try:
        n = len(cluster.log_text())
        cluster.start()
        wait_until(lambda: LAID in cluster.log_text()[n:], 30, "the metadata prewarm")
        on = cluster.result(QUERY % (name, 0))
        off = cluster.result(QUERY % (name, 0), (OFF,))
        assert on[0] == "error" and on == off, (on, off)
        assert cluster.sql("SELECT 1") == "1"
    finally:
        os.unlink(path)
        cluster.sql("DROP FOREIGN TABLE %s" % name)


def test_files_used_last_in_half_the_memory(tmpdir_world):
    """1 MB of shared memory, files of 190 kB each: the prewarm lays out the
    two used last (half the memory holds two) and leaves the rest to the
    sessions, which lay the third out themselves, with nothing said of a
    full memory.  Used means put or taken by a session since a start: the
    prewarm's own put does not count (the files it lays out would otherwise
    stay the newest for good), a session's first take of what it laid out
    does."""
    c = Cluster()
    d = str(tmpdir_world)

    def sessions(kept, taken):
        for name in kept + taken:
            out, err = session(c, name, 41000)
            assert out == oracle(files[name], 41000), (name, out)
            assert (KEPT in err, TAKEN in err) == (name in kept, name in taken), (name, err)

    try:
        c.sql("ALTER SYSTEM SET pg_warp.arrow_shared_metadata_size = 1")
        c.restart()
        files = {n: batches_table(k, n=400, cols=2)
                 for k, n in enumerate(("half_a", "half_b", "half_c"))}
        for name, batches in files.items():          # put in this order: c last
            table(c, d, name, batches)
        restart(c, laid=2, gone=0)                    # c and b laid out
        sessions(kept=["half_a"], taken=[])           # a used last
        restart(c, laid=2, gone=0)                    # a and c: b was used least lately
        sessions(kept=["half_b"], taken=["half_c"])   # b put, c taken
        log = restart(c, laid=2, gone=0)              # c and b: a was used least lately
        sessions(kept=["half_a"], taken=["half_b", "half_c"])
        assert FULL not in c.log_text(), c.log_text()[-3000:]
        assert "error" not in log.lower(), log
    finally:
        c.destroy()


def test_off_the_first_session_lays_out(tmpdir_world):
    """pg_warp.arrow_metadata_prewarm = off: nothing laid out at the start
    (no worker, the service keeps nothing), the first session lays the file
    out, the next takes it."""
    c = Cluster()
    try:
        table(c, str(tmpdir_world), "pre_off", batches_table(0))
        c.sql("ALTER SYSTEM SET pg_warp.arrow_metadata_prewarm = off")
        # the log from the new start on: the service being stopped may still
        # say what its own prewarm (on at its start) read, as a GPU host's
        # service does, which opens its GPUs before it starts the prewarm
        # and takes a while to shut down
        c.stop()
        n = len(c.log_text())
        c.start()
        assert c.sql("SHOW pg_warp.arrow_metadata_prewarm") == "off"
        out, err = session(c, "pre_off", 41000)
        assert out == oracle(batches_table(0), 41000) and KEPT in err, err
        out, err = session(c, "pre_off", 41000)
        assert out == oracle(batches_table(0), 41000) and TAKEN in err, err
        log = c.log_text()[n:]
        assert LAID not in log and "read from their images" not in log, log
    finally:
        c.destroy()
