"""This checkout against another one (an older commit, set up with its own `make setup`) in the
same run: cold `memdir --help`, cold `memdir recall` without the service, and warm recall in
one process, on LoCoMo conv-26 (issue 28: "no slower than BENCHMARKS.md says today").

Each side builds conv-26's memdir with its own code and indexes it in --workdir (once). Cold:
each round runs every command once, in turn (`python -c pass` first), so load on a shared host
falls on all of them alike; medians over --runs rounds after a warm-up round. Warm: each side
runs a process of its own that answers every question through `main(argv)` (`recall …
--no-record`, output discarded), the first --warmup questions untimed; the sides alternate
--rounds times and the figure is the median of the per-round medians.
The result goes to benchmarks/results/against.json (--result elsewhere).
Usage: python -m benchmarks.bench_against BASELINE_CHECKOUT [--runs 9] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.bench_cold import LOCOMO, SAMPLE
from benchmarks.common import REPO, machine, started, table

BUILD = """
import subprocess, sys
from pathlib import Path
from memdir.cli.bench.locomo import build_memdir, load_samples
path, root, memdir = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
(sample,) = [s for s in load_samples(path) if s.sample_id == sys.argv[4]]
build_memdir(sample, root)
subprocess.run([memdir, "--dir", str(root), "index"], check=True, capture_output=True)
"""

WARM = """
import contextlib, io, json, statistics, sys, time
from memdir.cli.main import main
root, warmup, questions = sys.argv[1], int(sys.argv[2]), json.loads(sys.stdin.read())
times = []
for number, question in enumerate(questions):
    began = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(["--dir", root, "recall", question, "--no-record"])
        except SystemExit:
            pass
    if number >= warmup:
        times.append((time.perf_counter() - began) * 1000)
print(json.dumps(times))
"""


class Side:
    """One checkout: its virtual environment's python and memdir, and its conv-26 memdir."""

    def __init__(self, name: str, checkout: Path, workdir: Path) -> None:
        self.name = name
        self.python = str(checkout / ".venv" / "bin" / "python")
        self.memdir = str(checkout / ".venv" / "bin" / "memdir")
        self.root = workdir / name / f"cold-{SAMPLE}"
        self.commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True).stdout.strip()  # fmt: skip

    def build(self, data: Path) -> None:
        marker = self.root / ".bench-complete"
        if marker.exists():
            return
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)
        self.root.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([self.python, "-c", BUILD, str(data), str(self.root), self.memdir, SAMPLE],
                       check=True, cwd=self.root.parent)  # fmt: skip
        marker.write_text("indexed\n")

    def warm(self, questions: list[str], warmup: int) -> list[float]:
        done = subprocess.run([self.python, "-c", WARM, str(self.root), str(warmup)],
                              input=json.dumps(questions), capture_output=True, text=True,
                              check=True, env=_environment(), cwd=self.root.parent)  # fmt: skip
        return list(json.loads(done.stdout))


def _environment() -> dict[str, str]:
    return {**os.environ, "MEMDIR_NO_SERVICE": "1"}


def questions_of(data: Path) -> list[str]:
    from memdir.cli.bench.locomo import load_samples

    (sample,) = [sample for sample in load_samples(data) if sample.sample_id == SAMPLE]
    return [question.text for question in sample.questions]


def cold(sides: list[Side], question: str, runs: int) -> dict[str, list[float]]:
    commands = {"python -c pass": [sys.executable, "-c", "pass"]}
    for side in sides:
        commands[f"{side.name}: memdir --help"] = [side.memdir, "--help"]
        commands[f"{side.name}: memdir recall (no service)"] = [
            side.memdir, "--dir", str(side.root), "recall", question, "--no-record"]  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for run in range(runs + 1):
        for name, command in commands.items():
            began = time.perf_counter()
            subprocess.run(command, env=_environment(), capture_output=True, check=True)
            if run:  # the first round is a warm-up
                samples[name].append((time.perf_counter() - began) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", type=Path, help="a checkout of the baseline commit, set up")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench/against"))
    parser.add_argument("--file", type=Path, default=LOCOMO)
    args, result = started(parser, "against")
    sides = [Side("this", REPO, args.workdir), Side("baseline", args.baseline, args.workdir)]
    for side in sides:
        side.build(args.file)
    questions = questions_of(args.file)

    samples = cold(sides, questions[0], args.runs)
    warm: dict[str, list[float]] = {side.name: [] for side in sides}
    for _ in range(args.rounds):
        for side in sides:
            warm[side.name].append(statistics.median(side.warm(questions, args.warmup)))

    figures: dict[str, dict[str, float]] = {}
    for measure in ("memdir --help", "memdir recall (no service)"):
        this, base = (statistics.median(samples[f"{s.name}: {measure}"]) for s in sides)
        figures[f"cold {measure}"] = {"this ms": this, "baseline ms": base, "ratio": this / base}
    this, base = (statistics.median(warm[side.name]) for side in sides)
    figures["warm recall p50"] = {"this ms": this, "baseline ms": base, "ratio": this / base}
    figures["python -c pass"] = {"this ms": statistics.median(samples["python -c pass"])}

    print(machine())
    print(f"load average {os.getloadavg()[0]:.1f}; this {sides[0].commit}, baseline "
          f"{sides[1].commit}; {SAMPLE}; cold: medians of {args.runs} rounds; warm: median of "
          f"{args.rounds} rounds' medians over {len(questions) - args.warmup} questions")  # fmt: skip
    print()
    rows = [[name, f"{row['this ms']:.1f}", f"{row.get('baseline ms', float('nan')):.1f}",
             f"{row['ratio']:.2f}" if "ratio" in row else ""] for name, row in figures.items()]  # fmt: skip
    print(table(["measure", "this ms", "baseline ms", "this ÷ baseline"], rows))
    result.parameters.update(baseline=sides[1].commit, sample=SAMPLE, runs=args.runs,
                             rounds=args.rounds, questions=len(questions))  # fmt: skip
    result.save(figures)


if __name__ == "__main__":
    main()
