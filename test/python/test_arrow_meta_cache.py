"""arrow_fdw's cache of opened files' metadata (src/fdw/file.c): a backend
that opens a file it opened before copies its metadata instead of reading
every record batch's message again.  What must hold: a file changed in any
way between two queries of one session is read again (never a stale
schema, batch list or statistics), and a copy answers as the file read anew
does (dictionaries, many batches, statistics, the engine on and off).

Runs against the cluster that scripts/test.sh starts.  Each test runs its
queries in one psql session (the cache is the backend's) and changes the
file between them with psql's \\! (this process and the server share the
file system).
"""
import os
import sys

import pyarrow as pa
import pytest

from pg_sql import Db

DB = Db()
PY = sys.executable


def write(path, table, chunk):
    with pa.ipc.new_file(path, table.schema) as w:
        for b in table.to_batches(max_chunksize=chunk):
            w.write_batch(b)
    os.chmod(path, 0o644)


def script(tmpdir, name, body):
    """A python script psql runs with \\! between two queries."""
    p = os.path.join(tmpdir, name)
    with open(p, "w") as f:
        f.write("import os, pyarrow as pa\n" + body)
    return "\\! %s %s" % (PY, p)


def session(statements):
    """Runs the statements in one session; returns their output lines."""
    out = DB.psql(statements[-1], settings=statements[:-1])[1]
    return out.splitlines()


def table(tmpdir, ftable, path, cols="x int"):
    DB.sql("DROP FOREIGN TABLE IF EXISTS %s; CREATE FOREIGN TABLE %s (%s) SERVER arrow_fdw "
           "OPTIONS (file '%s')" % (ftable, ftable, cols, path))


def ints(n, k):
    return pa.table({"x": pa.array([(i * 7 + k) % 1000 + k for i in range(n)], pa.int32())})


def arrow_bytes(t, chunk, pad=0):
    """t as an Arrow file of batches of chunk rows, its schema metadata
    padded with pad bytes."""
    schema = t.schema.with_metadata({"pad": "p" * pad})
    b = pa.BufferOutputStream()
    with pa.ipc.new_file(b, schema) as w:
        for x in t.cast(schema).to_batches(max_chunksize=chunk):
            w.write_batch(x)
    return b.getvalue().to_pybytes()


# what the session's \! does to the file (p) with the new bytes (in n)
CHANGES = {
    # in place, then its old modification time back: only the change time moves
    "same_size_same_mtime": "st = os.stat(p); open(p, 'r+b').write(open(n, 'rb').read()); "
                            "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns)); "
                            "assert os.stat(p).st_mtime_ns == st.st_mtime_ns",
    "appended": "open(p, 'r+b').write(open(n, 'rb').read())",
    "replaced": "os.chmod(n, 0o644); os.replace(n, p)",
    "truncated": "f = open(p, 'r+b'); f.write(open(n, 'rb').read()); f.truncate(); f.close()",
}


@pytest.mark.parametrize("how", sorted(CHANGES))
def test_changed_file_is_read_again(tmpdir_world, how):
    """The second query of the session sees the file as it is then: rewritten
    in place with the same size and its old modification time (other batch
    boundaries: metadata kept from the old file would read the new one's
    buffers where they are not), grown by batches, replaced by a new file
    under the same name, or cut to fewer batches."""
    path = os.path.join(tmpdir_world, "t.arrow")
    old = ints(4000, 0)
    write(path, old, 100)
    size = os.stat(path).st_size
    want, chunk = {"same_size_same_mtime": (ints(4000, 3), 200), "appended": (ints(6000, 1), 100),
                   "replaced": (ints(3000, 5), 300), "truncated": (ints(500, 2), 100)}[how]
    data = arrow_bytes(want, chunk)
    if how == "same_size_same_mtime":
        data = next((d for d in (arrow_bytes(want, chunk, pad) for pad in range(4000))
                     if len(d) == size), None)
        assert data is not None, "no padding gives the old file's size"
    new = os.path.join(tmpdir_world, "new.arrow")
    with open(new, "wb") as f:
        f.write(data)
    ft = "meta_cache_" + how
    table(tmpdir_world, ft, path)
    q = "SELECT count(*), sum(x) FROM %s" % ft
    body = "p, n = %r, %r\n%s\n" % (path, new, CHANGES[how])
    rows = session([q, q, script(tmpdir_world, "change.py", body), q])
    first = "4000|%d" % sum(old.column(0).to_pylist())
    assert rows[:2] == [first, first], rows
    assert rows[2] == "%d|%d" % (want.num_rows, sum(want.column(0).to_pylist())), rows


