"""GpuJoin with inner keys that repeat (src/engine/gpu_join.c, probes of every
match: xpu_join.h's XPU_JOIN_PROBE_EACH): a join depth whose inner relation
has no unique index over the probed keys runs in the engine, each outer row
going on once per matching inner row (INNER), or once with NULLs where none
matches (LEFT), against PostgreSQL as the oracle.

The inner relations are heap tables without unique keys: a key of 1000
copies that holds about half of its table's rows, keys of 2 to 31 copies,
keys without any row, NULL keys; text, numeric and composite keys.  The fact
table is an Arrow file (and a heap copy of it) with NULL keys and keys no
inner row has.  Every query runs with pg_warp on (a GpuPreAgg whose engine
run joined the expected depths, EXPLAIN saying "every match" for the depths
of repeating keys) and off; the rows, or the error, must be equal.  A join
that PostgreSQL estimates to multiply the outer rows more than 100 times
stays in PostgreSQL, and EXPLAIN (VERBOSE) says why.

A relation without a unique index whose keys are unique all the same
(their table is built XPU_JOIN_UNIQUE) still probes every match, and
EXPLAIN ANALYZE says "(the keys are unique)"; the CPU engine then runs the
depth vectorised.  A duplicate key inserted later makes the next query's
table an expanding one again.
"""
import decimal
import os
import random
import shutil
import tempfile

import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import DB, OFF, ON, find_nodes, show
from pg_sql import psql as pg_psql

NODE = "GpuPreAgg"
N = 4000
D = decimal.Decimal
HEAP = ("SET pg_warp.enable_gpupreagg_heap = on",)
TEXTS = ["AIR", "MAIL", "SHIP", "é", "", "nope", "TRUCK"]


def fact_table(n, seed):
    rnd = random.Random(seed)

    def pick(vals, null_frac=0.05):
        return [None if rnd.random() < null_frac else rnd.choice(vals) for _ in range(n)]

    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        # 61 .. 70 meet no inner row
        "k": pa.array(pick(list(range(1, 71))), pa.int32()),
        "k2": pa.array(pick(list(range(1, 5))), pa.int32()),
        "t": pa.array(pick(TEXTS), pa.string()),
        "n": pa.array(pick([D("1.50"), D("2.00"), D("-3.25"), D("7.70"), D("0.00")]),
                      pa.decimal128(12, 2)),
        "v": pa.array(pick([0, 1, -1, 7, 100, 2**31 - 1, -2**31]), pa.int32()),
        "amt": pa.array(pick([D("10.00"), D("0.01"), D("-5.50"), D("123456.78")]),
                        pa.decimal128(12, 2)),
        "f": pa.array(pick([0.5, -0.0, 3.25, 1e10]), pa.float64()),
    })


FACT_COLUMNS = ("id int8, k int4, k2 int4, t text, n numeric(12,2), v int4, "
                "amt numeric(12,2), f float8")

