"""The write path at growing archive sizes: one append (library call and cold `memdir teach`)
and every other write that looks something up, with `memdir --help` as the same run's baseline.
`forget` is followed by a write of its own: the first write after a forget, which must not
read the rewritten shelves again.

For each size a synthetic memdir (memories, lifecycle events, journal turns; fixed seed) is
generated once under the work directory and copied before it is measured, so a run never
changes the generated one. The first write after the copy builds the derived caches; it is
reported on its own line. So is a cold `memdir teach` after a simulated restart of the machine
(`--restart-runs`: the boot id the id cache was kept under changes, which made main rebuild the
cache until 2026-12-06; no process holds the cache). Every other figure is the median of `--runs` samples, taken in
rounds in which the sizes take turns (one sample of each operation per size per round), so a
busy moment on a shared machine does not fall on one size only.

Usage:
  python -m benchmarks.bench_archive [--sizes 1000,10000,100000,1000000] [--runs 7]
                                     [--restart-runs 1] [--workdir /tmp/memdir-bench]
  python -m benchmarks.bench_archive --sizes 1000,10000 --runs 3     # a quick run

The result goes to benchmarks/results/archive.json (--result elsewhere).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.common import generated_once, machine, memdir_command, started, table
from memdir.archive_format import journal, lifecycle, shelf
from memdir.archive_format.clock import format_time, parse_time
from memdir.archive_format.memdir import Memdir
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
    end = START + size * STEP

    def fill(memdir: Memdir, rng: random.Random) -> None:
        for first in range(0, size, CHUNK):
            memories: list[bytes] = []
            events: list[bytes] = []
            turns: list[bytes] = []
            for number in range(first, min(size, first + CHUNK)):
                line = _memory_line(number, rng)
                memories.append(encode_line(line))
                events.extend(encode_line(event) for event in _events(line, end, rng))
                if number % 10 == 0:
                    turn = journal.new_turn(START + number * STEP,
                                            rng.choice(("user", "assistant")), line["session"],
                                            sentence(rng))  # fmt: skip
                    turns.append(encode_line(turn.to_line()))
            shelf.append(memdir.memory_shelf, memories, memdir.quarantine_dir)
            shelf.append(memdir.event_shelf, events, memdir.quarantine_dir)
            shelf.append(journal.turns_path(memdir), turns, memdir.quarantine_dir)

    return generated_once(workdir / f"archive-{size}", START, SEED, fill)


def copied(source: Path, target: Path) -> Memdir:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".memdir", ".bench-complete"))
    return Memdir.open(target)


def restarted(memdir: Memdir) -> None:
    """What a restart of the machine changes for the id cache as memdir saw it until 2026-12-06:
    the boot id stored with it is not this boot's (that version rebuilt the cache whole)."""
    with closing(sqlite3.connect(memdir.cache_dir / "idcache.sqlite")) as db:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            db.execute("UPDATE meta SET value = 'the boot before' WHERE name = 'boot'")
            db.commit()


def cold(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True)
    return time.perf_counter() - began


