"""GpuPreAgg over heap tables (src/engine/heap_source.c, shm_chunk.c; the
service's heap_chunk.c and xpu/xpu_heap.h) against PostgreSQL as the oracle.

Every grouping runs twice: with pg_warp on (the plan must be a GpuPreAgg that
the engine ran, not its PostgreSQL fallback, unless the test says otherwise)
and with `SET pg_warp.enabled = off`; the rows must be equal.  Float columns
hold multiples of 1/4 of small magnitude, so that their sums are exact in any
order and are compared exactly like everything else.

The module runs its own cluster (test_service.Cluster) with a small
shared_buffers, so that one table is larger than the buffer pool, and
because some tests kill the service or limit a backend's resources.
"""
import json
import os
import re
import subprocess
import time

import pytest

from engine_interrupt import (cancel_in_flight, in_flight, kill_service_mid_run, start_slow,
                              statement_timeout)
from pg_sql import OFF, Cluster, alive

# the engine plan whatever the costs: a heap run pays a serial scan's page and tuple
# costs, which a parallel plan divides among its workers
ON = ("SET pg_warp.engine_startup_cost = 0", "SET pg_warp.engine_row_cost = 0",
      "SET max_parallel_workers_per_gather = 0")
NODE = "GpuPreAgg"


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        c.sql("ALTER SYSTEM SET shared_buffers = '16MB'")
        c.restart()
        assert c.sql("SHOW shared_buffers") == "16MB"
        c.sql(TYPES_TABLE)
        yield c
    finally:
        c.destroy()


TYPES_TABLE = """
CREATE TABLE types AS
SELECT i AS id,
       CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 7 - 3)::int2 END AS i2,
       CASE WHEN i % 13 = 0 THEN NULL ELSE (i % 5) * 100000 - 200000 END AS i4,
       CASE WHEN i % 17 = 0 THEN NULL ELSE (i::int8 * 1000003) % 9999999967 END AS i8,
       CASE WHEN i % 19 = 0 THEN NULL ELSE ((i % 9 - 4) * 0.25)::float4 END AS f4,
       CASE WHEN i % 23 = 0 THEN NULL ELSE ((i % 41) * 0.75 - 7)::float8 END AS f8,
       CASE WHEN i % 29 = 0 THEN NULL ELSE ((i % 1000) - 500) / 100.0 END::numeric(12,2) AS n,
       CASE WHEN i % 31 = 0 THEN NULL ELSE 'k' || (i % 6) END AS t,
       CASE WHEN i % 37 = 0 THEN NULL ELSE repeat('é', i % 4) END::varchar(10) AS vc,
       CASE WHEN i % 43 = 0 THEN NULL ELSE date '2000-01-01' + (i % 9) * 400 - 1800 END AS d,
       CASE WHEN i % 47 = 0 THEN NULL
            ELSE timestamp '1999-12-31 23:59:59.5' + (i % 5) * interval '1000 days 1 us' END AS ts,
       CASE WHEN i % 53 = 0 THEN NULL
            ELSE timestamptz '2020-06-01 00:00:00+00' + (i % 4) * interval '7 hours' END AS tz,
       CASE WHEN i % 59 = 0 THEN NULL ELSE i % 3 = 0 END AS b,
       CASE WHEN i % 61 = 0 THEN NULL ELSE (i % 5) * interval '1 day 2 hours' END AS iv
FROM generate_series(1, 20000) i;
INSERT INTO types (id, d, ts) VALUES (0, 'infinity', '-infinity'), (-1, '-infinity', 'infinity');
"""


def run(cluster, sql, settings=()):
    r = cluster.run(sql, settings=settings, timeout=120)
    return (r.returncode, r.stdout.strip() if r.returncode == 0 else r.stderr)


def explain(cluster, sql, settings=()):
    r = cluster.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql,
                    settings=ON + tuple(settings), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def ran(cluster):
    """What EXPLAIN ANALYZE shows for a heap run the engine served: GPU on a
    service with a GPU (pg_warp.engine auto), else CPU."""
    return "Engine: GPU" if cluster.status()["engine"] == "gpu" else "Engine: CPU"


def same(cluster, sql, settings=(), engine=True):
    """sql gives PostgreSQL's rows, in order, through a GpuPreAgg that the
    engine ran (pg_sql.Db.same: on the engine the service has); with
    engine=False one that fell back (Db.falls_back).  Returns the rows."""
    if engine:
        return "\n".join(cluster.same(sql, NODE, settings, on=ON, ordered=True,
                                       engine=ran(cluster)[len("Engine: "):]))
    cluster.falls_back(sql, NODE, settings, on=ON)
    return run(cluster, sql, ON + tuple(settings))[1]


KEYS = ["i2", "i4", "i8", "f4", "f8", "n", "t", "vc", "d", "ts", "tz", "b"]


@pytest.mark.parametrize("key", KEYS)
def test_every_key_type(cluster, key):
    same(cluster, "SELECT %s, count(*), count(id), sum(i4), min(id), max(id) FROM types "
         "GROUP BY 1 ORDER BY 1" % key)


AGGS = [
    "count(*)", "count(i2)", "count(t)", "count(iv)",
    "sum(i2)", "sum(i4)", "sum(i8)", "sum(n)", "sum(f8)",
    "avg(i2)", "avg(i4)", "avg(i8)", "avg(n)", "avg(f4)", "avg(f8)",
    "min(i2)", "max(i2)", "min(i4)", "max(i4)", "min(i8)", "max(i8)",
    "min(f4)", "max(f4)", "min(f8)", "max(f8)", "min(n)", "max(n)",
    "min(d)", "max(d)", "min(ts)", "max(ts)", "min(tz)", "max(tz)",
]


def test_every_aggregate(cluster):
    sql = "SELECT t, b, %s FROM types GROUP BY t, b ORDER BY t, b" % ", ".join(AGGS)
    same(cluster, sql)
    # no GROUP BY: one row
    same(cluster, "SELECT %s FROM types" % ", ".join(AGGS))


