"""The pg_warp service takes the image of a file's record batches that a
backend kept in the data directory (src/service/file_meta.c,
src/arrow/arrow_image_file.c, src/fdw/meta_image.c) when it first opens the
file, instead of reading every batch's message.

A session of the test cluster opens an Arrow file of 100 batches, which
writes the image into the cluster's pg_warp/arrow_meta; the image is copied
into the data directory of a pg_warp_service of the test's own (service_client,
the CPU engine or the stand-in GPU), and test/c/bin/agg_client sends it
AGG_RUN: the run's last AGG_RESULT says whether a file's batches came from
an image (WARP_AGG_META_IMAGE, `meta_image` in agg_client's END line).  What
must hold: the answer is pyarrow's whether the image was taken or not; the
first run takes it, the next finds the metadata kept; a file rewritten in
place (its old size and modification time back: only the change time
moves), an image changed in one byte, or no image: the batches are read,
the answer right.
"""
import os

import pyarrow.compute as pc
import pytest

from pg_sql import Db
from service_client import FAKE_GPU, client_fixture, client_path, service_fixture, write
from test_service import Service, wait_until
from test_service_agg import bench_table, run_client

DB = Db()
CLIENT = client_path("agg_client")
client = client_fixture("agg_client")
svc = service_fixture()
COLS = "price int8, discount int4, quantity int4, s1 text, s2 text, rev int8, qty int4, cost int4"


def q1_want(t):
    mask = pc.and_(pc.and_(pc.greater_equal(t["discount"], 1), pc.less_equal(t["discount"], 3)),
                   pc.less(t["quantity"], 25))
    sel = t.filter(mask)
    want = sum(p * d for p, d in zip(sel["price"].to_pylist(), sel["discount"].to_pylist()))
    return [[str(sel.num_rows), "%d:%d" % (sel.num_rows, want)]]


def image_name(path):
    st = os.stat(path)
    return "%x-%x" % (st.st_dev, st.st_ino)


def kept_image(path):
    """the image a cluster session keeps of the Arrow file at path (its bytes)"""
    DB.sql("DROP FOREIGN TABLE IF EXISTS svc_meta_image; CREATE FOREIGN TABLE svc_meta_image "
           "(%s) SERVER arrow_fdw OPTIONS (file '%s')" % (COLS, path))
    try:
        img = os.path.join(DB.sql("SHOW data_directory"), "pg_warp", "arrow_meta",
                           image_name(path))
        if os.path.exists(img):
            os.unlink(img)      # CREATE opened the file: a session now writes it anew
        # (a session that took the batches from shared memory would write none)
        assert DB.sql("SELECT count(*) FROM svc_meta_image",
                      ("SET pg_warp.arrow_shared_metadata = off",)) == "30000"
        with open(img, "rb") as f:
            return f.read()
    finally:
        DB.sql("DROP FOREIGN TABLE svc_meta_image")


def give(svc, path, image):
    """image put where the service looks for path's (its data directory)"""
    give_dir(svc.dir, path, image)


def give_dir(datadir, path, image):
    d = os.path.join(datadir, "pg_warp", "arrow_meta")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, image_name(path)), "wb") as f:
        f.write(image)


PREWARMED = "1 file(s) read from their images at the start"


def started_with(datadir, *argv):
    return Service(datadir, argv=["--threads", "2", *argv] +
                   (["--fatbin", "fake"] if FAKE_GPU else ["--no-gpu"]))


@pytest.fixture
def arrow_file(tmpdir_world):
    t = bench_table(30000, 5)
    path = write(os.path.join(str(tmpdir_world), "svc_image.arrow"), t, chunk=300)
    os.chmod(path, 0o644)
    return t, path


def test_service_takes_the_image(client, svc, arrow_file):
    """The first run takes the image, the second the kept metadata; both
    answer as pyarrow."""
    t, path = arrow_file
    give(svc, path, kept_image(path))
    groups, end, err = run_client(svc, "q1", [path])
    assert err is None and groups == q1_want(t) and end["meta_image"] == "1", (err, end)
    assert int(end["batches"]) == 100
    groups, end, err = run_client(svc, "q1", [path])
    assert err is None and groups == q1_want(t) and end["meta_image"] == "0", (err, end)


def test_no_image_the_batches_are_read(client, svc, arrow_file):
    t, path = arrow_file
    groups, end, err = run_client(svc, "q1", [path])
    assert err is None and groups == q1_want(t) and end["meta_image"] == "0", (err, end)


