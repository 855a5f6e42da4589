"""GpuPreAgg over heap tables served from the service's GPU column cache
(pg_warp.heap_gpu_cache; doc/engine.md, "Units in the GPU column cache").

Runs where the service has a GPU (the bundle's tests on a GPU host) and
skips with the reason elsewhere; on any machine, `make -C test/gpu heapfake`
checks the service's side of units (kept, served, stale files refused)
against a stand-in driver.  Every answer is compared with PostgreSQL's
(pg_warp.enabled = off) on data with NULLs, text and numeric, before and
after the table changes under the cache: updates (pages in shared buffers,
the visibility map cleared), checkpoints (the files written), deletes with
VACUUM, TRUNCATE, a column added with a default, and a segment file
rewritten behind PostgreSQL's back; and the plans' counters say which units
were probed, which came from the cache and which the service read from the
table's files itself (pg_warp.heap_service_read).
"""
import os
import time

import pytest

from pg_sql import Cluster, writers

OFF = ("SET pg_warp.enabled = off",)
GPU = ("SET pg_warp.engine = gpu", "SET pg_warp.engine_startup_cost = 0",
       "SET pg_warp.engine_row_cost = 0", "SET enable_hashagg = off")
SERIAL = GPU + ("SET max_parallel_workers_per_gather = 0",)
# enable_hashagg stays on: the parallel GpuPreAgg path is made beside PostgreSQL's partial hash aggregation
PARALLEL = GPU[:-1] + ("SET max_parallel_workers_per_gather = 4", "SET parallel_setup_cost = 0",
                  "SET parallel_tuple_cost = 0", "SET min_parallel_table_scan_size = 0",
                  "SET parallel_leader_participation = on")
SETTLE = 1.3    # the service keeps a unit only from files unchanged for 1 s
UNIT = 2048     # blocks of a unit (WARP_HEAP_UNIT_BLOCKS)

QUERIES = [
    "SELECT k, t, count(*), sum(v), avg(n), min(id), max(v) FROM hc "
    "WHERE id % 5 <> 0 GROUP BY k, t ORDER BY k, t",
    "SELECT count(*), count(v), sum(v), sum(n), count(t), min(f) FROM hc",
    "SELECT b, count(*), sum(f) FROM hc WHERE t LIKE 'k1%' OR v IS NULL GROUP BY b ORDER BY b",
]


def counter(plan, name):
    """The sum of name's values over the plan's lines (the leader's and each worker's)."""
    total = 0
    for ln in plan.split("\n"):
        for part in ln.split("  "):
            part = part.strip()
            if part.startswith(name + ":"):
                total += int(part.split(":")[1].split()[0])
    return total


@pytest.fixture(scope="module")
def gpu():
    """A cluster whose service has a GPU, with table hc (several units)."""
    c = Cluster()
    try:
        if c.status()["engine"] != "gpu":
            pytest.skip("the service has no GPU (make -C test/gpu heapfake checks units)")
        make_table(c, 170000)
        yield c
    finally:
        c.destroy()


def make_table(c, rows, name="hc"):
    """rows rows of about 300 bytes (some 26 a page), NULLs in every column
    but id; all-visible, written out and settled."""
    c.sql("DROP TABLE IF EXISTS %s; CREATE TABLE %s (id int, k int2, v int8, n numeric(12,2), "
          "f float8, b bool, t text, pad text) WITH (autovacuum_enabled = off)" % (name, name))
    c.sql("INSERT INTO %s SELECT i, CASE WHEN i %% 17 = 0 THEN NULL ELSE i %% 23 END, "
          "CASE WHEN i %% 11 = 0 THEN NULL ELSE i * 3 - 50000 END, "
          "CASE WHEN i %% 13 = 0 THEN NULL ELSE (i %% 1000) / 7.0 END, "
          "CASE WHEN i %% 19 = 0 THEN NULL ELSE i / 3.0 END, "
          "CASE WHEN i %% 29 = 0 THEN NULL ELSE i %% 3 = 0 END, "
          "CASE WHEN i %% 31 = 0 THEN NULL ELSE 'k' || (i %% 37) END, repeat('x', 240) "
          "FROM generate_series(1, %d) i" % (name, rows))
    settle(c, name)


