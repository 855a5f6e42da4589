"""The Arrow edge data that the engine suites share (test_engine_filter.py,
test_gpuscan.py, ...): the table of edge values and NULLs (N rows in record
batches of BATCH rows, so that errors and fallbacks hit some batches and not
others) and its writer.  The on/off oracle that runs many queries both ways
in one statement is pg_sql.Db.create_run_function and Db.compare.
"""
import datetime
import decimal
import os
import random

import pyarrow as pa

from pg_sql import DB, unequal

N = 60          # rows
BATCH = 7       # rows per record batch: errors and fallbacks hit some batches


def psql(sql, check=True, user=None, sep="|"):
    """pg_sql.Db.psql of sql (fields separated by sep; psql's terse errors).
    check: it must succeed, and its output comes back stripped; else
    (returncode, stdout stripped, stderr)."""
    rc, out, err = DB.psql(sql, check=check, user=user, sep=sep, verbose=False)
    return out if check else (rc, out, err)


def column(edges, stride, n=N):
    """n values cycling through edges with a stride, so columns mix."""
    return [edges[(i * stride) % len(edges)] for i in range(n)]


def edge_table(returned_only=False):
    """The N-row edge table: id and a column of each type the engine loads;
    returned_only adds columns of layouts the engine's filter does not load
    (large_string, binary, uint32, time64, date64) for GpuScan to return."""
    D = decimal.Decimal
    big = D("999999999999999999.99")
    dt = datetime.datetime
    ts = [dt(1970, 1, 1), dt(2000, 1, 1, 12, 30), None, dt(1, 1, 1),
          dt(9999, 12, 31, 23, 59, 59, 999999), dt(2024, 2, 29, 1, 2, 3, 4), dt(1999, 12, 31)]
    cols = {
        "id": pa.array(range(1, N + 1), pa.int32()),
        "i2": pa.array(column([-32768, 32767, 0, None, 1, -1, 42, 181, -7, 255], 1), pa.int16()),
        "i4": pa.array(column([-2**31, 2**31 - 1, 0, None, 1, -1, 42, 46341, -46341, 7,
                               65536], 3), pa.int32()),
        "i8": pa.array(column([-2**63, 2**63 - 1, 0, None, 1, -1, 42, 3037000500, -7,
                               10**12], 7), pa.int64()),
        "z": pa.array(column([0, 1, -1, None, 2, 0, 5, -3], 5), pa.int32()),
        "f4": pa.array(column([0.0, -0.0, float("nan"), float("inf"), float("-inf"), None,
                               1.5, -2.5, 3.4e38, 1e-45], 3), pa.float32()),
        "f8": pa.array(column([0.0, -0.0, float("nan"), float("inf"), float("-inf"), None,
                               1.5, -2.5, 1e308, 5e-324, 42.0], 7), pa.float64()),
        "n": pa.array(column([D("0.00"), D("1.50"), D("-1.50"), None, big, -big, D("42.00"),
                              D("0.01")], 3), pa.decimal128(20, 2)),
        "t": pa.array(column(["", "a", "ab", "abc", "B", "b", None, "é", "日本語", "a%b",
                              "a_b", "ab\\c", "zz", "éa"], 5), pa.string()),
        "d": pa.array(column([datetime.date(1970, 1, 1), datetime.date(2000, 1, 1), None,
                              datetime.date(1, 1, 1), datetime.date(9999, 12, 31),
                              datetime.date(1999, 12, 31), datetime.date(2024, 2, 29)], 3),
                      pa.date32()),
        "ts": pa.array(column(ts, 5), pa.timestamp("us")),
        "tstz": pa.array(column(ts, 3), pa.timestamp("us", tz="UTC")),
        "b": pa.array(column([True, False, None], 1), pa.bool_()),
    }
    if returned_only:
        cols.update({
            "lt": pa.array(column(["x" * 300, None, "", "ü", "long " * 20], 2),
                           pa.large_string()),
            "bin": pa.array(column([b"\x00\x01", None, b"", b"\xff" * 40], 3), pa.binary()),
            "u4": pa.array(column([0, 2**32 - 1, None, 7], 1), pa.uint32()),
            "tm": pa.array(column([datetime.time(0, 0), datetime.time(23, 59, 59, 999999), None,
                                   datetime.time(12, 1, 2, 3)], 1), pa.time64("us")),
            "d64": pa.array(column([datetime.date(2001, 2, 3), None,
                                    datetime.date(1969, 12, 31)], 2), pa.date64()),
        })
    return pa.table(cols)


