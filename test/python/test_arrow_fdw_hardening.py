"""arrow_fdw hardening (issue 9): domains, IMPORT column names, pg_type notices,
privileges of a normal role, files replaced during a scan, and files that are
not regular files (FIFO, socket, device, directory).

Runs against the cluster that scripts/test.sh starts (PGHOST, PGPORT, PGUSER in
the environment, pg_warp installed, preloaded).  Files are written into a
world-readable temporary directory (the server may run as another OS user).
Every psql call has a statement_timeout and a process timeout, so a regression
that blocks the backend fails instead of hanging.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import threading

import pyarrow as pa
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PGOPTIONS="-c statement_timeout=20s")


def psql(sql, check=True, stdin=None):
    """Runs sql (or the script on stdin) with psql; returns (rc, stdout, stderr)."""
    args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"]
    if stdin is None:
        args += ["-c", sql]
    r = subprocess.run(args, input=stdin, capture_output=True, text=True, env=ENV, timeout=60)
    if check:
        assert r.returncode == 0, r.stderr
    return r.returncode, r.stdout.strip(), r.stderr


def q(sql):
    return psql(sql)[1]


def error_of(sql):
    """(SQLSTATE, message) of the error sql raises."""
    rc, out, err = psql(sql, check=False)
    assert rc != 0, "expected an error from: " + sql
    for line in err.splitlines():
        if line.startswith("ERROR:"):
            code, msg = line[len("ERROR:"):].strip().split(":", 1)
            return code, msg.strip()
    raise AssertionError(err)


def write(path, table, chunk=None):
    with pa.ipc.new_file(path, table.schema) as w:
        for b in table.to_batches(max_chunksize=chunk or max(table.num_rows, 1)):
            w.write_batch(b)
    os.chmod(path, 0o644)


def replace_keeping_stat(src, dst):
    """Renames src over dst after giving it dst's modification time (same size assumed)."""
    st = os.stat(dst)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(src, dst)


def pg2arrow():
    tools = os.environ.get("PG_WARP_TOOLS", os.path.join(ROOT, "tools", "bin"))
    p = os.path.join(tools, "pg2arrow")
    return p if os.access(p, os.X_OK) else None


@pytest.fixture(scope="module", autouse=True)
def setup():
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    psql("DROP SCHEMA IF EXISTS fdwh CASCADE; CREATE SCHEMA fdwh")
    psql(DOMAINS)
    yield
    psql("DROP SCHEMA IF EXISTS fdwh CASCADE")


@pytest.fixture
def tmpd():
    d = tempfile.mkdtemp(prefix="pg_warp_fdwh.")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ----------------------------------------------------------------------
# 1. domains
# ----------------------------------------------------------------------
DOMAINS = """
CREATE DOMAIN fdwh.dpos AS int CHECK (VALUE > 0);
CREATE DOMAIN fdwh.dsmall AS fdwh.dpos CHECK (VALUE < 100000);
CREATE DOMAIN fdwh.dnum AS numeric(10,2) CHECK (VALUE >= 0);
CREATE DOMAIN fdwh.dtext AS text NOT NULL CHECK (length(VALUE) < 10);
CREATE DOMAIN fdwh.ddate AS date CHECK (VALUE > '2000-01-01');
CREATE DOMAIN fdwh.darr AS int[] CHECK (cardinality(VALUE) <= 3);
CREATE DOMAIN fdwh.dnn AS bigint NOT NULL;
"""


