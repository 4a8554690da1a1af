"""The HNSW graph degree (`vectors.hnsw_m`): the base index's size and build time, how much of
the exact top 10 the reader finds, and warm recall, per M, on a memdir already indexed.

Nothing is embedded again but the queries: each M gets a copy of the memdir (in --workdir)
with `vectors: {hnsw_m: M}` in its memdir.yaml, whose base the updater's own merge builds
from the cached vectors (`merge_delta`, --builds times, the Ms taking turns). After each
build, agreement goes through the reader (`vector_hits`: the base asked for twice the hits,
ranked by the cached vectors, efSearch as the settings set it, or M:EF's) and is the
share of the exact top 10 (every searchable cached vector scored) found, averaged over the
builds (FAISS adds on several threads; the graphs have come out the same each time), with
the paired bootstrap interval of its difference from the first M's, query by query; "with
ties" counts a hit scoring as high as the exact tenth as found (the same text twice is two
memories with one vector). "Base alone" is the base's own top 10 (its own scores, no
rescoring). Queries: --queries memory texts of the memdir (a seeded sample; each query's own
memory left out: 11 asked, itself dropped) and, with --questions FILE, that many questions
of a LoCoMo-layout file (evaluation data: read where it lies). Warm recall:
benchmarks.common.timed_recalls on each copy in turn, --rounds times; and the reader's
`vector_hits` alone, p50 over the agreement's queries. `--m 32,16:256` compares M 32 with
M 16 and `vectors.ef_search: 256`; a third number is `vectors.ef_construction`.
Usage: python -m benchmarks.bench_hnsw --memdir PATH [--m 32,16] [--queries 200]
       [--questions ../shared/bench/locomo/locomo-dev.json] [--builds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.bench_recall import NOW
from benchmarks.common import load_average, machine, table
from memdir.archive_format.location import CONFIG_NAME
from memdir.archive_format.memdir import Memdir, read_config
from memdir.archive_format.state import write_yaml
from memdir.indexers.index import MemoryIndex

K = 10


def variant(text: str) -> dict[str, int]:
    """ "16" → M 16 at the settings' efSearch; "16:256" → M 16, efSearch 256; "16:256:160" →
    and efConstruction 160."""
    names = ("hnsw_m", "ef_search", "ef_construction")
    return {name: int(value) for name, value in zip(names, text.split(":"), strict=False) if value}


def copy_with(source: Path, target: Path, chosen: dict[str, int]) -> MemoryIndex:
    """A copy of the memdir at `source` whose settings say `vectors.hnsw_m` and whatever else
    `chosen` names of `vectors`, opened and up to date (an index of another memdir version is
    rebuilt: its cached vectors are kept)."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)
    config = read_config(target / CONFIG_NAME)
    settings = config.setdefault("settings", {})
    settings["vectors"] = {**(settings.get("vectors") or {}), **chosen}
    write_yaml(target / CONFIG_NAME, config)
    index = MemoryIndex(Memdir.open(target))
    if index.needs_update():
        index.update()
    return index


def build(index: MemoryIndex) -> float:
    """Seconds to write the base anew from the cached vectors (the updater's merge)."""
    with index.lock():
        began = time.perf_counter()
        index.updater.merge_delta()
        return time.perf_counter() - began


def questions_of(path: Path, count: int, rng: random.Random) -> list[str]:
    """`count` questions of a LoCoMo-layout file, a seeded sample."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    found = [str(qa["question"]) for sample in samples for qa in sample.get("qa", [])
             if qa.get("question")]  # fmt: skip
    return rng.sample(found, min(count, len(found)))


class Exact:
    """The exact top K of each query over every searchable memory's cached vector (as float32,
    the values the reader rescores with), and each query's scores by iid."""

    def __init__(self, index: MemoryIndex, vectors: Any, leave_out: list[int] | None) -> None:
        import numpy as np

        iids = index.catalog.searchable_iids()
        matrix, found = index.vector_matrix(iids)
        kept = np.asarray(iids, dtype=np.int64)[found]
        self.position = np.full(int(kept.max()) + 1, -1, np.int64)
        self.position[kept] = np.arange(len(kept))
        self.scores = np.asarray(vectors, np.float32) @ matrix[found].T  # queries × memories
        self.leave_out = leave_out
        self.truth: list[list[int]] = []
        for n, row in enumerate(self.scores):
            order = np.argsort(-row, kind="stable")[: K + 1]
            self.truth.append([int(kept[i]) for i in order if int(kept[i]) != self.own(n)][:K])

    def own(self, n: int) -> int:
        return self.leave_out[n] if self.leave_out else -1

    def score(self, n: int, iid: int) -> float:
        return float(self.scores[n, self.position[iid]])


MEASURES = ("top-10", "with ties", "base alone", "vector_hits ms")


