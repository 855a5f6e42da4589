"""Direct reads of heap pages (src/engine/heap_source.c, pg_warp.heap_direct_read):
blocks that the visibility map marks all-visible and that are not in shared
buffers are read from the table's files without the buffer manager.

PostgreSQL is the oracle: each query runs with pg_warp and with
`pg_warp.enabled = off` in one REPEATABLE READ transaction (one snapshot), and
the rows must be equal.  EXPLAIN ANALYZE's `Pages Read Directly` says which
path read the pages.  The module's cluster has data checksums (pg_checksums
--enable) and a shared_buffers smaller than the table, and is restarted
where a test needs no page of the table in shared buffers.
"""
import os
import re
import subprocess
import time

import pytest

from pg_sql import Cluster, writers

ON = ("SET pg_warp.engine_startup_cost = 0", "SET pg_warp.engine_row_cost = 0",
      "SET max_parallel_workers_per_gather = 0")

# about 26 MB of heap: larger than the cluster's 16 MB of shared buffers
TABLE = """
CREATE TABLE d AS
SELECT i AS id,
       CASE WHEN i % 13 = 0 THEN NULL ELSE 'g' || (i % 9) END AS g,
       CASE WHEN i % 17 = 0 THEN NULL ELSE (i::int8 * 7919) % 1000003 END AS v,
       CASE WHEN i % 19 = 0 THEN NULL ELSE ((i % 2000) - 1000) / 100.0 END::numeric(12,2) AS n,
       CASE WHEN i % 23 = 0 THEN NULL ELSE (i % 64) * 0.25 END::float8 AS f
FROM generate_series(1, 400000) i;
VACUUM (FREEZE, ANALYZE) d;
"""

GROUPED = ("SELECT g, count(*), count(v), sum(v), sum(n), sum(f), min(id), max(id) "
           "FROM d GROUP BY g ORDER BY g")
FILTERED = "SELECT count(*), sum(v), sum(n) FROM d WHERE id % 3 = 0 AND v > 1000"


def as_owner(args):
    """args run as the cluster's OS user (cluster.sh's, when we are root)."""
    if os.getuid() == 0:
        args = ["runuser", "-u", os.environ.get("PG_WARP_OSUSER", "pgwarp"), "--"] + args
    return subprocess.run(args, capture_output=True, text=True)


def pg_bindir():
    return subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        c.sql("ALTER SYSTEM SET shared_buffers = '16MB'")
        c.stop()
        r = as_owner([os.path.join(pg_bindir(), "pg_checksums"), "--enable", "-D", c.data])
        assert r.returncode == 0, r.stderr
        c.start()
        assert c.sql("SHOW data_checksums") == "on"
        rc, _, err = psql_script(c, TABLE)
        assert rc == 0, err
        c.restart()
        yield c
    finally:
        c.destroy()


def psql_script(c, script, timeout=300):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-f", "-"], input=script,
                       env=c.env, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def both(c, sql, settings=()):
    """sql's rows with pg_warp and with it off, in one snapshot; and the plan's figures."""
    return c.same_snapshot(sql, ON + tuple(settings))


def figure(plan, name):
    """the sum of a figure over the plan's lines (workers' lines included)"""
    vals = [int(m) for m in re.findall(r"%s: (\d+)" % re.escape(name), plan)]
    assert vals, plan
    return sum(vals)


def test_cold_table_read_directly(cluster):
    """after a restart no page is in shared buffers: every page is read from the file
    (the oracle's sequential scan leaves its ring's 32 pages there: restarted again)"""
    for sql in (GROUPED, FILTERED):
        cluster.restart()
        plan, on, off = both(cluster, sql)
        assert "Custom Scan (GpuPreAgg)" in plan and "fallback" not in plan, plan
        assert on == off and on.count("\n") >= 1, (on, off)
        assert figure(plan, "Pages Read Directly") == figure(plan, "Heap Pages"), plan


def test_setting_off_reads_through_buffers(cluster):
    cluster.restart()
    plan, on, off = both(cluster, GROUPED, ("SET pg_warp.heap_direct_read = off",))
    assert "Custom Scan (GpuPreAgg)" in plan, plan
    assert figure(plan, "Pages Read Directly") == 0, plan
    assert on == off


def test_parallel_participants_read_directly(cluster):
    cluster.restart()
    plan, on, off = both(cluster, GROUPED, ("SET max_parallel_workers_per_gather = 2",
                                            "SET parallel_setup_cost = 0",
                                            "SET parallel_tuple_cost = 0",
                                            "SET min_parallel_table_scan_size = 0"))
    assert "Gather" in plan and "Custom Scan (GpuPreAgg)" in plan, plan
    assert on == off
    assert figure(plan, "Pages Read Directly") > 0, plan


