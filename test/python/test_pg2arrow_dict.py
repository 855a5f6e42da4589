"""pg2arrow --dictionary: text columns written dictionary-encoded, one
dictionary per column for the file (tools/pg2arrow/text_dict.c), read back
with pyarrow and compared value for value with the source query (the same
query exported without --dictionary, and PostgreSQL's own count of distinct
values): named columns and auto, parallel workers (-n, one dictionary with
delta batches as the workers meet new values), small batches, NULLs, '',
multibyte and long values, more than 65,536 values, --append (new values
added as deltas, old indices unchanged), and option errors.

Uses the running cluster of the environment (PGHOST, PGPORT, PGUSER), a
database of its own (dropped at the end) and the tool in PG_WARP_TOOLS.
"""
import os
import subprocess

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.environ.get("PG_WARP_TOOLS", os.path.join(ROOT, "tools", "bin"))
PG2ARROW = os.path.join(TOOLS, "pg2arrow")
DB = "pg2arrow_dict_%d" % os.getpid()

pytestmark = pytest.mark.skipif(not os.path.exists(PG2ARROW),
                                reason="pg2arrow is not built")

QUERY = "SELECT id, mode, big, one, uniq, v, n FROM src"


def psql(sql, db=DB):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def p2a(*args, check=True):
    r = subprocess.run([PG2ARROW, "-d", DB] + list(args), capture_output=True, text=True,
                       timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def read(path):
    with ipc.open_file(path) as f:
        return f.read_all()


def dict_batches(path):
    """the number of dictionary batches and of deltas among them (pyarrow's
    read statistics, once it has read the file)"""
    with ipc.open_file(path) as f:
        f.read_all()
        return f.stats.num_dictionary_batches, f.stats.num_dictionary_deltas


@pytest.fixture(scope="module", autouse=True)
def database():
    psql("DROP DATABASE IF EXISTS %s" % DB, db="postgres")
    psql("CREATE DATABASE %s" % DB, db="postgres")
    psql("""
        CREATE TABLE src AS SELECT i AS id,
            (ARRAY['AIR', 'MAIL', '', 'RAIL', NULL, 'é日本',
                   'a text longer than sixteen bytes'])[1 + i % 7] AS mode,
            'v' || (i % 70000) AS big,
            CASE WHEN i % 11 = 0 THEN NULL ELSE 'only' END::varchar(8) AS one,
            'u' || i AS uniq,
            (i % 3)::char(2) AS v,
            i % 5 AS n
        FROM generate_series(1, 100000) i;
    """)
    yield
    psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % DB, db="postgres")


def plain(table):
    """the table with every dictionary column decoded"""
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
            for c in table.columns]
    return pa.table(cols, names=table.column_names)


def check_against_plain(tmp_path, dict_path, query, dict_cols):
    """dict_path holds query's rows: its dictionary columns are dict_cols,
    their values those of the same export without --dictionary"""
    ref_path = tmp_path / "ref.arrow"
    p2a("-o", str(ref_path), "-c", query)
    got, ref = read(dict_path), read(ref_path)
    for f in got.schema:
        want = f.name in dict_cols
        assert pa.types.is_dictionary(f.type) == want, f
        if want:
            assert f.type.index_type == pa.int32() and f.type.value_type == pa.string(), f
    key = "id"
    got = plain(got).sort_by(key)
    ref = ref.sort_by(key)
    assert got.column_names == ref.column_names
    for name in ref.column_names:
        assert got.column(name).to_pylist() == ref.column(name).to_pylist(), name
    return read(dict_path)


def test_named_columns_one_worker(tmp_path):
    out = tmp_path / "d.arrow"
    p2a("-o", str(out), "-s", "256k", "--dictionary=mode,big,one,v", "-c", QUERY)
    t = check_against_plain(tmp_path, out, QUERY, {"mode", "big", "one", "v"})
    # one dictionary per column, the values met first kept in order, no repeats
    for name, distinct in [("mode", 6), ("big", 70000), ("one", 1), ("v", 3)]:
        d = t.column(name).chunk(t.column(name).num_chunks - 1).dictionary
        assert len(d) == distinct == len(set(d.to_pylist())), name
    n, deltas = dict_batches(out)
    assert deltas > 0 and n > 4     # big grows over the batches: deltas
    assert len(t.column("mode").chunks) > 4


def test_parallel_workers(tmp_path):
    out = tmp_path / "p.arrow"
    q = "SELECT id, mode, big, one, uniq, v, n FROM src WHERE id % 4 = $(WORKER_ID)"
    p2a("-o", str(out), "-n", "4", "-s", "128k", "--dictionary=mode,big", "-c", q)
    t = read(out)
    assert t.num_rows == 100000
    got = plain(t).sort_by("id")
    ref = read_ref(tmp_path)
    for name in ("mode", "big", "one", "uniq", "v", "n"):
        assert got.column(name).to_pylist() == ref.column(name).to_pylist(), name