def settle(c, name="hc"):
    """All-visible, written out, out of shared buffers (a restart: the units
    a run probes are those a direct read would take from the files), and
    the files unchanged for SETTLE seconds."""
    c.sql("VACUUM (FREEZE, ANALYZE) %s" % name)
    c.sql("CHECKPOINT")
    c.restart()
    time.sleep(SETTLE)


def run(c, q, sets):
    r = c.run(q, settings=sets, timeout=180)
    assert r.returncode == 0, r.stderr
    return r.stdout


def explain(c, q, sets):
    return run(c, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + q, sets)


def same_as_postgresql(c, sets, queries=QUERIES):
    """Every query's answer with sets equals PostgreSQL's; the plans' unit counters summed."""
    probed = served = 0
    for q in queries:
        # float sums' last bits depend on the order of the additions, on the
        # GPU as in PostgreSQL's own parallel plans
        c.same(q, "GpuPreAgg", on=sets, ordered=True, rel_tol=1e-12, engine="GPU")
        p = explain(c, q, sets)
        probed += counter(p, "Units Probed")
        served += counter(p, "Units from GPU Cache")
    return probed, served


def settled_then_served(c):
    """Once the table settles, a run reads and keeps its units, and the next
    runs are served every unit they probe, with PostgreSQL's answers."""
    settle(c)
    same_as_postgresql(c, SERIAL)
    probed, served = same_as_postgresql(c, SERIAL)
    assert served == probed > 0


def test_table_has_units(gpu):
    assert int(gpu.sql("SELECT pg_relation_size('hc') / 8192")) >= 3 * UNIT


def test_second_run_served_from_cache(gpu):
    """The first run has the service read and keep every unit (the backend
    ships only the pages after the last whole unit); the next ones are
    served from the cache, with PostgreSQL's answers."""
    q = QUERIES[0]
    gpu.sql("CHECKPOINT")
    p1 = explain(gpu, q, SERIAL)
    pages = int(gpu.sql("SELECT pg_relation_size('hc') / 8192"))
    units = pages // UNIT
    assert counter(p1, "Units Probed") == units, p1
    assert counter(p1, "Units Read by the Service") == units, p1
    assert counter(p1, "Pages Shipped") <= pages - units * UNIT, p1
    p2 = explain(gpu, q, SERIAL)
    assert counter(p2, "Units Probed") == units and counter(p2, "Units from GPU Cache") == units, p2
    assert counter(p2, "Units Read by the Service") == 0, p2
    probed, served = same_as_postgresql(gpu, SERIAL)
    assert served == probed > 0


def test_units_read_by_the_backend_or_the_service(gpu):
    """pg_warp.heap_service_read: on (the default), the service reads the
    units the cache misses from the table's files; off, this backend reads
    and ships them.  Both keep them, both give PostgreSQL's answers."""
    pages = int(gpu.sql("SELECT pg_relation_size('hc') / 8192"))
    units = pages // UNIT
    for setting in ("off", "on"):
        settle(gpu)
        sets = SERIAL + ("SET pg_warp.heap_service_read = %s" % setting,)
        p = explain(gpu, QUERIES[1], sets)
        assert counter(p, "Units Probed") == units, p
        if setting == "on":
            assert counter(p, "Units Read by the Service") == units, p
            assert counter(p, "Pages Read Directly") <= pages - units * UNIT, p
        else:
            assert counter(p, "Units Read by the Service") == 0, p
            assert counter(p, "Pages Read Directly") >= units * UNIT, p
        gpu.same(QUERIES[0], "GpuPreAgg", on=sets, ordered=True, rel_tol=1e-12, engine="GPU")
        p = explain(gpu, QUERIES[1], sets)
        assert counter(p, "Units from GPU Cache") == units, p


