"""PASS/FAIL lines for the scripted checks (tests/interop, tests/oauth): each
check prints one line, and `finish` prints the counts and exits 1 if any
failed. Standard library only: the scripts run in their own virtualenvs.
"""

import sys

results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    """Counts and prints one check."""
    if ok:
        results["passed"] += 1
        print(f"PASS {name}")
    else:
        results["failed"] += 1
        print(f"FAIL {name} {detail}")


def finish():
    """Prints the counts; exits 1 if any check failed, else 0."""
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)