def test_domains_round_trip_equal_heap(tmpd):
    """pg2arrow exports domain columns (pg_type names the domain); IMPORT restores the
    domains; plain, parallel, filtered (statistics, row filters) scans and ANALYZE
    read what the heap table holds."""
    if pg2arrow() is None:
        pytest.fail("pg2arrow is not built (make -C tools)")
    psql("""DROP TABLE IF EXISTS fdwh.src;
        CREATE TABLE fdwh.src (i fdwh.dpos, dd fdwh.dsmall, n fdwh.dnum, s fdwh.dtext,
          d fdwh.ddate, a fdwh.darr, nn fdwh.dnn, plain int);
        INSERT INTO fdwh.src SELECT g, g % 99999 + 1, CASE WHEN g % 7 = 0 THEN NULL ELSE g / 4.0 END,
          'v' || (g % 1000), CASE WHEN g % 11 = 0 THEN NULL ELSE date '2001-01-01' + g END,
          CASE WHEN g % 5 = 0 THEN NULL ELSE ARRAY[g, g + 1] END, g * 3, g
          FROM generate_series(1, 20000) g""")
    out = os.path.join(tmpd, "dom.arrow")
    r = subprocess.run([pg2arrow(), "-t", "fdwh.src", "-o", out, "-S", "-s", "64k"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    os.chmod(out, 0o644)
    psql("DROP SCHEMA IF EXISTS fdwhi CASCADE; CREATE SCHEMA fdwhi; IMPORT FOREIGN SCHEMA src"
         " FROM SERVER arrow_fdw INTO fdwhi OPTIONS (file '%s', parallel_workers '2')" % out)
    types = q("SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum)"
              " FROM pg_attribute WHERE attrelid = 'fdwhi.src'::regclass AND attnum > 0")
    assert types == ("fdwh.dpos,fdwh.dsmall,fdwh.dnum,fdwh.dtext,fdwh.ddate,fdwh.darr,"
                     "fdwh.dnn,integer"), types
    assert int(q("SELECT count(*) FROM fdwhi.src")) == 20000
    for where in ["true", "i BETWEEN 100 AND 300", "i::int >= 19990", "plain < 50",
                  "dd = 77", "n > 100", "d < '2001-02-01'", "s = 'v7'"]:
        for par in ["", "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
                        "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; "]:
            diff = q(par + "SELECT count(*) FROM ((SELECT * FROM fdwh.src WHERE %s EXCEPT ALL "
                     "SELECT * FROM fdwhi.src WHERE %s) UNION ALL (SELECT * FROM fdwhi.src WHERE %s "
                     "EXCEPT ALL SELECT * FROM fdwh.src WHERE %s)) x" % ((where,) * 4))
            assert diff == "0", where
    plan = q("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
             " SET max_parallel_workers_per_gather = 2; EXPLAIN (COSTS OFF) SELECT sum(n) FROM fdwhi.src")
    assert "Parallel Foreign Scan" in plan, plan
    # statistics of domain columns skip batches (compared as the base type)
    plan = q("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM fdwhi.src"
             " WHERE i BETWEEN 100 AND 300 AND d < '2001-10-01'")
    skipped = [int(line.split(":")[1]) for line in plan.splitlines() if "Batches Skipped" in line]
    assert skipped and skipped[0] > 0 and "Stats Conditions: ((i)::integer >= 100)" in plan, plan
    psql("ANALYZE fdwhi.src")
    assert q("SELECT count(*) FROM pg_stats WHERE schemaname = 'fdwhi' AND tablename = 'src'") == "8"


def domain_case(tmpd, name, arrow_array, domain):
    path = os.path.join(tmpd, name + ".arrow")
    write(path, pa.table({"v": arrow_array}), chunk=2)
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.%s; CREATE FOREIGN TABLE fdwh.%s (v %s)"
         " SERVER arrow_fdw OPTIONS (file '%s')" % (name, name, domain, path))


@pytest.mark.parametrize("name,arr,domain,bad", [
    ("int_check", pa.array([3, 1, -4, 2], pa.int32()), "fdwh.dpos", "-4"),
    ("int_over_domain", pa.array([3, 100000], pa.int32()), "fdwh.dsmall", "100000"),
    ("int_inner_domain", pa.array([3, 0], pa.int32()), "fdwh.dsmall", "0"),
    ("num_check", pa.array([1, -2], pa.decimal128(10, 2)), "fdwh.dnum", "-2"),
    ("text_check", pa.array(["ok", "far too long"]), "fdwh.dtext", "'far too long'"),
    ("text_null", pa.array(["ok", None]), "fdwh.dtext", "NULL"),
    ("dict_null", pa.array(["ok", None, "ok"]).dictionary_encode(), "fdwh.dtext", "NULL"),
    ("date_check", pa.array([20000, 1], pa.date32()), "fdwh.ddate", "'1970-01-02'"),
    ("arr_check", pa.array([[1], [1, 2, 3, 4]], pa.list_(pa.int32())), "fdwh.darr", "'{1,2,3,4}'"),
    ("int8_null", pa.array([1, None], pa.int64()), "fdwh.dnn", "NULL"),
])
def test_domain_violations_as_heap(tmpd, name, arr, domain, bad):
    """A value its domain refuses is PostgreSQL's own error (23514 or 23502, the same
    message as an INSERT into a heap table), in plain and parallel scans and in
    ANALYZE; the rows before it read normally."""
    domain_case(tmpd, name, arr, domain)
    psql("DROP TABLE IF EXISTS fdwh.heap_%s; CREATE TABLE fdwh.heap_%s (v %s)" % (name, name, domain))
    want = error_of("INSERT INTO fdwh.heap_%s VALUES (%s)" % (name, bad))
    assert want[0] in ("23514", "23502"), want
    assert error_of("SELECT * FROM fdwh.%s" % name) == want
    assert error_of("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
                    "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; "
                    "SELECT count(v) FROM fdwh.%s" % name) == want
    assert error_of("ANALYZE fdwh.%s" % name) == want
    assert q("SELECT count(*) FROM (SELECT v FROM fdwh.%s LIMIT 1) x" % name) == "1"
    assert q("SELECT 1") == "1"


def test_domain_values_pass(tmpd):
    """Values their domains accept, NULLs where allowed, equal to the heap table."""
    path = os.path.join(tmpd, "ok.arrow")
    t = pa.table({"i": pa.array([1, None, 7], pa.int32()),
                  "n": pa.array([0, 2, None], pa.decimal128(10, 2)),
                  "s": pa.array(["a", "bb", "ccc"]),
                  "d": pa.array([20000, None, 11000], pa.date32()),
                  "a": pa.array([[1, 2], None, []], pa.list_(pa.int32()))})
    write(path, t, chunk=2)
    psql("CREATE FOREIGN TABLE fdwh.ok (i fdwh.dsmall, n fdwh.dnum, s fdwh.dtext, d fdwh.ddate,"
         " a fdwh.darr) SERVER arrow_fdw OPTIONS (file '%s');"
         "CREATE TABLE fdwh.ok_heap (i fdwh.dsmall, n fdwh.dnum, s fdwh.dtext, d fdwh.ddate, a fdwh.darr);"
         "INSERT INTO fdwh.ok_heap VALUES (1, 0, 'a', '2024-10-04', '{1,2}'),"
         " (NULL, 2, 'bb', NULL, NULL), (7, NULL, 'ccc', '2000-02-13', '{}')" % path)
    assert q("SELECT * FROM fdwh.ok") == q("SELECT * FROM fdwh.ok_heap")
    assert q("SELECT i FROM fdwh.ok WHERE i = 7") == "7"
    psql("ANALYZE fdwh.ok")


# ----------------------------------------------------------------------
# 4. IMPORT column names
# ----------------------------------------------------------------------
def test_import_gives_unique_valid_names(tmpd):
    long_x, long_y = "a" * 70 + "x", "a" * 70 + "y"
    names = ["", long_x, long_y, "ctid", "xmin", "xmax", "cmin", "cmax", "oid", "tableoid",
             "ctid_1", "é" * 40, "field_1", "ok"]
    path = os.path.join(tmpd, "names.arrow")
    write(path, pa.table([pa.array([i], pa.int32()) for i in range(len(names))],
                         schema=pa.schema([pa.field(n, pa.int32()) for n in names])))
    rc, out, err = psql("DROP SCHEMA IF EXISTS fdwn CASCADE; CREATE SCHEMA fdwn;"
                        "IMPORT FOREIGN SCHEMA t FROM SERVER arrow_fdw INTO fdwn OPTIONS (file '%s')" % path)
    cols = q("SELECT attname, coalesce(array_to_string(attfdwoptions, ','), '') FROM pg_attribute"
             " WHERE attrelid = 'fdwn.t'::regclass AND attnum > 0 ORDER BY attnum").splitlines()
    got = [c.split("|") for c in cols]
    colnames = [g[0] for g in got]
    assert len(set(colnames)) == len(names)
    assert all(len(c.encode()) <= 63 for c in colnames)
    assert colnames[0] == "field_1_1" and colnames[12] == "field_1"   # field_1 keeps its name
    assert colnames[3] == "ctid_2" and colnames[10] == "ctid_1"
    assert colnames[1] == long_x[:63] and colnames[2] == long_x[:61] + "_1"
    assert colnames[11] == "é" * 31
    assert colnames[8] == "oid" and colnames[13] == "ok"
    for g, n in zip(got, names):
        if g[0] != n:
            assert g[1] == "field=" + n, (g, n)
            assert 'Arrow field "%s" of file' % n in err and 'becomes column "%s"' % g[0] in err
        else:
            assert g[1] == ""
    assert err.count("becomes column") == 10, err
    row = q("SELECT * FROM fdwn.t").split("|")
    assert row == [str(i) for i in range(len(names))]
    psql("DROP SCHEMA fdwn CASCADE")


def test_duplicate_field_names_refused(tmpd):
    path = os.path.join(tmpd, "dup.arrow")
    write(path, pa.table([pa.array([1]), pa.array([2]), pa.array([3])],
                         schema=pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.int64()),
                                           pa.field("a", pa.int64())])))
    psql("DROP SCHEMA IF EXISTS fdwn CASCADE; CREATE SCHEMA fdwn")
    code, msg = error_of("IMPORT FOREIGN SCHEMA t FROM SERVER arrow_fdw INTO fdwn OPTIONS (file '%s')" % path)
    assert code == "HV021" and 'more than one field named "a"' in msg, msg
    code, msg = error_of("CREATE FOREIGN TABLE fdwn.t (a int8) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    assert code == "HV021", msg
    # a column that maps to a unique field is fine
    psql("CREATE FOREIGN TABLE fdwn.t (b int8) SERVER arrow_fdw OPTIONS (file '%s')" % path)
    assert q("SELECT b FROM fdwn.t") == "2"
    psql("DROP SCHEMA fdwn CASCADE")


def test_bad_pg_type_is_one_notice(tmpd):
    path = os.path.join(tmpd, "pgt.arrow")
    sch = pa.schema([pa.field("ts", pa.timestamp("us"), metadata={"pg_type": "timestamp(20)"}),
                     pa.field("x", pa.int64(), metadata={"pg_type": "no_such_type"}),
                     pa.field("z", pa.int16(), metadata={"pg_type": "int4 int4"})])
    write(path, pa.table([pa.array([0], pa.timestamp("us")), pa.array([2]), pa.array([3], pa.int16())],
                         schema=sch))
    rc, out, err = psql("DROP SCHEMA IF EXISTS fdwn CASCADE; CREATE SCHEMA fdwn; IMPORT FOREIGN SCHEMA t"
                        " FROM SERVER arrow_fdw INTO fdwn OPTIONS (file '%s')" % path)
    assert "WARNING" not in err, err
    assert err.count(": pg_type metadata") == 3, err
    for f in ("ts", "x", "z"):
        assert 'Arrow field "%s": pg_type metadata' % f in err, err
    assert q("SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute"
             " WHERE attrelid = 'fdwn.t'::regclass AND attnum > 0") == \
        "timestamp without time zone,bigint,smallint"
    psql("DROP SCHEMA fdwn CASCADE")


# ----------------------------------------------------------------------
# 8. privileges
# ----------------------------------------------------------------------
def test_normal_role_privileges(tmpd):
    path = os.path.join(tmpd, "p.arrow")
    write(path, pa.table({"x": pa.array([1, 2], pa.int64())}))
    psql("DROP ROLE IF EXISTS pgwarp_plain; CREATE ROLE pgwarp_plain")
    try:
        assert q("SET ROLE pgwarp_plain; SELECT pgwarp.version() = (SELECT extversion FROM pg_extension"
                 " WHERE extname = 'pg_warp'), pgwarp.preloaded()") == "t|t"
        q("SET ROLE pgwarp_plain; SELECT count(*) FROM pgwarp.gpu_devices()")
        assert error_of("SET ROLE pgwarp_plain; SELECT * FROM pgwarp.gpu_selftest()")[0] == "42501"
        # naming files needs pg_read_server_files
        psql("GRANT USAGE ON FOREIGN SERVER arrow_fdw TO pgwarp_plain; GRANT USAGE, CREATE ON SCHEMA fdwh TO pgwarp_plain")
        code, msg = error_of("SET ROLE pgwarp_plain; CREATE FOREIGN TABLE fdwh.pp (x int8) SERVER arrow_fdw"
                             " OPTIONS (file '%s')" % path)
        assert code == "42501" and 'permission denied to set option "file"' in msg, msg
        # a table made by a superuser and granted can be read
        psql("CREATE FOREIGN TABLE fdwh.pt (x int8) SERVER arrow_fdw OPTIONS (file '%s');"
             "GRANT SELECT ON fdwh.pt TO pgwarp_plain" % path)
        assert q("SET ROLE pgwarp_plain; SELECT sum(x) FROM fdwh.pt") == "3"
    finally:
        psql("DROP FOREIGN TABLE IF EXISTS fdwh.pt; REVOKE ALL ON SCHEMA fdwh FROM pgwarp_plain;"
             "REVOKE ALL ON FOREIGN SERVER arrow_fdw FROM pgwarp_plain; DROP ROLE pgwarp_plain")


# ----------------------------------------------------------------------
# 5. a file replaced while a query uses it
# ----------------------------------------------------------------------
def two_versions(tmpd, name, n=40, chunk=4):
    """dst with values 0..n-1, and new with n..2n-1: same size and schema."""
    dst = os.path.join(tmpd, name)
    new = os.path.join(tmpd, name + ".new")
    write(dst, pa.table({"x": pa.array(range(n), pa.int64())}), chunk=chunk)
    write(new, pa.table({"x": pa.array(range(n, 2 * n), pa.int64())}), chunk=chunk)
    assert os.path.getsize(dst) == os.path.getsize(new)
    return dst, new


def test_replaced_between_planning_and_execution(tmpd):
    dst, new = two_versions(tmpd, "r.arrow")
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.r; CREATE FOREIGN TABLE fdwh.r (x int8)"
         " SERVER arrow_fdw OPTIONS (file '%s')" % dst)
    script = ("SET plan_cache_mode = force_generic_plan;\n"
              "PREPARE p AS SELECT sum(x) FROM fdwh.r;\n"
              "EXECUTE p;\n"
              "\\! python3 -c \"import os; st = os.stat('%s'); os.utime('%s', ns=(st.st_atime_ns, "
              "st.st_mtime_ns)); os.replace('%s', '%s')\"\n"
              "EXECUTE p;\n" % (dst, new, new, dst))
    r = subprocess.run(["psql", "-XAtq", "-v", "VERBOSITY=verbose"], input=script,
                       capture_output=True, text=True, env=ENV, timeout=60)
    assert r.stdout.strip().splitlines() == [str(sum(range(40)))], (r.stdout, r.stderr)
    assert "55000" in r.stderr and 'file "%s" changed during scan' % dst in r.stderr, r.stderr
    assert q("SELECT sum(x) FROM fdwh.r") == str(sum(range(40, 80)))


