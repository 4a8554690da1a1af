"""Helpers shared by the benchmark scripts: timing subprocesses, machine facts, tables, and
the one writer of their results (benchmarks/results/NAME.json, read by benchmarks/report.py)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memdir.archive_format.memdir import Memdir, init

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
# What a run writes: a change to these alone does not make the tree differ from the commit.
OUTPUTS = ("benchmarks/results/", "BENCHMARKS.md")


def memdir_command() -> list[str]:
    return [str(BIN / "memdir")]


def wall_time(command: Sequence[str], runs: int = 7, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> float:  # fmt: skip
    """Median wall time in seconds of a command run `runs` times (one warm-up run first)."""
    merged = {**os.environ, **(env or {})}
    subprocess.run(command, env=merged, cwd=cwd, capture_output=True, check=False)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, env=merged, cwd=cwd, capture_output=True, check=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def machine_facts() -> dict[str, Any]:
    """The CPU's model name, its cores, Python and the system, as a result records them."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "system": platform.system()}  # fmt: skip


def machine() -> str:
    facts = machine_facts()
    return f"{facts['cpu']}, {facts['cores']} cores, Python {facts['python']}, {facts['system']}"


def commit() -> tuple[str, bool]:
    """This tree's commit (short) and whether its code differs from it (outside OUTPUTS)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO)
        return done.stdout if done.returncode == 0 else ""

    changed = [line[3:] for line in git("status", "--porcelain").splitlines()]
    dirty = any(not path.startswith(OUTPUTS) for path in changed)
    return git("rev-parse", "--short", "HEAD").strip() or "unknown", dirty


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


class Result:
    """One run of a benchmark: started when the script starts (date, commit, load), saved
    once with its figures to benchmarks/results/NAME.json, or to `path`."""

    def __init__(self, name: str, parameters: dict[str, Any], path: Path | None = None,
                 command: str | None = None) -> None:  # fmt: skip
        self.name = name
        self.path = path or RESULTS / f"{name}.json"
        module = f"benchmarks.{Path(sys.argv[0]).stem}"
        self.command = command or " ".join(["python", "-m", module, *sys.argv[1:]])
        self.parameters = {key: str(value) if isinstance(value, Path) else value
                           for key, value in parameters.items() if key != "result"}  # fmt: skip
        self.date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        self.commit, self.dirty = commit()
        self.load_start = load_average()

    def save(self, figures: dict[str, Any], details: Any = None) -> Path:
        """Write the record: `figures` is a table, {row: {column: value}} or {row: value}, as
        the report prints it; `details` (optional) what else the run measured."""
        record = {
            "benchmark": self.name,
            "command": self.command,
            "date": self.date,
            "commit": self.commit,
            "dirty": self.dirty,
            "machine": machine_facts(),
            "load": {"start": self.load_start, "end": load_average()},
            "parameters": self.parameters,
            "figures": figures,
        }
        if details is not None:
            record["details"] = details
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"result: {self.path}", file=sys.stderr)
        return self.path


def started(parser: argparse.ArgumentParser, name: str) -> tuple[argparse.Namespace, Result]:
    """The command line parsed, with --result PATH (default benchmarks/results/NAME.json), and
    the run's Result begun."""
    parser.add_argument("--result", type=Path, default=RESULTS / f"{name}.json",
                        help=f"write the result here (default benchmarks/results/{name}.json)")  # fmt: skip
    args = parser.parse_args()
    return args, Result(name, vars(args), args.result)


def as_figures(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> dict[str, Any]:
    """A printed table as a result's figures: {first cell: {header: cell}}."""
    return {str(row[0]): dict(zip(headers[1:], row[1:], strict=True)) for row in rows}


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def generated_once(
    root: Path, start: datetime, seed: int, fill: Callable[[Memdir, random.Random], None]
) -> Path:
    """A memdir at `root` filled by `fill(memdir, rng)` the first time and kept after that (a
    marker file says it is complete), so a benchmark's input is made once per machine."""
    marker = root / ".bench-complete"
    if marker.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    memdir, _ = init(root, start)
    fill(memdir, random.Random(seed))
    marker.write_text(json.dumps({"seed": seed}))
    return root


def timed_recalls(index: Any, queries: Sequence[str], now: datetime) -> dict[str, Any]:
    """Warm recall on an up-to-date index: ten warm-up queries (page cache, the model's first
    run), then one timed recall per query (k=10); p50/p95 in ms and the scoring mode."""
    from memdir.indexers.recall import RecallOptions, recall

    for query in queries[:10]:
        recall(index, query + " (warm-up)", now)
    samples = []
    for query in queries:
        began = time.perf_counter()
        recall(index, query, now, RecallOptions(k=10))
        samples.append((time.perf_counter() - began) * 1000)
    samples.sort()
    return {
        "p50": statistics.median(samples),
        "p95": samples[int(len(samples) * 0.95) - 1],
        "mode": "exact" if index.scoring_table() is not None else "pool",
    }


def embedded_pairs(fixture: Path) -> tuple[list[dict[str, Any]], list[str], Any, list[Any]]:
    """A labelled fixture of pairs (one JSON line each, "old" and "new"): its rows, the texts
    (old and new in turn), their unit MiniLM vectors and the distiller's label of each."""
    import numpy as np

    from memdir.indexers.distill import Distiller
    from memdir.indexers.embedding import MiniLMEmbedder, find_model_dir

    rows = [json.loads(line) for line in fixture.read_text(encoding="utf-8").splitlines()]
    model = find_model_dir()
    if model is None:
        sys.exit("all-MiniLM-L6-v2 not found (make setup)")
    embedder = MiniLMEmbedder(model)
    texts = [text for row in rows for text in (row["old"], row["new"])]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = [found.label for found in Distiller(embedder).distill(texts, vectors)]
    return rows, texts, vectors, labels
