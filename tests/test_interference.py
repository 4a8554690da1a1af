"""Interference in human recall (docs/RECALL.md §4c): alike memories compete, seeded and shown
in --explain; off by default, never in perfect recall."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import configure, memdir_main

from memdir.archive_format import lifecycle
from memdir.archive_format.errors import FormatError
from memdir.archive_format.memdir import Memdir, init
from memdir.indexers.index import MemoryIndex
from memdir.indexers.recall import RecallOptions, Stage, recall
from memdir.indexers.recall.interference import SIMILAR, draw

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)
NOW = T0 + timedelta(days=1)
QUERY = "the evening at the lake house with the blue boat"
ALIKE = [
    "the evening at the lake house with the blue boat and Ana",
    "the evening at the lake house with the blue boat and Tom",
    "the evening at the lake house with the blue boat and Mia",
    "the evening at the lake house with the blue boat and Leo",
]
APART = "a tax form that needs a signature in the evening"


@pytest.fixture
def memdir(tmp_path: Path) -> Memdir:
    made, _ = init(tmp_path / "memory", T0)
    made = configure(made, embedder={"kind": "hashing"})
    for text in [*ALIKE, APART]:
        lifecycle.teach(made, text, T0)
    return made


def _recall(memdir: Memdir, **options: object):
    index = MemoryIndex(memdir)
    index.update()
    try:
        return recall(index, QUERY, NOW, RecallOptions(k=5, **options))  # type: ignore[arg-type]
    finally:
        index.close()


def _stage(result, name: Stage):
    return next(stage for stage in result.stages if stage.name == name)


def test_off_by_default_and_in_perfect_recall(memdir: Memdir) -> None:
    plain = _recall(memdir)
    assert _stage(plain, Stage.INTERFERENCE).rows == []
    assert _stage(plain, Stage.INTERFERENCE).notes == ["off (recall.interference: 0)"]
    perfect = _recall(memdir, interference=1.0, perfect=True)
    assert _stage(perfect, Stage.INTERFERENCE).rows == []
    assert [c.id for c in perfect.results] == [c.id for c in _recall(memdir, perfect=True).results]


def test_alike_memories_move_by_the_documented_rule_and_a_lone_one_never(memdir: Memdir) -> None:
    strength = 0.8
    result = _recall(memdir, interference=strength, seed=7)
    rows = _stage(result, Stage.INTERFERENCE).rows
    moved = {row["id"] for row in rows}
    texts = {c.id: c.memory.text for c in _recall(memdir).results}
    alike = {memory for memory, text in texts.items() if text in ALIKE}
    assert moved == alike  # every alike memory has a rival; the tax form has none
    for row in rows:
        assert row["similarity"] >= SIMILAR
        assert row["draw"] == pytest.approx(draw(7, QUERY, row["id"]), abs=1e-4)
        factor = 1 + strength * row["similarity"] * row["draw"]
        assert row["after"] == pytest.approx(row["before"] * factor, abs=2e-4)
    # the final order is the order of the scores after interference
    final = {c.id: c.score for c in result.results}
    assert list(final.values()) == sorted(final.values(), reverse=True)


def test_the_same_seed_gives_the_same_order_and_seeds_differ(memdir: Memdir) -> None:
    def order(seed: int) -> list[str]:
        return [c.id for c in _recall(memdir, interference=1.0, seed=seed).results]

    assert order(3) == order(3)
    assert len({tuple(order(seed)) for seed in range(8)}) > 1  # noise, not a fixed reordering


def test_the_setting_turns_it_on_and_explain_shows_each_draw(memdir: Memdir) -> None:
    configure(memdir, recall={"interference": 0.5})
    root = str(memdir.root)
    done = memdir_main("--dir", root, "recall", QUERY, "--explain", "--json", "--seed", "2",
                       now=NOW.isoformat().replace("+00:00", "Z"))  # fmt: skip
    assert done.code == 0, done
    stages = {stage["name"]: stage for stage in json.loads(done.out)["stages"]}
    assert (
        stages["interference"]["rows"]
        and "strength 0.5, seed 2" in stages["interference"]["notes"][0]
    )
    plain = memdir_main("--dir", root, "recall", QUERY, "--explain", now="2026-05-02T09:00:00Z")
    assert plain.code == 0 and "interference" in plain.out
    off = memdir_main("--dir", root, "recall", QUERY, "--interference", "0", "--json",
                      "--explain", now="2026-05-02T09:00:00Z")  # fmt: skip
    assert json.loads(off.out)["stages"][6]["rows"] == []


def test_a_strength_outside_zero_to_one_is_refused(memdir: Memdir) -> None:
    done = memdir_main("--dir", str(memdir.root), "recall", QUERY, "--interference", "2")
    assert done.code == 2 and "Traceback" not in done.err
    with pytest.raises(FormatError, match="recall.interference"):
        configure(memdir, recall={"interference": 3})  # written, then refused on opening
    bad = memdir_main("--dir", str(memdir.root), "recall", QUERY)
    assert bad.code != 0 and "recall.interference" in bad.err and "Traceback" not in bad.err
