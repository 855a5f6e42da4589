"""Prints the counts of a pytest JUnit XML file as one line "TESTS FAILURES
ERRORS SKIPPED" (skipped includes the expected failures), for scripts/test.sh
and the offline bundle's run-tests.sh.

    python3 junit_counts.py pytest.xml
"""
import sys
import xml.etree.ElementTree as ET


def main(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    print(" ".join(str(sum(int(s.get(k, 0)) for s in suites))
                   for k in ("tests", "failures", "errors", "skipped")))


if __name__ == "__main__":
    main(sys.argv[1])