def test_copy_answers_as_the_file(tmpdir_world):
    """Many batches, a dictionary column, text and string views (their
    batches' buffer counts differ) and NULLs: the session's second open (a copy) gives the first's rows,
    with the engine on and off, and a range query."""
    n = 20000
    t = pa.table({
        "k": pa.array([i for i in range(n)], pa.int64()),
        "d": pa.array(["red", "green", None, "blue"] * (n // 4)).dictionary_encode(),
        "s": pa.array([None if i % 13 == 0 else "v%d" % (i % 97) for i in range(n)]),
        "v": pa.array([None if i % 11 == 0 else "view value number %d" % (i % 89)
                       for i in range(n)], pa.string_view()),
    })
    path = os.path.join(tmpdir_world, "many.arrow")
    write(path, t, 64)
    table(tmpdir_world, "meta_cache_many", path, "k bigint, d text, s text, v text")
    q = ("SELECT d, count(*), count(s), sum(k), min(s), max(s), max(v), count(v) "
         "FROM meta_cache_many "
         "WHERE k % 5 <> 1 GROUP BY d ORDER BY d NULLS FIRST")
    for setting in ("SET pg_warp.enabled = on", "SET pg_warp.enabled = off"):
        out = session([setting, q, q, q])
        third = len(out) // 3
        assert third > 0 and out[:third] == out[third:2 * third] == out[2 * third:], out
    on = session(["SET pg_warp.enabled = on", q])
    off = session(["SET pg_warp.enabled = off", q])
    assert on == off
    rng = "SELECT count(*), sum(k) FROM meta_cache_many WHERE k BETWEEN 5000 AND 5099"
    out = session([rng, rng])
    assert out == ["100|%d" % sum(range(5000, 5100))] * 2, out


def stat_file(path, cols, chunk, stats=None, pad=0):
    """cols (name -> pyarrow array) as a file of batches of chunk rows, each
    with pg2arrow's pg_warp.min.N / pg_warp.max.N statistics of its values;
    stats(field, batch number, min, max) may replace a batch's strings (None:
    leave the key out); pad: bytes of padding in the first batch's metadata."""
    t = pa.table(cols)
    with pa.ipc.new_file(path, t.schema) as w:
        for bn, b in enumerate(t.to_batches(max_chunksize=chunk)):
            md = {}
            for i, name in enumerate(t.column_names):
                vals = [v for v in b.column(i).to_pylist() if v is not None and v == v]
                if not vals:
                    continue
                lo, hi = min(vals), max(vals)
                typ = b.schema.field(i).type
                if pa.types.is_date32(typ):
                    lo, hi = ((v - __import__("datetime").date(1970, 1, 1)).days for v in (lo, hi))
                s = (repr(float(lo)), repr(float(hi))) if pa.types.is_floating(typ) \
                    else (str(lo), str(hi))
                if stats is not None:
                    s = stats(i, bn, *s)
                for k, v in zip(("min", "max"), s):
                    if v is not None:
                        md["pg_warp.%s.%d" % (k, i)] = v
            if bn == 0:
                md["pad"] = "p" * pad
            w.write_batch(b, custom_metadata=md)
    os.chmod(path, 0o644)


def test_cached_statistics_skip_as_the_file(tmpdir_world):
    """The statistics a session keeps parsed per field (file.c's cache)
    decide what the file's own statistics decide: every range query over
    ints, bigints, unsigned, floats (with infinities, NaN and -0), dates and
    decimals (kept as strings) answers as with skipping off, on the first
    open (no cache) and the copies after it; a batch whose statistics are
    missing or malformed is never skipped; and the file rewritten in place
    with its old size and modification time (other values, so other
    statistics) is skipped by the new statistics, not the kept ones."""
    import datetime
    import decimal
    n, chunk = 6000, 250
    path = os.path.join(tmpdir_world, "stats.arrow")

    def cols(shift):
        return {
            "i": pa.array([None if k % 17 == 0 else k + shift for k in range(n)], pa.int32()),
            "b": pa.array([(k + shift) * 1000003 - 2 ** 40 for k in range(n)], pa.int64()),
            "u": pa.array([2 ** 63 + k + shift for k in range(n)], pa.uint64()),
            "f": pa.array([float("inf") if k == 10 else float("nan") if k == 20 else
                           -0.0 if k == 30 else (k + shift) / 4 - 300 for k in range(n)],
                          pa.float64()),
            "d": pa.array([datetime.date(1990, 1, 1) + datetime.timedelta(days=k + shift)
                           for k in range(n)], pa.date32()),
            "m": pa.array([decimal.Decimal(k + shift) / 100 for k in range(n)],
                          pa.decimal128(12, 2)),
        }

    def broken(field, bn, lo, hi):
        # batch 3: no statistics of i; batch 5: malformed ones; batch 7: empty
        if field == 0 and bn == 3:
            return None, None
        if bn == 5:
            return "abc", "12x"
        if bn == 7:
            return "", ""
        return lo, hi

    stat_file(path, cols(0), chunk, broken, pad=400)
    size = os.stat(path).st_size
    table(tmpdir_world, "meta_cache_stats", path,
          "i int, b bigint, u numeric, f float8, d date, m numeric(12,2)")
    qs = ["SELECT count(*), sum(i) FROM meta_cache_stats WHERE i BETWEEN 1000 AND 1300",
          "SELECT count(*) FROM meta_cache_stats WHERE i = 1276 OR i IS NULL",
          "SELECT count(*) FROM meta_cache_stats WHERE i IN (3, 1776, 5999)",
          "SELECT count(*), min(b) FROM meta_cache_stats WHERE b > 4000000000 - 1099511627776",
          "SELECT count(*) FROM meta_cache_stats WHERE u >= 9223372036854779000",
          "SELECT count(*) FROM meta_cache_stats WHERE f < -290",
          "SELECT count(*) FROM meta_cache_stats WHERE f > 1000",
          "SELECT count(*) FROM meta_cache_stats WHERE f = 0",
          "SELECT count(*) FROM meta_cache_stats WHERE d < '1990-03-01'",
          "SELECT count(*) FROM meta_cache_stats WHERE d >= '2005-01-01'",
          "SELECT count(*) FROM meta_cache_stats WHERE m BETWEEN 12.5 AND 13.75"]
    skip_off = ["SET pg_warp.arrow_stats_skip = off"]
    for q in qs:
        want = session(skip_off + [q])
        got = session([q, q, q])
        assert got == want * 3, (q, want, got)
    # the statistics skip batches at all (else the test proves nothing)
    plan = DB.sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + qs[0])
    skipped = [int(line.split(":")[1]) for line in plan.splitlines()
               if line.strip().startswith("Batches Skipped:")]
    read = [int(line.split(":")[1]) for line in plan.splitlines()
            if line.strip().startswith("Batches Read:")]
    # batches 4 and 5 hold the range; 3 (no statistics of i), 5 (malformed)
    # and 7 (empty strings) cannot be skipped
    assert skipped == [n // chunk - 4] and read == [4], plan

    # rewritten in place: same size and modification time, values shifted
    # by 2000 (the old statistics would skip the batches that now match)
    new = os.path.join(tmpdir_world, "stats_new.arrow")
    for pad in range(800):
        stat_file(new, cols(2000), chunk, broken, pad=pad)
        if os.stat(new).st_size == size:
            break
    assert os.stat(new).st_size == size, "no padding gives the old file's size"
    body = "p, n = %r, %r\n%s\n" % (path, new, CHANGES["same_size_same_mtime"])
    change = script(tmpdir_world, "rewrite.py", body)
    out = session([qs[0], change, qs[0]])
    after = session(skip_off + [qs[0]])
    assert out[1] == after[0], (out, after)
    assert out[0] != out[1], out


def test_more_files_than_entries_in_one_query(tmpdir_world):
    """A query over more files than the cache has entries (32): every entry
    is pinned by the files opened before, so the last files are opened
    outside the cache; each still answers as the file (read anew in a later
    query of the session, and with the engine off)."""
    n_files = 36
    parts = []
    expect = []
    for i in range(n_files):
        path = os.path.join(tmpdir_world, "many_%02d.arrow" % i)
        write(path, ints(300 + i, i), 64)
        table(tmpdir_world, "meta_cache_f%02d" % i, path)
        parts.append("SELECT %d AS f, count(*) AS n, sum(x) AS s FROM meta_cache_f%02d" % (i, i))
        vals = ints(300 + i, i).column("x").to_pylist()
        expect.append("%d|%d|%d" % (i, len(vals), sum(vals)))
    q = " UNION ALL ".join(parts) + " ORDER BY f"
    for setting in ("SET pg_warp.enabled = on", "SET pg_warp.enabled = off"):
        out = session([setting, q, q])
        assert out == expect + expect, (setting, out)
