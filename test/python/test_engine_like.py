"""LIKE / ILIKE of any pattern, date_trunc() of dates, and EXPLAIN (VERBOSE)'s
reason why a query stays in PostgreSQL (issue 27, items 9 and 10).

The oracle rule: every clause runs with pg_warp.enabled on and off over an
Arrow table and a heap table of edge values (NULLs, empty strings, multibyte
UTF-8, '%', '_' and '\\' in the data; dates up to past the timestamp range
and the infinities); rows or errors must be equal, and EXPLAIN must show the
engine's program (LIKE_MATCH, ILIKE_MATCH, DATE_TRUNC_TSTZ) so that a silent
fallback cannot pass.

Runs against the cluster that scripts/test.sh starts.
"""
import datetime
import os
import shutil
import tempfile

import pyarrow as pa
import pytest

from engine_edge import psql, write
from pg_sql import DB, FILTER, unequal

TEXTS = ["cat_1x", "cat11", "CAT_1", "cat_1", "é_x", "", "a%b", "a_b", "a\\b", None, "日本語",
         "abcabc", "Abc", "xé日🙂y", "%", "_", "\\", "ab\\", "aBc_d", "ÉA", "cat_1%"]
DATES = [datetime.date(2000, 1, 1), None, datetime.date(2024, 2, 29), datetime.date(1, 1, 1),
         datetime.date(9999, 12, 31), datetime.date(1999, 12, 31), 106751991, 106762940,
         2147483494 - 2440588 - 1, -2**31, 2**31 - 1, datetime.date(1970, 1, 1),
         -2440588 - 1 + 1]


def days(x):
    """arrow_fdw reads date32 as days since 1970: past 9999 only as numbers"""
    if x is None or isinstance(x, int):
        return x
    return (x - datetime.date(1970, 1, 1)).days


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_like.")
    os.chmod(d, 0o755)
    n = 3000
    t = pa.table({
        "id": pa.array(range(n), pa.int32()),
        "t": pa.array([TEXTS[i % len(TEXTS)] for i in range(n)], pa.utf8()),
        "d": pa.array([days(DATES[(i * 7) % len(DATES)]) for i in range(n)], pa.date32()),
    })
    path = os.path.join(d, "like.arrow")
    write(path, t)
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS englike CASCADE; CREATE SCHEMA englike")
    psql("CREATE FOREIGN TABLE englike.a (id int4, t text, d date) SERVER arrow_fdw "
         "OPTIONS (file '%s')" % path)
    # the heap table: the same rows, less the dates PostgreSQL does not store
    psql("CREATE TABLE englike.h AS SELECT id, t, CASE WHEN d BETWEEN '4713-11-24 BC' AND "
         "'5874897-12-31' OR NOT isfinite(d) THEN d END AS d FROM englike.a; "
         "INSERT INTO englike.h SELECT id + 3000, t, d FROM englike.h; ANALYZE englike.h")
    DB.create_run_function("englike", [("pg_warp.engine_startup_cost", "0")])
    yield
    psql("DROP SCHEMA IF EXISTS englike CASCADE")
    shutil.rmtree(d, ignore_errors=True)


PATTERNS = [
    "t LIKE 'cat_1%'", "t LIKE 'cat_1'", "t LIKE '_'", "t LIKE '__'", "t LIKE '%_'",
    "t LIKE '_%'", "t LIKE '%%'", "t LIKE '%%_%%'", "t LIKE 'a%b'", "t LIKE '%b%c%'",
    "t LIKE 'a\\%b'", "t LIKE 'a\\_b'", "t LIKE '%\\\\'", "t LIKE '%\\\\%'", "t LIKE 'é\\_%'",
    "t LIKE '%日_語'", "t LIKE 'x_日%y'", "t LIKE 'x%🙂_'", "t LIKE '%'", "t LIKE ''",
    "t NOT LIKE 'cat_1%'", "t !~~ '%_c%'", "t ~~ 'c%1'", "t LIKE 'a#_b' ESCAPE '#'",
    "t LIKE 'a_b' ESCAPE ''", "t LIKE 'ab\\' ESCAPE '#'", "t LIKE 'cat_1#%' ESCAPE '#'",
    "t ILIKE 'cat_1%'", "t ILIKE 'CAT%'", "t ILIKE '%C_'", "t NOT ILIKE 'abc%'",
    "t ~~* '%É%'", "t !~~* 'a%B%'", "t ILIKE 'éa'", "t ILIKE 'a\\%B'", "t ILIKE '%'",
    "t ILIKE 'A_C\\_%' ", "t ILIKE 'cat_1' COLLATE \"C\"", "t ILIKE 'x%Y' COLLATE \"POSIX\"",
    "t LIKE 'cat_1%' COLLATE \"und-x-icu\"", "(t LIKE 'a_%') IS NULL",
    "CASE WHEN t LIKE '%b' THEN t ILIKE 'A%' END",
]
# stays in PostgreSQL: the pattern ends in an escape (22025 only where a
# match reaches it), ILIKE in a collation whose case folding is not C's
STAYS = ["t LIKE 'cat\\'", "t LIKE 'a%\\'", "t ILIKE 'ab\\'",
         "t ILIKE 'cat%' COLLATE \"und-x-icu\""]
