"""GPUDirect Storage (doc/service.md, "GPUDirect Storage"): pg_warp.gpudirect
and pg_warp.cufile_library, how the supervisor passes them to the service,
and GPU runs over Arrow files read with cuFile.

Without a GPU (CI) cuFile is never used, but the settings are still parsed,
passed on the service's command line and checked by the service, and
answers with them set equal PostgreSQL's.  The tests that read with cuFile
run only where the service has a GPU and PG_WARP_TEST_CUFILE names a
libcufile (the nvidia-cufile wheel's); they skip with the reason otherwise.
test_service_direct.py checks the service's cuFile path against a stand-in
libcufile (make -C test/gpu scanfake).
"""
import json
import os

import pyarrow as pa
import pytest

from engine_edge import write
from test_gpu_cache import (cluster, data_dir, server_setting_is_checked,  # noqa: F401
                            service_argv, service_checks_option)

ON = "SET pg_warp.engine_startup_cost = 0; "
OFF = "SET pg_warp.enabled = off; "
CUFILE = os.environ.get("PG_WARP_TEST_CUFILE", "")


def configure(c, **settings):
    """ALTER SYSTEM for each pg_warp setting given (None: RESET), then a restart"""
    for k, v in settings.items():
        if v is None:
            c.sql("ALTER SYSTEM RESET pg_warp.%s" % k)
        else:
            c.sql("ALTER SYSTEM SET pg_warp.%s = '%s'" % (k, v))
    c.restart()


def option(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def test_settings_are_passed_to_the_service(cluster):
    assert cluster.sql("SHOW pg_warp.gpudirect") == "auto"
    assert cluster.sql("SHOW pg_warp.cufile_library") == ""
    argv = service_argv(cluster)
    assert option(argv, "--gpudirect") == "auto" and "--cufile-library" not in argv, argv
    try:
        for value in ("on", "off", "auto"):
            configure(cluster, gpudirect=value, cufile_library="/opt/cufile/libcufile.so.0")
            argv = service_argv(cluster)
            assert option(argv, "--gpudirect") == value, argv
            assert option(argv, "--cufile-library") == "/opt/cufile/libcufile.so.0", argv
    finally:
        configure(cluster, gpudirect=None, cufile_library=None)


def test_settings_are_checked(cluster):
    server_setting_is_checked(cluster, "gpudirect", "on", ("sometimes", "1", "yes"))
    server_setting_is_checked(cluster, "cufile_library", "/x/libcufile.so.0", ())


def test_service_checks_its_option(tmp_path):
    service_checks_option(tmp_path, "--gpudirect", ("sometimes", "", "ON"), ("auto", "on", "off"))


def table(n, seed):
    """int32 with NULLs, int64 extremes, float8 with NaN and infinities, text"""
    x = seed
    q, d, p, f, s = [], [], [], [], []
    for i in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        q.append(None if i % 13 == 5 else 1 + (x >> 33) % 50)
        d.append((x >> 20) % 7)
        p.append([-2**63, 2**63 - 1, 0][i % 3] if i % 997 == 0 else (x >> 8) % 10**7)
        f.append([float("nan"), float("inf"), -float("inf"), None][i % 4] if i % 101 == 0
                 else ((x >> 12) % 10**6) / 7.0)
        s.append(None if i % 17 == 0 else "mode-%d" % ((x >> 44) % 9))
    return pa.table({"q": pa.array(q, pa.int32()), "d": pa.array(d, pa.int32()),
                     "p": pa.array(p, pa.int64()), "f": pa.array(f, pa.float64()),
                     "s": pa.array(s, pa.string())})


QUERIES = [
    ("GpuPreAgg", "SELECT d, count(*), count(q), sum(q), min(p), max(p), sum(f) "
                  "FROM gds.t WHERE q < 40 GROUP BY d ORDER BY d"),
    ("GpuPreAgg", "SELECT s, count(*), sum(p::numeric) FROM gds.t GROUP BY s ORDER BY s"),
    ("GpuScan", "SELECT q, d, p, s FROM gds.t WHERE q > 45 AND d = 3 ORDER BY p, q"),
]


def make_table(c, data_dir):
    write(os.path.join(data_dir, "t.arrow"), table(60000, 11), 8192)
    c.sql("DROP SCHEMA IF EXISTS gds CASCADE; CREATE SCHEMA gds; "
          "CREATE FOREIGN TABLE gds.t (q int4, d int4, p int8, f float8, s text) "
          "SERVER arrow_fdw OPTIONS (file '%s/t.arrow')" % data_dir)


def test_answers_with_gpudirect_on(cluster, data_dir):
    """Without a GPU the CPU engine answers, whatever the setting"""
    configure(cluster, gpudirect="on", cufile_library=CUFILE or "/nonexistent/libcufile.so.0")
    try:
        make_table(cluster, data_dir)
        if cluster.status()["engine"] == "gpu" and not CUFILE:
            # on, and no library to load: every GPU run over a file fails with why
            r = cluster.run(QUERIES[0][1], settings=[ON.strip()])
            assert r.returncode != 0 and "cuFile cannot be used: could not load" in r.stderr, \
                r.stderr
            return
        for node, sql in QUERIES:
            cluster.same(sql, node, on=(ON.strip(),), off=(OFF.strip(),), ordered=True)
    finally:
        configure(cluster, gpudirect=None, cufile_library=None)


def data_path(c, sql):
    """EXPLAIN ANALYZE's Data Path line and its JSON properties, on the engine"""
    r = c.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, settings=[ON.strip()])
    assert r.returncode == 0, r.stderr
    assert "Engine: GPU" in r.stdout, (sql, r.stdout)
    line = [x.strip() for x in r.stdout.splitlines() if "Data Path:" in x]
    assert line, (sql, r.stdout, [x for x in c.log_text().splitlines() if "GPUDirect" in x
                                  or "cuFile" in x][-5:])
    r = c.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) " + sql,
              settings=[ON.strip()])
    assert r.returncode == 0, r.stderr
    props = {}

    def walk(plan):
        if "Bytes Read With cuFile" in plan:
            props["direct"] = props.get("direct", 0) + plan["Bytes Read With cuFile"]
            props["mode"] = plan["cuFile Mode"]
        for sub in plan.get("Plans", []):
            walk(sub)
    walk(json.loads(r.stdout)[0]["Plan"])
    return line, props


