"""Integer buffers packed for the bus (src/service/pack.c, gpu_input.c;
unpacked by kern_unpack, here by the stand-in GPU's copy of its loop), through
SCAN_RUN on the stand-in GPU (`make -C test/gpu scanfake`).  Without the
stand-in (the CPU engine) the tests are skipped: the CPU engine reads files
in place.  (The stand-in cannot run AGG_RUN's grouping; the real GPU's
suites run SQL over packed columns against PostgreSQL.)

Each int32 or int64 column is compared on the GPU with a decimal twin of
itself that never packs (scan_client's twin32 and twin64 quals), so every
value must arrive exactly whatever its frame packed into: 1, 2 or 3 bytes
of an int32, 1 to 4 of an int64, the types' extremes, frames that do not
pack beside ones that do in one read, the last short frame of a buffer,
NULLs; and the same with packing off (--pack 0, as
pg_warp.gpu_transfer_packing = off), which then packs nothing.  END's
packed counters say what crossed packed.
"""
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from service_client import ENGINE, FAKE_GPU, client_fixture, run_client, service_fixture, write

pytestmark = pytest.mark.skipif(not FAKE_GPU or ENGINE != 2,
                                reason="the GPU input path: make -C test/gpu scanfake")

client = client_fixture("scan_client")
svc = service_fixture()

FRAME = 65536                   # XPU_PACK_FRAME_VALUES
I32_MIN, I32_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1


def frames_of(n, rng, kinds):
    """n int64 values, frame by frame of FRAME values, each frame drawn as
    kinds[f % len(kinds)] says: (low, high) uniform in [low, high]"""
    out = np.empty(n, np.int64)
    for f, at in enumerate(range(0, n, FRAME)):
        lo, hi = kinds[f % len(kinds)]
        m = min(FRAME, n - at)
        vals = rng.integers(lo, hi, m, dtype=np.int64, endpoint=True)
        vals[0], vals[-1] = lo, hi          # the frame's span is exactly hi - lo
        out[at:at + m] = vals
    return out


def with_nulls(arr, every):
    mask = np.zeros(len(arr), bool)
    mask[3::every] = True
    return pa.array(arr, mask=mask)


def edge_table(n, seed=7):
    rng = np.random.default_rng(seed)
    return pa.table({
        "w1": with_nulls(frames_of(n, rng, [(0, 200)]).astype(np.int32), 7),
        "w2": pa.array(frames_of(n, rng, [(-30000, 30000), (5, 5 + 65535)]).astype(np.int32)),
        "w3": pa.array(frames_of(n, rng, [(0, 10_000_000), (-2**23, 2**23 - 1)]).astype(np.int32)),
        # the extremes: frames at each end of int32, one spanning all of it
        "ext": with_nulls(frames_of(n, rng, [(I32_MIN, I32_MIN + 255), (I32_MAX - 65535, I32_MAX),
                                             (I32_MIN, I32_MAX)]).astype(np.int32), 5),
        # frames that do not pack between frames that do, in one read
        "mix": pa.array(frames_of(n, rng, [(0, 9), (-2**30, 2**30), (-2**30, 2**30), (100, 300)])
                        .astype(np.int32)),
        "wide": pa.array(rng.integers(I32_MIN, I32_MAX, n, dtype=np.int64).astype(np.int32)),
        "l4": with_nulls(frames_of(n, rng, [(1_700_000_000_000, 1_700_000_000_000 + 2**32 - 1)]), 9),
        "l1": pa.array(frames_of(n, rng, [(I64_MIN, I64_MIN + 255), (I64_MAX - 255, I64_MAX)])),
        "lwide": pa.array(frames_of(n, rng, [(I64_MIN, I64_MAX), (0, 2**40), (-2**32, 0)])),
        "d": with_nulls(frames_of(n, rng, [(8000, 11000)]).astype(np.int32), 4).cast(pa.date32()),
        "ts": pa.array(frames_of(n, rng, [(1_600_000_000_000_000, 1_600_000_000_000_000 + 2**24 - 1)]),
                       pa.timestamp("us")),
        "tsn": pa.array(frames_of(n, rng, [(-2**62, -2**62 + 70000)]), pa.timestamp("ns")),
        "f": pa.array(rng.standard_normal(n)),
        "s": pa.array(["v%d" % (i % 101) if i % 13 else None for i in range(n)]),
    })


# the int32 and int64 columns of edge_table (a date or timestamp packs as
# an int32 or int64 does: its width picks the code) and scan_client's qual
# comparing each with its decimal twin
QUALS = {"w1": "twin32", "w2": "twin32", "w3": "twin32", "ext": "twin32", "mix": "twin32",
         "wide": "twin32", "l4": "twin64", "l1": "twin64", "lwide": "twin64"}