def picker(seed, n, null_frac=0.05):
    """pick(vals): n values drawn from vals with a random.Random(seed), each
    NULL (None) with probability null_frac: a fact table column"""
    rnd = random.Random(seed)

    def pick(vals):
        return [None if rnd.random() < null_frac else rnd.choice(vals) for _ in range(n)]
    return pick


def write(path, table, batch=BATCH):
    """Writes table as the Arrow file path (record batches of at most batch
    rows), readable by the server's OS user: a new file (inode) renamed over
    any old one, so that a reader of the old one never sees a torn file."""
    tmp = path + ".tmp"
    with pa.ipc.new_file(tmp, table.schema) as w:
        for b in table.to_batches(max_chunksize=batch):
            w.write_batch(b)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


# ---------------------------------------------------------------- GpuScan suites
# test_gpuscan.py (Arrow) and test_gpuscan_heap.py (heap) run the same cases over
# their own copies of the edge table: `schema` holds the run/explain functions
# (pg_sql.Db.create_run_function), rows_query(where) is the suite's query of every
# column of the rows where `where` holds, node the engine nodes that may serve it.

# every column of edge_table(returned_only=True) as text
ALL = ("id, i2, i4, i8, z, f4, f8, n, t, d, ts, tstz, b, md5(lt), encode(bin, 'hex'), u4, tm, "
       "d64")


def rows_query(schema, where, table=None, cols=ALL):
    """The query of cols of the rows of table (schema.edge) where `where`
    holds, as one value; the filter suite's collation engf.nd is schema.nd."""
    return ("SELECT string_agg(concat_ws('|', %s), ',' ORDER BY id) FROM %s WHERE %s"
            % (cols, table or schema + ".edge", where.replace("engf.nd", schema + ".nd")))


# each clause raises in PostgreSQL (SQLSTATE) or, guarded, does not ("ok")
SCAN_ERRORS = [("i4 * i4 > 0", "error 22003 integer out of range"),
               ("i4 / z > 1", "error 22012 division by zero"), ("f8 / 0 > 0", "error 22012"),
               ("d - 2140000000 < '2000-01-01'", "error 22008"),
               ("substring(t, 1, -1) = ''", "error 22011"), ("z <> 0 AND i4 / z > 1", "ok ")]


def check_every_clause(schema, rows_query, node, in_engine, rechecked, not_in_engine,
                       settings=(), prefix=""):
    """The clauses in_engine (the engine ran, nothing rechecked), rechecked (the
    engine ran, PostgreSQL rechecked some batches or chunks) and not_in_engine
    (no engine node in the plan with the settings) give PostgreSQL's rows and
    errors; prefix is SQL run first in the session (Db.compare's settings)."""
    for clauses, recheck in ((in_engine, False), (rechecked, True)):
        bad = unequal(DB.compare(schema, [rows_query(c) for c in clauses], prefix, node=node,
                                 rechecked=recheck))
        assert not bad, "\n".join(bad)
    bad = unequal(DB.compare(schema, [rows_query(c) for c in not_in_engine], prefix))
    assert not bad, "\n".join(bad)
    for c in not_in_engine:
        DB.not_planned(rows_query(c), node, settings)


def check_scan_errors(schema, rows_query, node):
    """SCAN_ERRORS: PostgreSQL's error, or its rows, with the engine in the plan."""
    res = DB.compare(schema, [rows_query(c) for c, _ in SCAN_ERRORS], node=node)
    for (q, on, off), (_, want) in zip(res, SCAN_ERRORS):
        assert on == off and on.startswith(want), (q, on, off)


def parallel_rescan(sub, explain, read, rows):
    """A Gather over a parallel GpuScan rescanned: the query that reruns the
    aggregate sub (one integer) as a plain SubPlan (with enable_material off)
    for four outer rows, and the last row it must return ("<value>|f").
    explain(sql) is EXPLAIN ANALYZE with the engine's parallel settings: its
    counter `read` sums every participant's over the four runs, and each run
    reads each of the table's rows once."""
    want = int(psql(sub))
    q = "SELECT g, g <> ALL (%s) FROM generate_series(%d, %d) g ORDER BY g" % (sub, want - 3, want)
    p = explain(q)
    gather = next(ln for ln in p.split("\n") if "->  Gather " in ln)
    assert "Parallel Custom Scan (GpuScan)" in p and "loops=4)" in gather, p
    got = [int(ln.split(":")[1]) for ln in p.split("\n") if ln.strip().startswith(read + ":")]
    assert got == [4 * rows], p
    return q, "%d|f" % want
