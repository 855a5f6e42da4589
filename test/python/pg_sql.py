"""psql helpers shared by the pytest suites that talk to the test cluster
(the PG* environment variables name it)."""
import subprocess


def psql(sql, check=True, db=None):
    """Runs sql with psql; returns (rc, stdout, stderr)."""
    args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"]
    if db:
        args += ["-d", db]
    r = subprocess.run(args + ["-c", sql], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r.returncode, r.stdout.strip(), r.stderr


def sqlstate(sql, db=None):
    """The SQLSTATE and text of the error sql raises (VERBOSITY=verbose prints it)."""
    rc, out, err = psql(sql, check=False, db=db)
    assert rc != 0, "expected an error from: " + sql
    for line in err.splitlines():
        if line.startswith("ERROR:"):
            return line.split()[1].rstrip(":"), err
    raise AssertionError(err)
