"""The symbols of an object file, as nm lists them: shared by the layout
test (test_layout.py) and the tools' tests (test_tools_common.py)."""
import subprocess


def nm(path):
    """(defined global symbols, undefined symbols) of an object file."""
    out = subprocess.run(["nm", path], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U":
            undefined.add(f[1])
        elif len(f) == 3 and f[1] in "TDBRCVWG":
            defined.add(f[2])
    return defined, undefined