def test_off_and_cpu_engine_probe_nothing_served(gpu):
    q = QUERIES[1]
    explain(gpu, q, SERIAL)
    p = explain(gpu, q, SERIAL + ("SET pg_warp.heap_gpu_cache = off",))
    assert counter(p, "Units Probed") == 0, p
    p = explain(gpu, q, SERIAL + ("SET pg_warp.heap_direct_read = off",))
    assert counter(p, "Units Probed") == 0, p
    # the CPU engine over heap tables only where asked for (under auto it is
    # slower than PostgreSQL's own aggregation: gpa_heap_enabled)
    cpu = tuple(s for s in SERIAL if "engine =" not in s) + (
        "SET pg_warp.engine = cpu", "SET pg_warp.enable_gpupreagg_heap = on")
    gpu.same(q, "GpuPreAgg", on=cpu, ordered=True, rel_tol=1e-12, engine="CPU")
    p = explain(gpu, q, cpu)
    assert counter(p, "Units from GPU Cache") == 0, p
    # the CPU engine's first answer stops probing: at most the ring's 4 chunks were offered
    assert counter(p, "Units Probed") <= 4, p


def test_updates_keep_answers_exact(gpu):
    """Rows updated (their pages in shared buffers, the visibility map
    cleared) are read as PostgreSQL sees them; after a checkpoint the
    written files are not served from their old columns."""
    same_as_postgresql(gpu, SERIAL)
    gpu.sql("UPDATE hc SET v = coalesce(v, 0) + 1000000, t = 'changed' WHERE id % 997 = 0")
    probed, served = same_as_postgresql(gpu, SERIAL)
    units = int(gpu.sql("SELECT pg_relation_size('hc') / 8192")) // UNIT
    assert probed < units * len(QUERIES), "units with updated pages must not be probed"
    gpu.sql("CHECKPOINT")
    same_as_postgresql(gpu, SERIAL)
    gpu.sql("VACUUM (FREEZE) hc")
    gpu.sql("CHECKPOINT")
    # written within the last second: units read now are not kept
    same_as_postgresql(gpu, SERIAL)
    time.sleep(SETTLE)
    same_as_postgresql(gpu, SERIAL)
    probed, served = same_as_postgresql(gpu, SERIAL)
    assert served == probed > 0


def test_deletes_vacuum_and_truncate(gpu):
    same_as_postgresql(gpu, SERIAL)
    gpu.sql("DELETE FROM hc WHERE id % 7 = 0")
    same_as_postgresql(gpu, SERIAL)
    settled_then_served(gpu)
    gpu.sql("CREATE TABLE hc_keep AS SELECT * FROM hc")
    gpu.sql("TRUNCATE hc")
    gpu.sql("INSERT INTO hc SELECT id + 1, k, v, n, f, NOT b, t || 'x', pad FROM hc_keep")
    gpu.sql("DROP TABLE hc_keep")
    same_as_postgresql(gpu, SERIAL)
    settled_then_served(gpu)


def test_added_column_with_default(gpu):
    """A column added with a default is read from its missing value in old
    tuples: its cached columns are its own, not another attribute's."""
    gpu.sql("ALTER TABLE hc ADD COLUMN IF NOT EXISTS m int8 DEFAULT 42")
    gpu.sql("INSERT INTO hc (id, k, v, m) SELECT i, 1, 1, NULL FROM generate_series(1, 100) i")
    settle(gpu)
    qs = ["SELECT k, count(*), sum(m), min(m), max(v) FROM hc GROUP BY k ORDER BY k"]
    same_as_postgresql(gpu, SERIAL, qs)
    probed, served = same_as_postgresql(gpu, SERIAL, qs)
    assert served == probed > 0
    gpu.sql("ALTER TABLE hc DROP COLUMN m")
    gpu.sql("ALTER TABLE hc ADD COLUMN m int8 DEFAULT 7")
    # the files did not change: the new attribute's first run reads and keeps it (7, not 42)
    p = explain(gpu, qs[0], SERIAL)
    assert counter(p, "Units Probed") > 0 and counter(p, "Units from GPU Cache") == 0, p
    probed, served = same_as_postgresql(gpu, SERIAL, qs)
    assert served == probed > 0


