"""The layers of src/ (DESIGN.md, "Layout"): which folder may include what, and
the Makefile's explicit source lists.

  src/arrow, src/xpu   include nothing of ours outside their own folder
  src/fdw              pg_warp.h, its own headers, the Arrow library
  src/engine           pg_warp.h, its own headers, src/xpu, and of src/fdw only
                       the scan interface fdw/fdw_scan.h
  src/service          src/xpu and src/arrow; never postgres.h
  src/types            SQL types and aggregates of their own (float2, hll):
                       pg_warp.h, its own headers and src/xpu

and every C source of the extension, the Arrow library and the service is
named in the Makefile (no wildcards: a file left out would not be built)."""
import os
import re

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SRC = os.path.join(TOP, "src")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def sources(folder, exts=(".c", ".h", ".cu")):
    d = os.path.join(SRC, folder)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(exts))


def quoted_includes(path):
    """The quoted includes of a file, as paths relative to src/ (the build's
    include path: the file's folder, src/ and src/arrow)."""
    out = []
    here = os.path.relpath(os.path.dirname(path), SRC)
    for kind, name in INCLUDE.findall(open(path, encoding="utf-8").read()):
        if kind != '"':
            continue
        if os.path.exists(os.path.join(os.path.dirname(path), name)):
            name = os.path.normpath(os.path.join(here, name))
        elif os.path.exists(os.path.join(SRC, "arrow", name)):
            name = "arrow/" + name      # through -Isrc/arrow
        out.append(name)
    return out


def offending(folder, allowed):
    bad = []
    for path in sources(folder):
        for inc in quoted_includes(path):
            if not allowed(inc):
                bad.append("%s: %s" % (os.path.relpath(path, TOP), inc))
    return bad


def is_postgres_header(inc):
    # what PostgreSQL's include directories provide: a file name at the top
    # (postgres.h, fmgr.h, ...) or below one of its folders (utils/, ...)
    return not inc.startswith(("arrow/", "xpu/", "fdw/", "engine/", "service/", "types/")) \
        and not os.path.exists(os.path.join(SRC, inc))


@pytest.mark.parametrize("folder", ["arrow", "xpu"])
def test_libraries_include_only_themselves(folder):
    assert offending(folder, lambda inc: inc.startswith(folder + "/")) == []


def test_fdw_uses_arrow_and_its_own_headers():
    ok = lambda inc: (inc == "pg_warp.h" or inc.startswith(("fdw/", "arrow/"))
                      or is_postgres_header(inc))
    assert offending("fdw", ok) == []


def test_engine_reaches_fdw_only_through_the_scan_header():
    ok = lambda inc: (inc in ("pg_warp.h", "fdw/fdw_scan.h")
                      or inc.startswith(("engine/", "xpu/"))
                      or is_postgres_header(inc))
    assert offending("engine", ok) == []


def test_types_use_only_their_own_headers_and_xpu():
    if not os.path.isdir(os.path.join(SRC, "types")):
        return
    ok = lambda inc: (inc == "pg_warp.h" or inc.startswith(("types/", "xpu/"))
                      or is_postgres_header(inc))
    assert offending("types", ok) == []


def test_service_never_includes_postgres():
    ok = lambda inc: inc.startswith(("service/", "xpu/", "arrow/"))
    assert offending("service", ok) == []
    for path in sources("service"):
        assert not [i for k, i in INCLUDE.findall(open(path).read()) if i == "postgres.h"], path


def makefile_list(name, makefile="Makefile"):
    """The words of a Makefile variable written as NAME = a \\ b \\ c."""
    text = open(os.path.join(TOP, makefile)).read()
    m = re.search(r"^%s\s*=((?:.*\\\n)*.*)$" % re.escape(name), text, re.M)
    assert m, "no %s in the Makefile" % name
    value = m.group(1).replace("\\\n", " ")
    assert "wildcard" not in value, "%s uses a wildcard" % name
    return value.split()


def c_files(*folders):
    out = []
    for folder in folders:
        d = os.path.join(SRC, folder)
        out += [os.path.relpath(os.path.join(d, f), TOP)
                for f in os.listdir(d) if f.endswith(".c")]
    return sorted(out)


def test_makefile_names_every_source():
    objs = sorted(o[:-2] + ".c" for o in makefile_list("OBJS"))
    folders = [".", "fdw", "engine"] + (["types"] if os.path.isdir(os.path.join(SRC, "types")) else [])
    assert objs == c_files(*folders)
    # the library's list lives in src/arrow/sources.mk, which the Makefiles include
    assert makefile_list("ARROW_SRCS") == ["$(addprefix", "src/arrow/,$(ARROW_SOURCES))"]
    assert sorted("src/arrow/" + f for f in
                  makefile_list("ARROW_SOURCES", "src/arrow/sources.mk")) == c_files("arrow")
    assert sorted(makefile_list("SERVICE_SRCS")) == c_files("service")
