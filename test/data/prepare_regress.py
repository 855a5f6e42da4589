#!/usr/bin/env python3
"""Prepares a pg_regress test directory (test/, or a copy of it) for a run.

    python3 test/data/prepare_regress.py [TESTDIR]      (default: this script's test/)

1. Writes the Arrow fixtures into TESTDIR/data/generated (make_testdata.py, which
   lies beside this script).
2. Converts every TESTDIR/input/NAME.source into TESTDIR/sql/NAME.sql and every
   TESTDIR/output/NAME.source into TESTDIR/expected/NAME.out, replacing
   @abs_srcdir@ with the absolute path of TESTDIR.  pg_regress did this itself
   up to PostgreSQL 14; PostgreSQL 15's pg_regress no longer does.

`make installcheck` runs it first (REGRESS_PREP in the Makefile); the offline
bundle's run-tests.sh runs it on a copy in its work directory.  The generated
files are build outputs (.gitignore): edit the .source files.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def convert(testdir, src_sub, dst_sub, suffix):
    """Writes TESTDIR/DST_SUB/NAME.SUFFIX for each TESTDIR/SRC_SUB/NAME.source."""
    src_dir = os.path.join(testdir, src_sub)
    if not os.path.isdir(src_dir):
        return
    os.makedirs(os.path.join(testdir, dst_sub), exist_ok=True)
    for name in sorted(os.listdir(src_dir)):
        if not name.endswith(".source"):
            continue
        with open(os.path.join(src_dir, name), encoding="utf-8") as f:
            text = f.read().replace("@abs_srcdir@", testdir)
        out = os.path.join(testdir, dst_sub, name[: -len(".source")] + "." + suffix)
        with open(out + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(out + ".tmp", out)


def main():
    testdir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(HERE))
    subprocess.run([sys.executable, os.path.join(HERE, "make_testdata.py"),
                    os.path.join(testdir, "data", "generated")], check=True)
    convert(testdir, "input", "sql", "sql")
    convert(testdir, "output", "expected", "out")


if __name__ == "__main__":
    main()
