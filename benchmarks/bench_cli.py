"""`memdir bench locomo|delivery …` with its result recorded: runs `memdir bench MODE ARGS…
--json` (its progress on stderr) and keeps each file's overall figures and the pooled ones as
the result's figures, the whole report as its details. The result goes to
benchmarks/results/MODE.json (--result elsewhere).

Usage: python -m benchmarks.bench_cli locomo ../shared/bench/locomo/locomo-dev.json [options of
       memdir bench locomo…]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, Result, memdir_command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("locomo", "delivery"))
    parser.add_argument("--result", type=Path, help="write the result here")
    args, rest = parser.parse_known_args()
    command = [*memdir_command(), "bench", args.mode, *rest, "--json"]
    result = Result(args.mode, {"arguments": rest}, args.result or RESULTS / f"{args.mode}.json",
                    command=" ".join(["memdir", *command[1:]]))  # fmt: skip
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        sys.exit(done.returncode)
    report = json.loads(done.stdout)
    figures: dict[str, Any] = {
        Path(path).name: found["overall"] for path, found in report["files"].items()
    }
    if len(report["files"]) > 1:
        figures["pooled"] = report["pooled"]["overall"]
    for name, found in figures.items():
        print(name, json.dumps(found))
    result.save(figures, report)


if __name__ == "__main__":
    main()
