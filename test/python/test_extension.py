"""The extension outside the shared cluster: CREATE EXTENSION must work in a
cluster that does not preload pg_warp (features that need preloading say so)."""
import os
import shutil
import subprocess
import tempfile

import pytest

from pg_sql import CLUSTER, free_port


@pytest.fixture(scope="module")
def plain_cluster():
    """A throwaway cluster without shared_preload_libraries = 'pg_warp'."""
    base = tempfile.mkdtemp(prefix="pg_warp_plain.")
    os.chmod(base, 0o755)
    d = os.path.join(base, "c")
    env = dict(os.environ, PGPORT=str(free_port()), PG_WARP_PRELOAD="0")
    out = subprocess.run(["bash", CLUSTER, "start", d], env=env, check=True,
                         capture_output=True, text=True).stdout
    for word in out.split():
        if "=" in word and word.startswith("PG"):
            k, v = word.split("=", 1)
            env[k] = v
    try:
        yield env
    finally:
        subprocess.run(["bash", CLUSTER, "destroy", d], env=env, check=False)
        shutil.rmtree(base, ignore_errors=True)


def psql(env, sql):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_create_extension_without_preload(plain_cluster):
    env = plain_cluster
    assert psql(env, "SHOW shared_preload_libraries") == ""
    psql(env, "CREATE EXTENSION pg_warp")
    assert psql(env, "SELECT pgwarp.version()") == "0.1.0"
    assert psql(env, "SELECT pgwarp.preloaded()") == "f"


def test_gucs_without_preload(plain_cluster):
    env = plain_cluster
    assert psql(env, "LOAD 'pg_warp'; SHOW pg_warp.enabled") == "on"
    r = subprocess.run(["psql", "-XAtq", "-c", "LOAD 'pg_warp'; SET pg_warp.no_such_setting = 1"],
                       env=env, capture_output=True, text=True)
    assert "reserved prefix" in r.stderr


def psql_err(env, sql):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       env=env, capture_output=True, text=True)
    return r.returncode, r.stdout.strip(), r.stderr


def test_warns_without_preload(plain_cluster):
    env = plain_cluster
    # CREATE EXTENSION (in a session that had not loaded the library)
    rc, _, err = psql_err(env, "DROP EXTENSION IF EXISTS pg_warp CASCADE; CREATE EXTENSION pg_warp")
    assert rc == 0, err
    assert "WARNING:  pg_warp is not in shared_preload_libraries" in err, err
    assert "HINT:" in err and "shared_preload_libraries" in err, err
    # the first use of a later session
    rc, out, err = psql_err(env, "SELECT pgwarp.version()")
    assert rc == 0 and out == "0.1.0", err
    assert "pg_warp is not in shared_preload_libraries" in err, err


def test_reserved_prefixes_preloaded():
    """The shared cluster (preloaded): typos of pg_warp.* and pgwarp.* are errors,
    and loading the library says nothing."""
    env = dict(os.environ)
    for sql in ("SET pg_warp.engnie = cpu", "SET pgwarp.enabled = off",
                "SET pgwarp.engine = cpu"):
        rc, _, err = psql_err(env, sql)
        assert rc != 0 and "reserved prefix" in err, (sql, err)
    rc, out, err = psql_err(env, "SELECT pgwarp.preloaded()")
    assert rc == 0 and out == "t" and "WARNING" not in err, err
