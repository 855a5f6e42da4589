"""
The two interval types pyarrow cannot handle from Python, through the Arrow C
data interface.

pyarrow (C++) reads and writes interval[ym] (month_interval) and interval[dt]
(day_time_interval) in IPC files, but has no Python array class for them:
wrapping such an array raises KeyError.  A RecordBatch object holding such a
column is fine as long as the column itself is never wrapped.  So:

  * make_batch() assembles a RecordBatch through the C data interface from
    ordinary pyarrow arrays plus hand-made interval columns;
  * export_column_buffers() reads the validity and value buffers of one
    top-level column of a RecordBatch through the C data interface.

Only flat (top-level) interval columns are supported.
"""

import ctypes

import pyarrow as pa


class CSchema(ctypes.Structure):
    pass


class CArray(ctypes.Structure):
    pass


SCHEMA_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(CSchema))
ARRAY_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(CArray))

CSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(CSchema))),
    ("dictionary", ctypes.POINTER(CSchema)),
    ("release", SCHEMA_RELEASE),
    ("private_data", ctypes.c_void_p),
]
CArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(CArray))),
    ("dictionary", ctypes.POINTER(CArray)),
    ("release", ARRAY_RELEASE),
    ("private_data", ctypes.c_void_p),
]

ARROW_FLAG_NULLABLE = 2

# Everything handed to C stays referenced here for the life of the process:
# the structs are small and test data is small, so never freeing is simplest.
_keep = []


@SCHEMA_RELEASE
def _release_schema(p):
    s = p.contents
    for i in range(s.n_children):
        c = s.children[i].contents
        if c.release:
            c.release(s.children[i])
    s.release = SCHEMA_RELEASE()


@ARRAY_RELEASE
def _release_array(p):
    a = p.contents
    for i in range(a.n_children):
        c = a.children[i].contents
        if c.release:
            c.release(a.children[i])
    a.release = ARRAY_RELEASE()


_IMPORTED_FORMATS = {"interval[ym]": b"tiM", "interval[dt]": b"tiD"}
_type_cache = {}


def interval_type(name):
    """pa.DataType for "interval[ym]" or "interval[dt]"."""
    if name not in _type_cache:
        s = CSchema(_IMPORTED_FORMATS[name], b"", None, ARROW_FLAG_NULLABLE,
                    0, None, None, _release_schema, None)
        _keep.append(s)
        _type_cache[name] = pa.DataType._import_from_c(ctypes.addressof(s))
    return _type_cache[name]


def is_unwrappable(t):
    """True for the types pyarrow cannot wrap as Python arrays."""
    return t.equals(interval_type("interval[ym]")) or \
        t.equals(interval_type("interval[dt]"))


class RawColumn:
    """A column given as raw buffers: validity (bytes or None) and values."""

    def __init__(self, field, length, null_count, validity, values):
        self.field = field
        self.length = length
        self.null_count = null_count
        self.validity = validity
        self.values = values


def _export_array(arr):
    cs = CSchema()
    ca = CArray()
    _keep.extend([cs, ca, arr])
    arr._export_to_c(ctypes.addressof(ca), ctypes.addressof(cs))
    return cs, ca


def _raw_c(col):
    fmt = _IMPORTED_FORMATS[
        "interval[ym]" if col.field.type.equals(interval_type("interval[ym]"))
        else "interval[dt]"]
    name = col.field.name.encode("utf-8")
    cs = CSchema(fmt, name, None,
                 ARROW_FLAG_NULLABLE if col.field.nullable else 0,
                 0, None, None, _release_schema, None)
    vbuf = ctypes.create_string_buffer(col.validity, len(col.validity)) \
        if col.validity is not None else None
    dbuf = ctypes.create_string_buffer(col.values, max(len(col.values), 1))
    bufs = (ctypes.c_void_p * 2)(
        ctypes.cast(vbuf, ctypes.c_void_p).value if vbuf is not None else None,
        ctypes.cast(dbuf, ctypes.c_void_p).value)
    ca = CArray(col.length, col.null_count, 0, 2, 0, bufs, None, None,
                _release_array, None)
    _keep.extend([cs, ca, vbuf, dbuf, bufs, name])
    return cs, ca


def _c_metadata(md):
    """The C data interface's binary form of key-value metadata, or None."""
    if not md:
        return None
    out = [len(md).to_bytes(4, "little", signed=True)]
    for k, v in md.items():
        for s in (k, v):
            s = s if isinstance(s, bytes) else s.encode("utf-8")
            out.append(len(s).to_bytes(4, "little", signed=True))
            out.append(s)
    buf = ctypes.create_string_buffer(b"".join(out))
    _keep.append(buf)
    return ctypes.cast(buf, ctypes.c_void_p).value


def make_batch(schema, columns, length):
    """
    RecordBatch of 'schema' from columns, each a pa.Array or a RawColumn
    (for the interval types pyarrow cannot build).  Names, nullability and
    metadata of the top-level fields and of the schema come from 'schema'.
    """
    parts = []
    for field, col in zip(schema, columns):
        cs, ca = _raw_c(col) if isinstance(col, RawColumn) \
            else _export_array(col)
        # The exporter's release frees its own copies through private_data,
        # not through these pointers, so replacing them is safe.
        name = ctypes.create_string_buffer(field.name.encode("utf-8"))
        _keep.append(name)
        cs.name = ctypes.cast(name, ctypes.c_char_p)
        cs.flags = ARROW_FLAG_NULLABLE if field.nullable else 0
        cs.metadata = _c_metadata(field.metadata)
        parts.append((cs, ca))
    n = len(parts)
    sch_children = (ctypes.POINTER(CSchema) * n)(
        *[ctypes.pointer(p[0]) for p in parts])
    arr_children = (ctypes.POINTER(CArray) * n)(
        *[ctypes.pointer(p[1]) for p in parts])
    top_s = CSchema(b"+s", b"", _c_metadata(schema.metadata), 0, n,
                    sch_children, None, _release_schema, None)
    no_bufs = (ctypes.c_void_p * 1)(None)
    top_a = CArray(length, 0, 0, 1, n, no_bufs, arr_children, None,
                   _release_array, None)
    _keep.extend([sch_children, arr_children, top_s, top_a, no_bufs])
    batch = pa.RecordBatch._import_from_c(ctypes.addressof(top_a),
                                          ctypes.addressof(top_s))
    assert batch.schema.equals(schema, check_metadata=True), \
        (batch.schema, schema)
    return batch


def export_column_buffers(batch, index):
    """
    (length, null_count, validity bytes or None, values bytes) of top-level
    column 'index' of a RecordBatch holding a flat fixed-width column, read
    through the C data interface.  The offset is applied by the caller's
    knowledge of the width: returned with 'offset' as a 5th element.
    """
    cs = CSchema()
    ca = CArray()
    batch._export_to_c(ctypes.addressof(ca), ctypes.addressof(cs))
    try:
        col = ca.children[index].contents
        fmt = cs.children[index].contents.format
        width = {b"tiM": 4, b"tiD": 8}[fmt]
        nbits = col.offset + col.length
        validity = None
        if col.null_count != 0 and col.buffers[0]:
            validity = ctypes.string_at(col.buffers[0], (nbits + 7) // 8)
        values = ctypes.string_at(col.buffers[1], nbits * width) \
            if nbits else b""
        return col.length, col.null_count, validity, values, col.offset
    finally:
        ca.release(ctypes.pointer(ca))
        cs.release(ctypes.pointer(cs))
