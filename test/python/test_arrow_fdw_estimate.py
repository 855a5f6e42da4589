"""Row estimates of arrow_fdw scans, and ANALYZE's bounded sample.

Files with known distributions (pyarrow, several record batches, with and
without the pg_warp.min.N / pg_warp.max.N batch statistics that pg2arrow -S
writes) are compared with the same rows in a heap table: the actual count is
the truth, PostgreSQL's estimate on the ANALYZEd heap table the yardstick of
what a good estimate is.  Runs against the cluster that scripts/test.sh starts.
"""
import json
import os
import random
import re
import shutil
import subprocess
import tempfile

import pyarrow as pa
import pytest

ROWS_PER_BATCH = 10000
BATCHES = 20
TOTAL = ROWS_PER_BATCH * BATCHES
STAT_COLS = ["a", "b", "c", "s", "n", "d"]      # fields 0..5 carry statistics


def psql(sql, check=True):
    args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"]
    r = subprocess.run(args + ["-c", sql], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r.returncode, r.stdout.strip(), r.stderr


def q(sql):
    return psql(sql)[1]


def table_data():
    """a: uniform 0..999; b: uniform 0..99; c: uniform float [0, 1000);
    s: 0..TOTAL-1 in order (clustered: each batch a narrow range); n: 90 %
    NULL, else uniform 0..99; d: uniform dates over 2000; t: one of 10 words."""
    rnd = random.Random(20261124)
    a = [rnd.randrange(1000) for _ in range(TOTAL)]
    b = [rnd.randrange(100) for _ in range(TOTAL)]
    c = [rnd.random() * 1000 for _ in range(TOTAL)]
    s = list(range(TOTAL))
    n = [rnd.randrange(100) if rnd.random() < 0.1 else None for _ in range(TOTAL)]
    d = [10957 + rnd.randrange(366) for _ in range(TOTAL)]     # days since 1970
    t = ["w%d" % rnd.randrange(10) for _ in range(TOTAL)]
    return pa.table({
        "a": pa.array(a, pa.int32()), "b": pa.array(b, pa.int64()),
        "c": pa.array(c, pa.float64()), "s": pa.array(s, pa.int64()),
        "n": pa.array(n, pa.int32()), "d": pa.array(d, pa.int32()).cast(pa.date32()),
        "t": pa.array(t, pa.utf8()),
    })


def stats_md(batch):
    """The batch statistics pg2arrow -S writes (doc/arrow-metadata.md)."""
    md = {}
    for i, name in enumerate(STAT_COLS):
        col = batch.column(name)
        if name == "d":
            col = col.cast(pa.int32())
        vals = [v for v in col.to_pylist() if v is not None]
        if not vals:
            continue
        fmt = "%.17g" if name == "c" else "%d"
        md["pg_warp.min.%d" % i] = fmt % min(vals)
        md["pg_warp.max.%d" % i] = fmt % max(vals)
    return md


def write(path, table, rows_per_batch, stats):
    with pa.ipc.new_file(path, table.schema) as w:
        for b in table.to_batches(max_chunksize=rows_per_batch):
            if stats:
                w.write_batch(b, custom_metadata=stats_md(b))
            else:
                w.write_batch(b)
    os.chmod(path, 0o644)


@pytest.fixture(scope="module")
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_est.")
    os.chmod(d, 0o755)
    t = table_data()
    write(os.path.join(d, "stats.arrow"), t, ROWS_PER_BATCH, True)
    write(os.path.join(d, "nostats.arrow"), t, ROWS_PER_BATCH, False)
    cols = "a int4, b int8, c float8, s int8, n int4, d date, t text"
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS est CASCADE; CREATE SCHEMA est")
    for name in ("stats", "nostats"):
        psql("CREATE FOREIGN TABLE est.%s (%s) SERVER arrow_fdw OPTIONS (file '%s')"
             % (name, cols, os.path.join(d, name + ".arrow")))
    psql("CREATE TABLE est.heap AS SELECT * FROM est.stats; ANALYZE est.heap")
    yield d
    psql("DROP SCHEMA IF EXISTS est CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def estimate(table, where):
    out = q("SET max_parallel_workers_per_gather = 0; "
            "EXPLAIN (FORMAT JSON) SELECT * FROM est.%s WHERE %s" % (table, where))
    return json.loads(out)[0]["Plan"]["Plan Rows"]


def off_by(est, actual):
    """How many times too high or too low (1: exact)."""
    est, actual = max(est, 1), max(actual, 1)
    return max(est / actual, actual / est)


# restriction clauses that batch statistics can estimate
CASES = [
    "a < 100", "a BETWEEN 200 AND 299", "a >= 900", "300 > a", "a > 998",
    "a = 500", "a IN (1, 2, 3, 4, 5)", "a = ANY ('{7,8,9}'::int4[])",
    "b BETWEEN 4 AND 6 AND a BETWEEN 26 AND 35",
    "a > 250 AND b < 10", "a < 500 AND a >= 100",
    "c < 250.5", "c BETWEEN 100 AND 200", "c > 990",
    "s BETWEEN 1000 AND 5999", "s < 25000", "s >= 199000 AND a < 500",
    "n < 50", "n = 7", "n BETWEEN 10 AND 19 AND a < 500",
    "n IS NULL", "n IS NOT NULL", "n IS NOT NULL AND n < 50", "n IS NULL AND n < 50",
    "a IS NOT NULL AND a < 100", "n IS NULL AND a < 100",
    "d BETWEEN '2000-03-01' AND '2000-03-31'", "d = '2000-07-04'",
    "a = 2.5", "a < 99.5", "b > 1e9",
]


@pytest.mark.parametrize("where", CASES)
def test_estimate_from_batch_statistics(tables, where):
    """Without ANALYZE, estimates from batch statistics are within 2x of the
    actual count, or as close as PostgreSQL's on the analyzed heap table."""
    actual = int(q("SELECT count(*) FROM est.heap WHERE " + where))
    arrow = estimate("stats", where)
    heap = estimate("heap", where)
    assert off_by(arrow, actual) <= max(2.0, 1.5 * off_by(heap, actual)), \
        "%s: arrow estimate %s, heap estimate %s, actual %d" % (where, arrow, heap, actual)


def test_no_statistics_is_sane(tables):
    """A file without statistics: a range on each of two columns is not
    estimated at a few rows out of 200,000 (PostgreSQL's fixed 0.5 % per
    range would say 1), nor above the table."""
    for where in ["b BETWEEN 4 AND 6 AND a BETWEEN 26 AND 35",
                  "a BETWEEN 200 AND 299", "a < 100 AND b > 50"]:
        actual = int(q("SELECT count(*) FROM est.heap WHERE " + where))
        est = estimate("nostats", where)
        assert actual / 10 <= est <= TOTAL, (where, est, actual)
    assert estimate("nostats", "true") == TOTAL


def test_null_counts(tables):
    """NULLs never pass a comparison, and IS [NOT] NULL is exact: the null
    counts of the record batches count, with or without statistics."""
    actual = int(q("SELECT count(*) FROM est.heap WHERE n >= 0"))
    assert off_by(estimate("stats", "n >= 0"), actual) <= 1.2
    assert off_by(estimate("nostats", "n >= 0"), actual) <= 4
    for where in ["n IS NULL", "n IS NOT NULL"]:
        actual = int(q("SELECT count(*) FROM est.heap WHERE " + where))
        assert estimate("nostats", where) == actual, where


def test_skipped_batches_estimate_few(tables):
    """A value outside every batch's range: (almost) no rows."""
    assert estimate("stats", "a > 5000") <= 1
    assert estimate("stats", "s = 12345") <= 2


def test_analyze_then_postgres_estimates(tables):
    """After ANALYZE the foreign table has pg_statistic, and its estimates
    (text too, which batch statistics cannot place) are as good as the heap
    table's; the exact row count comes from the footers."""
    psql("ANALYZE est.stats")
    try:
        assert q("SELECT reltuples::bigint FROM pg_class WHERE oid = 'est.stats'::regclass") == str(TOTAL)
        for where in CASES + ["t = 'w3'", "t IN ('w1', 'w2')", "t > 'w7'"]:
            actual = int(q("SELECT count(*) FROM est.heap WHERE " + where))
            arrow = estimate("stats", where)
            heap = estimate("heap", where)
            assert off_by(arrow, actual) <= max(2.0, 1.5 * off_by(heap, actual)), \
                "%s: arrow %s, heap %s, actual %d" % (where, arrow, heap, actual)
    finally:
        psql("DELETE FROM pg_statistic WHERE starelid = 'est.stats'::regclass")


def test_analyze_reads_a_bounded_subset(tables):
    """ANALYZE of a table of 400 record batches reads a small random subset of
    them: the backend's own read counter (/proc/self/io, rchar) grows by far
    less than the file's size, the VERBOSE message names the batches read,
    and the row count is still exact."""
    n_batches, rows = 400, 2000
    path = os.path.join(tables, "big.arrow")
    rnd = random.Random(7)
    total = n_batches * rows
    t = pa.table({k: pa.array([rnd.randrange(1 << 40) for _ in range(total)], pa.int64())
                  for k in ("w", "x", "y", "z")})
    write(path, t, rows, False)
    size = os.path.getsize(path)
    assert size > 20 << 20
    psql("CREATE FOREIGN TABLE est.big (w int8, x int8, y int8, z int8) "
         "SERVER arrow_fdw OPTIONS (file '%s')" % path)
    for c in "wxyz":
        psql("ALTER FOREIGN TABLE est.big ALTER COLUMN %s SET STATISTICS 1" % c)
    # one session: read the counter, ANALYZE, read it again
    r = subprocess.run(
        ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], capture_output=True, text=True,
        input="SELECT pg_read_file('/proc/self/io');\n"
              "ANALYZE VERBOSE est.big;\n"
              "SELECT pg_read_file('/proc/self/io');\n")
    assert r.returncode == 0, r.stderr
    before, after = [int(m) for m in re.findall(r"^rchar: (\d+)$", r.stdout, re.M)]
    read = after - before
    assert read < size // 4, "ANALYZE read %d bytes of a %d-byte file" % (read, size)
    m = re.search(r"sampled (\d+) of (\d+) rows, reading (\d+) of (\d+) record batches",
                  r.stderr)
    assert m, r.stderr
    sampled, total_rows, read_batches, all_batches = map(int, m.groups())
    assert total_rows == total and all_batches == n_batches
    assert sampled == 300                           # targrows of statistics target 1
    assert read_batches < n_batches // 4, r.stderr
    assert q("SELECT reltuples::bigint FROM pg_class WHERE oid = 'est.big'::regclass") == str(total)
    # the sample is spread over the table: its histogram spans most of the range
    lo, hi = q("SELECT min(v::text::int8), max(v::text::int8) FROM pg_stats, "
               "unnest(histogram_bounds::text::int8[]) v "
               "WHERE schemaname = 'est' AND tablename = 'big' AND attname = 'w'").split("|")
    assert int(lo) < (1 << 40) // 10 and int(hi) > (1 << 40) * 9 // 10