def test_replaced_during_cursor_scan(tmpd):
    """A cursor reads file a, then b is replaced: never a mix of old a and new b."""
    a = os.path.join(tmpd, "a.arrow")
    write(a, pa.table({"x": pa.array(range(1000, 1040), pa.int64())}), chunk=4)
    b, bnew = two_versions(tmpd, "b.arrow")
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.c; CREATE FOREIGN TABLE fdwh.c (x int8)"
         " SERVER arrow_fdw OPTIONS (files '%s,%s')" % (a, b))
    script = ("BEGIN;\n"
              "DECLARE c NO SCROLL CURSOR FOR SELECT x FROM fdwh.c;\n"
              "FETCH 5 FROM c;\n"
              "\\! python3 -c \"import os; st = os.stat('%s'); os.utime('%s', ns=(st.st_atime_ns, "
              "st.st_mtime_ns)); os.replace('%s', '%s')\"\n"
              "FETCH ALL FROM c;\n"
              "COMMIT;\n" % (b, bnew, bnew, b))
    r = subprocess.run(["psql", "-XAtq", "-v", "VERBOSITY=verbose"], input=script,
                       capture_output=True, text=True, env=ENV, timeout=60)
    rows = [int(x) for x in r.stdout.split()]
    assert not any(40 <= v < 80 for v in rows), "rows of the new file mixed in: %s" % rows
    assert "55000" in r.stderr and 'file "%s" changed during scan' % b in r.stderr, r.stderr