def test_changed_image_not_taken(client, svc, arrow_file):
    """One byte of the image changed (in the middle): its CRC refuses it."""
    t, path = arrow_file
    image = bytearray(kept_image(path))
    image[len(image) // 2] ^= 0x01
    give(svc, path, bytes(image))
    groups, end, err = run_client(svc, "q1", [path])
    assert err is None and groups == q1_want(t) and end["meta_image"] == "0", (err, end)


def rewrite_in_place(t, path, tmpdir_world):
    """the file at path (of table t) rewritten in place with other rows, its
    size and modification time as they were (the inode too, so the image's
    name): only its change time differs; the table it holds now"""
    st = os.stat(path)
    t2 = t.set_column(0, "price", pc.add(t["price"], 1))     # the same buffers' sizes
    other = write(os.path.join(str(tmpdir_world), "other.arrow"), t2, chunk=300)
    data = open(other, "rb").read()
    assert len(data) == st.st_size
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_ino == st.st_ino and os.stat(path).st_mtime_ns == st.st_mtime_ns
    return t2


def test_file_rewritten_in_place_not_served_from_the_image(client, svc, arrow_file,
                                                           tmpdir_world):
    """The file rewritten in place with other rows, its size and modification
    time as they were (the inode too, so the image's name): only the change
    time differs, and the old image is not taken."""
    t, path = arrow_file
    image = kept_image(path)
    t2 = rewrite_in_place(t, path, tmpdir_world)
    give(svc, path, image)
    groups, end, err = run_client(svc, "q1", [path])
    assert err is None and groups == q1_want(t2) and end["meta_image"] == "0", (err, end)


@pytest.mark.parametrize("prewarm", ["on", "off"])
def test_service_reads_the_images_at_its_start(client, tmp_path, arrow_file, prewarm):
    """An image in the data directory when the service starts: with the
    prewarm (on by default) the service reads its file's metadata at its
    start, its log says so, and the first run finds it kept (no image
    taken by the run); off, the first run takes the image.  pyarrow's
    answer either way."""
    t, path = arrow_file
    give_dir(str(tmp_path), path, kept_image(path))
    s = started_with(str(tmp_path), *(() if prewarm == "on" else
                                       ("--arrow-metadata-prewarm", "off")))
    try:
        if prewarm == "on":
            wait_until(lambda: PREWARMED in s.log(), 10, "the metadata prewarm")
        groups, end, err = run_client(s, "q1", [path])
        assert err is None and groups == q1_want(t), (err, end)
        assert end["meta_image"] == ("0" if prewarm == "on" else "1"), (end, s.log())
        assert (PREWARMED in s.log()) == (prewarm == "on"), s.log()
    finally:
        assert s.proc.poll() is None, "the service died:\n" + s.log()
        s.stop()


@pytest.mark.parametrize("how", ["rewritten", "fifo"])
def test_service_start_leaves_changed_files_alone(client, tmp_path, arrow_file, tmpdir_world,
                                                   how):
    """The file rewritten after its image was kept (only its change time
    differs), or a FIFO in its place: the service starts and reads nothing
    of it at its start (no open of the FIFO blocks it); a run over the
    rewritten file answers for its new rows, and with the FIFO the service
    serves other files."""
    t, path = arrow_file
    give_dir(str(tmp_path), path, kept_image(path))
    if how == "fifo":
        os.unlink(path)
        os.mkfifo(path, 0o644)
    else:
        t2 = rewrite_in_place(t, path, tmpdir_world)
    s = started_with(str(tmp_path))
    try:
        wait_until(lambda: "0 file(s) read from their images at the start, 1 left out" in s.log(),
                   10, "the metadata prewarm")
        if how == "fifo":
            # (the client itself would block opening the FIFO) another file is served
            good = write(os.path.join(str(tmpdir_world), "good.arrow"), t, chunk=300)
            groups, end, err = run_client(s, "q1", [good])
            assert err is None and groups == q1_want(t), (err, end)
        else:
            groups, end, err = run_client(s, "q1", [path])
            assert err is None and groups == q1_want(t2) and end["meta_image"] == "0", (err, end)
    finally:
        assert s.proc.poll() is None, "the service died:\n" + s.log()
        s.stop()
        if how == "fifo":
            os.unlink(path)
