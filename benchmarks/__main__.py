"""Run benchmarks: ``python -m benchmarks ordering`` (more suites are added by the performance work)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("suite", nargs="*", default=["ordering"], help="ordering")
    parser.add_argument("--all", action="store_true", help="run every suite")
    parser.add_argument("--out", type=Path, default=Path("bench-results"), help="where JSON results go")
    args = parser.parse_args(argv)
    suites = ["ordering"] if args.all else args.suite
    args.out.mkdir(parents=True, exist_ok=True)
    for suite in suites:
        if suite == "ordering":
            from benchmarks import ordering

            result = ordering.run()
        else:
            parser.error(f"unknown suite {suite!r}")
        (args.out / f"{suite}.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        json.dump(result, sys.stdout, indent=2, sort_keys=True)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