def agreement(index: MemoryIndex, exact: Exact, vectors: Any) -> dict[str, list[float]]:
    """Per query, the share of its exact top K the reader found, the same with ties, and the
    base's own top K's share."""
    found: dict[str, list[float]] = {measure: [] for measure in MEASURES}
    asked = K + (1 if exact.leave_out else 0)
    for n, vector in enumerate(vectors):
        own, truth = exact.own(n), exact.truth[n]
        tenth = exact.score(n, truth[-1])
        began = time.perf_counter()
        got = [iid for iid, _ in index.vector_hits(vector, asked) if iid != own][:K]
        found["vector_hits ms"].append((time.perf_counter() - began) * 1000)
        base = [iid for iid, _ in index.base.search(vector, asked) if iid != own][:K]
        found["top-10"].append(len(set(got) & set(truth)) / K)
        tied = sum(exact.score(n, iid) >= tenth - 1e-6 for iid in got)
        found["with ties"].append(min(K, tied) / K)
        found["base alone"].append(len(set(base) & set(truth)) / K)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memdir", type=Path, required=True, help="an indexed memdir (copied)")
    parser.add_argument("--m", default="32,16", help="the degrees to compare (M or M:EF)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--questions", type=Path, help="a LoCoMo-layout file's questions too")
    parser.add_argument("--builds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench-hnsw"))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    import numpy as np

    degrees = args.m.split(",")
    print(f"machine: {machine()}; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; "
          f"load {load_average()}", flush=True)  # fmt: skip
    indexes = {
        m: copy_with(args.memdir, args.workdir / f"m{m.replace(':', '-ef')}", variant(m))
        for m in degrees
    }
    first = indexes[degrees[0]]
    rng = random.Random(33)
    memories = rng.sample(list(first.catalog.all_memories()), args.queries)
    memories = [memory for memory in memories if memory.searchable]
    embedder = first.embedder
    sets: dict[str, tuple[list[str], Any, list[int] | None]] = {}
    texts = [memory.text for memory in memories]
    sets["memory texts"] = (texts, np.asarray(embedder.embed(texts), np.float32),
                            [memory.iid for memory in memories])  # fmt: skip
    if args.questions:
        asked = questions_of(args.questions, args.queries, rng)
        sets["questions"] = (asked, np.asarray(embedder.embed(asked), np.float32), None)
    exact = {name: Exact(first, vectors, leave_out) for name, (_, vectors, leave_out) in
             sets.items()}  # fmt: skip
    builds: dict[str, list[float]] = {m: [] for m in degrees}
    # found[m][set][measure]: per build, per query
    found: dict[str, dict[str, dict[str, list[list[float]]]]] = {
        m: {name: {measure: [] for measure in MEASURES} for name in sets} for m in degrees
    }
    for _ in range(args.builds):
        for m in degrees:
            builds[m].append(build(indexes[m]))
            for name in sets:
                for measure, values in agreement(indexes[m], exact[name], sets[name][1]).items():
                    found[m][name][measure].append(values)
            top = [statistics.mean(found[m][name]["top-10"][-1]) for name in sets]
            print(f"M={m} built in {builds[m][-1]:.1f} s, top-10 {top}, load {load_average()}",
                  flush=True)  # fmt: skip
    recall_texts = sets["questions" if "questions" in sets else "memory texts"][0]
    warm: dict[str, list[float]] = {m: [] for m in degrees}
    for _ in range(args.rounds):
        for m in degrees:
            warm[m].append(timed_p50(indexes[m], recall_texts))
            print(f"M={m} warm p50 {warm[m][-1]:.1f} ms, load {load_average()}", flush=True)
    print(table(*report(indexes, degrees, sets, builds, found, warm)))
    print(f"load at the end {load_average()}")
    for index in indexes.values():
        index.close()
    if args.json:
        args.json.write_text(json.dumps({"builds": builds, "warm": warm, "agreement": found})
                             + "\n")  # fmt: skip


def per_query(runs_of: list[list[float]]) -> list[float]:
    """Each query's value averaged over the builds."""
    return [statistics.mean(values) for values in zip(*runs_of, strict=True)]


def report(
    indexes: dict[str, MemoryIndex],
    degrees: list[str],
    sets: dict[str, Any],
    builds: dict[str, list[float]],
    found: dict[str, dict[str, dict[str, list[list[float]]]]],
    warm: dict[str, list[float]],
) -> tuple[list[str], list[list[object]]]:
    """The table: per M, the base's size, build times, each query set's measures (the mean
    over builds, and for top-10 each build's and the paired bootstrap Δ against the first M)
    and warm p50."""
    from memdir.cli.bench.stats import paired_delta

    headers = ["M(:efSearch)", "base.index MB", "build s (median; runs)"]
    for name in sets:
        headers += [f"{name}: top-10 (builds)", f"{name}: Δ top-10 [95 %]",
                    f"{name}: with ties", f"{name}: base alone"]  # fmt: skip
    headers += ["`vector_hits` p50 ms", "warm p50 ms (median; rounds)"]
    rows: list[list[object]] = []
    for m in degrees:
        size = indexes[m].base.path.stat().st_size / 1e6  # type: ignore[attr-defined]
        row: list[object] = [m, f"{size:.1f}", runs(builds[m], "{:.1f}")]
        for name in sets:
            top = found[m][name]["top-10"]
            builds_top = ", ".join(f"{statistics.mean(values):.3f}" for values in top)
            delta = paired_delta(per_query(found[degrees[0]][name]["top-10"]), per_query(top))
            row += [f"{statistics.mean(per_query(top)):.3f} ({builds_top})",
                    f"{delta.delta:+.3f} [{delta.low:+.3f}, {delta.high:+.3f}]",
                    f"{statistics.mean(per_query(found[m][name]['with ties'])):.3f}",
                    f"{statistics.mean(per_query(found[m][name]['base alone'])):.3f}"]  # fmt: skip
        hits = [ms for name in sets for build in found[m][name]["vector_hits ms"] for ms in build]
        rows.append([*row, f"{statistics.median(hits):.2f}", runs(warm[m], "{:.1f}")])
    return headers, rows


def timed_p50(index: MemoryIndex, texts: list[str]) -> float:
    from benchmarks.common import timed_recalls

    return float(timed_recalls(index, texts, NOW)["p50"])


def runs(values: list[float], form: str) -> str:
    return f"{form.format(statistics.median(values))} ({', '.join(form.format(v) for v in values)})"


if __name__ == "__main__":
    main()
