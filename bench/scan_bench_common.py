"""What the scan timing checks (bench/engine_filter_bench.py, gpuscan_bench.py)
share: psql against the PG* environment, a synthetic lineorder-like Arrow
file in a temporary directory the server's OS user can read, and the best
of several timed runs after an unmeasured one."""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

# the columns of make_file's table, as a foreign table's column list
LINEORDER_COLS = "lo_orderdate int4, lo_discount int4, lo_quantity int4, lo_extendedprice int8"


def psql(sql):
    """Runs sql (from stdin); exits the program on an error."""
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1"], input=sql,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("psql failed: %s\n%s" % (sql[:200], r.stderr))
    return r.stdout.strip()


def make_file(path, n):
    """Writes n lineorder-like rows (LINEORDER_COLS: yyyymmdd dates of
    1992-1998, discounts 0-10, quantities 1-50, prices) as the Arrow file
    path, in record batches of 64 Ki rows without statistics."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def ints(lo, hi, seed):
        """n uniform integers in [lo, hi) (pyarrow's seeded uniform doubles)."""
        u = pc.random(n, initializer=seed)
        return pc.cast(pc.floor(pc.add(pc.multiply(u, hi - lo), lo)), pa.int64())

    date = pc.add(pc.add(pc.multiply(ints(1992, 1999, 1), 10000),
                         pc.multiply(ints(1, 13, 2), 100)), ints(1, 29, 3))
    table = pa.table({
        "lo_orderdate": pc.cast(date, pa.int32()),
        "lo_discount": pc.cast(ints(0, 11, 4), pa.int32()),
        "lo_quantity": pc.cast(ints(1, 51, 5), pa.int32()),
        "lo_extendedprice": ints(90000, 10000000, 6),
    })
    with pa.ipc.new_file(path, table.schema) as w:
        for b in table.to_batches(max_chunksize=65536):
            w.write_batch(b)
    os.chmod(path, 0o644)


@contextlib.contextmanager
def lineorder_file(n, prefix):
    """The path of make_file's n rows in a temporary directory (named with
    prefix) that the server can read, removed afterwards."""
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)
    try:
        path = os.path.join(d, "lineorder.arrow")
        make_file(path, n)
        yield path
    finally:
        shutil.rmtree(d, ignore_errors=True)


def best_of(sql, runs):
    """Runs sql once unmeasured, then runs times; returns (the best time in
    seconds, the last answer)."""
    best, answer = None, None
    for i in range(runs + 1):
        t0 = time.perf_counter()
        answer = psql(sql)
        dt = time.perf_counter() - t0
        if i > 0:
            best = dt if best is None else min(best, dt)
    return best, answer
