"""Reading 100k shelf lines, in CPU seconds (steadier than wall time on a shared machine): the
raw read (shelf.read) and the whole read path (load_view, what
list/stats/wake fold), medians of --runs. Run it with this tree's interpreter and with another
tree's (e.g. the main branch's .venv) on the same generated shelf for a same-run baseline.

Usage:
  python -m benchmarks.bench_read [--lines 100000] [--runs 7] [--workdir /tmp/memdir-bench-read]

The result goes to benchmarks/results/read.json (--result elsewhere).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchmarks.common import started
from memdir.archive_format import lifecycle, shelf
from memdir.archive_format.memdir import Memdir, init
from memdir.archive_format.records import encode_line, new_memory

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
WORDS = "coffee morning sister garden project deadline Lisbon piano hiking meeting".split()


def generate(root: Path, count: int) -> Memdir:
    if (root / "memdir.yaml").is_file():
        return Memdir.open(root)
    memdir, _ = init(root, START)
    rng = random.Random(20261201)
    with open(memdir.memory_shelf, "wb") as handle:
        for number in range(count):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
            memory = new_memory(
                created=(START + timedelta(seconds=150 * number)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                text=f"{text} {number}", source="teaching", author="user", store="semantic",
                personas=("work",) if number % 3 else (), importance=rng.randint(1, 10),
            )  # fmt: skip
            handle.write(encode_line(memory.to_line()))
    return memdir


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workdir", default="/tmp/memdir-bench-read")
    args, result = started(parser, "read")
    memdir = generate(Path(args.workdir) / str(args.lines), args.lines)
    now = START + timedelta(days=3650)
    timings: dict[str, list[float]] = {"shelf.read": [], "load_view": []}
    for _ in range(args.runs):
        began = time.process_time()
        count = sum(1 for _ in shelf.read(memdir.memory_shelf))
        timings["shelf.read"].append(time.process_time() - began)
        began = time.process_time()
        states = len(lifecycle.load_view(memdir, now).states)
        timings["load_view"].append(time.process_time() - began)
    assert count == states == args.lines
    medians = {name: statistics.median(values) for name, values in timings.items()}
    print(json.dumps({name: round(value, 3) for name, value in medians.items()}))
    result.save({f"{name} of {args.lines:,} lines": {"CPU s": value}
                 for name, value in medians.items()})  # fmt: skip


if __name__ == "__main__":
    main()
