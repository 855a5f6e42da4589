"""Join tables in the warp service (JOIN_LOAD and the runs' join ids) end to
end, without PostgreSQL: pg_warp_service started by hand (the CPU engine, or
the stand-in GPU with PG_WARP_TEST_FAKE_GPU=1), fact tables written by
pyarrow, the join tables of the test dimensions (warp_client.h: WC_DIM_EVEN,
WC_DIM_TEXT) built by test/c/bin/agg_client with the xpu_join builder into
sealed memfds and loaded before its run, and the groups compared with the
same joins computed in Python over the pyarrow data.

Also the refusals: an unsealed memfd, a plain file's descriptor, a
table_len past the file's end, a corrupt table, an id never loaded, the id
of a connection that closed; the service survives each and serves the next
run.  doc/service.md describes JOIN_LOAD."""
import pyarrow as pa
import pytest

import service_client
from service_client import client_fixture, client_path, service_fixture, write

CLIENT = client_path("agg_client")
ERR_PROTOCOL, ERR_BAD_FILE = 1, 6

client = client_fixture("agg_client")
svc = service_fixture()


def run_client(svc, shape, files, *opts):
    """Runs agg_client; returns (groups: list of token lists, end: dict, error)."""
    lines, end, error = service_client.run_client(CLIENT, svc.sock, shape, files, *opts)
    return [f[1:] for f in lines if f[0] == "G"], end, error


def fact_table(n=5000):
    """k int64 (some even keys of WC_DIM_EVEN, some beyond it, odd ones and
    NULLs), c text (keys of WC_DIM_TEXT and some it lacks), v int64"""
    return pa.table({
        "k": pa.array([None if i % 97 == 5 else (i * 37) % 2300 for i in range(n)],
                      pa.int64()),
        "c": pa.array([None if i % 89 == 7 else "c%d" % ((i * 11) % 60) for i in range(n)],
                      pa.string()),
        "v": pa.array([(i * 7919) % 1000 - 300 for i in range(n)], pa.int64()),
    })


def cnt_groups(rows):
    """The shape cnt's group: count(*), sum(v), min(v), max(v) over rows' v."""
    vs = [r["v"] for r in rows]
    if not vs:
        return [["0", "0:0", "0:", "0:"]]
    return [[str(len(vs)), "%d:%d" % (len(vs), sum(vs)), "%d:%d" % (len(vs), min(vs)),
             "%d:%d" % (len(vs), max(vs))]]


@pytest.mark.parametrize("fault, code, words", [
    ("unsealed", ERR_BAD_FILE, "not sealed"),
    ("plainfile", ERR_BAD_FILE, "not sealed"),
    ("short", ERR_BAD_FILE, "bytes, not"),
    ("corrupt", ERR_BAD_FILE, "invalid join table"),
    ("unknown", ERR_PROTOCOL, "is not loaded"),
    ("closed", ERR_PROTOCOL, "is not loaded"),
])
def test_refused_tables(client, svc, tmp_path, fault, code, words):
    """A table the service cannot trust, or an id it does not hold, is
    refused with ERROR; the service goes on serving runs."""
    t = fact_table(500)
    f = write(tmp_path / "fact.arrow", t)
    groups, end, error = run_client(svc, "cnt", [f], "--join", "even", "--join-fault", fault)
    assert end is None and error is not None
    assert error[0] == code and words in error[1], error
    groups, end, error = run_client(svc, "cnt", [f])
    assert error is None and end["status"] == "0"
    assert groups == cnt_groups(t.to_pylist())