def test_segment_rewritten_behind_postgresql(gpu):
    """A segment file whose bytes change (here: rewritten with the same
    pages, so its ctime moves) is never served from the old columns."""
    same_as_postgresql(gpu, SERIAL)
    probed, served = same_as_postgresql(gpu, SERIAL)
    assert served == probed > 0
    path = os.path.join(gpu.data, gpu.sql("SELECT pg_relation_filepath('hc')"))
    with open(path, "r+b") as f:
        head = f.read(8192)
        f.seek(0)
        f.write(head)
    # the first run after it (within the second that keeps it from being
    # kept again): every unit probed, none served from the old columns
    p = explain(gpu, QUERIES[0], SERIAL)
    assert counter(p, "Units Probed") > 0 and counter(p, "Units from GPU Cache") == 0, p
    # and PostgreSQL's answers (later runs may keep and serve the new columns)
    same_as_postgresql(gpu, SERIAL)


def pinned_pages(plan):
    """EXPLAIN's Pinned File Pages line summed over the plan's lines: the kB
    of units copied from registered pages, the kB queued to be registered"""
    copied = queued = 0
    for ln in plan.split("\n"):
        if "Pinned File Pages:" in ln:
            rest = ln.split("Pinned File Pages:")[1]
            copied += int(rest.split()[0])
            queued += int(rest.split("queued to be pinned:")[1].split()[0])
    return copied, queued


def registered(c, timeout=60):
    """Waits until the service has registered all it was queued; the bytes registered"""
    deadline = time.monotonic() + timeout
    while True:
        pinned, queued = c.sql("SELECT pinned_file_bytes, pinned_file_bytes_queued "
                               "FROM pgwarp.service_status()").split("|")
        if int(queued) == 0:
            return int(pinned)
        assert time.monotonic() < deadline, "%s bytes still queued to be registered" % queued
        time.sleep(0.2)


def test_units_from_registered_pages(gpu):
    """The service keeps the segment files' page-cache pages registered as
    it does Arrow files' (pg_warp.pinned_files_size): the first run after a
    restart with pg_warp.pinned_files_restore off reads its units with pread
    and queues their pages; once they are registered, a run the GPU column
    cache does not serve (emptied with gpu_cache_drop) copies every unit from
    there, with PostgreSQL's answers; a segment file written since is
    registered anew, never served from the old registration.  With
    pinned_files_restore on (the default), the registrations outlive a
    restart: the first run after it copies every unit from the pages."""
    if gpu.sql("SHOW pg_warp.pinned_files_size") in ("0", "0kB"):
        pytest.skip("pg_warp.pinned_files_size is 0")
    units = int(gpu.sql("SELECT pg_relation_size('hc') / 8192")) // UNIT
    unit_kb = UNIT * 8
    gpu.sql("ALTER SYSTEM SET pg_warp.pinned_files_restore = off")
    try:
        settle(gpu)
        registered_then_rewritten(gpu, units, unit_kb)
    finally:
        gpu.sql("ALTER SYSTEM RESET pg_warp.pinned_files_restore")
    # the registrations of the file as it is now, kept across a restart
    assert registered(gpu) >= units * unit_kb * 1024
    gpu.restart()
    time.sleep(SETTLE)
    assert registered(gpu) >= units * unit_kb * 1024
    gpu.sql("SELECT pgwarp.gpu_cache_drop()")
    p = explain(gpu, QUERIES[0], SERIAL)
    assert counter(p, "Units Read by the Service") == units, p
    assert pinned_pages(p) == (units * unit_kb, 0), p
    gpu.sql("SELECT pgwarp.gpu_cache_drop()")
    same_as_postgresql(gpu, SERIAL)