class Bench:
    """One size's memdir and its write-path operations, each timed one sample at a time."""

    def __init__(self, memdir: Memdir, size: int, runs: int) -> None:
        self.memdir, self.size = memdir, size
        self.now = START + size * STEP + timedelta(hours=1)  # just after the last line
        self.rng = random.Random(size)
        self.samples: dict[str, list[float]] = {}
        began = time.perf_counter()
        lifecycle.add_memories(memdir, [self.fresh("first")])
        self.first_write = time.perf_counter() - began
        self.inferred = [
            lifecycle.infer(memdir, f"guess {size} {n} {sentence(self.rng)}", self.now).id
            for n in range(runs)
        ]

    def fresh(self, tag: str) -> Any:
        return new_memory(created=format_time(self.now), text=f"bench {tag} {sentence(self.rng)}",
                          source="observation", author="assistant", store="episodic")  # fmt: skip

    def turn(self, n: int) -> Any:
        return journal.new_turn(self.now, "user", "s-bench", f"turn {n} {sentence(self.rng)}")

    def time(self, name: str, action: Callable[[], object]) -> None:
        began = time.perf_counter()
        action()
        self.samples.setdefault(name, []).append(time.perf_counter() - began)

    def round(self, n: int, forget: bool) -> None:
        """One sample of each operation."""
        md, now, size, guess = self.memdir, self.now, self.size, self.inferred[n]
        from memdir.usecases.journal import record_turns

        self.time(
            "add_memories, 1 new memory", lambda: lifecycle.add_memories(md, [self.fresh("add")])
        )
        self.time(
            "teach (write_memory + ring)",
            lambda: lifecycle.teach(md, f"taught {size} {n} {sentence(self.rng)}", now),
        )
        self.time(
            "teach of a stored text (no-op)",
            lambda: lifecycle.teach(md, f"taught {size} 0 again", now),
        )
        self.time(
            "teach with a supersede key",
            lambda: lifecycle.teach(md, f"keyed {size} {n}", now, key=KEYS[n % len(KEYS)]),
        )
        self.time("confirm by 8-character prefix", lambda: lifecycle.confirm(md, guess[:10], now))
        self.time("reject by id", lambda: lifecycle.reject(md, guess, "benchmark", now))
        other = self.inferred[-1 - n]
        if other == guess:  # the middle one (link refuses a self-link)
            other = self.inferred[(n + 1) % len(self.inferred)]
        if other != guess:
            self.time(
                "link two prefixes",
                lambda: lifecycle.link(md, guess[:10], other[:10], "related", now),
            )
        self.time(
            "journal turn, no boot refresh", lambda: journal.add_turns(md, [self.turn(2 * n)])
        )
        self.time(
            "journal turn + boot refresh", lambda: record_turns(md, [self.turn(2 * n + 1)], now)
        )
        self.time("expire sweep", lambda: lifecycle.expire(md, now))
        if forget:
            self.time("forget (rewrites the shelves)", lambda: lifecycle.forget(md, guess, now))
            self.time(
                "first write after a forget",
                lambda: lifecycle.add_memories(md, [self.fresh("after forget")]),
            )

    def cold_round(self, n: int, restart: bool) -> None:
        binary = memdir_command()
        self.samples.setdefault("cold `memdir --help`", []).append(cold([*binary, "--help"]))
        teach = [*binary, "--dir", str(self.memdir.root), "--now", format_time(self.now), "teach"]
        self.samples.setdefault("cold `memdir teach`", []).append(
            cold([*teach, f"cold teach {self.size} {n} {time.time_ns()}"])
        )
        if restart:
            restarted(self.memdir)
            self.samples.setdefault("cold `memdir teach` after a restart", []).append(
                cold([*teach, f"cold teach after a restart {self.size} {n} {time.time_ns()}"])
            )

    def results(self) -> dict[str, float]:
        found = {"first write after a copy (builds the caches)": self.first_write * 1000}
        found.update({name: statistics.median(s) * 1000 for name, s in self.samples.items()})
        found["cold teach ÷ --help"] = found["cold `memdir teach`"] / found["cold `memdir --help`"]
        cache = [self.memdir.cache_dir / f"idcache.sqlite{end}" for end in ("", "-wal")]
        found["id cache on disk (MB)"] = sum(p.stat().st_size for p in cache if p.exists()) / 1e6
        found["shelves on disk (MB)"] = sum(p.stat().st_size for p in self.memdir.shelves()) / 1e6
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--forget-runs", type=int, default=3, help="forget rewrites every shelf")
    parser.add_argument("--restart-runs", type=int, default=1, help="main rebuilt the id cache")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    args, result = started(parser, "archive")
    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",")]
    args.workdir.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    benches = []
    for size in sizes:
        began = time.perf_counter()
        source = generated(args.workdir, size)
        print(f"{size:,}: archive ready in {time.perf_counter() - began:.1f} s", file=sys.stderr)
        benches.append(Bench(copied(source, args.workdir / f"run-{size}"), size, args.runs))
    os.sync()  # let the copies reach the disk before anything is timed
    cold([*memdir_command(), "--help"])  # warm the page cache
    # the sizes take turns, so a busy moment on a shared machine hits them alike
    for n in range(args.runs):
        for bench in benches:
            bench.round(n, forget=n < args.forget_runs)
            bench.cold_round(n, restart=n < args.restart_runs)
        print(f"round {n + 1} of {args.runs} done", file=sys.stderr)
    figures = {bench.size: bench.results() for bench in benches}
    for bench in benches:
        shutil.rmtree(bench.memdir.root, ignore_errors=True)
    names = list(figures[sizes[0]])
    first, last = sizes[0], sizes[-1]
    rows = []
    for name in names:
        ratio = name.endswith("÷ --help")
        cells = [f"{figures[s][name]:.2f}×" if ratio else f"{figures[s][name]:.1f}" for s in sizes]
        base = figures[first][name]
        growth = "" if ratio or not base else f"{figures[last][name] / base:.2f}×"
        rows.append([name, *cells, growth])
    print(f"machine: {machine()}; medians of {args.runs} rounds ({args.forget_runs} for forget, "
          f"{args.restart_runs} for a restart); "
          f"load average {load:.1f} → {os.getloadavg()[0]:.1f}; ms unless marked")  # fmt: skip
    headers = ["measure (ms)", *[f"{s:,}" for s in sizes], f"{last:,} ÷ {first:,}"]
    print(table(headers, rows))
    result.save({name: {f"{s:,}": figures[s][name] for s in sizes} for name in names})


if __name__ == "__main__":
    main()
