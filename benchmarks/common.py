"""Helpers shared by the benchmark scripts: timing subprocesses, machine facts, tables."""

from __future__ import annotations

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
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.archive_format.memdir import Memdir, init

BIN = Path(sys.executable).parent


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


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


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