def test_replaced_during_parallel_scans(tmpd):
    """Files renamed over the table's file again and again while parallel scans run:
    every scan sees exactly one version, or fails with 55000 (today's main mixes
    batches of both versions when the leader and the workers open different ones)."""
    n = 400000
    dst, _ = two_versions(tmpd, "p.arrow", n=n, chunk=5000)
    versions = []
    for k in range(2):
        p = os.path.join(tmpd, "v%d" % k)
        write(p, pa.table({"x": pa.array(range(k * n, (k + 1) * n), pa.int64())}), chunk=5000)
        versions.append(p)
    sums = {str(sum(range(0, n))), str(sum(range(n, 2 * n)))}
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.p; CREATE FOREIGN TABLE fdwh.p (x int8)"
         " SERVER arrow_fdw OPTIONS (file '%s', parallel_workers '3')" % dst)
    stop = threading.Event()

    def flipper():
        k = 0
        mtime = os.stat(dst).st_mtime_ns
        while not stop.is_set():
            tmp = dst + ".tmp"
            shutil.copyfile(versions[k % 2], tmp)
            os.chmod(tmp, 0o644)
            os.utime(tmp, ns=(mtime, mtime))
            os.replace(tmp, dst)
            k += 1

    th = threading.Thread(target=flipper)
    th.start()
    script = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;\n"
              "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 3;\n"
              "\\set ON_ERROR_STOP 0\n" + "SELECT sum(x) FROM fdwh.p;\n" * 60)
    try:
        r = subprocess.run(["psql", "-XAtq", "-v", "VERBOSITY=verbose"], input=script,
                           capture_output=True, text=True, env=ENV, timeout=120)
    finally:
        stop.set()
        th.join()
    for line in r.stdout.split():
        assert line in sums, "a scan mixed two files: sum %s" % line
    for line in r.stderr.splitlines():
        if line.startswith("ERROR:"):
            assert "55000" in line and "changed during scan" in line, r.stderr
    plan = q("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
             " SET max_parallel_workers_per_gather = 3; EXPLAIN (COSTS OFF) SELECT sum(x) FROM fdwh.p")
    assert "Parallel Foreign Scan" in plan, plan


