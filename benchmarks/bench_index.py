"""Index benchmark: full build (embedding vs the rest), incremental updates, cold search/similar.

For each size, a memdir of synthetic chat-length memories (fixed seed) is generated once under
the work directory and reused; the index is built in-process with a timing wrapper around the
embedder (and around affect annotation), then copied so appends never touch the cached build.

Usage:
  python -m benchmarks.bench_index [--sizes 10000,100000] [--runs 5] [--workdir /tmp/memdir-bench]
  python -m benchmarks.bench_index --reuse /tmp/memdir-bench/built-100000   # skip the build

The result goes to benchmarks/results/index.json (--result elsewhere).
`--reuse DIR` takes a memdir whose index was built by an earlier run (its build timings are read
from DIR/bench-build.json): embedding 100k texts takes minutes, the other measures seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.common import (
    as_figures,
    generated_once,
    machine,
    memdir_command,
    started,
    table,
)
from memdir.archive_format import lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import Memory, new_memory

SEED = 20260501
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
SEARCH_QUERY = "sister birthday dinner in Lisbon"
SIMILAR_QUERY = "what does my brother do for a living"

# --- synthetic memories ----------------------------------------------------------------------

NAMES = (
    "Ana Ben Chloe Dev Emma Farid Grace Hugo Ines Jonas Kira Leo Maya Nils Omar Priya Quinn "
    "Rosa Sam Tara Uma Victor Wen Yusuf Zoe"
).split()
RELATIONS = (
    "sister brother mother father partner colleague manager neighbour friend cousin "
    "daughter son aunt uncle flatmate teacher doctor dentist coach landlord"
).split()
PLACES = (
    "Lisbon|Porto|Berlin|Kyoto|the office|the gym|the park|the corner cafe|the train station|"
    "the garden|the library|the clinic|the beach|the market|my parents' house|the airport|"
    "the climbing hall|the bakery|the river|the old town"
).split("|")
TIMES = (
    "this morning|yesterday|last weekend|on Monday|every Friday|next month|in March|"
    "after lunch|before work|late at night|during the holidays|twice a week|since January|"
    "on my birthday|at the end of the year"
).split("|")
ACTIVITIES = (
    "learning the piano|running a half marathon|baking sourdough bread|repainting the kitchen|"
    "planning a trip to Japan|reading a long Russian novel|fixing the old bicycle|"
    "studying for the driving test|writing a short story|growing tomatoes on the balcony|"
    "training the new puppy|building a bookshelf|practising Spanish|looking for a new flat|"
    "organising the team offsite|saving for a car|trying to sleep earlier|cutting down on coffee|"
    "migrating the server to Python 3.12|preparing a talk about databases"
).split("|")
FEELINGS = (
    "happy excited tired worried relieved frustrated proud nervous grateful annoyed calm "
    "overwhelmed curious hopeful disappointed"
).split()
FOODS = (
    "ramen|green curry|pastel de nata|oat porridge|grilled sardines|mushroom risotto|falafel|"
    "lentil soup|sushi|black coffee|flat white with oat milk|mint tea|dark chocolate|paella"
).split("|")
OPINIONS = (
    "prefers quiet restaurants|hates long meetings|loves jazz concerts|is allergic to cats|"
    "does not drink alcohol|wants to move abroad|enjoys board games|dislikes flying|"
    "works night shifts|is vegetarian|collects vinyl records|volunteers at the food bank"
).split("|")
FILLERS = (
    "to be honest|I think|apparently|as usual|for what it's worth|by the way|again|"
    "if I remember correctly|which surprised me|and that was fine|so we will see"
).split("|")

TEMPLATES = (
    "My {relation} {name} {opinion}, {filler}.",
    "I have been {activity} {time} and I feel {feeling} about it.",
    "{name} and I had {food} at {place} {time}; {filler} it was the best part of the day.",
    "Remind me that my {relation} {name} is {activity} and might need help {time}.",
    "I felt {feeling} {time} because {name} cancelled our plans at {place} again.",
    "We talked about {activity} at {place}, and {name} suggested we try it {time}.",
    "My usual order at {place} is {food}, {filler}.",
    "{name}, my {relation}, {opinion} and is {activity} {time}.",
    "I'm {feeling}: the appointment with my {relation} at {place} moved to {time}.",
    "Note to self: ask {name} about {activity} before {time}, {filler}.",
    "{time} I went to {place} with my {relation} and we ended up talking for hours about "
    "{activity}.",
    "I keep forgetting that {name} {opinion}; {filler}, I should write it down.",
)


def sentence(rng: random.Random) -> str:
    """One chat-length message (~110 characters on average): one or two template clauses."""
    parts = []
    for _ in range(rng.choice((1, 1, 1, 2, 2))):
        template = rng.choice(TEMPLATES)
        text = template.format(
            name=rng.choice(NAMES),
            relation=rng.choice(RELATIONS),
            place=rng.choice(PLACES),
            time=rng.choice(TIMES),
            activity=rng.choice(ACTIVITIES),
            feeling=rng.choice(FEELINGS),
            food=rng.choice(FOODS),
            opinion=rng.choice(OPINIONS),
            filler=rng.choice(FILLERS),
        )
        parts.append(text[0].upper() + text[1:])
    return " ".join(parts)


def memories(count: int, first: int, rng: random.Random) -> list[Memory]:
    """`count` memories numbered from `first` (a minute apart), teachings and observations."""
    made = []
    for number in range(first, first + count):
        taught = rng.random() < 0.6
        made.append(
            new_memory(
                created=format_time(START + timedelta(minutes=number)),
                text=sentence(rng),
                source="teaching" if taught else "observation",
                author="user" if taught else "assistant",
                store="semantic" if taught else "episodic",
                session=f"s-{number // 40:05d}",
            )
        )
    return made


def generated(workdir: Path, size: int) -> Path:
    """A memdir with `size` memories (no index), generated once and kept in `workdir`."""

    def fill(memdir: Memdir, rng: random.Random) -> None:
        for first in range(0, size, 20_000):
            lifecycle.add_memories(memdir, memories(min(20_000, size - first), first, rng))

    return generated_once(workdir / f"shelves-{size}", START, SEED, fill)


# --- timing helpers --------------------------------------------------------------------------


class TimedEmbedder:
    """The real embedder, with the seconds and texts it embedded counted."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id, self.dim, self.kind = inner.model_id, inner.dim, inner.kind
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Any:
        began = time.perf_counter()
        vectors = self.inner.embed(texts)
        self.seconds += time.perf_counter() - began
        self.texts += len(texts)
        return vectors


