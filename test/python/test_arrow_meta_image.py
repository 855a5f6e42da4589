"""The metadata of large Arrow files' record batches kept in the data
directory (src/fdw/meta_image.c, src/arrow/arrow_read_image.c): a session
that opens a file of 64 batches or more writes the image of its batches to
pg_warp/arrow_meta, and a later session takes it instead of reading every
batch's message.  What must hold: the answer is the file's (pyarrow is the
oracle), with the image and without it (pg_warp.arrow_metadata_images off);
a file changed in any way (replaced, written in place with its old size and
modification time back, appended to) is never served from the image of the
old one, and neither are its statistics (the queries skip batches by them);
an image torn or changed on disk is not taken; an image that cannot be
written leaves the query as it was.

Each session is its own psql with client_min_messages = debug1, whose
messages say whether the image was written or taken.  Runs against the
cluster that scripts/test.sh starts.
"""
import os

import pyarrow as pa
import pytest

from pg_sql import Db

DB = Db()
TAKEN = "from its metadata image"
KEPT = "in metadata image"
BATCHES = 80
ROWS = 50


def data_dir():
    return DB.sql("SHOW data_directory")


def batches_table(k):
    """BATCHES batches of ROWS rows; batch b holds x in [1000 b + k, 1000 b + k + ROWS)"""
    return [pa.record_batch({"x": pa.array([1000 * b + k + i for i in range(ROWS)], pa.int64())})
            for b in range(BATCHES)]


def write(path, batches, stats=True):
    """an Arrow file of the batches, each with pg_warp's min/max statistics of every column"""
    tmp = path + ".w"
    with pa.ipc.new_file(tmp, batches[0].schema) as w:
        for b in batches:
            md = {}
            for c in range(b.num_columns):
                xs = b.column(c).to_pylist()
                md["pg_warp.min.%d" % c] = str(min(xs))
                md["pg_warp.max.%d" % c] = str(max(xs))
            w.write_batch(b, custom_metadata=md if stats else None)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def oracle(batches, lo):
    xs = [x for b in batches for x in b.column(0).to_pylist() if x >= lo]
    return "%d|%d" % (len(xs), sum(xs))


QUERY = "SELECT count(*), sum(x) FROM %s WHERE x >= %d"


def session(ftable, lo, settings=()):
    """one new session's answer to QUERY, and its messages; the batches not
    taken from shared memory (test_arrow_meta_shared.py), which would serve
    every session after the first"""
    rc, out, err = DB.psql(QUERY % (ftable, lo), settings=("SET client_min_messages = debug1",
                                                           "SET pg_warp.arrow_shared_metadata = off")
                           + tuple(settings), check=False)
    assert rc == 0, err
    return out, err


def image_of(path):
    st = os.stat(path)
    return os.path.join(data_dir(), "pg_warp", "arrow_meta", "%x-%x" % (st.st_dev, st.st_ino))


@pytest.fixture
def arrow_file(tmpdir_world):
    path = os.path.join(str(tmpdir_world), "many.arrow")
    ftable = "meta_image_t"
    write(path, batches_table(0))
    DB.sql("DROP FOREIGN TABLE IF EXISTS %s; CREATE FOREIGN TABLE %s (x int8) SERVER arrow_fdw "
           "OPTIONS (file '%s')" % (ftable, ftable, path))
    # CREATE opened the file (its schema checked): the first query's session finds no image
    if os.path.exists(image_of(path)):
        os.unlink(image_of(path))
    yield path, ftable
    DB.sql("DROP FOREIGN TABLE IF EXISTS %s" % ftable)
    if os.path.exists(path):
        try:
            os.unlink(image_of(path))
        except FileNotFoundError:
            pass