def packed_sizes(n):
    """(packed, packed_len) of each column of edge_table(n), n = 4 * FRAME:
    the file bytes that cross packed and the bytes they take"""
    i32, i64 = 4 * n, 8 * n
    return {
        "w1": (i32, n), "w2": (i32, 2 * n), "w3": (i32, 3 * n),
        # frames at int32's ends pack into 1 and 2 bytes; one spanning it all does not
        "ext": (i32 // 4 * 3, FRAME * (1 + 2 + 1)),
        # two of every four frames pack, into 1 byte each
        "mix": (i32 // 2, FRAME * (1 + 1)),
        "wide": (0, 0),
        "l4": (i64, 4 * n), "l1": (i64, n),
        # int64 frames spanning all of it, 2**40 and 2**32 do not pack
        "lwide": (0, 0),
    }


def twin_file(tmp_path, t, name, chunk):
    """column name of t as k beside its value as decimal128(38, 0), n (never
    packed): the file, and the rows where k is not NULL"""
    k = t.column(name)
    n = pa.array([None if v is None else Decimal(v) for v in k.to_pylist()], pa.decimal128(38, 0))
    one = pa.table({"k": k, "n": n})
    return write(tmp_path / ("%s-%d.arrow" % (name, chunk)), one, chunk), len(k) - k.null_count


def scan(client, svc, f, qual, *opts):
    """END's counters of scan_client's qual over file f"""
    lines, end, error = run_client(client, svc.sock, qual, [f], *opts)
    assert error is None, error
    return {k: int(v) for k, v in end.items()}


@pytest.mark.parametrize("n,chunk", [(4 * FRAME, 4 * FRAME), (300_000, 300_000),
                                     (70_001, 20_000), (100_004, 20_001), (1, 1)],
                         ids=["four-frames", "two-slices", "short-frames", "odd-frames", "one-row"])
def test_packed_values_come_back(client, svc, tmp_path, n, chunk):
    """Each int32 and int64 column compared on the GPU with its decimal twin:
    every non-NULL row passes (its value arrived exactly), with packing and
    without (--pack 0: nothing packed).  Four whole frames in one batch, whose
    packed bytes are counted exactly; 300,000 rows in one batch (an int64
    buffer of two 2 MiB slices, int32 of four frames and a short one);
    batches of 20,000 (each buffer one short frame), and of 20,001 (packed
    int32 frames of 60,003 bytes: the next buffer's packed bytes must still
    start aligned, or the GPU faults); one row (a buffer too small to pack)"""
    t = edge_table(n)
    sizes = packed_sizes(n) if n == 4 * FRAME else None
    for name, qual in QUALS.items():
        f, valid = twin_file(tmp_path, t, name, chunk)
        end = scan(client, svc, f, qual, "--pack", 1)
        assert end["engine"] == ENGINE and end["recheck"] == 0, end
        assert (end["rows_in"], end["rows_passed"]) == (n, valid), (name, end)
        if sizes is not None:
            assert (end["packed"], end["packed_len"]) == sizes[name], (name, end)
        elif n == 1:
            assert end["packed"] == 0, (name, end)
        off = scan(client, svc, f, qual, "--pack", 0)
        assert (off["rows_in"], off["rows_passed"]) == (n, valid), (name, off)
        assert off["packed"] == off["packed_len"] == 0, (name, off)


def test_a_wrong_value_is_seen(client, svc, tmp_path):
    """The oracle can fail: a twin one off in one row of a packed frame
    fails that row (and only it)"""
    t = edge_table(4 * FRAME)
    k = t.column("w3")
    n = [None if v is None else Decimal(v) for v in k.to_pylist()]
    n[FRAME + 17] += 1
    f = write(tmp_path / "off.arrow", pa.table({"k": k, "n": pa.array(n, pa.decimal128(38, 0))}),
              4 * FRAME)
    end = scan(client, svc, f, "twin32")
    assert end["packed"] > 0 and end["rows_passed"] == 4 * FRAME - 1, end


def test_dates_and_timestamps_pack(client, svc, tmp_path):
    """date32 and timestamp columns read by the GPU pack as int32 and int64
    do (their rows read back by the CPU workers, the GPU's qual on a twin)"""
    n = 4 * FRAME
    t = edge_table(n)
    for name, want in (("d", (4 * n, 2 * n)), ("ts", (8 * n, 3 * n)), ("tsn", (8 * n, 3 * n))):
        f, valid = twin_file(tmp_path, t, "w2", n)
        both = pa.table({"k": t.column("w2"), "n": pa.ipc.open_file(f).read_all().column("n"),
                         "x": t.column(name)})
        g = write(tmp_path / ("%s.arrow" % name), both, n)
        end = scan(client, svc, g, "twin32")
        assert end["rows_passed"] == valid, (name, end)
        # w2's buffer (4 n bytes into 2 n) only: the qual reads k and n
        assert (end["packed"], end["packed_len"]) == (4 * n, 2 * n), (name, end)


def test_cache_holds_the_unpacked_values(client, svc, tmp_path):
    """A first run packs and fills the GPU column cache; the next run takes
    the buffers from the cache (nothing packed) with the same rows"""
    t = edge_table(150_000, seed=3)
    f, valid = twin_file(tmp_path, t, "w3", 50_000)
    first = scan(client, svc, f, "twin32")
    assert first["rows_passed"] == valid and first["packed"] > 0, first
    again = scan(client, svc, f, "twin32")
    assert again["rows_passed"] == valid, again
    assert again["packed"] == 0, again


agg_client = client_fixture("agg_client")


def test_read_ahead_packs_into_the_cache(client, agg_client, svc, tmp_path):
    """AGG_FILL (the read-ahead into the GPU column cache; agg_client's many
    shape reads k and v) packs what it copies; a scan after it takes k from
    the cache (nothing packed) and every non-NULL row still passes its twin"""
    n = 3 * FRAME + 5
    t = edge_table(n, seed=9)
    g, valid = twin_file(tmp_path, t, "l4", 50_000)
    k = t.column("l4")
    f = write(tmp_path / "kvn.arrow",
              pa.table({"k": k, "n": pa.ipc.open_file(g).read_all().column("n"), "v": k}), 50_000)
    lines, fill, error = run_client(agg_client, svc.sock, "many", [f], "--fill", 1)
    assert error is None and int(fill["status"]) == 0, (error, fill)
    # k and v: 8 bytes a value, each frame of them into 4
    assert int(fill["packed"]) == 2 * 8 * n, fill
    assert 2 * 4 * n <= int(fill["packed_len"]) < 2 * 4 * n + 16 * 8, fill   # 8 frames' padding
    end = scan(client, svc, f, "twin64")
    assert end["rows_passed"] == valid and end["packed"] == 0, end