def test_gpu_runs_read_with_cufile(cluster, data_dir):
    st = cluster.status()
    if st["engine"] != "gpu" or not CUFILE:
        pytest.skip("needs the service on a GPU and PG_WARP_TEST_CUFILE (%s, %r)"
                    % (st["engine_detail"] or st["engine"], CUFILE))
    # no GPU column cache and no registered file pages: every run reads the
    # file (a run copies from the pages the service registers after the runs
    # before it, and prefers them to cuFile)
    configure(cluster, gpudirect="on", cufile_library=CUFILE, gpu_cache_size="0",
              pinned_files_size="0")
    try:
        make_table(cluster, data_dir)
        for node, sql in QUERIES:
            cluster.same(sql, node, on=(ON.strip(),), off=(OFF.strip(),), ordered=True)
            line, props = data_path(cluster, sql)
            assert line and "cuFile (" in line[0], line
            assert props["direct"] > 0 and props["mode"] in ("compatibility mode",
                                                              "GPUDirect Storage"), props
        # auto: cuFile only with nvidia-fs
        configure(cluster, gpudirect="auto")
        gds = os.path.exists("/proc/driver/nvidia-fs/version")
        for node, sql in QUERIES:
            cluster.same(sql, node, on=(ON.strip(),), off=(OFF.strip(),), ordered=True)
            line, props = data_path(cluster, sql)
            assert (props["direct"] > 0) == gds, (line, props)
        # on, and a library that is not there: the run fails with why
        configure(cluster, gpudirect="on", cufile_library="/nonexistent/libcufile.so.0")
        r = cluster.run(QUERIES[0][1], settings=[ON.strip()])
        assert r.returncode != 0 and "cuFile cannot be used: could not load" in r.stderr, r.stderr
    finally:
        configure(cluster, gpudirect=None, cufile_library=None, gpu_cache_size=None,
                  pinned_files_size=None)


HEAP_GPU = ("SET pg_warp.engine = gpu", "SET pg_warp.engine_startup_cost = 0",
            "SET pg_warp.engine_row_cost = 0", "SET enable_hashagg = off",
            "SET max_parallel_workers_per_gather = 0")