def test_a_new_session_takes_the_image(arrow_file):
    """The first session writes the image, the next ones take it; with
    images off neither; every answer pyarrow's, with batches skipped by
    their statistics."""
    path, ftable = arrow_file
    want = oracle(batches_table(0), 41000)
    out, err = session(ftable, 41000)
    assert out == want and KEPT in err and TAKEN not in err, (out, err)
    assert os.path.getsize(image_of(path)) > 0
    for _ in range(2):
        out, err = session(ftable, 41000)
        assert out == want and TAKEN in err and KEPT not in err, (out, err)
    out, err = session(ftable, 41000, ("SET pg_warp.arrow_metadata_images = off",))
    assert out == want and TAKEN not in err and KEPT not in err, (out, err)
    # the batches from the image are the file's: EXPLAIN counts the same skipped batches
    plans = [DB.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " +
                    QUERY % (ftable, 41000), settings=s)
             for s in ((), ("SET pg_warp.arrow_metadata_images = off",))]
    skipped = [[ln for ln in p.splitlines() if "Skipped" in ln] for p in plans]
    assert skipped[0] and skipped[0] == skipped[1], plans


CHANGES = ["replaced", "in_place_same_mtime", "in_place_larger"]


def bytes_of(batches, writer):
    writer("/tmp/pg_warp_meta_image.new", batches)
    data = open("/tmp/pg_warp_meta_image.new", "rb").read()
    os.unlink("/tmp/pg_warp_meta_image.new")
    return data