class TimedAffect:
    """Counts the seconds spent in indexers.affect.annotate_many while installed."""

    def __init__(self) -> None:
        import memdir.indexers.affect as affect

        self.module = affect
        self.original = affect.annotate_many
        self.seconds = 0.0

    def __enter__(self) -> TimedAffect:
        def timed(texts: Any, annotator: Any) -> Any:
            began = time.perf_counter()
            try:
                return self.original(texts, annotator)
            finally:
                self.seconds += time.perf_counter() - began

        self.module.annotate_many = timed
        return self

    def __exit__(self, *exc: object) -> None:
        self.module.annotate_many = self.original


def timed_update(memdir: Memdir, embedder: Any, rebuild: bool = False) -> dict[str, Any]:
    """One MemoryIndex.update() in this process, split into embedding / affect / the rest."""
    from memdir.indexers.index import MemoryIndex

    timed = TimedEmbedder(embedder)
    index = MemoryIndex(memdir, embedder=timed)
    with TimedAffect() as affect:
        began = time.perf_counter()
        report = index.update(rebuild=rebuild)
        total = time.perf_counter() - began
    index.close()
    return {
        "total": total,
        "embed": timed.seconds,
        "affect": affect.seconds,
        "rest": total - timed.seconds - affect.seconds,
        "embedded": timed.texts,
        "rebuilt": report.rebuilt,
        "merged": report.merged,
        "memories": report.memories,
    }


def wall(command: Sequence[str], runs: int, env: dict[str, str] | None = None) -> float:
    """Median wall seconds of a command over `runs` runs, after one unmeasured warm-up."""
    environment = {**os.environ, **(env or {})}
    subprocess.run(command, env=environment, capture_output=True, check=True)
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, env=environment, capture_output=True, check=True)
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


# --- the measures ----------------------------------------------------------------------------