DIMS = """
-- key 1: 1000 copies (about half of the rows); keys 2 .. 60: 2 to 31 copies; NULL keys
CREATE TABLE gd.dup (k int4, w int4, lab text, x numeric(10,2));
INSERT INTO gd.dup SELECT 1, i % 7, 'hot' || (i % 3), i * 0.25 FROM generate_series(1, 1000) i;
INSERT INTO gd.dup SELECT k, (k + c) % 7, CASE WHEN c % 5 = 0 THEN NULL ELSE 'L' || (k % 4) END,
       CASE WHEN c % 6 = 0 THEN NULL ELSE k + c * 0.5 END
  FROM generate_series(2, 60) k, generate_series(1, 2 + (k * 7) % 30) c;
INSERT INTO gd.dup SELECT NULL, i, 'nullkey', i FROM generate_series(1, 10) i;
-- text keys of 1 to 3 copies, 'nope' without a row, NULL keys
CREATE TABLE gd.tdup (t text, tag text, x int4);
INSERT INTO gd.tdup VALUES ('AIR', 'a1', 1), ('AIR', 'a2', 2), ('AIR', NULL, 3), ('MAIL', 'm', 4),
  ('SHIP', 's1', 5), ('SHIP', 's2', NULL), ('é', 'e', 7), ('', 'empty1', 8), ('', 'empty2', 9),
  ('TRUCK', 't', 10), (NULL, 'nullkey', 11), (NULL, 'nullkey', 12);
-- numeric keys of another scale, each twice; 7.7 meets 7.70
CREATE TABLE gd.ndup (n numeric(6,1), x int4);
INSERT INTO gd.ndup SELECT v, i FROM (VALUES (1.5), (2.0), (7.7), (99.9)) a(v),
       generate_series(1, 2) i;
INSERT INTO gd.ndup VALUES (NULL, 5);
-- composite keys with duplicates
CREATE TABLE gd.cdup (a int4, b int4, y int4);
INSERT INTO gd.cdup SELECT a, b, a * 10 + b + c FROM generate_series(1, 4) a,
       generate_series(0, 2) b, generate_series(1, 1 + (a + b) % 3) c;
INSERT INTO gd.cdup VALUES (NULL, 1, 0), (1, NULL, 0);
-- a dimension with a primary key, for plans that mix both kinds of depths
CREATE TABLE gd.uniq (k int4 PRIMARY KEY, name text);
INSERT INTO gd.uniq SELECT i, 'N' || (i % 5) FROM generate_series(1, 65) i;
-- unique keys without an index: int4 keys spread too wide for the dense form
-- (1000, 2000, .. 60000), unique texts ('nope' and 'MAIL' without a row); NULL keys
CREATE TABLE gd.nokey (k int4, name text, x int4);
INSERT INTO gd.nokey SELECT i * 1000, 'K' || (i % 4), i FROM generate_series(1, 60) i;
INSERT INTO gd.nokey VALUES (NULL, 'nullkey', 0), (NULL, 'nullkey', 1);
CREATE TABLE gd.tnokey (t text, tag text);
INSERT INTO gd.tnokey VALUES ('AIR', 'a'), ('SHIP', 's'), ('é', 'e'), ('', 'empty'),
  ('TRUCK', 't'), (NULL, 'nullkey');
-- 300 copies of each of the fact's k2 values: the join multiplies the fact's rows 300
-- times (and the fact's 1000 rows a k2 value would multiply its rows 1000 times)
CREATE TABLE gd.wide (k2 int4, z int4);
INSERT INTO gd.wide SELECT k, c FROM generate_series(1, 4) k, generate_series(1, 300) c;
ANALYZE gd.dup, gd.tdup, gd.ndup, gd.cdup, gd.uniq, gd.wide, gd.nokey, gd.tnokey;
"""


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_gd.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "fact.arrow"), fact_table(N, 11), 700)
    write(os.path.join(d, "empty.arrow"), fact_table(0, 12), 700)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS gd CASCADE; CREATE SCHEMA gd")
    pg_psql(DIMS)
    for name in ("fact", "empty"):
        pg_psql("CREATE FOREIGN TABLE gd.%s (%s) SERVER arrow_fdw OPTIONS (file '%s/%s.arrow')"
                % (name, FACT_COLUMNS, d, name))
    pg_psql("CREATE TABLE gd.hfact AS SELECT * FROM gd.fact; ANALYZE gd.hfact")
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gd CASCADE")
    shutil.rmtree(d, ignore_errors=True)


def joined(sql, depths, each, settings=(), fact="fact"):
    """sql (with {f} the fact table) answers as PostgreSQL does, in a
    GpuPreAgg whose engine run joined `depths` inner relations, `each` of
    them probing every match; returns EXPLAIN ANALYZE's Join Depth lines
    (None where both sides fail with the same error)."""
    sql = sql.replace("{f}", "gd." + fact)
    DB.same_answer(sql, NODE, settings=settings, rel_tol=1e-9)
    if DB.result(sql, tuple(ON) + tuple(settings))[0] == "error":
        return None
    top = DB.engine_ran(sql, NODE, tuple(ON) + tuple(settings))
    nodes = find_nodes(top, NODE)
    got = [v for k, v in nodes[0].items() if k.startswith("Join Depth")]
    assert len(got) == depths, (sql, show(top))
    assert len([v for v in got if "every match" in v]) == each, (sql, show(top))
    assert "inner rows" in nodes[0]["Join Depth 1"], show(top)
    return got