# ----------------------------------------------------------------------
# 6. FIFOs, sockets, devices, directories
# ----------------------------------------------------------------------
@pytest.fixture
def specials(tmpd):
    fifo = os.path.join(tmpd, "fifo.arrow")
    os.mkfifo(fifo)
    os.chmod(fifo, 0o666)
    sock_path = os.path.join(tmpd, "sock.arrow")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sock_path)
    os.chmod(sock_path, 0o666)
    sub = os.path.join(tmpd, "sub.arrow")
    os.mkdir(sub)
    yield {"fifo": fifo, "socket": sock_path, "device": "/dev/null", "directory": sub}
    s.close()


KIND_WORDS = {"fifo": "named pipe", "socket": "socket", "device": "character device",
              "directory": "is a directory"}


def check_refused(sql, kind, path):
    code, msg = error_of(sql)
    assert code == "42809", (sql, code, msg)
    assert path in msg
    rc, out, err = psql(sql, check=False)
    assert KIND_WORDS[kind] in err, err


@pytest.mark.parametrize("kind", ["fifo", "socket", "device", "directory"])
def test_not_regular_file_refused_everywhere(tmpd, specials, kind):
    path = specials[kind]
    good = os.path.join(tmpd, "good.arrow")
    write(good, pa.table({"x": pa.array([1, 2], pa.int64())}))
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.s")
    # CREATE (file and files)
    check_refused("CREATE FOREIGN TABLE fdwh.s (x int8) SERVER arrow_fdw OPTIONS (file '%s')" % path,
                  kind, path)
    check_refused("CREATE FOREIGN TABLE fdwh.s (x int8) SERVER arrow_fdw OPTIONS (files '%s, %s')"
                  % (good, path), kind, path)
    # ALTER
    psql("CREATE FOREIGN TABLE fdwh.s (x int8) SERVER arrow_fdw OPTIONS (file '%s')" % good)
    check_refused("ALTER FOREIGN TABLE fdwh.s OPTIONS (SET file '%s')" % path, kind, path)
    # IMPORT
    check_refused("IMPORT FOREIGN SCHEMA x FROM SERVER arrow_fdw INTO fdwh OPTIONS (file '%s')" % path,
                  kind, path)
    # scan time: the file became a FIFO (socket, ...) after CREATE
    os.replace(good, good + ".old")
    if kind == "directory":
        os.rename(path, good)
    else:
        os.symlink(path, good)
    check_refused("SELECT * FROM fdwh.s", kind, good)
    assert q("SELECT 1") == "1"


