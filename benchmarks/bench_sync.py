"""Git sync: the state machine at length (tests/sync_machine.py) and `memdir sync` wall time on
a 10,000-memory memdir.

Usage: python -m benchmarks.bench_sync [--examples 60] [--steps 30] [--memories 10000]
       [--rounds 5] [--embedder hashing|minilm]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import machine, memdir_command, started, table
from memdir.archive_format import lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import init
from memdir.archive_format.records import new_memory

TESTS = Path(__file__).resolve().parent.parent / "tests"
WORDS = "coffee morning sister garden project deadline Lisbon piano hiking meeting doctor".split()
IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}  # fmt: skip


def state_machine(examples: int, steps: int) -> dict[str, Any]:
    sys.path.insert(0, str(TESTS))
    import sync_machine
    from test_sync_machine import run_machine

    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        run_machine(Path(scratch), examples, steps)
    tally = sync_machine.TALLY
    print(
        f"state machine: {examples} examples x up to {steps} steps, {time.perf_counter() - began:.0f} s"
    )
    columns = {
        "operations": tally.operations, "merges": tally.merges, "conflicts": tally.conflicts,
        "records lost": tally.lost, "resurrected texts": tally.resurrected,
        "clone pairs compared": tally.compared, "recalls differed": tally.recall_differed,
    }  # fmt: skip
    print(table(tuple(columns), [tuple(columns.values())]))
    print(
        "by rule: " + ", ".join(f"{name} {count}" for name, count in sorted(tally.by_rule.items()))
    )
    return {f"state machine, {examples} examples × up to {steps} steps": columns}


def run(*command: str, cwd: Path) -> float:
    began = time.perf_counter()
    subprocess.run(
        command, cwd=cwd, env={**os.environ, **IDENTITY}, check=True, capture_output=True
    )
    return time.perf_counter() - began


def memories(rng: random.Random, count: int, start: datetime) -> list:
    return [
        new_memory(
            created=format_time(start + timedelta(seconds=i)),
            source="observation",
            text=" ".join(rng.choice(WORDS) for _ in range(12)) + f" #{rng.random():.9f}",
            author="user",
            store="episodic",
        )  # fmt: skip
        for i in range(count)
    ]


def sync_time(count: int, rounds: int, embedder: str) -> dict[str, Any]:
    rng = random.Random(7)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    memdir_bin = memdir_command()[0]
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        run("git", "init", "-q", "--bare", "-b", "main", "hub.git", cwd=base)
        a_dir = base / "a"
        memdir_a, _ = init(a_dir, start)
        config = yaml.safe_load((a_dir / "memdir.yaml").read_text())
        config["settings"]["embedder"] = {"kind": embedder}
        (a_dir / "memdir.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        lifecycle.add_memories(memdir_a, memories(rng, count, start))
        run("git", "init", "-q", "-b", "main", cwd=a_dir)
        run("git", "remote", "add", "origin", str(base / "hub.git"), cwd=a_dir)
        first = run(memdir_bin, "sync", cwd=a_dir)
        run("git", "clone", "-q", str(base / "hub.git"), "b", cwd=base)
        b_dir = base / "b"
        run(memdir_bin, "index", cwd=b_dir)
        samples = []
        for round_number in range(rounds):
            later = start + timedelta(days=round_number + 1)
            for where in (a_dir, b_dir):
                lifecycle.add_memories(memdir_a.open(where), memories(rng, 50, later))
            run(memdir_bin, "sync", cwd=a_dir)
            samples.append(run(memdir_bin, "sync", cwd=b_dir))  # commit, pull+merge, re-index, push
        lines = sum(1 for _ in (b_dir / "shelves" / "memories.jsonl").open("rb"))
    print(f"\n`memdir sync` on a {count:,}-memory memdir ({embedder} embedder), {machine()}")
    print(table(
        ("first sync (commit, push)", "sync merging 50 + 50 new (median)", "min", "max", "memories after"),
        [(f"{first:.2f} s", f"{statistics.median(samples):.2f} s", f"{min(samples):.2f} s",
          f"{max(samples):.2f} s", f"{lines:,}")],
    ))  # fmt: skip
    return {f"`memdir sync`, {count:,} memories ({embedder})": {
        "first sync (commit, push), s": first, "sync merging 50 + 50 new (median), s":
        statistics.median(samples), "min s": min(samples), "max s": max(samples),
        "memories after": lines}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--embedder", default="hashing", choices=("hashing", "minilm"))
    parser.add_argument("--skip-machine", action="store_true")
    args, result = started(parser, "sync")
    figures = {} if args.skip_machine else state_machine(args.examples, args.steps)
    figures.update(sync_time(args.memories, args.rounds, args.embedder))
    result.save(figures)


if __name__ == "__main__":
    main()
