"""Archive write path: cold `memdir teach` next to `python -c pass`, and bulk append rate.

Usage: python -m benchmarks.bench_archive [--records 100000] [--runs 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchmarks.common import machine, memdir_command, table, wall_time
from memdir.archive_format import lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import init
from memdir.archive_format.records import new_memory

WORDS = (
    "coffee morning sister garden project deadline Lisbon piano hiking meeting doctor recipe "
    "weekend budget train novel painting dog birthday concert python server holiday rain"
).split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))).capitalize() + "."


def bulk_append(count: int) -> tuple[float, int]:
    """Seconds to append `count` memories through the library API, and bytes written."""
    rng = random.Random(7)
    start_time = datetime(2025, 1, 1, tzinfo=timezone.utc)
    with tempfile.TemporaryDirectory() as scratch:
        memdir, _ = init(Path(scratch) / "m", start_time)
        memories = [
            new_memory(
                created=format_time(start_time + timedelta(seconds=i)),
                text=sentence(rng),
                source="observation",
                author="user",
                store="episodic",
            )
            for i in range(count)
        ]
        began = time.perf_counter()
        added = lifecycle.add_memories(memdir, memories)
        elapsed = time.perf_counter() - began
        assert added == count
        return elapsed, memdir.memory_shelf.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    memdir = memdir_command()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "m"
        wall_time([*memdir, "init", str(root)], runs=1)
        python_pass = wall_time([sys.executable, "-c", "pass"], args.runs)
        help_time = wall_time([*memdir, "--help"], args.runs)
        teach_time = wall_time(
            [*memdir, "--dir", str(root), "teach", "I take my coffee black"], args.runs
        )
        samples = [
            wall_time([*memdir, "--dir", str(root), "teach", f"fact number {i}"], 1)
            for i in range(args.runs)
        ]
        teach_new = statistics.median(samples)
    elapsed, size = bulk_append(args.records)
    print(f"machine: {machine()}")
    print(table(
        ["measure", "value"],
        [
            ["`python -c pass` (median)", f"{python_pass * 1000:.0f} ms"],
            ["`memdir --help` (median)", f"{help_time * 1000:.0f} ms"],
            ["`memdir teach` new memory, cold process (median)", f"{teach_new * 1000:.0f} ms"],
            ["`memdir teach` already stored (no-op), cold (median)", f"{teach_time * 1000:.0f} ms"],
            ["teach ÷ python -c pass", f"{teach_new / python_pass:.1f}×"],
            [f"append {args.records:,} records via add_memories",
             f"{elapsed:.2f} s = {args.records / elapsed:,.0f} records/s"],
            ["shelf size", f"{size / 1e6:.1f} MB"],
        ],
    ))  # fmt: skip


if __name__ == "__main__":
    main()
