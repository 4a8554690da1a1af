"""The write path at growing archive sizes: one append (library call and cold `memdir teach`)
and every other write that looks something up, with `memdir --help` as the same run's baseline.

For each size a synthetic memdir (memories, lifecycle events, journal turns; fixed seed) is
generated once under the work directory and copied before it is measured, so a run never
changes the generated one. The first write after the copy builds the derived caches; it is
reported on its own line, and every other figure is the median of `--runs` samples after it.

Usage:
  python -m benchmarks.bench_archive [--sizes 1000,10000,100000,1000000] [--runs 7]
                                     [--workdir /tmp/memdir-bench]
  python -m benchmarks.bench_archive --sizes 1000,10000 --runs 3     # a quick run
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.common import machine, memdir_command, table
from memdir.archive_format import journal, lifecycle, shelf
from memdir.archive_format.clock import format_time, parse_time
from memdir.archive_format.memdir import Memdir, init
from memdir.archive_format.records import encode_line, new_event, new_memory

SEED = 20261129
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
STEP = timedelta(seconds=150)  # between generated memories: 576 a day, 1M span ~4.7 years
CHUNK = 50_000
WORDS = (
    "coffee morning sister garden project deadline Lisbon piano hiking meeting doctor recipe "
    "weekend budget train novel painting dog birthday concert python server holiday rain"
).split()
KEYS = tuple(f"fact-{n}" for n in range(200))


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))).capitalize() + "."


def _memory_line(number: int, rng: random.Random) -> dict[str, Any]:
    """Mostly observations and teachings; one in ten an inference, one in fifty keyed."""
    roll = rng.random()
    source = "inference" if roll < 0.1 else "teaching" if roll < 0.5 else "observation"
    created = START + number * STEP
    fields: dict[str, Any] = {}
    if source == "inference":
        fields["expires"] = format_time(created + timedelta(days=7))
    if source == "teaching" and rng.random() < 0.05:
        fields["key"] = rng.choice(KEYS)
    return new_memory(
        created=format_time(created),
        text=f"{sentence(rng)} ({number})",
        source=source,
        author="assistant" if source != "teaching" else "user",
        store="semantic" if source != "observation" else "episodic",
        session=f"s-{number // 40:06d}",
        **fields,
    ).to_line()


def _events(line: dict[str, Any], end: datetime, rng: random.Random) -> list[dict[str, Any]]:
    """Half the inferences get a decision, the rest the expire sweep's event once their TTL
    has passed (as cron would have written it); one other memory in twenty gets a link."""
    if line["source"] == "inference":
        if rng.random() < 0.5:
            op = rng.choice(("confirm", "confirm", "reject"))
            extra = {"reason": "the user said no"} if op == "reject" else {}
            at = format_time(parse_time(line["created"]) + STEP)
            return [new_event(at=at, op=op, target=line["id"], actor="user", **extra).to_line()]
        if parse_time(line["expires"]) < end:
            return [new_event(at=line["expires"], op="expire", target=line["id"], actor="memdir",
                              reason="TTL passed unconfirmed").to_line()]  # fmt: skip
        return []
    if rng.random() < 0.05:
        return [new_event(at=line["created"], op="link", target=line["id"], actor="user",
                          to=f"m-{rng.getrandbits(64):016x}", link_type="related").to_line()]  # fmt: skip
    return []


def generated(workdir: Path, size: int) -> Path:
    """A memdir with `size` memories, ~size/10 events and size/10 journal turns, made once."""
    root = workdir / f"archive-{size}"
    marker = root / ".bench-complete"
    if marker.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    memdir, _ = init(root, START)
    rng = random.Random(SEED)
    end = START + size * STEP
    for first in range(0, size, CHUNK):
        memories: list[bytes] = []
        events: list[bytes] = []
        turns: list[bytes] = []
        for number in range(first, min(size, first + CHUNK)):
            line = _memory_line(number, rng)
            memories.append(encode_line(line))
            events.extend(encode_line(event) for event in _events(line, end, rng))
            if number % 10 == 0:
                turn = journal.new_turn(START + number * STEP, rng.choice(("user", "assistant")),
                                        line["session"], sentence(rng))  # fmt: skip
                turns.append(encode_line(turn.to_line()))
        shelf.append(memdir.memory_shelf, memories, memdir.quarantine_dir)
        shelf.append(memdir.event_shelf, events, memdir.quarantine_dir)
        shelf.append(journal.turns_path(memdir), turns, memdir.quarantine_dir)
    marker.write_text(json.dumps({"size": size, "seed": SEED}))
    return root


def copied(source: Path, target: Path) -> Memdir:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".memdir", ".bench-complete"))
    return Memdir.open(target)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(action: Callable[[int], object], runs: int) -> float:
    """Median milliseconds of `action(n)` for n = 0..runs-1."""
    samples = []
    for n in range(runs):
        began = time.perf_counter()
        action(n)
        samples.append(time.perf_counter() - began)
    return _median_ms(samples)


def cold(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True)
    return time.perf_counter() - began


def measure(memdir: Memdir, size: int, runs: int, now: datetime) -> dict[str, float]:
    """One size: the first write, then each write-path operation (medians in ms)."""
    rng = random.Random(size)
    results: dict[str, float] = {}

    def fresh(n: int, tag: str) -> Any:
        return new_memory(created=format_time(now), text=f"bench {tag} {size} {n} {sentence(rng)}",
                          source="observation", author="assistant", store="episodic")  # fmt: skip

    began = time.perf_counter()
    lifecycle.add_memories(memdir, [fresh(0, "first")])
    results["first write after a copy"] = (time.perf_counter() - began) * 1000
    results["add_memories, 1 new memory"] = timed(
        lambda n: lifecycle.add_memories(memdir, [fresh(n, "add")]), runs
    )
    results["teach (write_memory + ring)"] = timed(
        lambda n: lifecycle.teach(memdir, f"taught {size} {n} {sentence(rng)}", now), runs
    )
    results["teach of a stored text (no-op)"] = timed(
        lambda n: lifecycle.teach(memdir, f"taught {size} 0", now), runs
    )
    results["teach with a supersede key"] = timed(
        lambda n: lifecycle.teach(memdir, f"keyed {size} {n}", now, key=KEYS[n % len(KEYS)]), runs
    )
    inferred = [
        lifecycle.infer(memdir, f"guess {size} {n} {sentence(rng)}", now).id for n in range(runs)
    ]
    results["confirm by 8-character prefix"] = timed(
        lambda n: lifecycle.confirm(memdir, inferred[n][:10], now), runs
    )
    results["reject by id"] = timed(
        lambda n: lifecycle.reject(memdir, inferred[n], "benchmark", now), runs
    )
    results["link two prefixes"] = timed(
        lambda n: lifecycle.link(memdir, inferred[n][:10], inferred[-1 - n][:10], "related", now),
        runs,
    )

    def turn(n: int) -> Any:
        return journal.new_turn(now, "user", "s-bench", f"turn {size} {n} {sentence(rng)}")

    results["journal turn, no boot refresh"] = timed(
        lambda n: journal.add_turns(memdir, [turn(n)]), runs
    )
    from memdir.cli.usecases.journal import record_turns

    results["journal turn + boot refresh"] = timed(
        lambda n: record_turns(memdir, [turn(runs + n)], now), max(3, runs // 2)
    )
    results["expire sweep"] = timed(lambda n: lifecycle.expire(memdir, now), runs)
    results["forget (rewrites the shelves)"] = timed(
        lambda n: lifecycle.forget(memdir, inferred[n], now), max(1, min(runs, 3))
    )
    return results


def cold_runs(memdir: Memdir, size: int, runs: int, now: str) -> tuple[float, float]:
    """Median cold `memdir --help` and cold `memdir teach` (new text), run alternately."""
    binary = memdir_command()
    helps, teaches = [], []
    cold([*binary, "--help"])  # warm the page cache
    for n in range(runs):
        helps.append(cold([*binary, "--help"]))
        teaches.append(cold([*binary, "--dir", str(memdir.root), "--now", now, "teach",
                             f"cold teach {size} {n} {time.time_ns()}"]))  # fmt: skip
    return _median_ms(helps), _median_ms(teaches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",")]
    args.workdir.mkdir(parents=True, exist_ok=True)
    figures: dict[int, dict[str, float]] = {}
    for size in sizes:
        began = time.perf_counter()
        source = generated(args.workdir, size)
        print(f"{size:,}: archive ready in {time.perf_counter() - began:.1f} s", file=sys.stderr)
        memdir = copied(source, args.workdir / f"run-{size}")
        now = START + size * STEP + timedelta(hours=1)  # just after the last generated line
        results = measure(memdir, size, args.runs, now)
        help_ms, teach_ms = cold_runs(memdir, size, args.runs, format_time(now))
        results["cold `memdir --help`"] = help_ms
        results["cold `memdir teach`"] = teach_ms
        results["cold teach ÷ --help"] = teach_ms / help_ms
        cache = memdir.cache_dir / "idcache.sqlite"
        results["id cache on disk (MB)"] = cache.stat().st_size / 1e6 if cache.exists() else 0.0
        results["shelves on disk (MB)"] = sum(p.stat().st_size for p in memdir.shelves()) / 1e6
        figures[size] = results
        shutil.rmtree(memdir.root, ignore_errors=True)
        print(f"{size:,}: measured", file=sys.stderr)
    names = list(figures[sizes[0]])
    first, last = sizes[0], sizes[-1]
    rows = []
    for name in names:
        ratio = name.endswith("÷ --help")
        cells = [f"{figures[s][name]:.2f}×" if ratio else f"{figures[s][name]:.1f}" for s in sizes]
        base = figures[first][name]
        growth = "" if ratio or not base else f"{figures[last][name] / base:.2f}×"
        rows.append([name, *cells, growth])
    print(f"machine: {machine()}; runs: {args.runs}; ms unless marked")
    headers = ["measure (ms)", *[f"{s:,}" for s in sizes], f"{last:,} ÷ {first:,}"]
    print(table(headers, rows))
    if args.json:
        args.json.write_text(json.dumps({str(s): figures[s] for s in sizes}, indent=1))


if __name__ == "__main__":
    main()
