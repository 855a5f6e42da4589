"""The extension outside the shared cluster: CREATE EXTENSION must work in a
cluster that does not preload pg_warp (features that need preloading say so)."""
import os
import shutil
import socket
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