def test_dir_skips_special_and_work_files(tmpd, specials):
    """A "dir" table reads only regular files: FIFOs, sockets, directories and
    pg2arrow's FILE.pg2arrow-PID.tmp and FILE.pg2arrow-journal are left out."""
    d = tmpd
    write(os.path.join(d, "a.arrow"), pa.table({"x": pa.array([1, 2], pa.int64())}))
    write(os.path.join(d, "b.arrow.pg2arrow-1234.tmp"), pa.table({"x": pa.array([100], pa.int64())}))
    with open(os.path.join(d, "b.arrow.pg2arrow-journal"), "wb") as f:
        f.write(b"journal")
    os.chmod(os.path.join(d, "b.arrow.pg2arrow-journal"), 0o644)
    # a name that only looks similar is read
    write(os.path.join(d, "c.pg2arrow-x.tmp"), pa.table({"x": pa.array([10], pa.int64())}))
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.d; CREATE FOREIGN TABLE fdwh.d (x int8)"
         " SERVER arrow_fdw OPTIONS (dir '%s')" % d)
    assert q("SELECT sum(x) FROM fdwh.d") == "13"
    psql("DROP SCHEMA IF EXISTS fdwi CASCADE; CREATE SCHEMA fdwi; IMPORT FOREIGN SCHEMA x FROM SERVER"
         " arrow_fdw INTO fdwi OPTIONS (dir '%s', per_file 'true')" % d)
    assert q("SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace ="
             " 'fdwi'::regnamespace") == "a,c.pg2arrow-x"
    psql("DROP SCHEMA fdwi CASCADE")