def change(path, how, new, writer):
    """the Arrow file at path changed `how` (CHANGES) to hold the batches new
    (written by writer(path, batches)), one more batch where it grows in
    place: returns the batches it holds"""
    if how == "replaced":
        writer(path, new)
    elif how == "in_place_same_mtime":
        st = os.stat(path)
        data = bytes_of(new, writer)
        assert len(data) == st.st_size
        with open(path, "r+b") as f:
            f.write(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert os.stat(path).st_mtime_ns == st.st_mtime_ns
    else:
        new = new + [pa.record_batch({name: pa.array([90000 + i for i in range(ROWS)], pa.int64())
                                      for name in new[0].schema.names})]
        ino = os.stat(path).st_ino
        with open(path, "r+b") as f:
            f.write(bytes_of(new, writer))
        assert os.stat(path).st_ino == ino
    return new


@pytest.mark.parametrize("how", CHANGES)
def test_changed_file_not_served_from_the_old_image(arrow_file, how):
    """After the file changed, a new session reads it again (not the image of
    the old file, whose statistics would skip the new rows), answers for the
    new contents, and keeps a new image that the next session takes.  In
    place the file keeps its inode, so its image's name: replaced (a new
    inode), written in place with its size and modification time as they
    were (only the change time moves), written in place with more batches."""
    path, ftable = arrow_file
    session(ftable, 0)
    assert TAKEN in session(ftable, 0)[1]
    new = change(path, how, batches_table(500), write)
    lo = 40500
    want = oracle(new, lo)
    out, err = session(ftable, lo)
    assert out == want and TAKEN not in err and KEPT in err, (how, out, err)
    out, err = session(ftable, lo)
    assert out == want and TAKEN in err, (how, out, err)


@pytest.mark.parametrize("damage", ["statistic", "byte", "truncated", "empty"])
def test_damaged_image_not_taken(arrow_file, damage):
    """An image changed or cut short on disk is not taken (its CRC or its
    length): the file is read, answers right, and a whole image replaces it.
    A statistic changed in it (batch 41's max, 41049 -> 11049) passes every
    check of its structure: only the CRC refuses it, else the query would
    skip that batch."""
    path, ftable = arrow_file
    want = oracle(batches_table(0), 41000)
    session(ftable, 41000)
    img = image_of(path)
    data = bytearray(open(img, "rb").read())
    if damage == "statistic":
        at = data.find(b"41049")
        assert at > 0 and data.find(b"41049", at + 1) < 0
        data[at] = ord("1")
    elif damage == "byte":
        data[len(data) // 2] ^= 0x20
    elif damage == "truncated":
        data = data[:len(data) - 8]
    else:
        data = bytearray()
    with open(img, "wb") as f:
        f.write(data)
    out, err = session(ftable, 41000)
    assert out == want and TAKEN not in err and KEPT in err, (out, err)
    out, err = session(ftable, 41000)
    assert out == want and TAKEN in err, (out, err)


def test_unwritable_directory(arrow_file):
    """Where the image cannot be written the query answers as without it."""
    path, ftable = arrow_file
    d = os.path.join(data_dir(), "pg_warp", "arrow_meta")
    session(ftable, 0)
    os.unlink(image_of(path))
    mode = os.stat(d).st_mode
    os.chmod(d, 0o500)
    try:
        want = oracle(batches_table(0), 7000)
        for _ in range(2):
            out, err = session(ftable, 7000)
            assert out == want and TAKEN not in err and KEPT not in err, (out, err)
        assert not os.path.exists(image_of(path))
    finally:
        os.chmod(d, mode)


def test_fifo_where_the_image_belongs(arrow_file):
    """A FIFO at the image's path is no image: the query neither blocks nor
    fails, answers pyarrow's; the image written then replaces the FIFO."""
    path, ftable = arrow_file
    img = image_of(path)
    os.makedirs(os.path.dirname(img), exist_ok=True)
    os.mkfifo(img)
    os.chown(img, os.stat(os.path.dirname(img)).st_uid, os.stat(os.path.dirname(img)).st_gid)
    out, err = session(ftable, 41000)
    assert out == oracle(batches_table(0), 41000) and TAKEN not in err, (out, err)
    assert KEPT in err and os.path.isfile(img), err


def test_small_file_has_no_image(tmpdir_world):
    """A file of fewer than 64 batches is read as before, no image kept."""
    path = os.path.join(str(tmpdir_world), "few.arrow")
    write(path, batches_table(0)[:10])
    DB.sql("DROP FOREIGN TABLE IF EXISTS meta_image_few; CREATE FOREIGN TABLE meta_image_few "
           "(x int8) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    try:
        for _ in range(2):
            out, err = session("meta_image_few", 0)
            assert out == oracle(batches_table(0)[:10], 0) and TAKEN not in err and \
                KEPT not in err, (out, err)
        assert not os.path.exists(image_of(path))
    finally:
        DB.sql("DROP FOREIGN TABLE meta_image_few")


def test_images_of_files_gone_are_removed(arrow_file, tmpdir_world):
    """An image is named after its file's device and inode, so the image of a
    file deleted, or replaced by another (a new inode), would stay: the next
    image written removes them, and keeps those of files that exist."""
    path, ftable = arrow_file
    other = os.path.join(str(tmpdir_world), "other.arrow")
    write(other, batches_table(1))
    DB.sql("DROP FOREIGN TABLE IF EXISTS meta_image_other; CREATE FOREIGN TABLE "
           "meta_image_other (x int8) SERVER arrow_fdw OPTIONS (file '%s')" % other)
    try:
        # (CREATE FOREIGN TABLE opened the other file: its image is already kept)
        for t, k in ((ftable, 0), ("meta_image_other", 1)):
            out, err = session(t, 0)
            assert out == oracle(batches_table(k), 0), (out, err)
        old_image, other_image = image_of(path), image_of(other)
        assert os.path.isfile(old_image) and os.path.isfile(other_image)
        # one file replaced (a new inode), the other deleted (after: the replacement
        # must not take its inode, whose image name it would then have)
        write(path, batches_table(2))
        os.unlink(other)
        assert image_of(path) not in (old_image, other_image)
        out, err = session(ftable, 0)
        assert out == oracle(batches_table(2), 0) and KEPT in err and TAKEN not in err, (out, err)
        assert "removed 2 stale metadata image files" in err, err
        assert not os.path.exists(old_image) and not os.path.exists(other_image)
        assert os.path.isfile(image_of(path))
        out, err = session(ftable, 0)
        assert out == oracle(batches_table(2), 0) and TAKEN in err, (out, err)
    finally:
        DB.sql("DROP FOREIGN TABLE IF EXISTS meta_image_other")