def test_numeric_scales_and_edges(cluster):
    """numeric's on-disk digits (base 10000, short and long headers, negative
    weights) become 128-bit fixed point at the column's scale exactly; NaN and
    values of more than 38 digits fall back"""
    cluster.sql("CREATE TABLE nums (k int, a numeric(38,0), b numeric(30,10), c numeric(5,5), "
                "d numeric(12,2)); INSERT INTO nums VALUES "
                "(1, 99999999999999999999999999999999999999, 12345678901234567890.0123456789, "
                "0.99999, -0.01), (1, -99999999999999999999999999999999999999, -0.0000000001, "
                "-0.00001, 0), (2, 0, 0, 0, 9999999999.99), (2, 10000, 100000000.5, 0.1, -9999999999.99), "
                "(3, 1, 0.0001, 0.00010, 1e-2), (3, NULL, NULL, NULL, NULL), (4, 123456789, 1e19, 0.5, 1e9)")
    same(cluster, "SELECT k, count(*), sum(b), min(a), max(a), min(b), max(b), sum(c), "
         "avg(c), min(d), max(d), sum(d) FROM nums GROUP BY k ORDER BY k")
    same(cluster, "SELECT a, b, c, d, count(*) FROM nums GROUP BY a, b, c, d ORDER BY a, b, c, d")
    cluster.sql("CREATE TABLE nums_nan (k int, v numeric(10,2)); "
                "INSERT INTO nums_nan VALUES (1, 1.5), (2, 'NaN'), (1, 2.25)")
    plan = explain(cluster, "SELECT k, sum(v) FROM nums_nan GROUP BY k")
    assert "PostgreSQL (fallback)" in plan, plan
    same(cluster, "SELECT k, sum(v), max(v) FROM nums_nan GROUP BY k ORDER BY k", engine=False)
    # an unconstrained numeric has no scale: the grouping stays in PostgreSQL
    cluster.sql("CREATE TABLE nums_free (k int, v numeric); INSERT INTO nums_free VALUES (1, 1.5)")
    assert "GpuPreAgg" not in explain(cluster, "SELECT k, sum(v) FROM nums_free GROUP BY k")


def test_stays_in_postgresql(cluster):
    cluster.sql("CREATE TABLE part (a int, b int8) PARTITION BY RANGE (a); "
                "CREATE TABLE part1 PARTITION OF part FOR VALUES FROM (0) TO (100); "
                "CREATE TABLE inh_parent (a int, b int8); "
                "CREATE TABLE inh_child () INHERITS (inh_parent); "
                "INSERT INTO inh_parent SELECT i % 10, i FROM generate_series(1, 5000) i; "
                "ANALYZE inh_parent")
    for sql, settings in [
            # a partitioned table: a GpuPreAgg per partition (test_gpujoin_partition.py)
            # unless partition-wise GpuPreAgg is off
            ("SELECT a, count(*) FROM part GROUP BY a",
             ("SET pg_warp.enable_partitionwise_gpujoin = off",)),
            ("SELECT a, count(*) FROM inh_parent GROUP BY a", ()),
            ("SELECT i4, count(*) FROM types TABLESAMPLE SYSTEM (50) GROUP BY i4", ()),
            ("SELECT i4, count(*) FROM types GROUP BY i4", ("SET pg_warp.enable_gpupreagg = off",)),
            ("SELECT i4, count(*) FROM types GROUP BY i4", ("SET pg_warp.enabled = off",))]:
        r = cluster.run("EXPLAIN (COSTS OFF) " + sql, settings=ON + settings)
        assert r.returncode == 0 and "GpuPreAgg" not in r.stdout, (sql, r.stdout, r.stderr)
    assert "Aggregate States: partial" in explain(cluster, "SELECT a, count(*) FROM part "
                                                  "GROUP BY a")
    # ONLY the parent of an inheritance tree is a plain table
    assert "GpuPreAgg" in explain(cluster, "SELECT a, count(*) FROM ONLY inh_parent GROUP BY a")


def test_quals_and_expressions(cluster):
    same(cluster, "SELECT i2 + 1, count(*), sum(i8 % 1000) FROM types "
         "WHERE t LIKE 'k%' AND iv IS NOT NULL AND d < date '2001-01-01' "
         "GROUP BY 1 ORDER BY 1")
    same(cluster, "SELECT t, count(*) FROM types WHERE vc = 'éé' OR b GROUP BY t "
         "HAVING count(*) > 10 ORDER BY t")


def test_empty_and_one_row(cluster):
    cluster.sql("CREATE TABLE empty (a int, b int8); CREATE TABLE one (a int, b int8);"
                "INSERT INTO one VALUES (1, 42)")
    for t in ("empty", "one"):
        same(cluster, "SELECT a, count(*), sum(b) FROM %s GROUP BY a" % t)
        same(cluster, "SELECT count(*), sum(b), max(a) FROM %s" % t)
    # a table whose rows are all deleted: pages, no visible tuple
    cluster.sql("CREATE TABLE gone AS SELECT i AS a, i::int8 AS b "
                "FROM generate_series(1, 5000) i; DELETE FROM gone")
    assert same(cluster, "SELECT count(*), sum(b) FROM gone") == "0|"


def test_ring_wraps_with_small_chunks(cluster):
    # 2 pages per chunk: the 4-chunk ring is refilled many times
    rows = same(cluster, "SELECT t, count(*), sum(i8), min(n) FROM types GROUP BY t ORDER BY t",
                settings=("SET pg_warp.heap_chunk_pages = 2",))
    assert rows
    plan = explain(cluster, "SELECT count(*) FROM types", ("SET pg_warp.heap_chunk_pages = 2",))
    chunks = int(plan.split("Chunks: ")[1].split()[0])
    assert chunks > 20, plan


def test_larger_than_shared_buffers(cluster):
    # about 40 MB against 16 MB of shared_buffers (bulk-read strategy)
    make_big(cluster)
    assert int(cluster.sql("SELECT pg_relation_size('big')")) > 32 * 1024 * 1024
    same(cluster, "SELECT a % 10, count(*), sum(b), sum(c), max(b) FROM big GROUP BY 1 ORDER BY 1")


def make_big(cluster):
    cluster.sql("CREATE TABLE IF NOT EXISTS big AS SELECT i % 1000 AS a, i::int8 AS b, "
                "(i % 97)::float8 * 0.5 AS c FROM generate_series(1, 800000) i")