ZONES = ["UTC", "Etc/GMT+5", "Asia/Kolkata", "America/New_York", "+05:30", "-11"]
FIXED_ZONES = ["UTC", "Etc/GMT+5", "+05:30", "-11"]
UNITS = ["day", "week", "month", "quarter", "year", "decade", "century", "millennium",
         "hour", "microseconds"]


# the engine nodes that may evaluate a pattern: GpuPreAgg (count), the filter
# or GpuScan (the rows)
ENGINE_NODES = ("GpuPreAgg", "GpuScan", FILTER)


def run(queries, settings="", node=ENGINE_NODES):
    """DB.compare of the queries; node: the engine nodes that must have run."""
    return DB.compare("englike", queries, settings, node=node)


def plan(sql, settings="SET pg_warp.engine_startup_cost = 0; "):
    return psql(settings + "EXPLAIN (VERBOSE, COSTS OFF) " + sql)


@pytest.mark.parametrize("table", ["a", "h"])
def test_like_equal_postgresql(table):
    """Rows where each pattern holds (GpuPreAgg and the engine filter) and
    the count (GpuPreAgg), engine on and off."""
    rows = "SELECT string_agg(id::text, ',' ORDER BY id) FROM englike.%s WHERE %%s" % table
    count = "SELECT count(*) FROM englike.%s WHERE %%s" % table
    # the rows of the heap table come from PostgreSQL's scan (GpuScan over heap
    # is off by default)
    for q, node in ((rows, ENGINE_NODES if table == "a" else None), (count, "GpuPreAgg")):
        bad = unequal(run([q % c for c in PATTERNS], node=node))
        assert not bad, "\n".join(bad)
    bad = unequal(run([q % c for c in STAYS for q in (rows, count)], node=None))
    assert not bad, "\n".join(bad)


def test_like_grouped_by_match():
    """A LIKE as a group key (GpuPreAgg's projection, not only its filter)."""
    qs = ["SELECT string_agg(k::text || ':' || n, ',' ORDER BY k) FROM (SELECT %s AS k, "
          "count(*) AS n FROM englike.%s GROUP BY 1) s" % (c, tb)
          for c in ("t LIKE 'cat_1%'", "t ILIKE '%b_'", "t NOT LIKE '%\\_%'") for tb in "ah"]
    bad = unequal(run(qs, node="GpuPreAgg"))
    assert not bad, "\n".join(bad)


def test_like_runs_in_engine():
    """The patterns compile: the program matches them (no silent fallback)."""
    for c in PATTERNS:
        p = plan("SELECT count(*) FROM englike.h WHERE " + c)
        assert "GpuPreAgg" in p and "Engine Program:" in p, (c, p)
        assert "LIKE" in p.split("Engine Program:")[1], (c, p)
    for c, op in (("t LIKE 'cat_1%'", "[LIKE_MATCH]"), ("t ILIKE 'cat%'", "[ILIKE_MATCH]"),
                  ("t LIKE 'a#_b' ESCAPE '#'", "[LIKE_EXACT]"),
                  ("t LIKE '%b%c%'", "[LIKE_MATCH]")):
        p = plan("SELECT count(*) FROM englike.a WHERE " + c)
        assert op in p, (c, p)


def test_like_stays_in_postgresql_and_says_why():
    # (patterns that no value reaches the escape of: PostgreSQL's own
    # estimate runs them on the column's statistics)
    for c, why in (("t LIKE 'zz\\'", "ends with the escape character"),
                   ("t LIKE 'zz%\\'", "ends with the escape character"),
                   ("t ILIKE 'zz_\\'", "ends with the escape character"),
                   (STAYS[3], "ILIKE in collation \"und-x-icu\"")):
        p = plan("SELECT count(*) FROM englike.h WHERE " + c)
        assert "Engine Program:" not in p, (c, p)
        line = [ln for ln in p.split("\n") if ln.startswith("pg_warp: ")]
        assert len(line) == 1 and why in line[0], (c, p)
    # the error PostgreSQL raises where a match reaches the escape
    res = run(["SELECT count(*) FROM englike.h WHERE t LIKE 'cat_1\\'"])
    assert res[0][1] == res[0][2] and res[0][1].startswith("error 22025"), res


