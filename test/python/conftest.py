"""
Fixtures of the pytest interop suite (test/python).

The C tools under test:
    arrow-inspect --json FILE        (branch reader)  prints the JSON form
    arrow-gen [--append] OUT < SPEC  (branch writer)  writes with our writer
are taken from $PG_WARP_TOOLS when set, else from <repo>/tools/bin, where
they are built with `make -C tools` when missing.  A tool that cannot be
found or built makes every test that needs it fail (not skip).

Run: python3 -m pytest test/python -q
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

TOOL_TIMEOUT = 30           # seconds for one tool run; a hang is a failure

_built = {}


def _tools_dir():
    env = os.environ.get("PG_WARP_TOOLS")
    return Path(env) if env else REPO / "tools" / "bin"


def _find_tool(name):
    d = _tools_dir()
    path = d / name
    if path.is_file() and os.access(path, os.X_OK):
        return path
    if os.environ.get("PG_WARP_TOOLS"):
        pytest.fail("%s not found in PG_WARP_TOOLS=%s" % (name, d))
    if "make" not in _built:
        r = subprocess.run(["make", "-C", str(REPO / "tools")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        _built["make"] = (r.returncode, r.stdout.decode(errors="replace"))
    if not (path.is_file() and os.access(path, os.X_OK)):
        rc, out = _built["make"]
        pytest.fail("%s missing from %s; `make -C tools` exited %d:\n%s"
                    % (name, d, rc, out[-3000:]))
    return path


@pytest.fixture(scope="session")
def arrow_inspect():
    """Runs `arrow-inspect ARGS...`; returns a ToolResult."""
    path = _find_tool("arrow-inspect")
    return lambda *args, **kw: run_tool([str(path)] + [str(a) for a in args],
                                        **kw)


@pytest.fixture(scope="session")
def arrow_gen():
    """Runs `arrow-gen ARGS... < stdin`; returns a ToolResult."""
    path = _find_tool("arrow-gen")
    return lambda *args, **kw: run_tool([str(path)] + [str(a) for a in args],
                                        **kw)


@pytest.fixture
def workdir(tmp_path):
    """A fresh temporary directory (a pathlib.Path) for one test."""
    return tmp_path


class ToolResult:
    def __init__(self, argv, rc, stdout, stderr):
        self.argv = argv
        self.rc = rc
        self.stdout = stdout        # bytes
        self.stderr = stderr        # bytes

    @property
    def text(self):
        """stdout as UTF-8 (strict: invalid UTF-8 is a test failure)."""
        try:
            return self.stdout.decode("utf-8")
        except UnicodeDecodeError as e:
            pytest.fail("%s: stdout is not UTF-8: %s" % (self.cmd(), e))

    def cmd(self):
        return " ".join(self.argv)

    def describe(self):
        return "%s\nexit %d\nstderr: %s" % (
            self.cmd(), self.rc, self.stderr.decode("utf-8", "replace")[-2000:])


def run_tool(argv, stdin=None, timeout=TOOL_TIMEOUT):
    """
    Runs a tool.  A crash (killed by a signal: negative exit code, or a
    shell-style 128+N code) or a hang fails the test at once.
    """
    if isinstance(stdin, str):
        stdin = stdin.encode("utf-8")
    try:
        r = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("%s: no exit within %d s (hang)" % (" ".join(argv),
                                                        timeout))
    res = ToolResult(argv, r.returncode, r.stdout, r.stderr)
    if r.returncode < 0 or r.returncode > 1:
        pytest.fail("crash or unexpected exit code (expected 0 or 1):\n%s"
                    % res.describe())
    return res


@pytest.fixture
def tmpdir_world(request):
    """A temporary directory that the cluster's OS user can read (pytest's
    tmp_path lies under a directory only root may enter), removed after."""
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="pg_warp_%s." % request.module.__name__)
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