class Session:
    """A psql session kept open (stdin), for transactions that span tests steps."""

    def __init__(self, cluster):
        self.p = subprocess.Popen(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"],
                                  env=cluster.env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def send(self, sql):
        self.p.stdin.write(sql + "\n")
        self.p.stdin.flush()

    def close(self):
        out, err = self.p.communicate("\\q\n", timeout=30)
        assert self.p.returncode == 0, err
        return out


def test_many_groups_merged_by_partition(cluster):
    """200,000 groups: the service's workers' tables (one a thread) are
    merged by hash partition on as many threads, each group once, as for
    Arrow files (agg.c, merge_tables); the plan's Groups is the result's"""
    make_big(cluster)
    q = ("SELECT b % 200000, count(*), sum(c), min(b), max(a), avg(c) FROM big "
         "GROUP BY 1 ORDER BY 1")
    rows = same(cluster, q, settings=("SET pg_warp.heap_chunk_pages = 64",))
    assert len(rows.split("\n")) == 200000
    plan = explain(cluster, q, ("SET pg_warp.heap_chunk_pages = 64",))
    assert "Groups: 200000" in plan, plan


def test_deleted_and_updated_rows(cluster):
    cluster.sql("CREATE TABLE vis AS SELECT i AS id, i % 10 AS a, i::int8 AS b "
                "FROM generate_series(1, 30000) i")
    q = "SELECT a, count(*), sum(b), max(b) FROM vis GROUP BY a ORDER BY a"
    before = same(cluster, q)
    # uncommitted in another session: invisible to us
    s = Session(cluster)
    s.send("BEGIN; DELETE FROM vis WHERE id % 3 = 0; UPDATE vis SET b = b * 2 WHERE id % 5 = 0;"
           "INSERT INTO vis SELECT i, 99, 1 FROM generate_series(1, 100) i;")
    time.sleep(1)
    assert same(cluster, q) == before
    # aborted: still invisible
    s.send("ROLLBACK;")
    s.close()
    assert same(cluster, q) == before
    # committed: visible
    cluster.sql("DELETE FROM vis WHERE id % 3 = 0; UPDATE vis SET b = b * 2 WHERE id % 5 = 0;"
                "INSERT INTO vis SELECT i, 99, 1 FROM generate_series(1, 100) i")
    after = same(cluster, q)
    assert after != before and "99|100|100|1" in after


def test_modified_in_the_same_transaction(cluster):
    cluster.sql("CREATE TABLE own AS SELECT i AS id, i % 4 AS a, i::int8 AS b "
                "FROM generate_series(1, 10000) i")
    q = "SELECT a, count(*), sum(b) FROM own GROUP BY a ORDER BY a"
    script = ("BEGIN; DELETE FROM own WHERE id % 2 = 0; UPDATE own SET b = -b WHERE id % 3 = 0; "
              "INSERT INTO own VALUES (0, 7, 7); {}; {}; ROLLBACK;")
    r = cluster.run(script.format("EXPLAIN (ANALYZE, COSTS OFF) " + q, q), settings=ON)
    assert r.returncode == 0 and ran(cluster) in r.stdout, r.stdout + r.stderr
    on = r.stdout.strip().split("\n")[-3:]
    r = cluster.run(script.format("SELECT 1", q), settings=OFF)
    assert r.returncode == 0
    assert on == r.stdout.strip().split("\n")[-3:] and "7|1|7" in on, (on, r.stdout)


def test_concurrent_writer(cluster):
    """Transfers between rows keep sum(b) fixed; every engine run sees one
    snapshot, so it reads the same total while a writer commits meanwhile."""
    cluster.sql("CREATE TABLE bank AS SELECT i AS id, i % 8 AS a, 1000::int8 AS b "
                "FROM generate_series(1, 50000) i")
    writer = subprocess.Popen(
        ["bash", "-c", "for i in $(seq 1 150); do psql -XAtq -c \"BEGIN; "
         "UPDATE bank SET b = b - $i WHERE id = $(( (i * 7919) % 50000 + 1 )); "
         "UPDATE bank SET b = b + $i WHERE id = $(( (i * 104729) % 50000 + 1 )); COMMIT;\" "
         "|| exit 1; done"], env=cluster.env)
    try:
        seen = 0
        while writer.poll() is None or seen < 3:
            code, out = run(cluster, "SELECT count(*), sum(b) FROM bank", ON)
            assert (code, out) == (0, "50000|50000000"), out
            code, out = run(cluster, "SELECT a, count(*) FROM bank GROUP BY a ORDER BY a", ON)
            assert code == 0 and out.count("|6250") == 8, out
            seen += 1
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    assert "GpuPreAgg" in explain(cluster, "SELECT count(*), sum(b) FROM bank")


def test_toasted_and_compressed_keys(cluster):
    # compressible long values stay inline compressed; random long ones go to TOAST
    cluster.sql("CREATE TABLE toast AS SELECT i AS id, CASE "
                "WHEN i % 50 = 0 THEN repeat('abc', 3000) "
                "WHEN i % 77 = 0 THEN (SELECT string_agg(md5(random()::text || g), '') "
                "FROM generate_series(1, 100 + i % 3) g) "
                "ELSE 'short' || (i % 4) END AS t, i::int8 AS b FROM generate_series(1, 4000) i")
    q = "SELECT length(t), count(*), sum(b) FROM toast GROUP BY 1 ORDER BY 1"
    plan = explain(cluster, q)
    assert "PostgreSQL (fallback)" in plan and "compressed, external" in plan, plan
    same(cluster, q, engine=False)
    same(cluster, "SELECT t, count(*), sum(b) FROM toast GROUP BY t ORDER BY t", engine=False)
    # a query that does not read the long column runs in the engine
    same(cluster, "SELECT id % 5, count(*), sum(b) FROM toast GROUP BY 1 ORDER BY 1")
    # with only short values left visible, the engine decodes the text column
    cluster.sql("CREATE TABLE toast2 AS SELECT * FROM toast WHERE length(t) < 10")
    same(cluster, "SELECT t, count(*), sum(b) FROM toast2 GROUP BY t ORDER BY t")


def test_added_and_dropped_columns(cluster):
    cluster.sql("CREATE TABLE alt (a int, x text, b int8); "
                "INSERT INTO alt SELECT i % 5, repeat('z', i % 30), i FROM generate_series(1, 3000) i; "
                "ALTER TABLE alt ADD COLUMN c int DEFAULT 7, ADD COLUMN d text DEFAULT 'dflt', "
                "ADD COLUMN e numeric(10,3) DEFAULT 1.5, ADD COLUMN f int8; "
                "INSERT INTO alt SELECT i % 5, 'new', i, i % 3, 'd' || (i % 2), i / 7.0, i "
                "FROM generate_series(1, 500) i")
    q = "SELECT c, d, count(*), sum(b), sum(e), max(e), count(f), sum(f) FROM alt " \
        "GROUP BY c, d ORDER BY c, d"
    same(cluster, q)
    cluster.sql("ALTER TABLE alt DROP COLUMN x")
    same(cluster, q)
    same(cluster, "SELECT a, count(*), sum(b), sum(c) FROM alt GROUP BY a ORDER BY a")
    # a varlena column dropped before a fixed-width one: offsets still walk over it
    cluster.sql("ALTER TABLE alt DROP COLUMN d")
    same(cluster, "SELECT a, c, count(*), sum(b), max(e) FROM alt GROUP BY a, c ORDER BY a, c")


def test_non_superuser(cluster):
    cluster.sql("CREATE ROLE heap_reader LOGIN; CREATE ROLE heap_other LOGIN; "
                "GRANT SELECT ON types TO heap_reader")
    q = "SELECT t, count(*), sum(i8) FROM types GROUP BY t ORDER BY t"
    env = cluster.env
    try:
        cluster.env = dict(env, PGUSER="heap_reader")
        assert cluster.sql("SELECT current_user, usesuper FROM pg_user "
                           "WHERE usename = current_user") == "heap_reader|f"
        same(cluster, q)
        cluster.env = dict(env, PGUSER="heap_other")
        code, err = run(cluster, q, ON)
        assert code != 0 and "permission denied for table types" in err, err
    finally:
        cluster.env = env


def test_serializable_falls_back(cluster):
    q = "SELECT t, count(*) FROM types GROUP BY t ORDER BY t"
    r = cluster.run("BEGIN ISOLATION LEVEL SERIALIZABLE; EXPLAIN (ANALYZE, COSTS OFF) %s; %s; "
                    "COMMIT" % (q, q), settings=ON)
    assert r.returncode == 0 and "serializable" in r.stdout, r.stdout + r.stderr
    assert r.stdout.strip().endswith("\n" + run(cluster, q, OFF)[1]), r.stdout


def as_owner(cmd):
    """cmd run as the cluster's OS user (cluster.sh's), whose processes it may limit"""
    if os.geteuid() == 0:
        return ["runuser", "-u", os.environ.get("PG_WARP_OSUSER", "pgwarp"), "--"] + cmd
    return cmd


def test_memfd_cannot_be_created(cluster):
    """A backend whose file size limit is below the ring's size cannot make the
    memfd (ftruncate fails with EFBIG): the query runs in PostgreSQL and says why."""
    # a small table, its hint bits set and every buffer clean: the limited
    # backend has nothing to write (a write past the limit would fail too)
    cluster.sql("CREATE TABLE mf AS SELECT i % 10 AS a, i::int8 AS b "
                "FROM generate_series(1, 2000) i")
    cluster.sql("VACUUM mf")
    cluster.sql("CHECKPOINT")
    q = "SELECT a, count(*), sum(b) FROM mf GROUP BY a ORDER BY a"
    s = subprocess.Popen(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], env=cluster.env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    s.stdin.write("SELECT pg_backend_pid();\n")
    s.stdin.flush()
    pid = int(s.stdout.readline())
    subprocess.run(as_owner(["prlimit", "--pid", str(pid), "--fsize=65536:"]), check=True)
    s.stdin.write("SET pg_warp.engine_startup_cost = 0; SET pg_warp.engine_row_cost = 0;\n"
                  "EXPLAIN (ANALYZE, COSTS OFF) %s;\n%s;\n" % (q, q))
    s.stdin.flush()
    try:
        out, err = s.communicate("\\q\n", timeout=120)
    finally:
        if alive(pid):
            subprocess.run(as_owner(["prlimit", "--pid", str(pid), "--fsize=unlimited:"]),
                           check=False)
    assert s.returncode == 0, err
    assert "PostgreSQL (fallback)" in out and "shared memory ring" in out, out
    assert out.strip().endswith("\n" + run(cluster, q, OFF)[1]), out
    # the next session runs in the engine again
    same(cluster, q)


# a run of 3 M groups: long enough to interrupt on 2 cores
SLOW = ("SELECT count(*), sum(n) FROM (SELECT b, count(*) AS n FROM slow "
        "WHERE c NOT LIKE '%zz%' GROUP BY b) s")


def make_slow(cluster):
    cluster.sql("CREATE TABLE IF NOT EXISTS slow AS SELECT i % 1000 AS a, i::int8 AS b, "
                "(i % 1000)::text || 'abcdefghijklmnop' AS c FROM generate_series(1, 3000000) i")


def test_cancel(cluster):
    make_slow(cluster)
    assert "GpuPreAgg" in explain(cluster, "SELECT count(*) FROM slow")
    p = start_slow(cluster, "heap_cancel", ON, SLOW)
    cancel_in_flight(cluster, p, in_flight(cluster, "heap_cancel",
                                           "the heap run to start in the service"))
    same(cluster, "SELECT t, count(*) FROM types GROUP BY t ORDER BY t")


def test_statement_timeout(cluster):
    make_slow(cluster)
    statement_timeout(cluster, SLOW, ON, run_timeout=120)


def test_service_killed_mid_run(cluster):
    make_slow(cluster)
    kill_service_mid_run(cluster, "heap_kill", ON, SLOW, "the heap run to start in the service")
    same(cluster, "SELECT t, count(*), sum(i8) FROM types GROUP BY t ORDER BY t")


# ---------------- parallel heap runs (Finalize Aggregate over Gather over GpuPreAgg) ----------------
# The participants share one run in the service (gpu_preagg.c, GpaShared): the
# last one returns every engine participant's groups, merged, once.

def par(workers=2):
    """settings that make a parallel plan whatever the table's size, with the
    engine's costs at zero: the parallel GpuPreAgg is then the cheapest"""
    return ("SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
            "SET min_parallel_table_scan_size = 0", "SET pg_warp.engine_startup_cost = 0",
            "SET pg_warp.engine_row_cost = 0", "SET max_parallel_workers_per_gather = %d" % workers)


def explain_par(cluster, sql, settings=(), workers=2):
    r = cluster.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql,
                    settings=par(workers) + tuple(settings), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def same_par(cluster, sql, settings=(), workers=2, engine=True):
    """sql gives PostgreSQL's rows, in order, through a parallel GpuPreAgg
    (Finalize Aggregate over Gather over the node returning partial states),
    compared with PostgreSQL's own plan under the same settings (a parallel
    one too); with engine=True every participant ran the engine
    (pg_sql.Db.same), else one fell back (Db.falls_back).  Returns (rows,
    the text of EXPLAIN ANALYZE)."""
    on = par(workers)
    if engine:
        rows = "\n".join(cluster.same(sql, NODE, settings, on=on, off=on + OFF, ordered=True))
    else:
        cluster.falls_back(sql, NODE, settings, on=on, off=on + OFF)
        rows = run(cluster, sql, on + tuple(settings))[1]
    plan = explain_par(cluster, sql, settings, workers)
    assert "Parallel Custom Scan (GpuPreAgg)" in plan and "Aggregate States: partial" in plan, plan
    assert "Finalize" in plan and "Gather" in plan, plan
    if engine:
        # the participants' groups came back once, from the query's shared run
        assert "Shared Run Groups Returned By: " in plan, plan
    return rows, plan


PAR_AGGS = AGGS + [
    "stddev(i2)", "variance(i4)", "stddev_pop(i8)", "var_samp(n)", "stddev_samp(n)", "sum(f4)"]
# min/max of text: the GPU's group table has fixed-size states only, so a
# service with a GPU runs these on its CPU engine
TEXT_AGGS = ["min(t COLLATE \"C\")", "max(vc COLLATE \"C\")", "count(*)"]


@pytest.mark.parametrize("workers", [2, 4])
def test_parallel_every_aggregate(cluster, workers):
    """every aggregate's partial state (serialized where PostgreSQL's is
    internal) combines in PostgreSQL's Finalize Aggregate to its own result"""
    cluster.sql("CREATE TABLE IF NOT EXISTS ptypes AS SELECT * FROM types, generate_series(1, 5) g")
    rows, plan = same_par(cluster, "SELECT t, b, %s FROM ptypes GROUP BY t, b ORDER BY t, b"
                          % ", ".join(PAR_AGGS), workers=workers)
    assert ran(cluster) in plan, plan
    same_par(cluster, "SELECT %s FROM ptypes" % ", ".join(PAR_AGGS), workers=workers)
    rows, plan = same_par(cluster, "SELECT t, b, %s FROM ptypes GROUP BY t, b ORDER BY t, b"
                          % ", ".join(TEXT_AGGS), workers=workers)
    assert "Engine: CPU" in plan and "Engine: GPU" not in plan, plan
    same_par(cluster, "SELECT %s FROM ptypes" % ", ".join(TEXT_AGGS), workers=workers)
    # pg_warp's HyperLogLog sketches: the serialized sketch is the partial state
    same_par(cluster, "SELECT t, pgwarp.hll_count(i4), pgwarp.hll_count(t), pgwarp.hll_sketch(i8) "
             "FROM ptypes GROUP BY t ORDER BY t", workers=workers)
    # the float aggregates PostgreSQL combines with float8_combine: equal to 1e-9
    q = "SELECT t, avg(f8), stddev(f8), var_pop(f4), variance(f8) FROM ptypes GROUP BY t ORDER BY t"
    cluster.same(q, NODE, on=par(workers), off=par(workers) + OFF, ordered=True, rel_tol=1e-9)


def test_parallel_path_divides_the_engine_row_cost(cluster):
    """the parallel GpuPreAgg's startup cost: the engine's and the tuples'
    per-row costs divided among the participants as PostgreSQL divides a
    parallel scan's (costsize.c: the leader helps 1 - 0.3 x workers), the
    pages' cost not; so that with many workers the engine's cost does not
    keep the planner on PostgreSQL's parallel plan.  With direct reads
    (pg_warp.heap_direct_read, the default) the participants touch no
    tuple: no tuple cost."""
    cluster.sql("CREATE TABLE IF NOT EXISTS pcost AS SELECT g AS k, g % 7 AS v "
                "FROM generate_series(1, 200000) g")
    cluster.sql("ANALYZE pcost")
    tuples, pages = cluster.sql("SELECT reltuples::bigint || ' ' || relpages FROM pg_class "
                                "WHERE relname = 'pcost'").split()
    tuples, pages = float(tuples), float(pages)
    for workers, direct in ((1, "on"), (2, "on"), (4, "on"), (2, "off"), (4, "off")):
        r = cluster.run("EXPLAIN (FORMAT JSON) SELECT v, count(*), sum(k) FROM pcost GROUP BY v",
                        settings=("SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                                  "SET min_parallel_table_scan_size = 0",
                                  "SET pg_warp.engine_startup_cost = 0",
                                  "SET pg_warp.engine_row_cost = 0.001",
                                  "SET pg_warp.heap_direct_read = %s" % direct,
                                  "SET max_parallel_workers_per_gather = %d" % workers),
                        timeout=120)
        assert r.returncode == 0, r.stderr
        nodes, found, planned = [json.loads(r.stdout)[0]["Plan"]], None, None
        while nodes:
            n = nodes.pop()
            if n.get("Custom Plan Provider") == "GpuPreAgg" and n.get("Parallel Aware"):
                found = n
            planned = n.get("Workers Planned", planned)
            nodes.extend(n.get("Plans", []))
        assert found is not None, r.stdout
        # as many as asked, or fewer where the service reads the units (test_gpu_heap_workers)
        assert planned == workers or (direct == "on" and 0 < planned < workers), r.stdout
        divisor = planned + max(0.0, 1.0 - 0.3 * planned)
        want = tuples * 0.001 / divisor + pages * 1.0 + \
            (tuples * 0.01 / divisor if direct == "off" else 0)
        assert abs(found["Startup Cost"] - want) <= 0.01 + 1e-9 * want, (workers, found, want)


@pytest.mark.parametrize("key", KEYS)
def test_parallel_every_key_type(cluster, key):
    # Near-unique keys (i8, f8, ts, ...) make partial aggregation pointless in
    # the cost model once the table has statistics (autovacuum may ANALYZE it
    # at any time): PostgreSQL's own sort-based plan is then rightly cheaper.
    # The key's estimate is pinned to few groups, so that the plan is the
    # parallel GpuPreAgg whatever autovacuum did; the data (every edge value)
    # is unchanged.
    cluster.sql("ALTER TABLE types ALTER COLUMN %s SET (n_distinct = 100); ANALYZE types" % key)
    try:
        same_par(cluster, "SELECT %s, count(*), count(id), sum(i4), min(id), max(id) FROM types "
                 "GROUP BY 1 ORDER BY 1" % key, settings=("SET pg_warp.heap_chunk_pages = 8",))
    finally:
        cluster.sql("ALTER TABLE types ALTER COLUMN %s RESET (n_distinct); ANALYZE types" % key)


def test_parallel_quals_having_and_expressions(cluster):
    same_par(cluster, "SELECT i2 + 1, count(*), sum(i8 % 1000) FROM types "
             "WHERE t LIKE 'k%' AND iv IS NOT NULL AND d < date '2001-01-01' "
             "GROUP BY 1 ORDER BY 1")
    # HAVING is the Finalize Aggregate's, over the combined states
    rows, plan = same_par(cluster, "SELECT t, count(*), avg(i4) FROM types WHERE vc = 'éé' OR b "
                          "GROUP BY t HAVING count(*) > 1000 ORDER BY t")
    assert rows, plan


def test_parallel_empty_and_one_row(cluster):
    cluster.sql("CREATE TABLE IF NOT EXISTS empty (a int, b int8); "
                "CREATE TABLE IF NOT EXISTS one (a int, b int8); "
                "INSERT INTO one SELECT 1, 42 WHERE NOT EXISTS (SELECT FROM one)")
    for t in ("empty", "one"):
        same_par(cluster, "SELECT a, count(*), sum(b), avg(b) FROM %s GROUP BY a" % t)
        same_par(cluster, "SELECT count(*), sum(b), max(a), avg(a), stddev(b) FROM %s" % t)
    cluster.sql("CREATE TABLE IF NOT EXISTS pgone AS SELECT i AS a, i::int8 AS b "
                "FROM generate_series(1, 5000) i; DELETE FROM pgone")
    rows, _ = same_par(cluster, "SELECT count(*), sum(b), avg(b) FROM pgone")
    assert rows == "0||"


def planned_workers(cluster, sql, settings):
    """the workers EXPLAIN (no ANALYZE) plans for sql's parallel GpuPreAgg, or
    None when the plan has none"""
    r = cluster.run("EXPLAIN (COSTS OFF) " + sql, timeout=60,
                    settings=par(6) + ("SET pg_warp.enable_gpupreagg_heap = on",
                                       "SET pg_warp.heap_row_cost = 0") + tuple(settings))
    assert r.returncode == 0, r.stderr
    if "Parallel Custom Scan (%s)" % NODE not in r.stdout:
        return None
    return int(re.search(r"Workers Planned: (\d+)", r.stdout).group(1))


def test_gpu_heap_workers(cluster):
    """a GPU run whose service reads the table's units gets at most
    pg_warp.gpu_heap_workers workers (-1: a participant per eight CPUs of the
    service, less the leader, at least one; 0: no limit); where the backends
    read (heap_service_read off, no direct reads, a table of fewer than 16
    units) or the engine is the CPU's, PostgreSQL's count (the table's
    parallel_workers here).  Planned only:
    EXPLAIN without ANALYZE runs nothing, so a service without a GPU plans it
    too."""
    # 16 units (256 MiB) or more: a parallel plan's claims are whole units;
    # fillfactor 10 makes them of about 800,000 rows
    cluster.sql("CREATE TABLE gw (a int, b int8) WITH (fillfactor = 10, parallel_workers = 5); "
                "INSERT INTO gw SELECT i % 1000, i FROM generate_series(1, 800000) i; ANALYZE gw; "
                "CREATE TABLE gws (a int, b int8) WITH (parallel_workers = 5); "
                "INSERT INTO gws SELECT i % 1000, i FROM generate_series(1, 400000) i; ANALYZE gws")
    assert int(cluster.sql("SELECT pg_relation_size('gw') / 8192")) >= 16 * 2048
    q = "SELECT a % 10, count(*), sum(b) FROM gw GROUP BY 1"
    gpu = ("SET pg_warp.engine = gpu",)
    try:
        assert planned_workers(cluster, q, ("SET pg_warp.engine = cpu",)) == 5
        assert planned_workers(cluster, q, gpu + ("SET pg_warp.gpu_heap_workers = 2",)) == 2
        assert planned_workers(cluster, q, gpu + ("SET pg_warp.gpu_heap_workers = 9",)) == 5
        assert planned_workers(cluster, q, gpu + ("SET pg_warp.gpu_heap_workers = 0",)) == 5
        assert planned_workers(cluster, q, gpu + ("SET pg_warp.gpu_heap_workers = 1",)) == 1
        for backends_read in ("SET pg_warp.heap_service_read = off",
                              "SET pg_warp.heap_direct_read = off",
                              "SET pg_warp.heap_gpu_cache = off"):
            assert planned_workers(cluster, q, gpu + ("SET pg_warp.gpu_heap_workers = 2",
                                                      backends_read)) == 5, backends_read
        cpus = len(os.sched_getaffinity(0))
        assert planned_workers(cluster, q, gpu) == min(5, max(cpus // 8, 2) - 1), cpus
        # a smaller table is read by the backends (claims of block ranges): no limit
        assert planned_workers(cluster, q.replace("gw", "gws"),
                               gpu + ("SET pg_warp.gpu_heap_workers = 2",)) == 5
    finally:
        cluster.sql("DROP TABLE gw, gws")


def test_parallel_workers_claim_the_table(cluster):
    """each participant reads the block ranges it claims: with small ranges
    and several workers every page is shipped exactly once, whoever reads it"""
    make_big(cluster)
    q = "SELECT a % 10, count(*), sum(b), sum(c), max(b) FROM big GROUP BY 1 ORDER BY 1"
    rows, plan = same_par(cluster, q, workers=3, settings=("SET pg_warp.heap_chunk_pages = 64",))
    workers = [ln for ln in plan.split("\n") if "Worker " in ln and "Pages Shipped" in ln]
    assert workers and all(ran(cluster) in ln for ln in workers), plan
    pages = int(cluster.sql("SELECT pg_relation_size('big') / 8192"))
    # the workers' lines and the leader's own (the node's figures)
    shipped = sum(int(ln.split("Pages Shipped: ")[1].split()[0]) for ln in plan.split("\n")
                  if ln.strip().startswith("Pages Shipped:") or ln in workers)
    assert shipped == pages, (shipped, pages, plan)


def shared_groups(plan):
    """the groups the shared run returned, and each participant's own part's
    (a worker that claimed no block range, all taken before it started, has
    none and is left out)"""
    total = int(re.search(r"Shared Run Groups: (\d+)", plan).group(1))
    parts = [int(g) for ranges, g in
             re.findall(r"Engine: (?:CPU|GPU)  Block Ranges: (\d+)  .*  Groups: (\d+)", plan)
             if int(ranges) > 0]
    return total, parts


@pytest.mark.parametrize("workers", [1, 3])
def test_parallel_groups_come_back_once(cluster, workers):
    """Every participant meets (nearly) every group; the shared run merges
    their parts, so Gather passes each group once to Finalize Aggregate, not
    once per participant (9.2 M partial groups for 600,000 over SSB SF 20 on
    16 workers before)"""
    make_big(cluster)
    q = "SELECT a % 700, count(*), sum(b), min(c), max(b), avg(c) FROM big GROUP BY 1 ORDER BY 1"
    rows, plan = same_par(cluster, q, workers=workers, settings=("SET pg_warp.heap_chunk_pages = 64",))
    groups = len(rows.split("\n"))
    assert groups == 700
    gather = next(ln for ln in plan.split("\n") if "->  Gather " in ln)
    assert "actual rows=%d " % groups in gather, plan
    total, parts = shared_groups(plan)
    assert total == groups and parts and all(0 < p <= groups for p in parts), plan
    # several parts, each with most groups, merged into one set of groups
    if workers > 1:
        assert len(parts) > 1 and sum(parts) > groups, plan


def test_parallel_rescan(cluster):
    """A Gather over the parallel GpuPreAgg rescanned (a plain Finalize
    Aggregate in a SubPlan, rerun for each outer row): each rescan opens a
    new shared run (ReInitializeDSM) and its groups come back once; the
    last outer row equals the aggregate, so a rescan that lost or doubled
    its groups changes the answer"""
    make_big(cluster)
    v = int(cluster.sql("SELECT sum(b)::int8 / 1000000 FROM big WHERE a < 500"))
    q = ("SELECT g, g <> ALL (SELECT sum(b)::int8 / 1000000 FROM big WHERE a < 500) "
         "FROM generate_series(%d, %d) g ORDER BY g" % (v - 3, v))
    settings = ("SET enable_material = off", "SET pg_warp.heap_chunk_pages = 64")
    rows, plan = same_par(cluster, q, settings=settings)
    assert rows.split("\n")[-1] == "%d|f" % v, rows
    assert "Gather (actual rows=1 loops=4)" in plan and "Shared Run Groups: 1" in plan, plan


def test_parallel_leader_only(cluster):
    """no worker launched (max_parallel_workers = 0): the leader claims every
    range; and with the leader not participating, the workers do"""
    q = "SELECT t, count(*), sum(i8), avg(n) FROM types GROUP BY t ORDER BY t"
    rows, plan = same_par(cluster, q, settings=("SET max_parallel_workers = 0",))
    assert "Workers Launched: 0" in plan and ran(cluster) in plan, plan
    assert "Tuples Shipped: %s" % cluster.sql("SELECT count(*) FROM types") in plan, plan
    rows2, plan = same_par(cluster, q, settings=("SET parallel_leader_participation = off",))
    assert rows2 == rows and "Worker 0:  " + ran(cluster) in plan, plan


def test_parallel_fallback_in_one_participant(cluster):
    """A TOASTed value near the end of the table: the participant that meets
    it falls back and PostgreSQL aggregates exactly the ranges it had claimed
    (and those it claims next); the others' engine states stay: no row is
    lost or counted twice."""
    cluster.sql("CREATE TABLE ptoast AS SELECT i AS id, 'short' || (i % 4) AS t, i::int8 AS b "
                "FROM generate_series(1, 60000) i; "
                "INSERT INTO ptoast SELECT 0, (SELECT string_agg(md5(g::text), '') "
                "FROM generate_series(1, 300) g), 7")
    q = "SELECT length(t), count(*), sum(b), max(id) FROM ptoast GROUP BY 1 ORDER BY 1"
    for settings in [("SET pg_warp.heap_chunk_pages = 16",),
                     ("SET pg_warp.heap_chunk_pages = 16", "SET parallel_leader_participation = off"),
                     ("SET max_parallel_workers = 0",)]:
        rows, plan = same_par(cluster, q, settings=settings, engine=False)
        assert "PostgreSQL (fallback)" in plan, plan
        assert rows.split("\n")[-1] == "9600|1|7|0", rows
    # a NaN numeric: the same, with numeric states
    cluster.sql("CREATE TABLE pnan AS SELECT i % 3 AS k, (i / 4.0)::numeric(10,2) AS v "
                "FROM generate_series(1, 40000) i; INSERT INTO pnan VALUES (1, 'NaN')")
    rows, plan = same_par(cluster, "SELECT k, count(*), sum(v), avg(v), max(v) FROM pnan "
                          "GROUP BY k ORDER BY k", engine=False)
    assert "PostgreSQL (fallback)" in plan and "NaN" in rows, plan


def test_parallel_serializable(cluster):
    """SERIALIZABLE: every participant falls back (PostgreSQL's scans take the
    predicate locks); the results are PostgreSQL's"""
    q = "SELECT t, count(*), sum(i4) FROM types GROUP BY t ORDER BY t"
    r = cluster.run("BEGIN ISOLATION LEVEL SERIALIZABLE; EXPLAIN (ANALYZE, COSTS OFF) %s; %s; "
                    "COMMIT" % (q, q), settings=par(2))
    assert r.returncode == 0 and "serializable" in r.stdout, r.stdout + r.stderr
    assert "Parallel Custom Scan (GpuPreAgg)" in r.stdout, r.stdout
    assert "Engine: CPU" not in r.stdout and "Engine: GPU" not in r.stdout, r.stdout
    assert r.stdout.strip().endswith("\n" + run(cluster, q, OFF)[1]), r.stdout


def test_parallel_visibility(cluster):
    """workers decide visibility with the parallel query's shared snapshot:
    another session's uncommitted and aborted changes are invisible, our own
    transaction's are visible, as in PostgreSQL's parallel plan"""
    cluster.sql("CREATE TABLE pvis AS SELECT i AS id, i % 10 AS a, i::int8 AS b "
                "FROM generate_series(1, 60000) i")
    q = "SELECT a, count(*), sum(b), max(b) FROM pvis GROUP BY a ORDER BY a"
    before, _ = same_par(cluster, q)
    s = Session(cluster)
    s.send("BEGIN; DELETE FROM pvis WHERE id % 3 = 0; UPDATE pvis SET b = b * 2 WHERE id % 5 = 0;"
           "INSERT INTO pvis SELECT i, 99, 1 FROM generate_series(1, 100) i;")
    time.sleep(1)
    assert same_par(cluster, q)[0] == before
    s.send("ROLLBACK;")
    s.close()
    assert same_par(cluster, q)[0] == before
    cluster.sql("DELETE FROM pvis WHERE id % 3 = 0; UPDATE pvis SET b = b * 2 WHERE id % 5 = 0;"
                "INSERT INTO pvis SELECT i, 99, 1 FROM generate_series(1, 100) i")
    after, _ = same_par(cluster, q)
    assert after != before and "99|100|100|1" in after
    # our own uncommitted changes, seen by the workers too
    script = ("BEGIN; DELETE FROM pvis WHERE id % 2 = 0; INSERT INTO pvis VALUES (0, 7, 7); "
              "{}; {}; ROLLBACK;")
    r = cluster.run(script.format("EXPLAIN (ANALYZE, COSTS OFF) " + q, q), settings=par(2))
    assert r.returncode == 0 and "Parallel Custom Scan (GpuPreAgg)" in r.stdout, r.stderr
    assert "fallback" not in r.stdout, r.stdout
    on = r.stdout.strip().split("\n")
    r = cluster.run(script.format("SELECT 1", q), settings=OFF)
    off = r.stdout.strip().split("\n")[1:]
    assert r.returncode == 0 and on[-len(off):] == off and off[3].startswith("7|4001|"), (on, off)


def test_parallel_concurrent_writer(cluster):
    """transfers keep sum(b) fixed: every participant reads with one snapshot"""
    cluster.sql("CREATE TABLE pbank AS SELECT i AS id, i % 8 AS a, 1000::int8 AS b "
                "FROM generate_series(1, 80000) i")
    assert "Parallel Custom Scan (GpuPreAgg)" in explain_par(cluster, "SELECT sum(b) FROM pbank")
    writer = subprocess.Popen(
        ["bash", "-c", "for i in $(seq 1 150); do psql -XAtq -c \"BEGIN; "
         "UPDATE pbank SET b = b - $i WHERE id = $(( (i * 7919) % 80000 + 1 )); "
         "UPDATE pbank SET b = b + $i WHERE id = $(( (i * 104729) % 80000 + 1 )); COMMIT;\" "
         "|| exit 1; done"], env=cluster.env)
    try:
        seen = 0
        while writer.poll() is None or seen < 3:
            code, out = run(cluster, "SELECT count(*), sum(b) FROM pbank",
                            par(2) + ("SET pg_warp.heap_chunk_pages = 8",))
            assert (code, out) == (0, "80000|80000000"), out
            code, out = run(cluster, "SELECT a, count(*) FROM pbank GROUP BY a ORDER BY a", par(3))
            assert code == 0 and out.count("|10000") == 8, out
            seen += 1
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0


def test_parallel_cancel_and_timeout(cluster):
    make_slow(cluster)
    assert "Parallel Custom Scan (GpuPreAgg)" in explain_par(cluster, "SELECT count(*) FROM slow")
    p = start_slow(cluster, "heap_pcancel", ON + par(2), SLOW)
    cancel_in_flight(cluster, p, in_flight(cluster, "heap_pcancel",
                                           "the heap runs to start in the service"))
    # the timeout a quarter of a second full run: the first one after the
    # cancelled run sets the new table's hint bits and may take 4x as long
    statement_timeout(cluster, SLOW, par(2), run_timeout=120)
    same_par(cluster, "SELECT t, count(*) FROM types GROUP BY t ORDER BY t")


def test_parallel_service_killed_mid_run(cluster):
    make_slow(cluster)
    kill_service_mid_run(cluster, "heap_pkill", ON + par(2), SLOW,
                         "the heap runs to start in the service")
    same_par(cluster, "SELECT t, count(*), sum(i8) FROM types GROUP BY t ORDER BY t")


def test_parallel_admission(cluster):
    """pg_warp.max_async_tasks = 1: the participants' runs are admitted one
    after another (N workers are N runs) and the query completes"""
    cluster.sql("ALTER SYSTEM SET pg_warp.max_async_tasks = 1")
    try:
        cluster.restart()
        assert cluster.sql("SELECT max_async_tasks FROM pgwarp.service_status()") == "1"
        make_big(cluster)
        rows, plan = same_par(cluster, "SELECT a % 7, count(*), sum(b) FROM big GROUP BY 1 ORDER BY 1",
                              workers=3, settings=("SET pg_warp.heap_chunk_pages = 64",))
        assert plan.count(ran(cluster)) >= 2, plan
    finally:
        cluster.sql("ALTER SYSTEM RESET pg_warp.max_async_tasks")
        cluster.restart()


def test_parallel_leader_falls_back_workers_do_not(cluster):
    """The leader cannot make its ring (a file size limit on its process
    only): it aggregates the ranges it claims in PostgreSQL while the workers
    run the engine over theirs; the result is PostgreSQL's."""
    make_big(cluster)
    cluster.sql("VACUUM big")
    cluster.sql("CHECKPOINT")
    q = "SELECT a % 10, count(*), sum(b), sum(c), max(b) FROM big GROUP BY 1 ORDER BY 1"
    s = subprocess.Popen(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], env=cluster.env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    s.stdin.write("SELECT pg_backend_pid();\n")
    s.stdin.flush()
    pid = int(s.stdout.readline())
    # room for the parallel query's dynamic shared memory, not for a 128 MB ring
    subprocess.run(as_owner(["prlimit", "--pid", str(pid), "--fsize=4194304:"]), check=True)
    s.stdin.write("".join(x + ";\n" for x in par(2) + ("SET pg_warp.heap_chunk_pages = 4096",)) +
                  "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) %s;\n%s;\n" % (q, q))
    s.stdin.flush()
    try:
        out, err = s.communicate("\\q\n", timeout=120)
    finally:
        if alive(pid):
            subprocess.run(as_owner(["prlimit", "--pid", str(pid), "--fsize=unlimited:"]),
                           check=False)
    assert s.returncode == 0, err
    assert "Parallel Custom Scan (GpuPreAgg)" in out, out
    assert "PostgreSQL (fallback)" in out and "shared memory ring" in out, out
    assert "  %s  Block Ranges: " % ran(cluster) in out, out     # a worker's engine run
    assert out.strip().endswith("\n" + run(cluster, q, par(2) + OFF)[1]), out


def test_engine_gpu(cluster):
    """pg_warp.engine = gpu: a heap run on the GPU, with PostgreSQL's rows; on a
    service without a GPU the query fails with a clear error, as over Arrow"""
    q = "SELECT t, count(*), sum(i8), min(i2), max(f8) FROM types GROUP BY t ORDER BY t"
    gpu = ("SET pg_warp.engine = gpu",)
    if cluster.status()["engine"] == "gpu":
        plan = explain(cluster, q, gpu)
        assert "Engine: GPU" in plan and "fallback" not in plan, plan
        assert run(cluster, q, ON + gpu) == run(cluster, q, OFF)
    else:
        code, err = run(cluster, q, ON + gpu)
        assert code != 0 and "GPU" in err, err
