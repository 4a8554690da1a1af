"""Cold `memdir recall` without the service on LoCoMo conv-26, next to `python -c pass` and
`memdir --help` in the same run, in this environment (issue 33 item 6).

The memdir holds conv-26's 419 turns as memories (as `memdir bench locomo` builds it) and is
indexed once in --workdir. Each round runs every command once, in turn, so load on a shared
host falls on all of them alike; figures are medians over --runs rounds after one warm-up.
PYTHONDONTWRITEBYTECODE and whether memdir's own modules have bytecode are reported, not
changed: a clone set up with `make setup` has bytecode whatever PYTHONDONTWRITEBYTECODE says.
The result goes to benchmarks/results/cold.json (--result elsewhere).
Usage: python -m benchmarks.bench_cold [--runs 9] [--workdir /tmp/memdir-bench] [--file F]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import machine, memdir_command, started, table
from memdir.cli.bench.locomo import build_memdir, load_samples

# the benchmark data as tests/test_retrieval_floor.py finds it: $MEMDIR_BENCH_DATA or ../shared/bench
DATA = Path(
    os.environ.get("MEMDIR_BENCH_DATA") or Path(__file__).resolve().parents[2] / "shared" / "bench"
)
LOCOMO = DATA / "locomo" / "locomo-dev.json"
SAMPLE = "conv-26"


def built(workdir: Path, path: Path) -> tuple[Path, list[str]]:
    """conv-26 as an indexed memdir (made once) and its questions."""
    (sample,) = [sample for sample in load_samples(path) if sample.sample_id == SAMPLE]
    root = workdir / f"cold-{SAMPLE}"
    marker = root / ".bench-complete"
    if not marker.exists():
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        build_memdir(sample, root)
        subprocess.run([*memdir_command(), "--dir", str(root), "index"], check=True,
                       capture_output=True)  # fmt: skip
        marker.write_text("indexed\n")
    return root, [question.text for question in sample.questions]


def has_bytecode() -> bool:
    """Whether memdir's CLI root has a current .pyc beside its source."""
    spec = importlib.util.find_spec("memdir.cli.main")
    assert spec is not None and spec.origin is not None
    cached = Path(importlib.util.cache_from_source(spec.origin))
    return cached.is_file() and cached.stat().st_mtime >= Path(spec.origin).stat().st_mtime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    parser.add_argument("--file", type=Path, default=LOCOMO)
    args, result = started(parser, "cold")
    root, questions = built(args.workdir, args.file)

    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "memdir --help": [*memdir_command(), "--help"],
        "memdir recall (no service)": [
            *memdir_command(),
            "--dir",
            str(root),
            "recall",
            questions[0],
            "--no-record",
        ],  # fmt: skip
    }
    env = {**os.environ, "MEMDIR_NO_SERVICE": "1"}
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for run in range(args.runs + 1):
        for name, command in commands.items():
            began = time.perf_counter()
            subprocess.run(command, env=env, capture_output=True, check=True)
            if run:  # the first round is a warm-up
                samples[name].append(time.perf_counter() - began)

    print(machine())
    print(f"load average {os.getloadavg()[0]:.1f}; PYTHONDONTWRITEBYTECODE="
          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}; memdir's modules have bytecode: "
          f"{'yes' if has_bytecode() else 'no'}; {SAMPLE}, median of {args.runs} rounds")  # fmt: skip
    print()
    floor = statistics.median(samples["python -c pass"])
    figures = {
        name: {"median ms": statistics.median(times) * 1000, "fastest ms": min(times) * 1000,
               "slowest ms": max(times) * 1000,
               "over python -c pass, ms": (statistics.median(times) - floor) * 1000}
        for name, times in samples.items()
    }  # fmt: skip
    rows = [[name, f"{row['median ms']:.0f}", f"{row['fastest ms']:.0f}–{row['slowest ms']:.0f}",
             f"{row['over python -c pass, ms']:+.0f}"] for name, row in figures.items()]  # fmt: skip
    print(table(["command", "median ms", "range ms", "over python -c pass"], rows))
    result.parameters.update(bytecode=has_bytecode(), sample=SAMPLE,
                             PYTHONDONTWRITEBYTECODE=os.environ.get("PYTHONDONTWRITEBYTECODE", ""))  # fmt: skip
    result.save(figures)


if __name__ == "__main__":
    main()