def test_date_trunc_equal_postgresql():
    """date_trunc(unit, date) (PostgreSQL: of the date as timestamptz) in
    zones of a fixed offset (compiled) and with DST (PostgreSQL's), as a
    group key and in a filter, with dates past the timestamp range (22008)."""
    bad = []
    for z in ZONES:
        qs = ["SELECT string_agg(k::text || '=' || n, ',' ORDER BY k) FROM "
              "(SELECT date_trunc('%s', d) AS k, count(*) AS n FROM englike.%s "
              "WHERE d < '294270-01-01' OR d IS NULL GROUP BY 1) s" % (u, tb)
              for u in UNITS for tb in "ah"]
        qs.append("SELECT count(*) FROM englike.a WHERE date_trunc('month', d) > '2000-01-01'")
        # the engine's in zones of a fixed offset only
        bad += unequal(run(qs, "SET timezone = '%s'; " % z,
                           node=ENGINE_NODES if z in FIXED_ZONES else None))
        bad += unequal(run(["SELECT max(d::timestamptz) FROM englike.h WHERE d < '9999-01-01'"],
                           "SET timezone = '%s'; " % z, node=None))
    assert not bad, "\n".join(bad)
    # dates past the timestamp range: PostgreSQL's error, engine on and off
    res = run(["SELECT count(*) FROM englike.a WHERE date_trunc('month', d) > '2000-01-01'"],
              "SET timezone = 'Etc/GMT+5'; ")
    assert res[0][1] == res[0][2] and res[0][1].startswith("error 22008"), res


def test_date_trunc_compiles_in_fixed_zones_only():
    q = "SELECT date_trunc('month', d), count(*) FROM englike.h GROUP BY 1"
    for z in ("UTC", "Etc/GMT+5", "+05:30"):
        p = plan(q, "SET pg_warp.engine_startup_cost = 0; SET timezone = '%s'; " % z)
        assert "[DATE_TRUNC_TSTZ]" in p and "[DATE_TO_TSTZ]" in p, (z, p)
    p = plan(q, "SET pg_warp.engine_startup_cost = 0; SET timezone = 'America/New_York'; ")
    assert "Custom Scan (GpuPreAgg)" not in p, p
    assert "pg_warp: GpuPreAgg: " in p and "\"America/New_York\" changes its UTC offset" in p, p


def test_explain_says_why():
    """EXPLAIN (VERBOSE) names what kept the query in PostgreSQL: an
    expression and why, a join below the grouping, a setting, the cost;
    in every format; plain EXPLAIN says nothing."""
    p = plan("SELECT count(*) FROM englike.h WHERE t ~ 'x'")
    assert "pg_warp: GpuPreAgg: (t ~ 'x'::text): function" in p, p
    # (a join by equal keys runs in the engine: GpuJoin; one by an inequality does not)
    p = plan("SELECT count(*) FROM englike.h a JOIN englike.h b ON a.id < b.id")
    assert "pg_warp: GpuPreAgg: the grouping reads a join of 2 relations" in p, p
    p = plan("SELECT count(*) FROM englike.h", "SET pg_warp.enabled = off; ")
    assert p.rstrip().endswith("pg_warp: pg_warp.enabled is off"), p
    p = plan("SELECT count(*) FROM englike.h", "SET pg_warp.enable_gpupreagg = off; ")
    assert "pg_warp: pg_warp.enable_gpupreagg is off" in p, p
    p = plan("SELECT count(*) FROM englike.h WHERE id < 3",
             "SET pg_warp.engine_startup_cost = 1e9; ")
    assert "pg_warp: GpuPreAgg: the cost estimate chose PostgreSQL's plan" in p, p
    p = psql("SET pg_warp.engine_startup_cost = 0; EXPLAIN (COSTS OFF) "
             "SELECT count(*) FROM englike.h WHERE t ~ 'x'")
    assert "pg_warp:" not in p, p
    p = psql("SET pg_warp.engine_startup_cost = 0; EXPLAIN (VERBOSE, COSTS OFF, FORMAT JSON) "
             "SELECT count(*) FROM englike.h WHERE t ~ 'x'")
    import json
    doc = json.loads(p)
    assert "GpuPreAgg: (t ~ 'x'::text)" in doc[0]["pg_warp"], p
    for fmt in ("XML", "YAML"):
        p = psql("SET pg_warp.engine_startup_cost = 0; EXPLAIN (VERBOSE, COSTS OFF, FORMAT %s) "
                 "SELECT count(*) FROM englike.h WHERE t ~ 'x'" % fmt)
        assert "pg_warp" in p and "function" in p, p


def test_explain_not_in_engine_on_the_node():
    """A GpuScan that keeps a qual in PostgreSQL names it on the node."""
    p = plan("SELECT id FROM englike.a WHERE id > 5 AND t ~ 'x'")
    assert "GpuScan" in p or "Engine Filter" in p, p
    assert "Not in engine: GpuScan: (t ~ 'x'::text): function" in p, p