DUP = [
    # the hot key (1000 inner rows) and keys of 2 to 31 copies; NULL inner and outer keys
    ("SELECT d.w, count(*), sum(f.v), avg(f.amt), sum(d.x) FROM {f} f JOIN gd.dup d "
     "ON f.k = d.k GROUP BY d.w", 1, 1),
    # no GROUP BY: one group of every joined row
    ("SELECT count(*), sum(f.v), avg(d.x), min(d.lab), max(f.f) FROM {f} f, gd.dup d "
     "WHERE f.k = d.k", 1, 1),
    # group keys from both sides, an inner filter, an outer filter
    ("SELECT d.lab, f.k2, count(*), sum(f.amt) FROM {f} f JOIN gd.dup d ON f.k = d.k "
     "WHERE d.w < 5 AND f.v <> 0 GROUP BY d.lab, f.k2", 1, 1),
    # a join qual beyond the keys, checked for each match
    ("SELECT d.w, count(*), sum(f.v) FROM {f} f JOIN gd.dup d ON f.k = d.k AND f.k2 > d.w "
     "GROUP BY d.w", 1, 1),
    # a text key
    ("SELECT t.tag, count(*), sum(t.x), avg(f.v) FROM {f} f JOIN gd.tdup t ON f.t = t.t "
     "GROUP BY t.tag", 1, 1),
    # a numeric key of another scale (numeric(12,2) against numeric(6,1))
    ("SELECT n.x, count(*), sum(f.amt) FROM {f} f JOIN gd.ndup n ON f.n = n.n GROUP BY n.x",
     1, 1),
    # a composite key, one side an expression of the outer row
    ("SELECT c.y, count(*), sum(f.v) FROM {f} f JOIN gd.cdup c ON f.k2 = c.a AND f.k % 3 = c.b "
     "GROUP BY c.y", 1, 1),
    # two depths of repeating keys
    ("SELECT t.tag, c.y, count(*), sum(f.v), avg(f.amt) FROM {f} f "
     "JOIN gd.tdup t ON f.t = t.t JOIN gd.cdup c ON f.k2 = c.a AND f.k % 3 = c.b "
     "GROUP BY t.tag, c.y", 2, 2),
    # three: the hot key's table too
    ("SELECT count(*), sum(f.v), sum(d.w + c.y), count(t.tag) FROM {f} f "
     "JOIN gd.dup d ON f.k = d.k JOIN gd.tdup t ON f.t = t.t "
     "JOIN gd.cdup c ON f.k2 = c.a AND d.w % 3 = c.b", 3, 3),
    # a depth keyed by a repeating depth's column, after a unique depth
    ("SELECT u.name, count(*), sum(c.y) FROM {f} f JOIN gd.uniq u ON f.k = u.k "
     "JOIN gd.tdup t ON f.t = t.t JOIN gd.cdup c ON c.a = t.x % 4 + 1 AND c.b = f.k2 % 3 "
     "GROUP BY u.name", 3, 2),
    # LEFT: rows without a match (NULL keys, 'nope') group under NULL, once each
    ("SELECT t.tag, count(*), count(t.x), sum(f.v) FROM {f} f LEFT JOIN gd.tdup t "
     "ON f.t = t.t GROUP BY t.tag", 1, 1),
    ("SELECT d.w, count(*), count(d.k), sum(f.v), avg(d.x) FROM {f} f LEFT JOIN gd.dup d "
     "ON f.k = d.k GROUP BY d.w", 1, 1),
    # LEFT without any match (the inner relation filtered empty): every row once
    ("SELECT t.tag, count(*), sum(f.v) FROM {f} f LEFT JOIN gd.tdup t "
     "ON f.t = t.t AND t.x < 0 GROUP BY t.tag", 1, 1),
    # LEFT, then an inner depth of repeating keys; a WHERE clause over the NULL side
    ("SELECT c.y, count(*), sum(f.v) FROM {f} f LEFT JOIN gd.tdup t ON f.t = t.t "
     "JOIN gd.cdup c ON f.k2 = c.a AND f.k % 3 = c.b WHERE t.x IS NULL OR t.x > 2 "
     "GROUP BY c.y", 2, 2),
]


@pytest.mark.parametrize("sql,depths,each", DUP)
def test_dup_arrow(sql, depths, each):
    joined(sql, depths, each)


@pytest.mark.parametrize("sql,depths,each", DUP)
def test_dup_heap(sql, depths, each):
    joined(sql, depths, each, settings=HEAP, fact="hfact")


def test_dup_empty_fact():
    no_pg_joins = ("SET enable_hashjoin = off", "SET enable_mergejoin = off",
                   "SET enable_nestloop = off")
    joined("SELECT d.w, count(*) FROM {f} f JOIN gd.dup d ON f.k = d.k GROUP BY d.w", 1, 1,
           settings=no_pg_joins, fact="empty")
    joined("SELECT count(*), sum(f.v) FROM {f} f LEFT JOIN gd.tdup t ON f.t = t.t", 1, 1,
           settings=no_pg_joins, fact="empty")


