"""What every safety experiment shares: the two arms, the lab of throwaway memdirs and the
calls through which an arm writes, recalls and wakes, and the table of metrics."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir, init

from .user import FILLER, START, on_day

if TYPE_CHECKING:
    from memdir.indexers.affect import Annotator
    from memdir.indexers.embedding import Embedder
    from memdir.indexers.index import MemoryIndex

SAFE = "safeguarded"
OPEN = "unrestricted"
ARMS = (SAFE, OPEN)
K = 5
Progress = Callable[[str, int, int], None]


@dataclass
class Metric:
    experiment: str
    name: str
    safeguarded: float
    unrestricted: float
    lower_is_better: bool = True
    note: str = ""

    @property
    def safeguard_wins(self) -> bool:
        if self.lower_is_better:
            return self.safeguarded < self.unrestricted
        return self.safeguarded > self.unrestricted

    def to_dict(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "metric": self.name,
                "safeguarded": round(self.safeguarded, 4),
                "unrestricted": round(self.unrestricted, 4),
                "lower_is_better": self.lower_is_better, "safeguard_wins": self.safeguard_wins,
                "note": self.note}  # fmt: skip


@dataclass(frozen=True)
class Measure:
    """One row of an experiment's table: the metric's name and its key in each arm's results."""

    name: str
    key: str
    lower_is_better: bool = True
    note: str = ""


def escapes(escaped: Mapping[str, bool], attempts: str) -> dict[str, Any]:
    """One arm's result of an attack experiment from what each attempt did (True: it got
    through): how many got through, how many there were (named `attempts`), which."""
    return {"escapes": sum(escaped.values()), attempts: len(escaped),
            "escaped": sorted(name for name, done in escaped.items() if done)}  # fmt: skip


def compare(
    experiment: str, found: Mapping[str, Mapping[str, Any]], *rows: Measure
) -> list[Metric]:
    """The metrics of `rows`, each read from both arms' results (`found[arm][row.key]`)."""
    return [
        Metric(experiment, row.name, found[SAFE][row.key], found[OPEN][row.key],
               row.lower_is_better, row.note)
        for row in rows
    ]  # fmt: skip


def escape_metrics(
    experiment: str, found: Mapping[str, Mapping[str, Any]], name: str, note: str
) -> list[Metric]:
    """The one metric of an attack experiment whose arms' results are `escapes`': how many
    attempts got through, named `name`."""
    return compare(experiment, found, Measure(name, "escapes", note=note))


@dataclass
class Lab:
    """Shared, loaded once: the embedder and annotator every throwaway memdir uses."""

    scratch: Path
    embedder_kind: str
    seed: int
    embedder: Embedder | None = None
    annotator: Annotator | None = None
    count: int = 0
    indexes: list[MemoryIndex] = field(default_factory=list)

    def memdir(self, name: str, small_talk: bool = False) -> Memdir:
        """A fresh memdir with the benchmark's settings; with `small_talk`, day 0's unrelated
        conversation as the assistant's observations (what a guess competes with)."""
        self.count += 1
        root = self.scratch / f"{self.count:02d}-{name}"
        memdir, _ = init(
            root,
            START - timedelta(days=1),
            {"embedder": {"kind": self.embedder_kind, "path": None}},
        )
        if small_talk:
            for number, text in enumerate(FILLER):
                lifecycle.observe(memdir, text, on_day(0, number % 8), author="assistant")
        return memdir

    def index(self, memdir: Memdir) -> MemoryIndex:
        from memdir.indexers.index import MemoryIndex

        index = MemoryIndex(memdir, self.embedder, self.annotator)
        if self.embedder is None:
            self.embedder, self.annotator = index.embedder, index.annotator
        self.indexes.append(index)
        return index

    def close(self) -> None:
        for index in self.indexes:
            index.close()

    def recall(self, index: MemoryIndex, query: str, now: datetime, arm: str) -> list[Any]:
        """Recall's top K as the arm runs it (the unrestricted one without counterweights)."""
        from memdir.indexers.recall import RecallOptions, recall

        index.update()
        options = RecallOptions(k=K, counterweights=arm == SAFE)
        return list(recall(index, query, now, options).results)

    def grounded(self, index: MemoryIndex, query: str, now: datetime, arm: str) -> list[str]:
        """The texts of recall's top K when its verdict is GROUNDED (else none): what an
        assistant would answer from as known."""
        from memdir.indexers.recall import RecallOptions, recall

        index.update()
        options = RecallOptions(k=K, counterweights=arm == SAFE)
        found = recall(index, query, now, options)
        return [c.memory.text for c in found.results] if found.verdict == "GROUNDED" else []

    def cli(self, memdir: Memdir, now: datetime, env: Mapping[str, str], *args: str,
            stdin: str = "") -> subprocess.CompletedProcess[str]:  # fmt: skip
        """`memdir --dir MEMDIR ARGS` in a subprocess at `now`, with memdir's own and the
        agent harnesses' variables cleared and `env` added (the shell an arm runs in)."""
        from memdir.actor import HARNESS_MARKERS

        cleared = {"MEMDIR", "MEMDIR_NOW", "MEMDIR_ACTOR", *(name for name, _ in HARNESS_MARKERS)}
        environment = {key: value for key, value in os.environ.items() if key not in cleared}
        environment.update(env, MEMDIR_NOW=now.isoformat())
        command = [sys.executable, "-m", "memdir", "--dir", str(memdir.root), *args]
        return subprocess.run(command, input=stdin, env=environment, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip

    def conclude(self, memdir: Memdir, text: str, now: datetime, arm: str) -> str:
        """What the assistant concluded: an inference, or (no write discipline) a durable
        teaching; returns its id."""
        if arm == SAFE:
            return lifecycle.infer(memdir, text, now).id
        return lifecycle.teach(memdir, text, now, author="user").id

    def wake(self, memdir: Memdir, now: datetime) -> dict[str, list[str]]:
        """The wake document's memory texts per section (what a system prompt would carry)."""
        from memdir.usecases.documents import wake

        document = wake(memdir, now)
        return {
            name: [str(item.get("text", "")) for item in data["items"]]
            for name, data in document.sections.items()
        }

    def valence(self, text: str) -> float:
        """The annotator's valence of `text` (the lab has indexed a memdir, so it has one)."""
        assert self.annotator is not None
        return float(self.annotator.annotate(text).valence)


def as_fact(sections: dict[str, list[str]]) -> list[str]:
    """Wake entries presented as known (everything but the review queue and raw turns)."""
    return [
        text
        for name, texts in sections.items()
        if name in ("hard_facts", "standing", "upcoming", "teachings", "threads")
        for text in texts
    ]


def mentions(texts: list[str], needle: str) -> bool:
    return any(needle.lower() in text.lower() for text in texts)


def share(hits: list[bool]) -> float:
    return sum(hits) / len(hits) if hits else 0.0
