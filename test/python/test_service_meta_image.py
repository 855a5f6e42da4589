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
from service_client import client_fixture, client_path, service_fixture, write
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
    d = os.path.join(svc.dir, "pg_warp", "arrow_meta")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, image_name(path)), "wb") as f:
        f.write(image)


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


def test_file_rewritten_in_place_not_served_from_the_image(client, svc, arrow_file,
                                                           tmpdir_world):
    """The file rewritten in place with other rows, its size and modification
    time as they were (the inode too, so the image's name): only the change
    time differs, and the old image is not taken."""
    t, path = arrow_file
    image = kept_image(path)
    st = os.stat(path)
    t2 = t.set_column(0, "price", pc.add(t["price"], 1))     # the same buffers' sizes
    other = write(os.path.join(str(tmpdir_world), "other.arrow"), t2, chunk=300)
    data = open(other, "rb").read()
    assert len(data) == st.st_size
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_ino == st.st_ino and os.stat(path).st_mtime_ns == st.st_mtime_ns
    give(svc, path, image)
    groups, end, err = run_client(svc, "q1", [path])
    assert err is None and groups == q1_want(t2) and end["meta_image"] == "0", (err, end)
