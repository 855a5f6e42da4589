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
named in the Makefile (no wildcards: a file left out would not be built).

The same rules hold for what the object files of the build reference (nm):
a call through a header that the include rules allow, or a local extern
declaration, must not tie the layers either.

  src/arrow, src/xpu   reference nothing of ours outside their own folder
  src/fdw              src/fdw, the Arrow library, main.c's settings (GUC
                       variables); never the engine (it installs a hook)
  src/engine           src/engine, src/xpu, src/types, main.c's settings, and
                       of src/fdw only what fdw/fdw_scan.h declares
  src/types            src/types, src/xpu, main.c's settings
  src/service          the service, its build of src/xpu, the Arrow library:
                       no symbol of the extension, none of PostgreSQL's

and the files of each program (the service, pg2arrow, fluent2arrow) do not
call each other in a circle: main.c is the entry point only (it defines
main and nothing else), and every other file uses only files below it."""
import glob
import os
import re
import subprocess

import pytest

from object_symbols import nm

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


# --- the object files: what each layer references (nm) ---

BUILD_SERVICE = os.path.join(TOP, "build", "service")
TOOLS_BUILD = os.path.join(TOP, "tools", "bin")
TOOLS = os.environ.get("PG_WARP_TOOLS", TOOLS_BUILD)


def layer_objects():
    """The object files of the build by layer, each {path: (defined,
    undefined)}: the extension's (the Makefile's OBJS), the Arrow library
    and xPU code as the extension links them, and the service's own build
    (build/service)."""
    objs = makefile_list("OBJS")
    arrow = ["src/arrow/" + f[:-2] + ".o" for f in makefile_list("ARROW_SOURCES", "src/arrow/sources.mk")]
    xpu = makefile_list("XPU_C_OBJS")
    service = [os.path.join(BUILD_SERVICE, f[len("src/"):-2] + ".o")
               for f in makefile_list("SERVICE_SRCS") + makefile_list("SERVICE_XPU_SRCS")]
    missing = [o for o in objs + arrow + xpu + service if not os.path.exists(os.path.join(TOP, o))]
    if missing:
        pytest.fail("not built (run make first): %s" % ", ".join(missing[:5]))
    layers = {"main": [o for o in objs if o == "src/main.o"],
              "arrow": arrow, "xpu": xpu,
              "service": [o for o in service if "/service/service/" in o],
              "service_xpu": [o for o in service if "/service/xpu/" in o]}
    for folder in ("fdw", "engine", "types"):
        layers[folder] = [o for o in objs if o.startswith("src/%s/" % folder)]
    return {name: {o: nm(os.path.join(TOP, o)) for o in files} for name, files in layers.items()}


def header_functions(path):
    """The names a header declares extern (its functions and variables)."""
    text = open(os.path.join(SRC, path)).read()
    return set(re.findall(r"^extern\s[^;(]*?\**(\w+)\s*\(", text, re.M)) | \
        set(re.findall(r"^extern\s[^;(]*?\**(\w+)\s*;", text, re.M))


def defined_by(layers, *names):
    out = set()
    for name in names:
        for defined, _ in layers[name].values():
            out |= defined
    return out


def main_settings(layers):
    """main.c's global variables (its GUCs): what lower layers may read."""
    out = subprocess.run(["nm", os.path.join(TOP, "src/main.o")], check=True,
                         capture_output=True, text=True).stdout
    return {f[2] for f in (l.split() for l in out.splitlines()) if len(f) == 3 and f[1] in "BDC"}


def cross_references(layers, layer, allowed):
    """References of layer's objects to symbols that the build defines in
    another layer and that are not in allowed: ["obj: symbol (layer)"]."""
    owner = {}
    for name, objs in layers.items():
        for defined, _ in objs.values():
            for sym in defined:
                owner.setdefault(sym, name)
    bad = []
    for obj, (_, undefined) in sorted(layers[layer].items()):
        for sym in sorted(undefined):
            if sym in owner and sym not in allowed:
                bad.append("%s: %s (%s)" % (obj, sym, owner[sym]))
    return bad


@pytest.fixture(scope="module")
def layers():
    return layer_objects()


@pytest.mark.parametrize("layer", ["arrow", "xpu", "service_xpu"])
def test_libraries_reference_only_themselves(layers, layer):
    assert cross_references(layers, layer, defined_by(layers, layer)) == []


def test_fdw_references_arrow_and_main_settings_only(layers):
    allowed = defined_by(layers, "fdw", "arrow") | main_settings(layers)
    assert cross_references(layers, "fdw", allowed) == []


def test_engine_reaches_fdw_only_through_the_scan_interface(layers):
    scan_interface = header_functions("fdw/fdw_scan.h")
    assert "arrow_fdw_engine_source" in scan_interface
    allowed = (defined_by(layers, "engine", "xpu", "types") | main_settings(layers)
               | scan_interface)
    assert cross_references(layers, "engine", allowed) == []


def test_types_reference_xpu_and_main_settings_only(layers):
    allowed = defined_by(layers, "types", "xpu") | main_settings(layers)
    assert cross_references(layers, "types", allowed) == []


def test_service_references_no_backend_symbol(layers):
    allowed = defined_by(layers, "service", "service_xpu", "arrow")
    assert cross_references(layers, "service", allowed) == []
    # nor anything of PostgreSQL's (the server exports what extensions call)
    postgres = os.path.join(subprocess.run(["pg_config", "--bindir"], check=True,
                                           capture_output=True, text=True).stdout.strip(),
                            "postgres")
    out = subprocess.run(["nm", "-D", "--defined-only", postgres], check=True,
                         capture_output=True, text=True).stdout
    server = {l.split()[-1] for l in out.splitlines() if l.strip()}
    external = set()
    for _, undefined in layers["service"].values():
        external |= undefined
    external -= allowed
    # the C library's names that PostgreSQL's binary defines too (its ports)
    libc = {s for s in external if s.startswith(("__", "_"))}
    assert sorted((external - libc) & server) == []


# --- the files of each program: no circle, main.c the entry point only ---

def program_objects(program):
    """{file stem: (defined, undefined)} of a program's own object files."""
    if program == "service":
        d = os.path.join(BUILD_SERVICE, "service")
    else:
        d = os.path.join(TOOLS_BUILD, "obj", program)
        if not os.path.isdir(d) and os.path.realpath(TOOLS) != os.path.realpath(TOOLS_BUILD):
            pytest.skip("the tools come from %s, not from a build tree" % TOOLS)
    objs = sorted(glob.glob(os.path.join(d, "*.o")))
    if not objs:
        pytest.fail("%s has no object files: build first" % d)
    return {os.path.basename(o)[:-2]: nm(o) for o in objs}


@pytest.mark.parametrize("program", ["pg2arrow", "fluent2arrow", "service"])
def test_program_files_depend_on_each_other_without_a_circle(program):
    syms = program_objects(program)
    assert syms["main"][0] == {"main"}, "main.c defines more than main: %s" % syms["main"][0]
    uses = {a: {b for b in syms if b != a and syms[a][1] & syms[b][0]} for a in syms}
    state = {}

    def visit(a, path):
        state[a] = "open"
        for b in sorted(uses[a]):
            if state.get(b) == "open":
                pytest.fail("%s files call each other in a circle: %s"
                            % (program, " -> ".join(path + [a, b])))
            if b not in state:
                visit(b, path + [a])
        state[a] = "done"

    for a in sorted(syms):
        if a not in state:
            visit(a, [])
