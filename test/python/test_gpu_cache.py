"""The service's GPU column cache (doc/service.md, "The GPU column cache"):
pg_warp.gpu_cache_size, how the supervisor passes it to the service, the
service's option, and answers with the cache in use.

Without a GPU (CI) the cache is never used, but the setting is still
parsed, passed on the service's command line and checked by the service,
and GpuPreAgg answers with it set must equal PostgreSQL's.  The tests that
need the cache itself run only where the service has a GPU and skip with
the reason otherwise; test/gpu/aggcheck_cache.c (gpu_aggcheck) checks the cache on the
device (stale files, eviction, concurrent runs, out of memory).
"""
import os
import shutil
import subprocess
import tempfile
import time

import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import Cluster, wait_until
from test_service import service_program

ON = "SET pg_warp.engine_startup_cost = 0; "
OFF = "SET pg_warp.enabled = off; "


def restart(c):
    """Restarts cluster c (same data directory, same settings file)."""
    c.restart()


def service_argv(c):
    pid = wait_until(lambda: c.run("SELECT pid FROM pgwarp.service_status()").returncode == 0
                     and c.service_pid(), what="the service")
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().decode().split("\0")[:-1]


def cache_option(c):
    argv = service_argv(c)
    assert "--gpu-cache-size" in argv, argv
    return argv[argv.index("--gpu-cache-size") + 1]


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        yield c
    finally:
        c.destroy()


@pytest.fixture(scope="module")
def data_dir():
    d = tempfile.mkdtemp(prefix="pg_warp_gcache.")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def lineorder(n, seed):
    """An SSB-like lineorder slice: deterministic pseudo-random values."""
    x = seed
    cols = {"q": [], "d": [], "p": [], "prio": [], "mode": []}
    prios = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"]
    modes = ["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"]
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        cols["q"].append(1 + (x >> 33) % 50)
        cols["d"].append((x >> 20) % 11)
        cols["p"].append(90000 + (x >> 8) % 10000000)
        cols["prio"].append(prios[(x >> 40) % 5])
        cols["mode"].append(modes[(x >> 44) % 7])
    return pa.table({"q": pa.array(cols["q"], pa.int32()), "d": pa.array(cols["d"], pa.int32()),
                     "p": pa.array(cols["p"], pa.int32()),
                     "prio": pa.array(cols["prio"], pa.string()),
                     "mode": pa.array(cols["mode"], pa.string())})


Q1 = "SELECT sum(p * d) FROM gc.lo WHERE d BETWEEN 1 AND 3 AND q < 25"
Q2 = ("SELECT prio, mode, count(*), sum(p), avg(q), max(p) FROM gc.lo "
      "GROUP BY 1, 2 ORDER BY 1, 2")


def make_table(c, data_dir, seed):
    write(os.path.join(data_dir, "lo.arrow"), lineorder(20000, seed), 5000)
    c.sql("DROP SCHEMA IF EXISTS gc CASCADE; CREATE SCHEMA gc; "
          "CREATE FOREIGN TABLE gc.lo (q int4, d int4, p int4, prio text, mode text) "
          "SERVER arrow_fdw OPTIONS (file '%s/lo.arrow')" % data_dir)


def same_as_postgresql(c, sql):
    """sql's rows, in order, are PostgreSQL's through a GpuPreAgg the engine
    ran (pg_sql.Db.same)."""
    return "\n".join(c.same(sql, "GpuPreAgg", on=(ON.strip(),), off=(OFF.strip(),),
                             ordered=True))


def test_setting_is_passed_to_the_service(cluster):
    assert cluster.sql("SHOW pg_warp.gpu_cache_size") == "-1"
    assert cache_option(cluster) == "auto"
    for value, shown, passed in (("64MB", "64MB", "64"), ("2GB", "2GB", "2048"),
                                 ("0", "0", "0")):
        cluster.sql("ALTER SYSTEM SET pg_warp.gpu_cache_size = '%s'" % value)
        restart(cluster)
        assert cluster.sql("SHOW pg_warp.gpu_cache_size") == shown
        assert cache_option(cluster) == passed
    cluster.sql("ALTER SYSTEM RESET pg_warp.gpu_cache_size")
    restart(cluster)
    assert cache_option(cluster) == "auto"


def server_setting_is_checked(cluster, name, good, bad):
    """pg_warp.name takes effect at server start only (SET to good fails),
    and ALTER SYSTEM refuses each bad value, naming it"""
    r = cluster.run("SET pg_warp.%s = '%s'" % (name, good))
    assert r.returncode != 0 and "cannot be changed without restarting the server" in r.stderr
    for value in bad:
        r = cluster.run("ALTER SYSTEM SET pg_warp.%s = '%s'" % (name, value))
        assert r.returncode != 0 and "pg_warp." + name in r.stderr, r.stderr


def test_setting_is_checked(cluster):
    server_setting_is_checked(cluster, "gpu_cache_size", "1GB", ("lots", "-2", "1TBX"))


