"""GpuPreAgg's text keys through the CPU engine's few-values shortcut
(src/xpu/xpu_agg_dict.h: a text's number in a small per-column dictionary
names its group; packed texts, those of an Arrow column without NULLs, in one
loop) against PostgreSQL as the oracle, as test_gpupreagg.py checks: the
engine ran (EXPLAIN ANALYZE) and its rows equal PostgreSQL's with pg_warp off.

The table has record batches of 4096 rows (the service's slices; the table's
blocks of 256 rows are many per slice): text columns of few values with and
without NULLs ('' beside NULL, 16 bytes, the longest the shortcut takes, and
multibyte UTF-8), one where a text longer than 16 bytes comes now and then
(its blocks take the hash probe), and one whose values grow past the
shortcut's 255 in the middle of a batch (it gives up for the rest of the
run); keys in pairs, alone, beside an integer, under a filter (rows that do
not pass inside a block), with COLLATE "C" (deterministic) and under a
nondeterministic collation (stays in PostgreSQL).

Runs against the cluster that scripts/test.sh starts (pg_warp preloaded, so
the service runs; without a GPU it runs the CPU engine).
"""
import os
import random
import shutil
import tempfile

import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import DB, ON
from pg_sql import psql as pg_psql

N = 40000
BATCH = 4096
NODE = "GpuPreAgg"

FEW = ["TRUCK", "AIR", "REG AIR", "MAIL", "FOB", "RAIL", "SHIP", "", "sixteen-bytes-16",
       "é", "日本"]
PRIOS = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"]
LONG = ["seventeen-bytes-1", "a text of forty bytes, longer than 16...."]


def text_table(n, seed):
    rnd = random.Random(seed)

    def few(vals, null_frac):
        return [None if rnd.random() < null_frac else rnd.choice(vals) for _ in range(n)]

    s3 = [rnd.choice(LONG) if i % 2999 == 17 else rnd.choice(PRIOS) for i in range(n)]
    # few values, then from row 22222 (inside a batch) 600 distinct ones
    s4 = [None if i % 101 == 0 else
          rnd.choice(FEW) if i < 22222 else "v%03d" % rnd.randrange(600) for i in range(n)]
    return pa.table({
        "s1": pa.array(few(FEW, 0.05), pa.string()),
        "s2": pa.array(few(PRIOS, 0.0), pa.string()),
        "s3": pa.array(s3, pa.string()),
        "s4": pa.array(s4, pa.string()),
        "k": pa.array([rnd.randrange(7) for _ in range(n)], pa.int32()),
    })


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_gtk.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "tk.arrow"), text_table(N, 7), BATCH)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp; DROP SCHEMA IF EXISTS gtk CASCADE; "
            "CREATE SCHEMA gtk; CREATE FOREIGN TABLE gtk.tk (s1 text, s2 text, s3 text, "
            "s4 text, k int4) SERVER arrow_fdw OPTIONS (file '%s/tk.arrow')" % d)
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gtk CASCADE")
    shutil.rmtree(d, ignore_errors=True)


GROUPINGS = [
    "s1, s2",             # NULLs and '' in one key, packed texts in the other
    "s2, s1",
    "s1",                 # one key
    "s2",
    "s2, s3",             # texts longer than 16 bytes now and then
    "s3, s2",
    "s4, s2",             # values past the shortcut in the middle of a batch
    "s2, s4",
    "s1, k",              # a text beside an integer
    "k, s2",
    "s1 COLLATE \"C\", s2",
]


@pytest.mark.parametrize("keys", GROUPINGS)
def test_text_keys(keys):
    ordinals = ", ".join(str(i + 1) for i in range(keys.count(",") + 1))
    rows = DB.same("SELECT %s, count(*), count(s1), sum(k) FROM gtk.tk GROUP BY %s"
                   % (keys, ordinals), NODE)
    assert len(rows) > 1


@pytest.mark.parametrize("keys", ["s1, s2", "s3, s2", "s4, s2", "s2"])
def test_text_keys_filtered(keys):
    """rows that do not pass inside a block: the shortcut's row list"""
    DB.same("SELECT %s, count(*), min(k) FROM gtk.tk WHERE k %% 3 <> 1 GROUP BY %s"
            % (keys, keys), NODE)


def test_empty_text_is_not_null():
    rows = DB.same("SELECT s1 IS NULL, s1 = '', count(*) FROM gtk.tk "
                   "WHERE s1 IS NULL OR s1 = '' GROUP BY s1", NODE)
    assert len(rows) == 2, rows


def test_nondeterministic_collation_stays_in_postgresql():
    pg_psql("CREATE COLLATION gtk.nd (provider = icu, locale = 'und-u-ks-level2', "
            "deterministic = false)")
    DB.not_planned("SELECT s1 COLLATE gtk.nd, count(*) FROM gtk.tk GROUP BY 1", NODE, ON)
