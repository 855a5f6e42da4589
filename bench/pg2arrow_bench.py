#!/usr/bin/env python3
"""Export throughput of pg2arrow against its peers.

Exports a table (SSB lineorder by default, loaded with bench/ssb/load.sh) with
pg2arrow at 1, 2, 4, 8 and 16 workers, and in the same run with ConnectorX
(partitioned on lo_orderkey) and with pyarrow reading a psycopg COPY stream,
when those are installed. Prints rows/s and MB/s per method and worker count
and writes bench/results/pg2arrow_bench-<time>.json and a PNG chart (with
matplotlib).  A peer that is not installed is reported and skipped.

Connection: the PG* environment variables (PGHOST, PGPORT, PGUSER, ...) and -d.

  bench/pg2arrow_bench.py -d ssb                    # SSB lineorder
  bench/pg2arrow_bench.py -d test --synthetic 2000000   # make a lineorder-like table first
"""
import argparse
import datetime
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def psql(db, sql):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("psql failed: " + r.stderr.strip())
    return r.stdout.strip()


def find_pg2arrow(arg):
    for c in (arg, os.environ.get("PG2ARROW"), os.path.join(ROOT, "tools", "bin", "pg2arrow"),
              shutil.which("pg2arrow")):
        if c and os.path.exists(c):
            return c
    sys.exit("pg2arrow not found: build it (make -C tools) or give --pg2arrow")


def make_synthetic(db, table, rows):
    """A table with the columns and types of SSB lineorder."""
    psql(db, f"DROP TABLE IF EXISTS {table}")
    psql(db, f"""CREATE TABLE {table} AS SELECT
          (i / 4 + 1)::int8 AS lo_orderkey, (i % 7 + 1)::int4 AS lo_linenumber,
          (i * 7919 % 30000 + 1)::int4 AS lo_custkey, (i * 104729 % 200000 + 1)::int4 AS lo_partkey,
          (i * 31 % 2000 + 1)::int4 AS lo_suppkey,
          (19920101 + (i % 2400) / 365 * 10000 + (i % 12) * 100 + i % 28 + 1)::int4 AS lo_orderdate,
          ('1-URGENT')::char(15) AS lo_orderpriority, 0::int4 AS lo_shippriority,
          (i % 50 + 1)::int4 AS lo_quantity, (i % 100000 * 13)::int4 AS lo_extendedprice,
          (i % 500000 * 7)::int4 AS lo_ordtotalprice, (i % 11)::int4 AS lo_discount,
          (i % 900000 * 3)::int4 AS lo_revenue, (i % 60000)::int4 AS lo_supplycost,
          (i % 9)::int4 AS lo_tax, (19920101 + (i % 2400) / 365 * 10000 + 101)::int4 AS lo_commitdate,
          (ARRAY['AIR','MAIL','SHIP','RAIL','TRUCK','FOB','REG AIR'])[i % 7 + 1]::char(10) AS lo_shipmode
        FROM generate_series(0::int8, {rows - 1}) i""")
    psql(db, f"VACUUM ANALYZE {table}")


class ServerCpu:
    """CPU seconds used by the PostgreSQL server, when it runs on this host:
    the children of its postmaster (found from $PGWARP_POSTMASTER_PID or
    $PGHOST/data/postmaster.pid, the layout of scripts/cluster.sh), live ones
    read from /proc, exited ones from the postmaster's cumulative child times."""

    def __init__(self, db):
        self.tick = os.sysconf("SC_CLK_TCK")
        self.pm = None
        pid = os.environ.get("PGWARP_POSTMASTER_PID")
        if pid is None:
            host = os.environ.get("PGHOST", "")
            pidfile = os.path.join(host, "data", "postmaster.pid")
            if host.startswith("/") and os.path.exists(pidfile):
                with open(pidfile) as f:
                    pid = f.readline().strip()
        if pid and os.path.exists(f"/proc/{pid}/stat"):
            self.pm = int(pid)

    @staticmethod
    def _fields(pid):
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()

    def seconds(self):
        if self.pm is None:
            return None
        total = 0
        f = self._fields(self.pm)
        total += int(f[13]) + int(f[14])          # cutime, cstime: exited children
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                g = self._fields(name)
            except OSError:
                continue
            if int(g[1]) == self.pm:                 # ppid
                total += int(g[11]) + int(g[12])     # utime, stime
        return total / self.tick


def conn_uri(db):
    host = os.environ.get("PGHOST", "localhost")
    if host.startswith("/"):
        host = "127.0.0.1"          # ConnectorX needs TCP
    user = os.environ.get("PGUSER", os.environ.get("USER", "postgres"))
    port = os.environ.get("PGPORT", "5432")
    pw = os.environ.get("PGPASSWORD")
    auth = f"{user}:{pw}" if pw else user
    return f"postgresql://{auth}@{host}:{port}/{db}"


