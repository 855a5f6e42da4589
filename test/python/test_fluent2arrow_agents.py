"""fluent2arrow and the frames real agents send (issue 27, item 6).

Each frame here is built byte for byte as the agents write it, from their
sources (read for the facts only):

- Fluentd's out_forward (lib/fluent/plugin/out_forward.rb, send_data_actual)
  always sends PackedForward: the byte 0x93, the tag (str), the buffer
  chunk's bytes behind a str32 header (0xdb + 4-byte length; gzip members
  when `compress gzip`), then the option map {"size": events, "compressed":
  "text" or "gzip", "chunk": Base64.encode64(unique id), which ends in a
  newline} ("chunk" only with require_ack_response).  Entries are
  [EventTime, record] (EventTime: ext type 0, fixext 8), or [integer,
  record] with time_as_integer.  in_forward reads "compressed" other than
  "text" as a compression, and "fluent_signal": 0 as [[time, metadata],
  record] entries.
- Fluent Bit's out_forward (plugins/out_forward/forward.c flush_forward_mode,
  forward_format.c append_options) sends [tag, entries, option] where the
  entries are an array of [EventTime, record] (or [[EventTime, metadata],
  record] with Retain_Metadata_In_Forward_Mode), or with `Compress gzip` a
  bin of the gzipped entries; the option map is written with a map32
  header (0xdf, then the count) and holds "chunk" (Base64 of 16 bytes),
  "size", "compressed": "gzip" (gzip only), "fluent_signal": 0 and any
  extra options (string pairs); without send options the frame is [tag,
  entries].  Its Message mode (a tag from the record) is [tag, EventTime,
  record, {"chunk", "fluent_signal": 0, "metadata": {...}}].
"""
import base64
import gzip
import struct

import msgpack

from test_fluent2arrow import (Client, SIMPLE, make_sink, read_rows,  # noqa: F401
                               route, world)

T0 = 1700000000


def event_time(sec, ns):
    """EventTime as both agents write it: fixext 8 (0xd7), type 0"""
    return b"\xd7\x00" + struct.pack(">II", sec, ns)


def pstr(s):
    return msgpack.packb(s)


def entry(i, time_bytes, meta=None):
    """One [time, record] entry (Fluent Bit v2: [[time, metadata], record])"""
    rec = msgpack.packb({"id": i, "msg": "m%d" % i})
    if meta is not None:
        return b"\x92\x92" + time_bytes + msgpack.packb(meta) + rec
    return b"\x92" + time_bytes + rec


def fluentd_frame(tag, body, n, compress="text", chunk_id=None):
    """out_forward's send_data_actual: 0x93, tag, str32 of the chunk's bytes
    (gzip members for "gzip"), option {size, compressed, chunk}"""
    option = {"size": n, "compressed": compress}
    if chunk_id is not None:
        option["chunk"] = base64.encodebytes(chunk_id).decode()    # with its "\n"
    return b"\x93" + pstr(tag) + b"\xdb" + struct.pack(">I", len(body)) + body + \
        msgpack.packb(option)


def map32(pairs):
    """A map with a 32-bit header, as Fluent Bit's flb_mp_map_header writes"""
    return b"\xdf" + struct.pack(">I", len(pairs)) + \
        b"".join(msgpack.packb(k) + msgpack.packb(v) for k, v in pairs)


def fluentbit_option(chunk, n, gz=False, extra=()):
    pairs = [("chunk", chunk), ("size", n)]
    if gz:
        pairs.append(("compressed", "gzip"))
    pairs.append(("fluent_signal", 0))
    return map32(pairs + list(extra))


def fb_chunk(k):
    return base64.b64encode(bytes([k]) * 16).decode()     # 24 characters


def array_header(n):
    return msgpack.packb([None] * n)[:-n]                  # the header alone


