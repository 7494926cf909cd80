"""The slow step's verdict: fail on any test that failed, pass when the time budget stopped it.

pytest-timeout's --session-timeout ends the session between tests with exit code 1, the same code
as a failed test, so the JUnit report decides which of the two it was.
"""
import sys
import xml.etree.ElementTree as ET

NO_TESTS_SELECTED = 5


def main(report: str, code: int) -> int:
    if code == NO_TESTS_SELECTED:
        print("slow tests: none selected")
        return 0
    cases = list(ET.parse(report).getroot().iter("testcase"))
    bad = [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    for case in bad:
        print(f"slow test failed: {case.get('classname')}::{case.get('name')}")
    if bad or code not in (0, 1):
        print(f"slow tests: {len(bad)} failed of {len(cases)} run (pytest exit {code})")
        return code or 1
    stopped = " (the time budget ended the session; pytest's progress above shows how far it got)"
    stopped = stopped if code == 1 else ""
    print(f"slow tests: {len(cases)} ran, none failed{stopped}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