def test_csv_given_as_arrow_says_not_arrow(tmpd):
    """Issue 27, item 9: a CSV file given as Arrow is 'not an Arrow IPC file'
    (XX001, as every bad file), quoting its first bytes, with a hint; not
    '1701667186 bytes of metadata'.  Same at scan time and for IMPORT."""
    csv = os.path.join(tmpd, "data.csv")
    with open(csv, "w") as f:
        f.write("name,value\nalpha,1\nbeta,2\n")
    os.chmod(csv, 0o644)
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.c")
    for sql in ["CREATE FOREIGN TABLE fdwh.c (a int) SERVER arrow_fdw OPTIONS (file '%s')" % csv,
                "IMPORT FOREIGN SCHEMA x FROM SERVER arrow_fdw INTO fdwh OPTIONS (file '%s')" % csv]:
        code, msg = error_of(sql)
        assert code == "XX001", (code, msg)
        assert csv in msg and 'not an Arrow IPC file: it starts with "name,val"' in msg, msg
        assert "metadata" not in msg, msg
        assert "convert CSV" in psql(sql, check=False)[2]
    good = os.path.join(tmpd, "good.arrow")
    write(good, pa.table({"a": pa.array([1, 2], pa.int32())}))
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.c; CREATE FOREIGN TABLE fdwh.c (a int)"
         " SERVER arrow_fdw OPTIONS (file '%s')" % good)
    os.replace(csv, good)
    code, msg = error_of("SELECT * FROM fdwh.c")
    assert code == "XX001" and "not an Arrow IPC file" in msg, (code, msg)


# ----------------------------------------------------------------------
# symbolic links in a "dir" table (issue 27, item 14)
# ----------------------------------------------------------------------
def cluster_os_user():
    """(uid, gid) of the OS user the server runs as, when we may chown to it."""
    import pwd
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(os.environ.get("PG_WARP_OSUSER", "pgwarp"))
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


