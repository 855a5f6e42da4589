"""Interrupting an engine run in the warp service: a slow query started in a
session of its own, waited for until the service runs it, then cancelled,
timed out, or left without its service (SIGKILL), with the checks that the
query fails with PostgreSQL's error, promptly, and that the service drops
the run or comes back without a restart of the cluster.  Shared by
test_engine_faults.py (GpuPreAgg over Arrow files) and test_gpupreagg_heap.py
(over heap tables); cluster is a test_service.Cluster.
"""
import os
import signal
import subprocess
import time

from pg_sql import alive, wait_until


def running_tasks(cluster):
    """The service's running tasks (pgwarp.service_status())."""
    return int(cluster.status()["running_tasks"])


def start_slow(cluster, app, settings, sql):
    """Starts sql, after the settings, in a psql of application_name app
    with verbose errors; returns its Popen (stdout and stderr piped)."""
    env = dict(cluster.env, PGAPPNAME=app)
    args = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"]
    for s in settings:
        args += ["-c", s]
    return subprocess.Popen(args + ["-c", sql], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def in_flight(cluster, app, what="the run to start in the service"):
    """The backend pid of session app once it is active and the service runs
    a task (within 30 s; what names the wait in the failure)."""
    def ok():
        pid = cluster.sql("SELECT pid FROM pg_stat_activity WHERE application_name = '%s' "
                          "AND state = 'active' AND backend_type = 'client backend'" % app)
        return pid and running_tasks(cluster) > 0 and int(pid)
    return wait_until(ok, 30, what)


def wait_dropped(cluster):
    """Waits (10 s at most) until the service runs no task."""
    wait_until(lambda: running_tasks(cluster) == 0, 10, "the service to drop the run")


def cancel_in_flight(cluster, p, pid):
    """pg_cancel_backend(pid) of the session p runs in: it fails with 57014
    within 5 s, and the service drops the run."""
    t0 = time.monotonic()
    cluster.sql("SELECT pg_cancel_backend(%d)" % pid)
    out, err = p.communicate(timeout=30)
    assert p.returncode != 0 and "57014" in err, err
    assert time.monotonic() - t0 < 5, "the cancel took too long"
    wait_dropped(cluster)


def statement_timeout(cluster, sql, settings, run_timeout=30):
    """Runs sql after settings to its end twice, then again with a
    statement_timeout of a quarter of the second run's time (so that it
    fires while the service runs it, on 2 cores as on 16): 57014 with
    "statement timeout", no later than 5 s after the full run's time, and
    the service drops the run.  The first run does what only a first run
    does (the hint bits of a heap table just written: 3.6 s against under
    0.9 s for the run after it on the CI machine), so that the timed run
    lasts as long as the one the timeout cuts.
    run_timeout: the seconds each psql may take."""
    r = cluster.run(sql, settings=settings, timeout=run_timeout)
    assert r.returncode == 0, r.stderr
    t0 = time.monotonic()
    r = cluster.run(sql, settings=settings, timeout=run_timeout)
    full = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    timeout_ms = max(10, int(full * 1000 / 4))
    t0 = time.monotonic()
    r = cluster.run(sql, settings=tuple(settings) + ("SET statement_timeout = %d" % timeout_ms,
                                                     "\\set VERBOSITY verbose"),
                    timeout=run_timeout)
    assert r.returncode != 0 and "57014" in r.stderr and "statement timeout" in r.stderr, \
        "the run took %.3f s, the timeout was %d ms: %s" % (full, timeout_ms, r.stderr)
    assert time.monotonic() - t0 < full + 5
    wait_dropped(cluster)


def kill_service_in_flight(cluster, p):
    """SIGKILLs the service while session p's run is in it: p fails with
    08006 and "lost the connection to the pg_warp service", a new service
    comes up, and the cluster did not restart.  False when p's run ended
    before the SIGKILL landed (p succeeded: nothing was interrupted), after
    the same checks of the new service and the cluster."""
    old = cluster.service_pid()
    started = cluster.sql("SELECT pg_postmaster_start_time()")
    os.kill(old, signal.SIGKILL)
    out, err = p.communicate(timeout=30)
    caught = p.returncode != 0
    if caught:
        assert "08006" in err, err
        assert "lost the connection to the pg_warp service" in err, err
    cluster.new_service(old)
    assert not alive(old)
    assert cluster.sql("SELECT pg_postmaster_start_time()") == started
    return caught


def kill_service_mid_run(cluster, app, settings, sql, what="the run to start in the service",
                         tries=3):
    """Starts sql after settings in session app (start_slow) and SIGKILLs the
    service once the run is in it, with kill_service_in_flight's checks.  On
    a fast host the run can end between the moment it is seen in the service
    and the SIGKILL: then it starts again, with the new service, up to tries
    times in all."""
    for _ in range(tries):
        p = start_slow(cluster, app, settings, sql)
        in_flight(cluster, app, what)
        if kill_service_in_flight(cluster, p):
            return
    raise AssertionError("%s: in %d tries the run ended before the service was killed"
                         % (app, tries))
