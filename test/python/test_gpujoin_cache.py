"""GpuJoin's inner tables kept by the service for later queries
(src/engine/gpu_join_cache.c, src/service/join_store.c).

A join depth whose relation did not change since an earlier query read the
same rows probes the table that query built; any change of a tuple (insert,
update, delete, truncate, rewrite), in this transaction, committed or still
running elsewhere, must make the next query read the relation again.  Rows
that depend on more than the relation (a stable function, a prepared
statement's parameter) and relations whose changes leave no trace in the
visibility map's LSNs (unlogged tables) are never kept.  An arrow_fdw
dimension is kept while the files it reads are the same files, unchanged
(their list and each one's identity): a file replaced, rewritten in place or
renamed to, or a file the table's directory gains, must make the next query
read it again.  Every answer is
compared with PostgreSQL's (pg_warp off), and each test says whether the
depth was built or found (EXPLAIN ANALYZE's Join Depth line).
"""
import os
import shutil
import subprocess
import tempfile

import pyarrow as pa
import pytest

from engine_edge import write
from pg_sql import DB, OFF, ON, Cluster, find_nodes, show, wait_until
from pg_sql import psql as pg_psql

NODE = "GpuPreAgg"
KEPT = "kept from an earlier query"
N = 20000

SQL = ("SELECT d.grp, count(*), sum(f.v), max(d.name) FROM gjc.fact f, gjc.dim d "
       "WHERE f.k = d.k AND d.name <> 'none' GROUP BY d.grp")


def fact_table(n):
    k = [None if i % 97 == 0 else (i * 7) % (n + 500) for i in range(n)]
    return pa.table({"k": pa.array(k, pa.int32()), "v": pa.array(list(range(n)), pa.int32())})


DIM = """
DROP TABLE IF EXISTS gjc.dim;
CREATE TABLE gjc.dim (k int4 PRIMARY KEY, grp int4, name text);
INSERT INTO gjc.dim SELECT i, i %% 13, 'name ' || i FROM generate_series(1, %d) i
""" % N


def vacuum(table="gjc.dim", db=None):
    """VACUUM (FREEZE, ANALYZE) table: every block all-visible (VACUUM runs
    outside a transaction block: a psql command of its own).  A checkpoint
    first flushes the WAL past the table's changes: with synchronous_commit
    off (the benchmark cluster's setting) their commits may not be flushed
    yet, and VACUUM can then neither set the rows' hint bits nor mark a page
    all-visible."""
    run = db.sql if db else pg_psql
    run("CHECKPOINT")
    run("VACUUM (FREEZE, ANALYZE) %s" % table)


@pytest.fixture(scope="module", autouse=True)
def tables():
    d = tempfile.mkdtemp(prefix="pg_warp_gjc.")
    os.chmod(d, 0o755)
    write(os.path.join(d, "fact.arrow"), fact_table(N), 4000)
    pg_psql("CREATE EXTENSION IF NOT EXISTS pg_warp")
    pg_psql("DROP SCHEMA IF EXISTS gjc CASCADE; CREATE SCHEMA gjc")
    pg_psql("CREATE FOREIGN TABLE gjc.fact (k int4, v int4) SERVER arrow_fdw "
            "OPTIONS (file '%s/fact.arrow')" % d)
    yield d
    pg_psql("DROP SCHEMA IF EXISTS gjc CASCADE")
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(autouse=True)
def fresh_dim():
    """each test starts from its own all-visible dimension (a new relation:
    nothing an earlier test kept matches it)"""
    pg_psql(DIM)
    vacuum()


def depth(sql=SQL, settings=(), db=DB):
    """the Join Depth 1 line of the GpuPreAgg that ran sql (EXPLAIN ANALYZE,
    which executes it: a build here may keep the table)"""
    top = db.engine_ran(sql, NODE, tuple(ON) + tuple(settings))
    line = find_nodes(top, NODE)[0]["Join Depth 1"]
    assert "inner rows" in line, show(top)
    return line


def same(sql=SQL, settings=()):
    """pg_warp's answer is PostgreSQL's"""
    on = DB.result(sql, tuple(ON) + tuple(settings))
    off = DB.result(sql, tuple(OFF) + tuple(settings))
    assert on[0] == "ok" and sorted(on[1].splitlines()) == sorted(off[1].splitlines()), (on, off)


def test_kept_and_found():
    assert KEPT not in depth()
    line = depth()
    assert KEPT in line, line
    same()
    assert KEPT in depth()