def test_frames_as_fluentd_and_fluent_bit_write_them(world):
    """Fluentd sends "compressed": "text" on every chunk that is not gzipped:
    the sink closed such connections unacked (0 of 3,000 events)."""
    s = make_sink(world, route("app", "app.**", SIMPLE))
    c = Client(s.port)
    ids = iter(range(1, 10 ** 6))
    want = {}

    def entries(k, meta=None, integer=False):
        out = b""
        for _ in range(k):
            i = next(ids)
            if integer:
                t = msgpack.packb(T0 + i)
                want[i] = (T0 + i) * 1000000
            else:
                t = event_time(T0 + i, 1000 * i)
                want[i] = (T0 + i) * 1000000 + i
            out += entry(i, t, meta)
        return out

    frames = []
    # Fluentd, compress text (the default), with acks: the chunk id's
    # Base64 ends in a newline, and the ack must echo it as it came
    cid = bytes(range(16))
    frames.append((fluentd_frame("app.fluentd", entries(50), 50, "text", cid),
                   base64.encodebytes(cid).decode()))
    # Fluentd, compress text, time_as_integer
    cid2 = bytes(range(16, 32))
    frames.append((fluentd_frame("app.fluentd", entries(20, integer=True), 20, "text", cid2),
                   base64.encodebytes(cid2).decode()))
    # Fluentd, compress gzip: the buffer chunk is gzip members, one per write
    cid3 = bytes(range(32, 48))
    gz = gzip.compress(entries(30)) + gzip.compress(entries(30))
    frames.append((fluentd_frame("app.fluentd", gz, 60, "gzip", cid3),
                   base64.encodebytes(cid3).decode()))
    # Fluent Bit, Forward mode with send options (require_ack_response)
    e = entries(40)
    frames.append((b"\x93" + pstr("app.fluentbit") + array_header(40) + e
                   + fluentbit_option(fb_chunk(1), 40), fb_chunk(1)))
    # Fluent Bit, Compress gzip: a bin of the gzipped entries
    g = gzip.compress(entries(40))
    frames.append((b"\x93" + pstr("app.fluentbit") + b"\xc6" + struct.pack(">I", len(g)) + g
                   + fluentbit_option(fb_chunk(2), 40, gz=True), fb_chunk(2)))
    # Fluent Bit, Retain_Metadata_In_Forward_Mode, with an extra option
    e = entries(25, meta={"otel": {"trace_id": "x"}})
    frames.append((b"\x93" + pstr("app.fluentbit") + array_header(25) + e
                   + fluentbit_option(fb_chunk(3), 25, extra=[("my_key", "my_value")]),
                   fb_chunk(3)))
    # Fluent Bit, Message mode (a tag from the record): no size, metadata
    i = next(ids)
    want[i] = T0 * 1000000
    frames.append((b"\x94" + pstr("app.fluentbit.msg") + event_time(T0, 0)
                   + msgpack.packb({"id": i, "msg": "m%d" % i})
                   + map32([("chunk", fb_chunk(4)), ("fluent_signal", 0),
                            ("metadata", {"k": 1})]), fb_chunk(4)))
    for frame, ack in frames:
        c.send(frame)
        assert c.recv() == {"ack": ack}, s.log()
    # Fluent Bit without send options, and Fluentd without acks: no reply
    c.send(b"\x92" + pstr("app.fluentbit") + array_header(5) + entries(5))
    c.send(fluentd_frame("app.fluentd", b"", 0))          # an empty chunk
    c.send(fluentd_frame("app.fluentd", entries(7), 7))
    c.send(["app.end", T0, {"id": 999999, "msg": "end"}, {"chunk": "end"}])
    assert c.recv() == {"ack": "end"}
    c.close()
    assert s.stop() == 0
    rows = read_rows(world[0], "app")
    got = {r["id"]: r for r in rows if r["id"] != 999999}
    assert sorted(got) == sorted(want), s.log()
    assert len(rows) == len(want) + 1                     # no duplicates
    for i, us in want.items():
        r = got[i]
        assert r["msg"] == "m%d" % i
        assert int(r["time"].timestamp()) * 1000000 + r["time"].microsecond == us
    assert "bad_frames=0" in s.log() and not s.dead()


def test_unknown_compression_is_refused_and_unknown_options_ignored(world):
    """A compression the sink cannot read (Fluentd 1.19's "zstd") closes the
    connection unacked, with its name in the log; options the sink does not
    know (and "compressed" in modes that carry no packed stream) are
    ignored, as the specification asks."""
    s = make_sink(world, route("app", "app", SIMPLE))
    c = Client(s.port)
    c.send(["app", [[T0, {"id": 1, "msg": "a"}]],
            {"chunk": "f", "compressed": "text", "size": 1, "future": [1, {"x": 2}]}])
    assert c.recv() == {"ack": "f"}
    c.send(["app", T0, {"id": 2, "msg": "b"}, {"chunk": "m", "compressed": "gzip", 7: 8}])
    assert c.recv() == {"ack": "m"}
    c.send(["app", msgpack.packb([T0, {"id": 3, "msg": "c"}]), {"chunk": "z", "compressed": "zstd"}])
    assert c.closed()
    assert 'option compressed "zstd" is not supported' in s.log()
    assert s.stop() == 0
    assert [r["id"] for r in read_rows(world[0], "app")] == [1, 2]
