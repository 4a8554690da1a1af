"""The retrieval floor (`make test-slow`): `memdir bench locomo` on the three benchmark files may
not fall below the figures BENCHMARKS.md states, minus the tolerance it states.

The figures are read from BENCHMARKS.md's floor table, so the document and the test cannot
drift apart. The data is not in the repository (its licence allows evaluation only): it is read
from `$MEMDIR_BENCH_DATA` or `../shared/bench/` beside the checkout, and the test skips without
it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOOR_ROW = re.compile(r"^\| `([\w/.-]+\.json)` \| ([\d.]+) \| ([\d.]+) \|", re.MULTILINE)
TOLERANCE = re.compile(r"floor tolerance: (\d+(?:\.\d+)?)")


def stated_floor() -> tuple[dict[str, tuple[float, float]], float]:
    """BENCHMARKS.md's floor table: file → (R@5, R@10), and the tolerance."""
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    section = text[text.index("## Retrieval floor") :]
    rows = {name: (float(r5), float(r10)) for name, r5, r10 in FLOOR_ROW.findall(section)}
    tolerance = TOLERANCE.search(section)
    assert rows and tolerance, "BENCHMARKS.md's retrieval floor table or tolerance is missing"
    return rows, float(tolerance.group(1))


def test_the_floor_is_stated_for_the_three_files() -> None:
    rows, tolerance = stated_floor()
    assert set(rows) == {"locomo/locomo-dev.json", "realtalk/realtalk-dev.json",
                         "realtalk/realtalk-val.json"}  # fmt: skip
    assert 0 < tolerance <= 0.02
    assert all(0 < r5 <= r10 <= 1 for r5, r10 in rows.values())


@pytest.mark.slow
def test_recall_holds_the_floor_on_the_benchmark_files(minilm) -> None:
    from memdir.cli.bench.locomo import run

    data = Path(os.environ.get("MEMDIR_BENCH_DATA") or ROOT.parent / "shared" / "bench")
    rows, tolerance = stated_floor()
    paths = [data / name for name in rows]
    if not all(path.exists() for path in paths):
        pytest.skip(f"benchmark data not found under {data} (set MEMDIR_BENCH_DATA)")
    report = run(paths)
    for name, path in zip(rows, paths, strict=True):
        overall = report["files"][str(path)]["overall"]
        floor5, floor10 = rows[name]
        assert overall["recall@5"] >= floor5 - tolerance, (name, overall)
        assert overall["recall@10"] >= floor10 - tolerance, (name, overall)