def build(workdir: Path, size: int, embedder: Any) -> Path:
    """Build the index of the generated memdir once; keep it (with its timings) in workdir."""
    built = workdir / f"built-{size}"
    if (built / "bench-build.json").exists():
        return built
    source = generated(workdir, size)
    shutil.rmtree(built, ignore_errors=True)
    shutil.copytree(source, built)
    (built / ".bench-complete").unlink()
    memdir = Memdir.open(built)
    load_before = load()
    result = timed_update(memdir, embedder)
    assert result["rebuilt"] and result["memories"] == size, result
    result["load"] = f"{load_before} → {load()}"
    result["when"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    (built / "bench-build.json").write_text(json.dumps(result, indent=1))
    return built


def measure(built: Path, runs: int, embedder: Any, workdir: Path) -> dict[str, Any]:
    """Everything but the full build, on a scratch copy of a built memdir."""
    from memdir.indexers.index import MemoryIndex

    out: dict[str, Any] = {"build": json.loads((built / "bench-build.json").read_text())}
    scratch = workdir / f"scratch-{built.name}"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(built, scratch)
    memdir = Memdir.open(scratch)
    size = memdir.memory_shelf.read_bytes().count(b"\n")
    out["size"] = size
    out["shelves_bytes"] = size_of(memdir.shelves_dir)
    # A rebuild of the copy: every vector comes from the cache. (Asked for: a copy's first
    # update no longer rebuilds, as its shelves hold the same lines.)
    out["rebuild_cached"] = timed_update(memdir, embedder, rebuild=True)
    assert out["rebuild_cached"]["rebuilt"] and out["rebuild_cached"]["embedded"] == 0
    out["cache_bytes"] = size_of(memdir.cache_dir)
    parts = ("catalog.sqlite*", "tantivy*", "sessions*", "faiss", "vectors")
    out["cache_parts"] = {
        part.rstrip("*"): sum(size_of(path) for path in (memdir.cache_dir / "index").glob(part))
        for part in parts
    }
    index = MemoryIndex(memdir, embedder=embedder)
    out["base_kind"] = index.status()["vector_base"]["kind"]
    index.close()

    # embedding throughput on a fresh sample of chat-length texts
    rng = random.Random(SEED + 1)
    sample = [sentence(rng) for _ in range(2000)]
    began = time.perf_counter()
    embedder.embed(sample)
    out["embed_rate"] = len(sample) / (time.perf_counter() - began)
    out["mean_chars"] = statistics.mean(len(text) for text in sample)

    rng = random.Random(SEED + 2)
    next_number = size + 1_000_000
    singles = []
    for _ in range(runs):
        lifecycle.add_memories(memdir, memories(1, next_number, rng))
        next_number += 1
        singles.append(timed_update(memdir, embedder))
    assert all(not s["rebuilt"] and s["memories"] == 1 for s in singles), singles
    out["append_1"] = singles
    thousands = []
    for _ in range(3):
        lifecycle.add_memories(memdir, memories(1000, next_number, rng))
        next_number += 1000
        thousands.append(timed_update(memdir, embedder))
    assert all(not t["rebuilt"] and t["memories"] == 1000 for t in thousands), thousands
    out["append_1000"] = thousands

    # a cold `memdir index` after one append: process start, imports, model load, update
    lifecycle.add_memories(memdir, memories(1, next_number, rng))
    command = [*memdir_command(), "--dir", str(scratch), "index"]
    began = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True)
    out["cold_index_1"] = time.perf_counter() - began

    memdir_bin = memdir_command()
    one_thread = {"OPENBLAS_NUM_THREADS": "1"}
    out["cold"] = {
        "python -c pass": wall([sys.executable, "-c", "pass"], runs),
        "memdir --help": wall([*memdir_bin, "--help"], runs),
        "memdir search": wall([*memdir_bin, "--dir", str(scratch), "search", SEARCH_QUERY], runs),
        "memdir similar": wall(
            [*memdir_bin, "--dir", str(scratch), "similar", SIMILAR_QUERY], runs
        ),
        "memdir similar, OPENBLAS_NUM_THREADS=1": wall(
            [*memdir_bin, "--dir", str(scratch), "similar", SIMILAR_QUERY], runs, one_thread
        ),
    }
    out["load"] = load()
    shutil.rmtree(scratch, ignore_errors=True)
    return out