def run_pg2arrow(tool, db, table, n, outdir):
    out = os.path.join(outdir, f"p2a_{n}.arrow")
    t0 = time.perf_counter()
    r = subprocess.run([tool, "-d", db, "-t", table, "-n", str(n), "-o", out],
                       capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        return {"error": r.stderr.strip()}
    size = os.path.getsize(out)
    import pyarrow as pa
    import pyarrow.ipc as ipc
    with pa.memory_map(out) as m, ipc.open_file(m) as f:     # reads the metadata only
        rows = sum(f.get_batch(i).num_rows for i in range(f.num_record_batches))
    os.unlink(out)
    return {"seconds": dt, "rows": rows, "bytes": size}


def run_connectorx(db, table, n):
    import connectorx as cx
    t0 = time.perf_counter()
    kw = {"partition_on": "lo_orderkey", "partition_num": n} if n > 1 else {}
    tab = cx.read_sql(conn_uri(db), f"SELECT * FROM {table}", return_type="arrow", **kw)
    dt = time.perf_counter() - t0
    return {"seconds": dt, "rows": tab.num_rows, "bytes": tab.nbytes}


def run_psycopg_copy(db, table):
    """One connection: COPY ... (FORMAT csv) via psycopg, parsed by pyarrow.csv."""
    import psycopg
    import pyarrow.csv as pcsv
    t0 = time.perf_counter()
    buf = io.BytesIO()
    with psycopg.connect(conn_uri(db)) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY (SELECT * FROM {table}) TO STDOUT (FORMAT csv, HEADER)") as cp:
            for chunk in cp:
                buf.write(chunk)
    buf.seek(0)
    tab = pcsv.read_csv(buf)
    dt = time.perf_counter() - t0
    return {"seconds": dt, "rows": tab.num_rows, "bytes": tab.nbytes}


def cpu_seconds(method):
    """CPU seconds (user + system) of the client: pg2arrow runs as a child
    process, the peers inside this one."""
    who = resource.RUSAGE_CHILDREN if method.startswith("pg2arrow") else resource.RUSAGE_SELF
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


def scaling(results):
    """Each method's speed-up over its own 1-worker time: from the best runs,
    and within each round (the ratio of runs made minutes apart)."""
    table = {}
    lines = []
    by = {(r["method"], r["workers"]): r for r in results if "runs" in r}
    for (method, n), rec in sorted(by.items()):
        one = by.get((method, 1))
        if n == 1 or one is None:
            continue
        per_round = {}
        for r in rec["runs"]:
            base = [o for o in one["runs"] if o["round"] == r["round"]]
            if base:
                per_round[r["round"]] = round(base[0]["seconds"] / r["seconds"], 2)
        best = round(one["seconds"] / rec["seconds"], 2)
        table.setdefault(method, {})[str(n)] = {"best": best, "per_round": per_round}
        lines.append(f"{method} {n} workers vs 1: {best}x (best runs); per round "
                     + ", ".join(f"{v}x" for v in per_round.values()))
    return {"table": table, "lines": lines}


def available(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def chart(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method in sorted({r["method"] for r in results}):
        pts = sorted((r["workers"], r["rows_per_s"]) for r in results
                     if r["method"] == method and "rows_per_s" in r)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] / 1e6 for p in pts], marker="o", label=method)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers / partitions")
    ax.set_ylabel("million rows per second")
    ax.set_ylim(bottom=0)
    ax.set_title("PostgreSQL -> Arrow export")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-d", "--dbname", default=os.environ.get("PGDATABASE", "postgres"))
    ap.add_argument("-t", "--table", default="lineorder")
    ap.add_argument("-w", "--workers", default="1,2,4,8,16",
                    help="comma-separated worker counts (default 1,2,4,8,16)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds: each runs every point once, so that a machine whose speed "
                         "drifts affects all points alike (the best run of each point is kept)")
    ap.add_argument("--synthetic", type=int, metavar="ROWS",
                    help="first (re)create TABLE as a lineorder-like table of ROWS rows")
    ap.add_argument("--pg2arrow", help="pg2arrow binary (default: tools/bin, then PATH)")
    ap.add_argument("--baseline", metavar="PATH",
                    help="another pg2arrow build, run beside the first in every round "
                         "(method 'pg2arrow-baseline'), to measure a change")
    ap.add_argument("--baseline-workers", metavar="N,N",
                    help="worker counts for --baseline (default: those of -w)")
    ap.add_argument("--tmpdir", default=None, help="where pg2arrow writes (default: a temp dir)")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()

    tool = find_pg2arrow(args.pg2arrow)
    if args.synthetic:
        print(f"creating {args.table} with {args.synthetic} rows ...", flush=True)
        make_synthetic(args.dbname, args.table, args.synthetic)
    table_rows = int(psql(args.dbname, f"SELECT count(*) FROM {args.table}"))
    table_bytes = int(psql(args.dbname, f"SELECT pg_relation_size('{args.table}')"))
    workers = [int(w) for w in args.workers.split(",")]
    peers = {"connectorx": available("connectorx"),
             "psycopg+pyarrow.csv": available("psycopg") and available("pyarrow")}
    for name, ok in peers.items():
        if not ok:
            print(f"note: {name} is not installed; skipped")
    print(f"table {args.table}: {table_rows} rows, {table_bytes / 1e6:.1f} MB on disk; "
          f"pg2arrow = {tool}" + (f", baseline = {args.baseline}" if args.baseline else ""))

    plan = [("pg2arrow", n) for n in workers]
    if args.baseline:
        bw = [int(w) for w in (args.baseline_workers or args.workers).split(",")]
        plan += [("pg2arrow-baseline", n) for n in bw]
    if peers["connectorx"]:
        plan += [("connectorx", n) for n in workers]
    if peers["psycopg+pyarrow.csv"]:
        plan += [("psycopg+pyarrow.csv", 1)]

    tmp = args.tmpdir or tempfile.mkdtemp(prefix="p2a_bench.")
    server = ServerCpu(args.dbname)
    if server.pm is None:
        print("note: the server's processes are not visible here; no server CPU times")
    runs = {point: [] for point in plan}
    print(f"{'round':<6}{'method':<22}{'workers':>8}{'seconds':>10}{'Mrows/s':>10}"
          f"{'client cpu':>12}{'server cpu':>12}")
    for rnd in range(1, args.repeat + 1):
        for method, n in plan:
            if runs[(method, n)] and "error" in runs[(method, n)][-1]:
                continue                    # failed once: not again
            s0, c0 = server.seconds(), cpu_seconds(method)
            try:
                if method == "pg2arrow":
                    r = run_pg2arrow(tool, args.dbname, args.table, n, tmp)
                elif method == "pg2arrow-baseline":
                    r = run_pg2arrow(args.baseline, args.dbname, args.table, n, tmp)
                elif method == "connectorx":
                    r = run_connectorx(args.dbname, args.table, n)
                else:
                    r = run_psycopg_copy(args.dbname, args.table)
            except Exception as e:          # a peer failing is a result, not a crash
                r = {"error": f"{type(e).__name__}: {e}"}
            if "error" in r:
                print(f"{rnd:<6}{method:<22}{n:>8}  failed: {r['error'][:200]}")
            else:
                time.sleep(0.5)             # let the postmaster reap the backends
                r["round"] = rnd
                r["client_cpu_s"] = round(cpu_seconds(method) - c0, 2)
                if s0 is not None:
                    r["server_cpu_s"] = round(server.seconds() - s0, 2)
                ok = "" if r["rows"] == table_rows else f"  (rows {r['rows']} != {table_rows})"
                scpu = f"{r['server_cpu_s']:>12.1f}" if "server_cpu_s" in r else f"{'-':>12}"
                print(f"{rnd:<6}{method:<22}{n:>8}{r['seconds']:>10.2f}"
                      f"{r['rows'] / r['seconds'] / 1e6:>10.2f}{r['client_cpu_s']:>12.1f}{scpu}{ok}")
            runs[(method, n)].append(r)
            sys.stdout.flush()

    results = []
    print(f"\nbest of {args.repeat} round(s)")
    print(f"{'method':<22}{'workers':>8}{'seconds':>10}{'Mrows/s':>10}{'MB/s':>10}  all runs")
    for method, n in plan:
        ok_runs = [r for r in runs[(method, n)] if "error" not in r]
        if not ok_runs:
            results.append({"method": method, "workers": n, **runs[(method, n)][-1]})
            print(f"{method:<22}{n:>8}  failed")
            continue
        best = min(ok_runs, key=lambda r: r["seconds"])
        rec = {"method": method, "workers": n, **best,
               "all_seconds": [round(r["seconds"], 3) for r in ok_runs],
               "runs": ok_runs,
               "rows_per_s": best["rows"] / best["seconds"],
               "mb_per_s": best["bytes"] / 1e6 / best["seconds"]}
        results.append(rec)
        print(f"{method:<22}{n:>8}{best['seconds']:>10.2f}{rec['rows_per_s'] / 1e6:>10.2f}"
              f"{rec['mb_per_s']:>10.1f}  {rec['all_seconds']}")
    speedups = scaling(results)
    for line in speedups["lines"]:
        print(line)
    if not args.tmpdir:
        shutil.rmtree(tmp, ignore_errors=True)

    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.results, f"pg2arrow_bench-{stamp}")
    with open(base + ".json", "w") as f:
        json.dump({"table": args.table, "rows": table_rows, "table_bytes": table_bytes,
                   "pg2arrow": tool, "baseline": args.baseline,
                   "host": os.uname().nodename, "cpus": os.cpu_count(),
                   "peers_missing": [k for k, v in peers.items() if not v],
                   "rounds": args.repeat,
                   "note": "MB/s: pg2arrow counts the Arrow file size, peers the in-memory Arrow size",
                   "scaling": speedups["table"],
                   "results": results}, f, indent=2)
    print(f"wrote {base}.json")
    if available("matplotlib"):
        chart(results, base + ".png")
        print(f"wrote {base}.png")
    else:
        print("note: matplotlib is not installed; no chart")


if __name__ == "__main__":
    main()