def test_unit_buffers_passed_to_the_service(cluster):
    """pg_warp.heap_unit_buffers: -1 (two per participant of a parallel
    query whose service reads the units: the workers pg_warp.gpu_heap_workers
    leaves within max_parallel_workers_per_gather, and the leader; none
    without a GPU column cache) or the count given, passed as
    --unit-buffers; checked"""
    def unit_buffers():
        argv = service_argv(cluster)
        assert "--unit-buffers" in argv, argv
        return int(argv[argv.index("--unit-buffers") + 1])

    assert cluster.sql("SHOW pg_warp.heap_unit_buffers") == "-1"
    per_gather = int(cluster.sql("SHOW max_parallel_workers_per_gather"))
    limit = max(len(os.sched_getaffinity(0)) // 8, 2) - 1   # gpu_heap_workers -1
    assert unit_buffers() == 2 * (min(per_gather, limit) + 1)
    try:
        five = {"max_parallel_workers_per_gather": "5"}
        for settings, want in ((five, 2 * (min(5, limit) + 1)),
                               (dict(five, **{"pg_warp.gpu_heap_workers": "0"}), 12),
                               (dict(five, **{"pg_warp.gpu_heap_workers": "3"}), 8),
                               ({"pg_warp.gpu_cache_size": "0"}, 0),
                               ({"pg_warp.gpu_cache_size": "0", "pg_warp.heap_unit_buffers": "3"}, 3),
                               ({"pg_warp.heap_unit_buffers": "0"}, 0)):
            for k, v in settings.items():
                cluster.sql("ALTER SYSTEM SET %s = '%s'" % (k, v))
            restart(cluster)
            assert unit_buffers() == want, settings
            for k in settings:
                cluster.sql("ALTER SYSTEM RESET %s" % k)
    finally:
        for k in ("max_parallel_workers_per_gather", "pg_warp.gpu_cache_size",
                  "pg_warp.heap_unit_buffers", "pg_warp.gpu_heap_workers"):
            cluster.sql("ALTER SYSTEM RESET %s" % k)
        restart(cluster)
    server_setting_is_checked(cluster, "heap_unit_buffers", "4", ("many", "-2", "257"))


def service_checks_option(tmp_path, option, bad, good):
    """pg_warp_service --no-gpu refuses each bad value of option (exit 2,
    naming it) and starts with each good one"""
    for value in bad:
        r = subprocess.run([service_program(), "-D", str(tmp_path), "--no-gpu", option, value],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and option in r.stderr, (value, r.stderr)
    for value in good:
        d = tmp_path / ("ok" + value)
        d.mkdir()
        p = subprocess.Popen([service_program(), "-D", str(d), "--no-gpu", option, value],
                             stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: (d / "pg_warp.sock").exists() or p.poll() is not None,
                       what="the service's socket")
            assert p.poll() is None, p.stderr.read()
        finally:
            p.terminate()
            p.wait(timeout=30)


def test_service_checks_its_option(tmp_path):
    service_checks_option(tmp_path, "--gpu-cache-size", ("lots", "-1", "12x", ""),
                          ("auto", "0", "512"))
    service_checks_option(tmp_path, "--unit-buffers", ("many", "-1", "257", "4x", ""),
                          ("2", "34"))


def test_pinned_files_restore_passed_to_the_service(cluster):
    """pg_warp.pinned_files_restore (on by default) reaches the service as
    --pinned-files-restore on|off; a server setting, checked; the service
    takes on and off only"""
    def passed():
        argv = service_argv(cluster)
        assert "--pinned-files-restore" in argv, argv
        return argv[argv.index("--pinned-files-restore") + 1]

    assert cluster.sql("SHOW pg_warp.pinned_files_restore") == "on"
    assert passed() == "on"
    try:
        cluster.sql("ALTER SYSTEM SET pg_warp.pinned_files_restore = off")
        restart(cluster)
        assert passed() == "off"
    finally:
        cluster.sql("ALTER SYSTEM RESET pg_warp.pinned_files_restore")
        restart(cluster)
    assert passed() == "on"
    server_setting_is_checked(cluster, "pinned_files_restore", "off", ("sometimes", "2"))


def test_service_checks_pinned_files_restore(tmp_path):
    service_checks_option(tmp_path, "--pinned-files-restore", ("yes", "", "ON", "1"),
                          ("on", "off"))


def test_answers_with_a_cache_size_set(cluster, data_dir):
    cluster.sql("ALTER SYSTEM SET pg_warp.gpu_cache_size = '1MB'")
    restart(cluster)
    try:
        make_table(cluster, data_dir, 1)
        for _ in range(2):
            same_as_postgresql(cluster, Q1)
            same_as_postgresql(cluster, Q2)
    finally:
        cluster.sql("ALTER SYSTEM RESET pg_warp.gpu_cache_size")
        restart(cluster)


def bytes_from(explain, what):
    for line in explain.splitlines():
        line = line.strip()
        if line.startswith(what + ":"):
            return int(line.split(":")[1].split()[0])
    return None


def explain_analyze(c, sql):
    r = c.run("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, settings=[ON.strip()])
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_cache_serves_and_never_serves_stale_data(cluster, data_dir):
    st = cluster.status()
    if st["engine"] != "gpu":
        pytest.skip("the service has no GPU (%s): the GPU column cache is not used; "
                    "test/gpu/gpu_aggcheck checks it on a GPU host" % st["engine_detail"])
    make_table(cluster, data_dir, 1)
    first = same_as_postgresql(cluster, Q2)
    out = explain_analyze(cluster, Q2)
    assert "Engine: GPU" in out, out
    assert bytes_from(out, "Bytes Read") == 0 and bytes_from(out, "Bytes From GPU Cache") > 0, out
    # the file replaced: new answer, nothing from the cache
    write(os.path.join(data_dir, "lo.arrow"), lineorder(20000, 2), 5000)
    time.sleep(0.01)
    second = same_as_postgresql(cluster, Q2)
    assert second != first
    # rewritten in place with the same size: still the new contents
    table = lineorder(20000, 3)
    with pa.ipc.new_file(os.path.join(data_dir, "lo.arrow"), table.schema) as w:
        for b in table.to_batches(max_chunksize=5000):
            w.write_batch(b)
    third = same_as_postgresql(cluster, Q2)
    assert third != second