# --- report ----------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def mb(count: int) -> str:
    return f"{count / 1e6:,.1f} MB"


def report_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    def median(runs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(run[key] for run in runs)

    def embedding(r: dict[str, Any]) -> str:
        build = r["build"]
        return f"{ms(build['embed'])} ({build['embedded'] / build['embed']:,.0f} texts/s)"

    def appended(r: dict[str, Any], key: str) -> str:
        runs = r[key]
        text = f"{ms(median(runs, 'total'))} (embedding {ms(median(runs, 'embed'))})"
        if key == "append_1000":
            text += f", max {ms(max(run['total'] for run in runs))}"
            text += ", delta merged in one" if any(run["merged"] for run in runs) else ""
        return text

    def cache(r: dict[str, Any]) -> str:
        parts = " / ".join(mb(value) for value in r["cache_parts"].values())
        return f"{mb(r['cache_bytes'])} ({parts})"

    headers = ["measure", *(f"{r['size']:,} memories" for r in results)]
    rows: list[list[str]] = []

    def row(label: str, cell: Any) -> None:
        rows.append([label, *(cell(r) for r in results)])

    row("full build, total", lambda r: ms(r["build"]["total"]))
    row("… embedding", embedding)
    row("… affect annotation", lambda r: ms(r["build"]["affect"]))
    row("… the rest (catalog, Tantivy, FAISS)", lambda r: ms(r["build"]["rest"]))
    row("embedding, 2,000 chat-length texts", lambda r: f"{r['embed_rate']:,.0f} texts/s")
    row(
        "rebuild, all embeddings cached (copied memdir)", lambda r: ms(r["rebuild_cached"]["total"])
    )
    row("incremental update, 1 appended (median)", lambda r: appended(r, "append_1"))
    row("incremental update, 1,000 appended (median of 3)", lambda r: appended(r, "append_1000"))
    row("cold `memdir index` after 1 append", lambda r: ms(r["cold_index_1"]))
    for name in (
        "python -c pass",
        "memdir --help",
        "memdir search",
        "memdir similar",
        "memdir similar, OPENBLAS_NUM_THREADS=1",
    ):
        row(f"cold `{name}` (median)", lambda r, name=name: ms(r["cold"][name]))
    row("shelves on disk", lambda r: mb(r["shelves_bytes"]))
    row(".memdir on disk (catalog / Tantivy / sessions / FAISS / vector store)", cache)
    row("FAISS base index", lambda r: r["base_kind"])
    return headers, rows


def report(results: list[dict[str, Any]]) -> str:
    headers, rows = report_rows(results)
    lines = [
        f"machine: {machine()}",
        "load average (1/5/15 min) during build → after it; at the end: "
        + "; ".join(f"{r['size']:,}: {r['build']['load']}; {r['load']}" for r in results),
        f"mean text length: {results[0]['mean_chars']:.0f} characters",
        "",
        table(headers, rows),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated memory counts")
    parser.add_argument("--runs", type=int, default=5, help="runs per median")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    parser.add_argument(
        "--reuse", type=Path, action="append", default=[], help="a memdir built by earlier run"
    )
    args, result = started(parser, "index")

    from memdir.indexers.embedding import load_embedder

    embedder, warning = load_embedder()
    if warning:
        print(warning, file=sys.stderr)
    args.workdir.mkdir(parents=True, exist_ok=True)
    built = list(args.reuse)
    if not built:
        for size in (int(text) for text in args.sizes.split(",")):
            began = time.perf_counter()
            print(f"[{size:,}] generating and building …", file=sys.stderr, flush=True)
            built.append(build(args.workdir, size, embedder))
            print(f"[{size:,}] ready after {time.perf_counter() - began:.0f} s", file=sys.stderr)
    results = []
    for path in built:
        print(f"[{path.name}] measuring …", file=sys.stderr, flush=True)
        results.append(measure(path, args.runs, embedder, args.workdir))
    print(report(results))
    headers, rows = report_rows(results)
    result.save(as_figures(headers, rows), results)


if __name__ == "__main__":
    main()
