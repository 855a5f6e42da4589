"""
Just enough of the Arrow IPC framing and flatbuffers to locate messages:
the file footer's blocks, a message's body length and buffer list, the
message boundaries of a stream.  Independent of pyarrow and of our C code;
used to check byte-identity after append, the alignment rules of the spec,
and to cut or patch files at known places for the malformed-input tests.

Layouts (format/File.fbs, Message.fbs):
  file:    "ARROW1\\0\\0" stream... footer int32(footer_len) "ARROW1"
  Footer:  0 version:short  1 schema:Schema  2 dictionaries:[Block]
           3 recordBatches:[Block]  4 custom_metadata
  Block:   struct { offset:long; metaDataLength:int; (pad 4) bodyLength:long }
  message: 0xFFFFFFFF int32(len) flatbuffer(len) body(bodyLength)
  Message: 0 version:short  1 header_type:ubyte  2 header  3 bodyLength:long
  RecordBatch: 0 length:long  1 nodes:[FieldNode]  2 buffers:[Buffer] ...
  Buffer:  struct { offset:long; length:long }
"""

import struct

MAGIC = b"ARROW1"
HEADER_SCHEMA, HEADER_DICTIONARY, HEADER_RECORD_BATCH = 1, 2, 3


class Table:
    """A flatbuffer table at absolute position pos of buf."""

    def __init__(self, buf, pos):
        self.buf = buf
        self.pos = pos
        (soff,) = struct.unpack_from("<i", buf, pos)
        self.vt = pos - soff
        (self.vt_size,) = struct.unpack_from("<H", buf, self.vt)

    def field_pos(self, i):
        """Absolute position of field i, or None when absent."""
        o = 4 + 2 * i
        if o >= self.vt_size:
            return None
        (fo,) = struct.unpack_from("<H", self.buf, self.vt + o)
        return self.pos + fo if fo else None

    def scalar(self, i, fmt, default=0):
        p = self.field_pos(i)
        return default if p is None else struct.unpack_from(
            "<" + fmt, self.buf, p)[0]

    def table(self, i):
        p = self.field_pos(i)
        if p is None:
            return None
        (u,) = struct.unpack_from("<I", self.buf, p)
        return Table(self.buf, p + u)

    def vector(self, i):
        """(absolute position of element 0, count) or (None, 0)."""
        p = self.field_pos(i)
        if p is None:
            return None, 0
        (u,) = struct.unpack_from("<I", self.buf, p)
        (n,) = struct.unpack_from("<I", self.buf, p + u)
        return p + u + 4, n


def root(buf, pos=0):
    (u,) = struct.unpack_from("<I", buf, pos)
    return Table(buf, pos + u)


class Block:
    def __init__(self, offset, meta_len, body_len, pos):
        self.offset = offset
        self.meta_len = meta_len
        self.body_len = body_len
        self.pos = pos          # absolute file position of the struct

    @property
    def end(self):
        return self.offset + self.meta_len + self.body_len

    def key(self):
        return (self.offset, self.meta_len, self.body_len)

    def __repr__(self):
        return "Block(offset=%d, meta=%d, body=%d)" % self.key()


def read_footer(data):
    """{"footer_start", "dictionaries": [Block], "record_batches": [Block]}"""
    if data[:6] != MAGIC or data[-6:] != MAGIC:
        raise ValueError("not an Arrow file (magic)")
    (flen,) = struct.unpack_from("<i", data, len(data) - 10)
    start = len(data) - 10 - flen
    fb = data[start:len(data) - 10]
    t = root(fb)

    def blocks(i):
        p, n = t.vector(i)
        out = []
        for k in range(n):
            q = p + 24 * k
            off, ml, _, bl = struct.unpack_from("<qiiq", fb, q)
            out.append(Block(off, ml, bl, start + q))
        return out
    return {"footer_start": start, "version": t.scalar(0, "h"),
            "dictionaries": blocks(2), "record_batches": blocks(3)}


def read_message(data, pos):
    """
    The message at pos: {"start", "meta_len" (prefix included, padded),
    "header_type", "body_start", "body_length", "end", "buffers": [(off,
    len)], "length"} ; None at an end-of-stream marker or end of data.
    """
    if pos + 4 > len(data):
        return None
    (first,) = struct.unpack_from("<i", data, pos)
    if first == -1:
        (mlen,) = struct.unpack_from("<i", data, pos + 4)
        prefix = 8
    else:                       # pre-0.15 framing: no continuation marker
        mlen, prefix = first, 4
    if mlen == 0:
        return None
    fb = data[pos + prefix:pos + prefix + mlen]
    t = root(fb)
    htype = t.scalar(1, "B")
    body_len = t.scalar(3, "q")
    header = t.table(2)
    buffers, length = [], None
    if header is not None and htype in (HEADER_RECORD_BATCH,
                                        HEADER_DICTIONARY):
        rb = header if htype == HEADER_RECORD_BATCH else header.table(1)
        if rb is not None:
            length = rb.scalar(0, "q")
            p, n = rb.vector(2)
            for k in range(n):
                buffers.append(struct.unpack_from("<qq", fb, p + 16 * k))
    body_start = pos + prefix + mlen
    return {"start": pos, "meta_len": prefix + mlen, "header_type": htype,
            "body_start": body_start, "body_length": body_len,
            "end": body_start + body_len, "buffers": buffers,
            "length": length}


def stream_messages(data, pos=0):
    """Every message of a stream from pos up to the end-of-stream marker."""
    out = []
    while True:
        m = read_message(data, pos)
        if m is None:
            return out
        out.append(m)
        pos = m["end"]
