"""The command-line tools share tools/common (issue 10): `pg2arrow --dump` and
`arrow-inspect` print an Arrow file with one printer, so they print the same
text; each helper (messages, allocation, connection options, the password
prompt) exists once; pg2arrow prompts with PostgreSQL's own simple_prompt.
(That pg2arrow's files do not call each other in a circle is checked with
the other programs' in test_layout.py.)

The structure checks read the object files of the build tree (tools/bin/obj);
they are skipped where the tools come from elsewhere (PG_WARP_TOOLS pointing
at an installed bundle)."""
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from object_symbols import nm as symbols

ROOT = Path(__file__).resolve().parent.parent.parent
BUILD = ROOT / "tools" / "bin"
TOOLS = Path(os.environ.get("PG_WARP_TOOLS", BUILD))
PG2ARROW = TOOLS / "pg2arrow"
INSPECT = TOOLS / "arrow-inspect"
OBJ = BUILD / "obj"


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60)


def sample_file(path):
    """Two record batches with custom metadata, field metadata (also with a
    control character, printed escaped), a dictionary column and a nested
    column."""
    schema = pa.schema([
        pa.field("id", pa.int32(), nullable=False, metadata={"pg_type": "integer"}),
        pa.field("tag", pa.dictionary(pa.int16(), pa.string())),
        pa.field("l", pa.list_(pa.int64()), metadata={"note": "a\tb"}),
    ], metadata={"origin": "test"})
    with ipc.new_file(path, schema) as w:
        for k in range(2):
            batch = pa.record_batch([
                pa.array([3 * k + i for i in range(3)], pa.int32()),
                pa.array(["x", None, "y"]).dictionary_encode().cast(
                    pa.dictionary(pa.int16(), pa.string())),
                pa.array([[1, 2], None, []], pa.list_(pa.int64())),
            ], schema=schema)
            w.write_batch(batch, custom_metadata={"pg_warp.min.0": str(3 * k)})


def test_dump_prints_what_arrow_inspect_prints(tmp_path):
    path = tmp_path / "s.arrow"
    sample_file(path)
    dump = run(PG2ARROW, "--dump", path)
    inspect = run(INSPECT, path)
    assert dump.returncode == 0 and inspect.returncode == 0, dump.stderr + inspect.stderr
    assert dump.stdout == inspect.stdout
    for text in ("record batch 1:", "pg_type = integer", "note = a\\x09b",
                 "pg_warp.min.0 = 3", "dictionary 0 (int16 indices)"):
        assert text in dump.stdout, text


def test_dump_and_arrow_inspect_fail_alike(tmp_path):
    path = tmp_path / "bad.arrow"
    path.write_bytes(b"ARROW1\0\0" + b"\xff" * 64)
    dump = run(PG2ARROW, "--dump", path)
    inspect = run(INSPECT, path)
    assert dump.returncode == 1 and inspect.returncode == 1
    prefix_dump, prefix_inspect = "pg2arrow: %s: " % path, "arrow-inspect: %s: " % path
    assert dump.stderr.startswith(prefix_dump), dump.stderr
    assert inspect.stderr.startswith(prefix_inspect), inspect.stderr
    assert dump.stderr[len(prefix_dump):] == inspect.stderr[len(prefix_inspect):]


def objects_or_skip():
    """tools/bin/obj, where tools/Makefile keeps the object file of every
    source (tools/bin/obj/common/util.o, ...)."""
    for d in ("common", "pg2arrow", "arrow-inspect", "arrow-gen"):
        if not (OBJ / d).is_dir():
            if TOOLS.resolve() != BUILD.resolve():
                pytest.skip("the tools come from %s, not from a build tree" % TOOLS)
            pytest.fail("%s is missing: the tools are not built from their objects"
                        % (OBJ / d))
    return OBJ


def test_each_helper_is_defined_once():
    """No symbol is defined in two object files of the tools (but main):
    the helpers the tools share live in tools/common only."""
    where = {}
    for o in sorted(objects_or_skip().glob("*/*.o")):
        if o.parent.name == "arrow":
            continue
        for name in symbols(o)[0] - {"main"}:
            where.setdefault(name, []).append(str(o.relative_to(OBJ)))
    twice = {n: w for n, w in where.items() if len(w) > 1}
    assert not twice, twice
    for name in ("fatal", "report", "xmalloc", "xstrdup", "conn_open", "arrow_print_file"):
        assert where.get(name, [""])[0].startswith("common/"), (name, where.get(name))


def test_pg2arrow_prompts_with_postgres_simple_prompt():
    objects_or_skip()
    defined, _ = symbols(BUILD / "pg2arrow")
    assert "simple_prompt" in defined
    _, undefined = symbols(OBJ / "common" / "password.o")
    assert "simple_prompt" in undefined