def read_ref(tmp_path):
    ref_path = tmp_path / "ref_all.arrow"
    p2a("-o", str(ref_path), "-c", QUERY)
    return read(ref_path).sort_by("id")


def test_table_split_by_ctid(tmp_path):
    out = tmp_path / "t.arrow"
    p2a("-o", str(out), "-n", "3", "-t", "src", "--dictionary=mode,big")
    got = plain(read(out)).sort_by("id")
    ref = read_ref(tmp_path)
    assert got.column("mode").to_pylist() == ref.column("mode").to_pylist()
    assert got.column("big").to_pylist() == ref.column("big").to_pylist()


def test_auto(tmp_path):
    """auto: the text columns of few values; uniq (100,000 values) and big
    (70,000 among the first 100,000 rows) stay plain"""
    out = tmp_path / "auto.arrow"
    p2a("-o", str(out), "-s", "1m", "--dictionary=auto", "-c", QUERY)
    check_against_plain(tmp_path, out, QUERY, {"mode", "one", "v"})


def test_append_continues_the_dictionaries(tmp_path):
    out = tmp_path / "a.arrow"
    q1 = "SELECT id, mode, big FROM src WHERE id <= 50000"
    q2 = "SELECT id, mode || 'x' AS mode, big FROM src WHERE id > 50000"
    p2a("-o", str(out), "-s", "256k", "--dictionary=mode,big", "-c", q1)
    before = read(out)
    p2a("--append", str(out), "-n", "1", "-s", "256k", "--dictionary=mode,big", "-c", q2)
    after = read(out)
    assert after.num_rows == 100000
    got = plain(after).sort_by("id")
    ref = pa.concat_tables([plain(before), plain(read_q(tmp_path, q2))]).sort_by("id")
    for name in ("mode", "big"):
        assert got.column(name).to_pylist() == ref.column(name).to_pylist(), name
    # auto on --append takes the file's dictionary columns
    p2a("--append", str(out), "--dictionary=auto", "-c", "SELECT 0 AS id, 'new' AS mode, 'v1' AS big")
    assert plain(read(out)).sort_by("id").column("mode").to_pylist()[0] == "new"
    # a plain export appended to a dictionary file: the schemas differ
    r = p2a("--append", str(out), "-c", q1, check=False)
    assert r.returncode == 1 and "schema" in r.stderr.lower(), r.stderr


def read_q(tmp_path, q):
    p = tmp_path / "q.arrow"
    p2a("-o", str(p), "-c", q)
    return read(p)


def test_empty_result(tmp_path):
    out = tmp_path / "e.arrow"
    p2a("-o", str(out), "--dictionary=mode", "-c", QUERY + " WHERE false")
    t = read(out)
    assert t.num_rows == 0 and pa.types.is_dictionary(t.schema.field("mode").type)


def test_engine_reads_the_export(tmpdir_world):
    """arrow_fdw over the export: GROUP BY on the dictionary text in the
    engine (EXPLAIN ANALYZE) equals PostgreSQL's over the source table"""
    out = os.path.join(tmpdir_world, "g.arrow")
    p2a("-o", out, "-n", "2", "-s", "256k", "--dictionary=mode,one", "-c",
        "SELECT id, mode, one FROM src WHERE id % 2 = $(WORKER_ID)")
    os.chmod(out, 0o644)
    psql("CREATE EXTENSION IF NOT EXISTS pg_warp; DROP FOREIGN TABLE IF EXISTS g; "
         "CREATE FOREIGN TABLE g (id int4, mode text, one varchar(8)) SERVER arrow_fdw "
         "OPTIONS (file '%s')" % out)
    q = "SELECT mode, one, count(*), min(id) FROM %s GROUP BY 1, 2 ORDER BY 1, 2"
    on = "SET pg_warp.engine_startup_cost = 0; "
    assert psql(on + q % "g") == psql(q % "src")
    plan = psql(on + "EXPLAIN (ANALYZE, COSTS OFF) " + q % "g")
    assert "GpuPreAgg" in plan and "Engine: CPU" in plan and "fallback" not in plan, plan


def test_option_errors(tmp_path):
    out = tmp_path / "x.arrow"
    r = p2a("-o", str(out), "--dictionary=nosuch", "-c", QUERY, check=False)
    assert r.returncode == 1 and "no column \"nosuch\"" in r.stderr, r.stderr
    r = p2a("-o", str(out), "--dictionary=n", "-c", QUERY, check=False)
    assert r.returncode == 1 and "takes text" in r.stderr, r.stderr
    assert not os.path.exists(out)
