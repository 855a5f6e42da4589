"""arrow_fdw against decompression bombs (issue 9, item 7).

A compressed buffer whose declared uncompressed length is more than its
array can hold must be refused as corrupt (XX001) before anything is
allocated; a buffer above pg_warp.arrow_max_buffer_size is refused with
53200.  Either way the backend survives.

The files are written by pyarrow with ZSTD or LZ4 body compression, then
patched in place: the buffer list of the record batch is made to point the
int64 values buffer at the compressed string data (a valid frame that
decompresses to 64 MiB), so every length and offset stays consistent and
only the declared size is hostile.  Runs against the cluster of
scripts/test.sh (PGHOST, PGPORT, PGUSER in the environment).
"""
import os
import struct

import pyarrow as pa
import pytest

from pg_sql import psql, sqlstate

from arrow_ipc_layout import read_footer, read_message

BIG = 64 << 20                  # bytes the string data decompresses to


@pytest.fixture(scope="module", autouse=True)
def setup():
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS bombpy CASCADE; CREATE SCHEMA bombpy")
    yield
    psql("DROP SCHEMA IF EXISTS bombpy CASCADE")


def write_file(path, codec, patch):
    """
    One batch of 4 rows: a int64, s utf8 (row 0 holds BIG bytes).  With
    patch, buffer 1 (a's values) becomes a copy of buffer 4 (s's data).
    """
    t = pa.table({"a": pa.array([1, 2, 3, 4], pa.int64()),
                  "s": pa.array(["x" * BIG, "", "b", None])})
    opts = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_file(path, t.schema, options=opts) as w:
        w.write_table(t)
    if patch:
        data = bytearray(open(path, "rb").read())
        block = read_footer(bytes(data))["record_batches"][0]
        m = read_message(bytes(data), block.offset)
        bufs = m["buffers"]
        old = struct.pack("<qq", *bufs[1])
        at = data.find(old, m["start"], m["body_start"])
        assert at > 0 and data.find(old, at + 1, m["body_start"]) < 0
        data[at:at + 16] = struct.pack("<qq", *bufs[4])
        open(path, "wb").write(bytes(data))
    os.chmod(path, 0o644)


def backend_restarts():
    return psql("SELECT pg_postmaster_start_time()")[1]


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_bomb_in_fixed_width_buffer_is_corrupt(tmpdir_world, codec):
    path = os.path.join(tmpdir_world, "bomb.arrow")
    write_file(path, codec, patch=True)
    started = backend_restarts()
    psql("DROP FOREIGN TABLE IF EXISTS bombpy.t; CREATE FOREIGN TABLE bombpy.t"
         " (a int8, s text) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    got, err = sqlstate("SELECT a FROM bombpy.t")
    assert got == "XX001", err
    assert "declares %d bytes" % (BIG + 1) in err and '"a"' in err, err
    assert psql("SELECT 1")[1] == "1"
    assert backend_restarts() == started


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_buffer_above_max_buffer_size(tmpdir_world, codec):
    path = os.path.join(tmpdir_world, "big.arrow")
    write_file(path, codec, patch=False)
    started = backend_restarts()
    psql("DROP FOREIGN TABLE IF EXISTS bombpy.u; CREATE FOREIGN TABLE bombpy.u"
         " (a int8, s text) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    # the default (1GB) reads it
    rc, out, err = psql("SELECT a, length(s) FROM bombpy.u ORDER BY a")
    assert out.splitlines() == ["1|%d" % BIG, "2|0", "3|1", "4|"], out
    got, err = sqlstate("SET pg_warp.arrow_max_buffer_size = '32MB';"
                        " SELECT length(s) FROM bombpy.u")
    assert got == "53200", err
    assert "exceeds the limit of %d bytes" % (32 << 20) in err, err
    assert "pg_warp.arrow_max_buffer_size" in err, err
    # the int64 column alone needs no big buffer
    rc, out, err = psql("SET pg_warp.arrow_max_buffer_size = '32MB';"
                        " SELECT sum(a) FROM bombpy.u")
    assert out == "10", err
    assert backend_restarts() == started


def test_max_buffer_size_is_superuser_only():
    psql("DROP ROLE IF EXISTS bomb_user; CREATE ROLE bomb_user")
    got, err = sqlstate("SET ROLE bomb_user; SET pg_warp.arrow_max_buffer_size = '2GB'")
    assert got == "42501", err
    psql("DROP ROLE bomb_user")


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_empty_slice_costs_nothing(tmpdir_world, codec):
    """
    Issue 27, item 3: pyarrow writes an empty slice with its parent's whole
    offsets buffer (here 4 M offsets of 0, 16 MB declared, a few KB stored);
    the file is valid and must read, and reading it must not allocate what the
    buffer declares: nothing of an empty array is decompressed, so even a
    1 MB pg_warp.arrow_max_buffer_size reads it.
    """
    n = 4 << 20
    whole = pa.record_batch([pa.array(range(3), pa.int32()).take([0] * n),
                             pa.array([""] * n)], names=["a", "s"])
    path = os.path.join(tmpdir_world, "empty_slice.arrow")
    opts = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_file(path, whole.schema, options=opts) as w:
        w.write_batch(whole.slice(17, 0))
        w.write_batch(whole.slice(17, 2))
    os.chmod(path, 0o644)
    assert os.path.getsize(path) < (1 << 20)
    started = backend_restarts()
    psql("DROP FOREIGN TABLE IF EXISTS bombpy.e; CREATE FOREIGN TABLE bombpy.e"
         " (a int4, s text) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    rc, out, err = psql("SET pg_warp.arrow_max_buffer_size = '1MB';"
                        " SELECT count(*), sum(a), max(length(s)) FROM bombpy.e")
    assert out == "2|0|0", (out, err)
    assert backend_restarts() == started