def registered_then_rewritten(gpu, units, unit_kb):
    """test_units_from_registered_pages's runs with pinned_files_restore off"""
    p = explain(gpu, QUERIES[0], SERIAL)
    assert counter(p, "Units Read by the Service") == units, p
    assert pinned_pages(p) == (0, units * unit_kb), p
    assert registered(gpu) >= units * unit_kb * 1024
    for q in QUERIES:
        gpu.sql("SELECT pgwarp.gpu_cache_drop()")
        p = explain(gpu, q, SERIAL)
        assert counter(p, "Units Read by the Service") == units, p
        assert pinned_pages(p) == (units * unit_kb, 0), p
        gpu.sql("SELECT pgwarp.gpu_cache_drop()")
        gpu.same(q, "GpuPreAgg", on=SERIAL, ordered=True, rel_tol=1e-12, engine="GPU")
    # the segment file written behind PostgreSQL (the same pages: its times move)
    path = os.path.join(gpu.data, gpu.sql("SELECT pg_relation_filepath('hc')"))
    with open(path, "r+b") as f:
        head = f.read(8192)
        f.seek(0)
        f.write(head)
    gpu.sql("SELECT pgwarp.gpu_cache_drop()")
    p = explain(gpu, QUERIES[0], SERIAL)
    assert counter(p, "Units Read by the Service") == units, p
    assert pinned_pages(p) == (0, units * unit_kb), p
    gpu.sql("SELECT pgwarp.gpu_cache_drop()")
    same_as_postgresql(gpu, SERIAL)


def test_parallel_participants_share_the_cache(gpu):
    """A parallel plan's participants probe the units of their claims (a
    table of 16 units or more is claimed in whole units)."""
    make_table(gpu, 16 * UNIT * 26 + 5000, "hp")
    q = ["SELECT k, count(*), sum(v), avg(n), count(t) FROM hp GROUP BY k ORDER BY k",
         "SELECT count(*), sum(f) FROM hp WHERE v > 0"]
    same_as_postgresql(gpu, PARALLEL, q)
    p = explain(gpu, q[0], PARALLEL)
    assert "Gather" in p and "Worker 0" in p, p
    probed, served = same_as_postgresql(gpu, PARALLEL, q)
    assert served > 0, "the participants' units come from the cache"
    gpu.sql("DROP TABLE hp")


def test_writers_during_service_reads(gpu):
    """Sessions update, delete, insert, vacuum and checkpoint a table while
    GPU runs beside them probe its units, which the service reads from the
    files where the cache misses them (the checkpoints change the file, so
    the cache is stale): each run's answer is PostgreSQL's in the same
    snapshot (REPEATABLE READ).  The writers change rows of the last units
    all the time and a row of the first three now and then, which VACUUM
    makes all-visible again: units probed while a writer changes them."""
    make_table(gpu, 4 * UNIT * 26, "hw")
    early = 3 * UNIT * 20   # ids within the first three units (26 rows a page, fewer to be safe)
    q = ("SELECT k, count(*), count(v), sum(v), sum(n), min(id), max(id), count(t) "
         "FROM hw GROUP BY k ORDER BY k")

    def rounds_of(i, k):
        yield ("UPDATE hw SET v = coalesce(v, 0) + 1 WHERE id %% 211 = %d AND id %% 2 = %d "
               "AND id > %d; "
               "DELETE FROM hw WHERE id %% 997 = %d AND id > %d AND id %% 2 = %d; "
               "INSERT INTO hw (id, k, v, t) SELECT -(%d * 100000 + i), 7, i, 'w' "
               "FROM generate_series(1, 50) i"
               % ((i + k) % 211, k, early, (i * 7 + k) % 997, early, k, i * 4 + k))
        if i % 4 == k:
            yield "UPDATE hw SET v = coalesce(v, 0) + 1 WHERE id = %d" % (i * 7919 % early + 1)
        if i % 3 == 0:
            yield "VACUUM hw" if k == 0 else "CHECKPOINT"

    read = rounds = 0
    with writers(gpu, rounds_of):
        deadline = time.time() + 20
        while time.time() < deadline or rounds < 4:
            plan, on, off = gpu.same_snapshot(q, SERIAL)
            assert on == off, (rounds, on, off)
            assert "GpuPreAgg" in plan and "Engine: GPU" in plan, plan
            read += counter(plan, "Units Read by the Service")
            rounds += 1
    assert read > 0, "the service read no unit in %d runs" % rounds
    gpu.sql("DROP TABLE hw")