def test_drop_lets_go_of_kept_tables():
    """pgwarp.gpu_cache_drop() lets go of the kept tables without a service
    restart: the next query builds its depth again (and keeps it again)."""
    depth()
    assert KEPT in depth()
    r = DB.sql("SELECT join_tables >= 1, join_bytes > 0, column_bytes >= 0 "
               "FROM pgwarp.gpu_cache_drop()")
    assert r == "t|t|t", r
    assert KEPT not in depth()
    same()
    assert KEPT in depth()
    # nothing kept: nothing to let go of
    pg_psql("SELECT pgwarp.gpu_cache_drop()")
    r = DB.sql("SELECT join_tables, join_bytes FROM pgwarp.gpu_cache_drop()")
    assert r == "0|0", r


def test_insert_reads_again():
    depth()
    assert KEPT in depth()
    pg_psql("INSERT INTO gjc.dim VALUES (%d, 99, 'new')" % (N + 7))
    assert KEPT not in depth()          # a block is not all-visible: built, not kept
    same()
    assert KEPT not in depth()
    vacuum()
    assert KEPT not in depth()          # all-visible again: built and kept
    assert KEPT in depth()
    same()


@pytest.mark.parametrize("change", [
    "UPDATE gjc.dim SET grp = grp + 100 WHERE k % 10 = 3",
    "DELETE FROM gjc.dim WHERE k % 4 = 1",
    "UPDATE gjc.dim SET name = 'none' WHERE k < 5000",
    "TRUNCATE gjc.dim; INSERT INTO gjc.dim SELECT i, i % 5, 'again ' || i "
    "FROM generate_series(1, 300) i",
    "ALTER TABLE gjc.dim ALTER COLUMN name TYPE varchar(40)",
])
def test_change_and_vacuum_reads_again(change):
    """a change that VACUUM has made all-visible again: the map page's LSN
    (or the relation's file) is not the kept table's"""
    depth()
    assert KEPT in depth()
    pg_psql(change)
    vacuum()
    assert KEPT not in depth()
    same()
    assert KEPT in depth()


def test_own_uncommitted_change():
    """a change of this transaction: its own rows, not the kept ones"""
    depth()
    assert KEPT in depth()
    sql = "SELECT * FROM (%s) q ORDER BY 1" % SQL
    on = DB.result(sql, tuple(ON) + ("BEGIN", "UPDATE gjc.dim SET grp = -1 WHERE k < 100"))
    off = DB.result(sql, tuple(OFF) + ("BEGIN", "UPDATE gjc.dim SET grp = -1 WHERE k < 100"))
    assert on == off and "-1|" in on[1], (on, off)
    # rolled back, but its blocks are not all-visible until VACUUM: read again
    assert KEPT not in depth()
    same()