HEAP_Q = ("SELECT k, t, count(*), count(v), sum(v), avg(n), min(id), max(v) FROM gds_heap "
          "WHERE id % 7 <> 3 GROUP BY k, t ORDER BY k, t")
UNIT = 2048     # blocks of a unit (WARP_HEAP_UNIT_BLOCKS)


def heap_cufile(c):
    """The first GpuPreAgg run after a restart (the GPU column cache empty):
    its units read by the service, and the kB EXPLAIN says it read with
    cuFile (text) with the JSON form's bytes and mode."""
    r = c.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + HEAP_Q, settings=list(HEAP_GPU))
    assert r.returncode == 0, r.stderr
    units = sum(int(x.split("Units Read by the Service:")[1].split()[0])
                for x in r.stdout.splitlines() if "Units Read by the Service:" in x)
    line = [x.strip() for x in r.stdout.splitlines() if "Read With cuFile:" in x]
    c.restart()
    r = c.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) " + HEAP_Q,
              settings=list(HEAP_GPU))
    assert r.returncode == 0, r.stderr
    found = []

    def walk(plan):
        if "Bytes Read With cuFile" in plan and plan.get("Heap Table") == "gds_heap":
            found.append((plan["Bytes Read With cuFile"], plan["cuFile Mode"]))
        for sub in plan.get("Plans", []):
            walk(sub)
    walk(json.loads(r.stdout)[0]["Plan"])
    return units, line, found


def test_heap_units_read_with_cufile(cluster):
    """pg_warp.gpudirect = on: the units of a heap table that the service
    reads itself (pg_warp.heap_service_read) are read with cuFile straight
    into GPU memory and their pages checked there (kern_heap_check); the
    answers are PostgreSQL's.  Off: the same units read with pread."""
    st = cluster.status()
    if st["engine"] != "gpu" or not CUFILE:
        pytest.skip("needs the service on a GPU and PG_WARP_TEST_CUFILE (%s, %r); "
                    "make -C test/gpu heapfake checks the service's side"
                    % (st["engine_detail"] or st["engine"], CUFILE))
    c = cluster
    c.sql("DROP TABLE IF EXISTS gds_heap; CREATE TABLE gds_heap (id int, k int2, v int8, "
          "n numeric(12,2), t text, pad text) WITH (autovacuum_enabled = off)")
    c.sql("INSERT INTO gds_heap SELECT i, CASE WHEN i % 17 = 0 THEN NULL ELSE i % 23 END, "
          "CASE WHEN i % 11 = 0 THEN NULL ELSE i * 3 - 50000 END, "
          "CASE WHEN i % 13 = 0 THEN NULL ELSE (i % 1000) / 7.0 END, "
          "CASE WHEN i % 31 = 0 THEN NULL ELSE 'k' || (i % 37) END, repeat('x', 240) "
          "FROM generate_series(1, 170000) i")
    c.sql("VACUUM (FREEZE, ANALYZE) gds_heap")
    c.sql("CHECKPOINT")
    units = int(c.sql("SELECT pg_relation_size('gds_heap') / 8192")) // UNIT
    assert units >= 3
    try:
        # the first runs after the restarts read: no registrations from before them
        configure(c, gpudirect="on", cufile_library=CUFILE, pinned_files_restore="off")
        # the first run after the restart reads every unit with cuFile: PostgreSQL's answer
        c.same(HEAP_Q, "GpuPreAgg", on=HEAP_GPU, ordered=True, engine="GPU")
        c.restart()
        read, line, found = heap_cufile(c)
        assert read == units, (read, units)
        assert line == ["Read With cuFile: %d kB (compatibility mode)" % (units * UNIT * 8)] or \
            line == ["Read With cuFile: %d kB (GPUDirect Storage)" % (units * UNIT * 8)], line
        assert found and found[0][0] == units * UNIT * 8192, found
        configure(c, gpudirect="off")
        read, line, found = heap_cufile(c)
        assert read == units and line == [] and found == [(0, "none")], (read, line, found)
        c.same(HEAP_Q, "GpuPreAgg", on=HEAP_GPU, ordered=True, engine="GPU")
    finally:
        configure(c, gpudirect=None, cufile_library=None, pinned_files_restore=None)
        c.sql("DROP TABLE IF EXISTS gds_heap")