def test_changed_pages_go_through_buffers(cluster):
    """pages changed since the VACUUM (visibility map bits cleared, some still
    dirty in shared buffers) are read through the buffer manager; the result
    counts the changes"""
    cluster.restart()
    cluster.sql("UPDATE d SET v = v + 1 WHERE id % 1000 = 1; "
                "DELETE FROM d WHERE id % 2000 = 2; "
                "INSERT INTO d SELECT -i, 'new', i, 1.5, 2.5 FROM generate_series(1, 300) i")
    try:
        rows = {}
        for sql in (GROUPED, FILTERED):
            plan, rows[sql], off = both(cluster, sql)
            assert rows[sql] == off, (rows[sql], off)
            direct, pages = figure(plan, "Pages Read Directly"), figure(plan, "Heap Pages")
            assert 0 < direct < pages, plan
        assert "\nnew|300|300|" in rows[GROUPED], rows[GROUPED]
    finally:
        cluster.sql("DELETE FROM d WHERE id <= 0; UPDATE d SET v = v - 1 WHERE id % 1000 = 1")
        cluster.run("VACUUM (FREEZE) d", timeout=300)


def test_pages_changing_during_scans(cluster):
    """sessions update, delete, insert, vacuum and checkpoint while scans run: each
    scan's rows are the oracle's in the same snapshot (the two writers change
    rows of their own, so that they never deadlock)"""
    def rounds_of(i, k):
        yield ("UPDATE d SET v = v + 1 WHERE id %% 211 = %d AND id %% 2 = %d; "
               "DELETE FROM d WHERE id %% 997 = %d AND id > 0 AND id %% 2 = %d; "
               "INSERT INTO d SELECT -(%d * 100000 + i), 'w%d', i, 0.25, 0.5 "
               "FROM generate_series(1, 50) i" % ((i + k) % 211, k, (i * 7 + k) % 997, k,
                                                  i * 4 + k, k))
        if i % 3 == 0:
            yield "VACUUM d" if k == 0 else "CHECKPOINT"

    with writers(cluster, rounds_of):
        deadline = time.time() + 20
        rounds = direct = 0
        while time.time() < deadline or rounds < 4:
            plan, on, off = both(cluster, GROUPED if rounds % 2 == 0 else FILTERED)
            assert on == off, (rounds, on, off)
            direct += figure(plan, "Pages Read Directly")
            rounds += 1
    assert direct > 0


def corrupt_block_1_fails(cluster, table, q, settings):
    """q over table (made, all-visible) fails as PostgreSQL does once a byte of
    its block 1 is flipped (the checksum no longer matches), with settings
    and with pg_warp off; after the byte is back, q's answer is as before"""
    path = os.path.join(cluster.data, cluster.sql("SELECT pg_relation_filepath('%s')" % table))
    good = both(cluster, q, settings)[1]
    cluster.stop()
    with open(path, "r+b") as f:
        f.seek(8192 + 8186)				# block 1: its first tuple's v
        b = f.read(1)
        f.seek(8192 + 8186)
        f.write(bytes([b[0] ^ 0x10]))
    cluster.start()
    try:
        for sets in (ON + tuple(settings), ("SET pg_warp.enabled = off",)):
            r = cluster.run(q, settings=sets)
            assert r.returncode != 0 and "invalid page in block 1" in r.stderr, (r.stdout, r.stderr)
    finally:
        cluster.stop()
        with open(path, "r+b") as f:
            f.seek(8192 + 8186)
            f.write(b)
        cluster.start()
    plan, on, off = both(cluster, q, settings)
    assert on == off == good
    return plan


def test_corrupt_page_is_not_read_silently(cluster):
    """a page whose checksum fails is read through the buffer manager, which
    reports it as PostgreSQL does, instead of being decoded from the file"""
    rc, _, err = psql_script(cluster, "CREATE TABLE bad AS SELECT i AS id, i::int8 * 3 AS v "
                             "FROM generate_series(1, 5000) i;\nVACUUM (FREEZE) bad;\n")
    assert rc == 0, err
    plan = corrupt_block_1_fails(cluster, "bad", "SELECT count(*), sum(v) FROM bad", ())
    assert figure(plan, "Pages Read Directly") == figure(plan, "Heap Pages"), plan


def test_corrupt_page_in_a_unit_is_not_read_silently(cluster):
    """the same in a table of more than one unit (2048 blocks), whose first
    unit a GPU run probes in the service's cache: with data checksums the
    service never reads a unit itself (pg_warp.heap_service_read), so the
    backend's read verifies the checksum and fails as PostgreSQL does"""
    rc, _, err = psql_script(cluster, "CREATE TABLE badu AS SELECT i AS id, i::int8 * 3 AS v "
                             "FROM generate_series(1, 500000) i;\nVACUUM (FREEZE) badu;\n"
                             "CHECKPOINT;\n")
    assert rc == 0, err
    assert int(cluster.sql("SELECT pg_relation_size('badu') / 8192")) > 2048
    gpu = ("SET pg_warp.engine = gpu",) if cluster.status()["engine"] == "gpu" else ()
    corrupt_block_1_fails(cluster, "badu", "SELECT count(*), sum(v) FROM badu", gpu)
    cluster.sql("DROP TABLE badu")
