"""The entry point every lint script shares: the source root (the first argument, or the
repository holding the scripts), the problems its check finds printed one a line, a count,
and exit 1 when there is any."""

import pathlib
import sys


def run(name, check):
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else __file__).resolve()
    if len(sys.argv) <= 1:
        root = root.parents[2]
    problems = check(root)
    for p in problems:
        print(p)
    print(f"{name}: {len(problems)} problem(s)")
    return 1 if problems else 0
