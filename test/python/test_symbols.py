"""The library boundary of pg_warp.so: it exports exactly what PostgreSQL looks
up (the magic block, _PG_init, the supervisor worker's entry point, and each C function named in sql/pg_warp.sql with
its pg_finfo_ record), so that no symbol of ours (the Arrow library's arrow_* and
fb_*, our helpers) can collide with another library loaded into a backend; and
the Arrow writer, which the backend never calls, is not linked in."""
import os
import re
import subprocess

def pg_config(flag):
    return subprocess.run(["pg_config", flag], check=True,
                          capture_output=True, text=True).stdout.strip()


def installed_library():
    return os.path.join(pg_config("--pkglibdir"), "pg_warp.so")


def sql_functions():
    """The C functions that the installed extension script names."""
    ext = os.path.join(pg_config("--sharedir"), "extension")
    scripts = [f for f in os.listdir(ext)
               if re.fullmatch(r"pg_warp--[0-9.]+\.sql", f)]
    assert scripts, "no pg_warp--VERSION.sql in %s" % ext
    names = set()
    for f in scripts:
        names |= set(re.findall(r"'MODULE_PATHNAME',\s*'(\w+)'", open(os.path.join(ext, f)).read()))
    assert names, "no C functions found in %s" % scripts
    return names


def symbols(path, *flags):
    out = subprocess.run(["nm", *flags, path], check=True,
                         capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def test_exported_symbols_are_exactly_what_postgres_calls():
    lib = installed_library()
    exported = {f[-1] for f in symbols(lib, "-D", "--defined-only")}
    # and the entry points that the postmaster looks up for the background
    # workers (bgw_function_name: src/engine/service_supervisor.c,
    # src/fdw/meta_shared.c)
    expected = {"Pg_magic_func", "_PG_init", "pg_warp_supervisor_main",
                "pg_warp_meta_prewarm_main"}
    for name in sql_functions():
        expected |= {name, "pg_finfo_" + name}
    assert exported == expected, (
        "unexpected: %s; missing: %s" % (sorted(exported - expected), sorted(expected - exported)))


def test_arrow_library_is_internal_and_writer_not_linked():
    lib = installed_library()
    local = {f[-1] for f in symbols(lib) if len(f) == 3}
    # the reader is there (linked from the static archive), as local symbols
    assert "arrow_file_open_source" in local
    # the writer, the builders and the JSON form are not used by the backend
    unused = sorted(s for s in local
                    if s.startswith(("arrow_writer_", "arrow_builder_", "arrow_json_", "fb_build")))
    assert unused == [], unused