@pytest.fixture
def drop_dir(tmpd):
    """
    A world-writable directory D with a.arrow (x = 1), a link to it
    (latest.arrow), a file in a subdirectory (sub/inner.arrow, x = 100) and a
    link to that; outside D, secret.arrow (x = 1000), the server's own and
    readable by nobody else, with links to it planted in D (absolute and
    relative), as another OS user could.
    """
    d = os.path.join(tmpd, "drop")
    os.mkdir(d)
    os.chmod(d, 0o1777)
    write(os.path.join(d, "a.arrow"), pa.table({"x": pa.array([1], pa.int64())}))
    os.symlink("a.arrow", os.path.join(d, "latest.arrow"))
    os.mkdir(os.path.join(d, "sub"))
    write(os.path.join(d, "sub", "inner.arrow"), pa.table({"x": pa.array([100], pa.int64())}))
    os.symlink(os.path.join(d, "sub", "inner.arrow"), os.path.join(d, "in_sub.arrow"))
    secret_dir = os.path.join(tmpd, "private")
    os.mkdir(secret_dir)
    secret = os.path.join(secret_dir, "secret.arrow")
    write(secret, pa.table({"x": pa.array([1000], pa.int64())}))
    owner = cluster_os_user()
    if owner:
        os.chown(secret, *owner)
        os.chmod(secret, 0o600)
    os.symlink(secret, os.path.join(d, "planted.arrow"))
    os.symlink("../private/secret.arrow", os.path.join(d, "planted_rel.arrow"))
    return d, secret


def test_dir_follows_links_only_within(tmpd, drop_dir):
    d, secret = drop_dir
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.dl; CREATE FOREIGN TABLE fdwh.dl (x int8)"
         " SERVER arrow_fdw OPTIONS (dir '%s')" % d)
    # a.arrow and latest.arrow (a link within D); nothing outside D or below it
    assert q("SET max_parallel_workers_per_gather = 0; SELECT sum(x), count(*) FROM fdwh.dl") == "2|2"
    assert q("SELECT sum(x) FROM fdwh.dl") == "2"       # parallel plans alike
    psql("DROP SCHEMA IF EXISTS fdwl CASCADE; CREATE SCHEMA fdwl; IMPORT FOREIGN SCHEMA x FROM SERVER"
         " arrow_fdw INTO fdwl OPTIONS (dir '%s', per_file 'true')" % d)
    assert q("SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace ="
             " 'fdwl'::regnamespace") == "a,latest"
    psql("DROP SCHEMA fdwl CASCADE")
    # the table's owner may choose to follow every link
    psql("ALTER FOREIGN TABLE fdwh.dl OPTIONS (ADD follow_symlinks 'true')")
    assert q("SELECT sum(x) FROM fdwh.dl") == "2102"
    code, msg = error_of("ALTER FOREIGN TABLE fdwh.dl OPTIONS (SET follow_symlinks 'maybe')")
    assert code == "HV024", (code, msg)
    code, msg = error_of("CREATE FOREIGN TABLE fdwh.dl2 (x int8) SERVER arrow_fdw"
                         " OPTIONS (file '%s/a.arrow', follow_symlinks 'true')" % d)
    assert code == "HV00D" and "needs the option \"dir\"" in msg, (code, msg)


def test_dir_link_swapped_after_planning(tmpd, drop_dir):
    """A file listed at planning that is a link out of D when the plan runs
    is refused, never read (the check is made again where the file is opened)."""
    d, secret = drop_dir
    a = os.path.join(d, "a.arrow")
    psql("DROP FOREIGN TABLE IF EXISTS fdwh.ds; CREATE FOREIGN TABLE fdwh.ds (x int8)"
         " SERVER arrow_fdw OPTIONS (dir '%s', pattern 'a.arrow')" % d)
    script = ("SET plan_cache_mode = force_generic_plan;\n"
              "SET max_parallel_workers_per_gather = 0;\n"
              "PREPARE p AS SELECT sum(x) FROM fdwh.ds;\n"
              "EXECUTE p;\n"
              "\\! python3 -c \"import os; os.replace('%s', '%s.old'); os.symlink('%s', '%s')\"\n"
              "EXECUTE p;\n" % (a, a, secret, a))
    r = subprocess.run(["psql", "-XAtq", "-v", "VERBOSITY=verbose"], input=script,
                       capture_output=True, text=True, env=ENV, timeout=60)
    assert r.stdout.strip().splitlines() == ["1"], (r.stdout, r.stderr)
    assert "42501" in r.stderr and 'lies outside directory' in r.stderr, r.stderr
    assert q("SELECT count(*) FROM fdwh.ds") == "0"