def test_uncommitted_change_of_another_session():
    """another session's running transaction changed the relation: this
    query's snapshot does not see it, and the kept table is not used (its
    block is not all-visible); once committed and vacuumed, the new rows"""
    depth()
    assert KEPT in depth()
    other = subprocess.Popen(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        other.stdin.write("BEGIN;\nUPDATE gjc.dim SET grp = 500 WHERE k % 2 = 0;\n"
                          "SELECT 'updated';\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "updated"
        assert KEPT not in depth()
        same()
        other.stdin.write("COMMIT;\n")
        other.stdin.close()
        assert other.wait(timeout=60) == 0, other.stderr.read()
    finally:
        if other.poll() is None:
            other.kill()
    same()
    assert "500|" in DB.sql(SQL, ON)
    vacuum()
    depth()
    assert KEPT in depth()
    same()


def test_not_all_visible_never_kept():
    pg_psql("DROP TABLE gjc.dim; CREATE TABLE gjc.dim (k int4 PRIMARY KEY, grp int4, name text); "
            "INSERT INTO gjc.dim SELECT i, i % 3, 'n' || i FROM generate_series(1, 500) i")
    assert KEPT not in depth()
    assert KEPT not in depth()
    same()


@pytest.mark.parametrize("clause", [
    # a stable function: its value is the session's, not the rows'
    "d.name < current_setting('application_name') || 'zzz'",
    "d.grp::text < to_char(now(), 'YYYY')",
])
def test_rows_beyond_the_relation_never_kept(clause):
    sql = SQL.replace("d.name <> 'none'", clause)
    assert KEPT not in depth(sql)
    assert KEPT not in depth(sql)
    same(sql)


def test_replaced_function_never_kept():
    """an IMMUTABLE plpgsql function in the filter: CREATE OR REPLACE may
    change its body under the same OID, so its rows are never kept (a
    reviewer's find: the old body's rows came back)"""
    pg_psql("CREATE OR REPLACE FUNCTION gjc.keep(v int4) RETURNS bool LANGUAGE plpgsql "
            "IMMUTABLE AS 'BEGIN RETURN v > 3; END'")
    sql = SQL.replace("d.name <> 'none'", "gjc.keep(d.grp)")
    depth(sql)
    assert KEPT not in depth(sql)
    same(sql)
    pg_psql("CREATE OR REPLACE FUNCTION gjc.keep(v int4) RETURNS bool LANGUAGE plpgsql "
            "IMMUTABLE AS 'BEGIN RETURN v <= 3; END'")
    assert KEPT not in depth(sql)
    same(sql)


def test_prepared_statement_parameter():
    """a generic plan's $1 in the dimension's filter: each execution its own rows"""
    prep = ("SET plan_cache_mode = force_generic_plan",
            "PREPARE q(int) AS SELECT d.grp, count(*), sum(f.v) FROM gjc.fact f, gjc.dim d "
            "WHERE f.k = d.k AND d.grp < $1 GROUP BY d.grp")
    for n in (3, 7, 3, 11):
        sql = "EXECUTE q(%d)" % n
        on = DB.result(sql, tuple(ON) + prep)
        off = DB.result(sql, tuple(OFF) + prep)
        assert on[0] == "ok" and sorted(on[1].splitlines()) == sorted(off[1].splitlines())
        assert len(on[1].splitlines()) == n
    top = DB.plan("EXECUTE q(5)", tuple(ON) + prep, analyze=True)
    line = find_nodes(top, NODE)[0]["Join Depth 1"]
    assert KEPT not in line, show(top)


def test_unlogged_never_kept():
    pg_psql("ALTER TABLE gjc.dim SET UNLOGGED")
    vacuum()
    assert KEPT not in depth()
    assert KEPT not in depth()
    same()


def test_setting_off():
    depth()
    assert KEPT in depth()
    assert KEPT not in depth(settings=("SET pg_warp.gpujoin_cache = off",))


def test_privileges_are_the_querys_own():
    """a kept table does not let a role without SELECT on the dimension read it"""
    depth()
    assert KEPT in depth()
    pg_psql("DROP ROLE IF EXISTS gjc_reader; CREATE ROLE gjc_reader LOGIN; "
            "GRANT USAGE ON SCHEMA gjc TO gjc_reader; GRANT SELECT ON gjc.fact TO gjc_reader")
    try:
        for settings in (ON, OFF):
            rc, out, err = DB.psql(SQL, settings, check=False, user="gjc_reader")
            assert rc != 0 and "permission denied for table dim" in err, (out, err)
    finally:
        pg_psql("DROP OWNED BY gjc_reader; DROP ROLE gjc_reader")


def test_cache_size_keeps_the_recent_tables():
    """pg_warp.gpujoin_cache_size: a table beyond the room left drops the
    least recently found one"""
    c = Cluster()
    try:
        c.sql("ALTER SYSTEM SET pg_warp.gpujoin_cache_size = '1MB'")
        c.restart()
        wait_until(lambda: c.run("SELECT pid FROM pgwarp.service_status()").returncode == 0,
                   what="the service")
        pid = c.service_pid()
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().decode().split("\0")
        assert argv[argv.index("--join-cache-size") + 1] == "1", argv
        d = tempfile.mkdtemp(prefix="pg_warp_gjc2.")
        os.chmod(d, 0o755)
        try:
            write(os.path.join(d, "fact.arrow"), fact_table(N), 4000)
            c.sql("CREATE SCHEMA gjc; CREATE FOREIGN TABLE gjc.fact (k int4, v int4) "
                  "SERVER arrow_fdw OPTIONS (file '%s/fact.arrow')" % d)
            for t in ("dim", "dim2"):
                # about 600 kB each as an inner table: one fits the room, two do not
                c.sql("CREATE TABLE gjc.%s (k int4 PRIMARY KEY, grp int4, name text); "
                      "INSERT INTO gjc.%s SELECT i, i %% 13, repeat('x', 20) || i "
                      "FROM generate_series(1, %d) i" % (t, t, N // 2))
                vacuum("gjc." + t, c)
            q1, q2 = SQL, SQL.replace("gjc.dim d", "gjc.dim2 d")
            line = depth(q1, db=c)
            kb = int(line.split("table ")[1].split(" kB")[0])
            assert 512 < kb < 1024, line
            assert KEPT not in line
            assert KEPT in depth(q1, db=c)
            assert KEPT not in depth(q2, db=c)       # kept, dim's table dropped for it
            assert KEPT in depth(q2, db=c)
            assert KEPT not in depth(q1, db=c)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    finally:
        c.destroy()


# ---------------------------------------------------------------- arrow_fdw dimensions

ASQL = SQL.replace("gjc.dim d", "gjc.adim d")


def adim_table(n, grp_mod=13, tag="name", first=1):
    ks = range(first, first + n)
    return pa.table({"k": pa.array(list(ks), pa.int32()),
                     "grp": pa.array([k % grp_mod for k in ks], pa.int32()),
                     "name": pa.array(["%s %d" % (tag, k) for k in ks], pa.utf8())})


def adim_create(options):
    pg_psql("DROP FOREIGN TABLE IF EXISTS gjc.adim; "
            "CREATE FOREIGN TABLE gjc.adim (k int4, grp int4, name text) SERVER arrow_fdw "
            "OPTIONS (%s); ANALYZE gjc.adim" % options)


@pytest.fixture
def adim(tables):
    """gjc.adim over the Arrow file it yields (a new file each test)"""
    path = os.path.join(tables, "adim.arrow")
    write(path, adim_table(N), 4000)
    adim_create("file '%s'" % path)
    yield path
    pg_psql("DROP FOREIGN TABLE IF EXISTS gjc.adim")


def kept_then(change, sql=ASQL):
    """the depth built then found; change(); built again (and the answer
    PostgreSQL's), then found again"""
    assert KEPT not in depth(sql)
    assert KEPT in depth(sql)
    change()
    assert KEPT not in depth(sql)
    same(sql)
    assert KEPT in depth(sql)


def test_arrow_dim_kept_and_found(adim):
    assert KEPT not in depth(ASQL)
    assert KEPT in depth(ASQL)
    same(ASQL)


def test_arrow_dim_file_replaced(adim):
    """a new file renamed over the old one (a new inode)"""
    kept_then(lambda: write(adim, adim_table(N, grp_mod=7, tag="new"), 4000))


def test_arrow_dim_file_rewritten_in_place(adim):
    """the same inode and size, other rows: the file's bytes overwritten
    (names of the same length, other groups)"""
    def rewrite():
        other = adim + ".other"
        write(other, adim_table(N, grp_mod=5, tag="nbme"), 4000)
        with open(other, "rb") as f:
            data = f.read()
        os.unlink(other)
        assert len(data) == os.path.getsize(adim)
        ino = os.stat(adim).st_ino
        with open(adim, "r+b") as f:
            f.write(data)
        assert os.stat(adim).st_ino == ino
    kept_then(rewrite)
    assert "5|" in DB.sql("SELECT count(DISTINCT grp) || '|' FROM gjc.adim")


def test_arrow_dim_table_names_another_file(adim):
    other = adim.replace("adim.arrow", "adim2.arrow")
    write(other, adim_table(N // 2, grp_mod=3), 4000)
    kept_then(lambda: pg_psql("ALTER FOREIGN TABLE gjc.adim OPTIONS (SET file '%s')" % other))


def test_arrow_dim_directory_gains_a_file(tables):
    d = os.path.join(tables, "adim_dir")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    write(os.path.join(d, "a.arrow"), adim_table(N // 2), 4000)
    adim_create("dir '%s'" % d)
    try:
        kept_then(lambda: write(os.path.join(d, "b.arrow"),
                                adim_table(N // 2, first=N // 2 + 1), 4000))
    finally:
        pg_psql("DROP FOREIGN TABLE IF EXISTS gjc.adim")
        shutil.rmtree(d, ignore_errors=True)


def test_arrow_dim_file_gone_fails_like_postgresql(adim):
    """the file removed after it was kept: the query fails as PostgreSQL's
    own scan does, and nothing stale is served"""
    assert KEPT not in depth(ASQL)
    os.unlink(adim)
    on = DB.result(ASQL, tuple(ON))
    off = DB.result(ASQL, tuple(OFF))
    assert on[0] == "error" and on == off, (on, off)