def test_dup_error_is_postgres_own():
    """A division by zero over an expanded row: PostgreSQL's error."""
    DB.same_error("SELECT d.w, sum(f.v / (d.k - d.k)) FROM gd.fact f JOIN gd.dup d "
                  "ON f.k = d.k GROUP BY d.w", NODE)


def test_unique_depths_keep_first_match():
    """A depth of a primary key probes its one row (no 'every match')."""
    joined("SELECT u.name, count(*) FROM {f} f JOIN gd.uniq u ON f.k = u.k GROUP BY u.name",
           1, 0)


def test_expansion_guard():
    """A join that PostgreSQL estimates to multiply the outer rows by 300
    stays in PostgreSQL, with the reason in EXPLAIN (VERBOSE).  (The
    estimate needs the Arrow table's statistics: without them PostgreSQL
    guesses 6 rows a row, and the engine joins it.)"""
    pg_psql("ANALYZE gd.fact")
    sql = ("SELECT w.z % 5, count(*) FROM gd.fact f JOIN gd.wide w ON f.k2 = w.k2 GROUP BY 1 "
           "ORDER BY 1")
    assert DB.result(sql, ON) == DB.result(sql, OFF)
    top = DB.plan(sql, ON)
    assert not find_nodes(top, NODE), show(top)
    out = DB.sql("EXPLAIN (VERBOSE) " + sql, ON)
    assert "not known to be unique and PostgreSQL estimates" in out, out


def test_dup_semi_stays_first_match():
    """EXISTS over repeating keys: a semi join, each outer row once."""
    joined("SELECT f.k2, count(*), sum(f.v) FROM {f} f WHERE EXISTS "
           "(SELECT 1 FROM gd.dup d WHERE d.k = f.k) GROUP BY f.k2", 1, 0)


UNIQUE_NO_INDEX = [
    # int4 keys of the hash form, an expression of the outer key; NULL keys both sides
    "SELECT n.name, count(*), sum(f.v), sum(n.x) FROM {f} f JOIN gd.nokey n "
    "ON f.k * 1000 = n.k GROUP BY n.name",
    # LEFT: the rows without a match (k > 60, NULL) once each, under NULL
    "SELECT n.name, count(*), count(n.x), sum(f.v) FROM {f} f LEFT JOIN gd.nokey n "
    "ON f.k * 1000 = n.k GROUP BY n.name",
    # text keys, with a join qual beyond them
    "SELECT t.tag, count(*), avg(f.amt) FROM {f} f JOIN gd.tnokey t ON f.t = t.t "
    "AND f.k2 > 1 GROUP BY t.tag",
    # two such depths
    "SELECT t.tag, n.name, count(*), sum(f.v) FROM {f} f JOIN gd.tnokey t ON f.t = t.t "
    "LEFT JOIN gd.nokey n ON f.k * 1000 = n.k GROUP BY t.tag, n.name",
]


@pytest.mark.parametrize("fact", ["fact", "hfact"])
@pytest.mark.parametrize("sql", UNIQUE_NO_INDEX)
def test_unique_keys_without_an_index(sql, fact):
    """No unique index, unique rows: every match is probed, and the built
    table says its keys are unique (the CPU engine's vectorised run)."""
    depths = 2 if sql.count("JOIN") == 2 else 1
    got = joined(sql, depths, depths, settings=HEAP if fact == "hfact" else (), fact=fact)
    assert all("every match (the keys are unique)" in v for v in got), got


def test_unique_claim_follows_the_rows():
    """A duplicate key inserted after a query kept the table: the next
    query's table is not unique, and the answer is still PostgreSQL's."""
    pg_psql("CREATE TABLE gd.nokey2 AS SELECT * FROM gd.nokey; ANALYZE gd.nokey2")
    sql = ("SELECT n.name, count(*), sum(n.x) FROM {f} f JOIN gd.nokey2 n ON f.k * 1000 = n.k "
           "GROUP BY n.name")
    try:
        got = joined(sql, 1, 1)
        assert "(the keys are unique)" in got[0], got
        pg_psql("INSERT INTO gd.nokey2 VALUES (5000, 'again', 99)")
        got = joined(sql, 1, 1)
        assert "every match" in got[0] and "(the keys are unique)" not in got[0], got
    finally:
        pg_psql("DROP TABLE gd.nokey2")
