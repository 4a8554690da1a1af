"""`memdir bench safety` (cli/bench/safety, docs/SAFETY.md) with its result recorded: each
experiment's metrics with the safeguards on and in the unrestricted ablation, as
`memdir bench safety --json` prints them. The result goes to benchmarks/results/safety.json
(--result elsewhere).

Usage: python -m benchmarks.bench_safety [--seed 0] [--sessions 100]
"""

from __future__ import annotations

import argparse

from benchmarks.common import started
from memdir.cli.bench.safety import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sessions", type=int, default=100)
    args, result = started(parser, "safety")
    report = run(args.seed, args.sessions)
    figures = {
        f"{metric['experiment']}: {metric['metric']}": {
            "safeguarded": metric["safeguarded"],
            "unrestricted": metric["unrestricted"],
            "better": "lower" if metric["lower_is_better"] else "higher",
            "safeguard wins": "yes" if metric["safeguard_wins"] else "no",
        }
        for metric in report["metrics"]
    }
    for row, found in figures.items():
        print(f"{row}: {found['safeguarded']} vs {found['unrestricted']} unrestricted")
    result.parameters.update(embedder=report["embedder"], k=report["k"])
    result.save(figures, {"seconds": report["seconds"], "experiments": report["details"]})


if __name__ == "__main__":
    main()
