"""A hypothesis state machine for git sync, as vdirsyncer tests its own: three clones of one
memdir do random writes and merge from one another; after every step the invariants hold.

Shared by tests/test_sync_machine.py (a bounded run in the default suite) and
benchmarks/bench_sync.py (a larger run and the closing numbers).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from clones import conflicts, git, new_memdir_repo
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from memdir.archive_format import journal, lifecycle, people
from memdir.archive_format.fold import fold
from memdir.archive_format.lifecycle import load_view, read_lines
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.verify import verify
from memdir.indexers.index import MemoryIndex
from memdir.indexers.recall.options import RecallOptions
from memdir.usecases.recall import recall
from memdir.usecases.sleep import sleep
from memdir.usecases.sync import sync

NAMES = ("a", "b", "c")
WORDS = ("tea", "garden", "piano", "river", "bread", "winter", "letters", "bicycle")
QUERY = "tea garden piano river"


@dataclass
class Tally:
    """What the runs exercised (benchmarks/bench_sync.py reports it)."""

    operations: int = 0
    merges: int = 0
    conflicts: int = 0
    lost: int = 0
    resurrected: int = 0
    compared: int = 0  # pairs of clones with the same lines whose folds and recalls were compared
    # pairs whose recall differed (on the indexes each clone updated incrementally): target 0
    recall_differed: int = 0
    by_rule: dict[str, int] = field(default_factory=dict)

    def count(self, name: str) -> None:
        self.operations += 1
        self.by_rule[name] = self.by_rule.get(name, 0) + 1


TALLY = Tally()
RUNS = itertools.count()  # a fresh directory per example (hypothesis seeds `random`)


@dataclass
class Clone:
    """One clone and what the model knows it must hold."""

    root: Path
    memories: dict[str, str] = field(default_factory=dict)  # acknowledged id → text
    inferences: set[str] = field(default_factory=set)
    forgotten: set[str] = field(default_factory=set)
    turns: set[str] = field(default_factory=set)

    @property
    def memdir(self) -> Memdir:
        return Memdir.open(self.root)

    def live(self) -> list[str]:
        return sorted(set(self.memories) - self.forgotten)


def fingerprint(memdir: Memdir, now: datetime) -> dict[str, Any]:
    """Everything the fold says, in a form two clones can compare."""
    return {
        state.id: (
            state.status,
            state.memory.text if state.memory else None,
            state.durable_since,
            state.superseded_by,
            state.forgotten_at,
            tuple(event.id for event in state.events),
            tuple(sorted((link["type"], link["to"]) for link in state.links)),
        )
        for state in load_view(memdir, now)
    }


def line_set(root: Path) -> frozenset[bytes]:
    return frozenset(
        line
        for folder in ("shelves", "journal", "state")
        for path in sorted((root / folder).glob("*.jsonl"))
        for line in path.read_bytes().splitlines()
        if line.strip()
    )


class SyncMachine(RuleBasedStateMachine):
    """Rules: teach, teach the same on two clones, infer, confirm, reject, forget, link, journal
    add, a people note, sleep, merge from another clone, exchange everything, let time pass."""

    base: Path  # set by the test: a fresh directory per run

    def __init__(self) -> None:
        super().__init__()
        self.clones: list[Clone] = []
        self.now = datetime(2026, 5, 1, 9, 0).astimezone()
        self.serial = 0

    @initialize()
    def make_clones(self) -> None:
        run = self.base / f"run{next(RUNS)}"
        first = new_memdir_repo(run / NAMES[0])
        # a teaching and an inference in every clone, so that decisions, forgets and links
        # have something to act on from the first step
        seeded, seeded_inferences = {}, set()
        for write in (lifecycle.teach, lifecycle.infer):
            text = self._text()
            memory_id = write(Memdir.open(first), text, self.now).id
            seeded[memory_id] = text
        seeded_inferences.add(memory_id)
        git(first, "add", "-A")
        git(first, "commit", "-q", "-m", "seed")
        roots = [first]
        for name in NAMES[1:]:
            git(run, "clone", "-q", str(first), name)
            for key, value in (("user.name", "Test"), ("user.email", "t@example.invalid")):
                git(run / name, "config", key, value)
            roots.append(run / name)
        for root in roots:
            for other in roots:
                if other != root and other.name not in git(root, "remote").stdout.split():
                    git(root, "remote", "add", other.name, str(other))
        self.clones = [Clone(root) for root in roots]
        for clone in self.clones:
            clone.memories.update(seeded)
            clone.inferences.update(seeded_inferences)

    def _text(self) -> str:
        self.serial += 1
        word = WORDS[self.serial % len(WORDS)]
        return f"note {self.serial} about the {word}"

    @rule(which=st.integers(0, 2), inference=st.booleans())
    def teach_or_infer(self, which: int, inference: bool) -> None:
        TALLY.count("infer" if inference else "teach")
        clone, text = self.clones[which], self._text()
        write = lifecycle.infer if inference else lifecycle.teach
        result = write(clone.memdir, text, self.now)
        clone.memories[result.id] = text
        if inference:
            clone.inferences.add(result.id)

    @rule(first=st.integers(0, 2), second=st.integers(0, 2))
    def teach_on_two(self, first: int, second: int) -> None:
        """The same teaching in the same second on two clones: since format 1.1 each write has
        its own nonce, so two ids, twins of the same content (forget takes both where both are)."""
        TALLY.count("teach_on_two")
        text = self._text()
        for which in {first, second}:
            result = lifecycle.teach(self.clones[which].memdir, text, self.now)
            self.clones[which].memories[result.id] = text

    def _pick(self, which: int, pick: int, among: list[str]) -> str | None:
        return among[pick % len(among)] if among else None

    @rule(
        which=st.integers(0, 2),
        pick=st.integers(0, 1000),
        op=st.sampled_from(("confirm", "reject")),
    )
    def decide(self, which: int, pick: int, op: str) -> None:
        """The user's decision: confirm an inference, or reject any live memory."""
        clone = self.clones[which]
        among = sorted(clone.inferences - clone.forgotten) if op == "confirm" else clone.live()
        target = self._pick(which, pick, among)
        if target is None:
            return
        TALLY.count(op)
        if op == "confirm":
            lifecycle.confirm(clone.memdir, target, self.now)
        else:
            lifecycle.reject(clone.memdir, target, f"wrong, says the user ({pick})", self.now)

    @rule(which=st.integers(0, 2), pick=st.integers(0, 1000))
    def forget(self, which: int, pick: int) -> None:
        clone = self.clones[which]
        target = self._pick(which, pick, clone.live())
        if target is not None:
            TALLY.count("forget")
            lifecycle.forget(clone.memdir, target, self.now)
            text = clone.memories[target]
            clone.forgotten |= {held for held in clone.live() if clone.memories[held] == text}

    @rule(which=st.integers(0, 2), pick=st.integers(0, 1000), other=st.integers(0, 1000))
    def link(self, which: int, pick: int, other: int) -> None:
        clone = self.clones[which]
        live = clone.live()
        source, target = self._pick(which, pick, live), self._pick(which, other, live)
        if source is not None and target is not None and source != target:  # self: refused
            TALLY.count("link")
            lifecycle.link(clone.memdir, source, target, "related", self.now)

    @rule(which=st.integers(0, 2), session=st.sampled_from(("s1", "s2")))
    def journal_add(self, which: int, session: str) -> None:
        TALLY.count("journal_add")
        clone = self.clones[which]
        turn = journal.new_turn(self.now, "user", session, f"I said {self._text()}")
        journal.add_turns(clone.memdir, [turn])
        clone.turns.add(turn.id)

    @rule(
        which=st.integers(0, 2),
        name=st.sampled_from(("Sam", "Ada")),
        field_name=st.sampled_from(("relation", "city")),
        drop=st.booleans(),
    )
    def note(self, which: int, name: str, field_name: str, drop: bool) -> None:
        """A people note: set a field, or drop the person."""
        TALLY.count("note")
        memdir = self.clones[which].memdir
        if drop and name in people.read_people(memdir):
            people.remove_person(memdir, name, self.now)
        else:
            people.update_person(
                memdir, name, {field_name: self._text()}, [], self.now, "assistant"
            )

    @rule(which=st.integers(0, 2))
    def sleep(self, which: int) -> None:
        TALLY.count("sleep")
        sleep(self.clones[which].memdir, self.now)

    @rule(seconds=st.sampled_from((0, 1, 60, 3600, 86400)))
    def tick(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @precondition(lambda self: bool(self.clones))
    @rule(into=st.integers(0, 2), offset=st.integers(1, 2))
    def merge(self, into: int, offset: int) -> None:
        """`into` merges everything the other clone has committed (it commits first)."""
        self._merge(into, offset)

    def _merge(self, into: int, offset: int) -> None:
        TALLY.count("merge")
        TALLY.merges += 1
        source, target = self.clones[(into + offset) % 3], self.clones[into]
        git(source.root, "add", "-A")
        git(source.root, "commit", "-q", "--allow-empty", "-m", "work")
        try:
            sync(target.memdir, self.now, remote=source.root.name, push=False, reindex=False)
        finally:
            if conflicts(target.root):
                TALLY.conflicts += 1
        assert conflicts(target.root) == []
        target.memories.update(source.memories)
        target.inferences |= source.inferences
        target.forgotten |= source.forgotten
        target.turns |= source.turns

    @precondition(lambda self: bool(self.clones))
    @rule()
    def exchange_everything(self) -> None:
        """A round of merges after which every clone has every line."""
        for into, offset in ((0, 1), (0, 2), (1, 2), (2, 1)):
            self._merge(into, offset)

    @invariant()
    def acknowledged_records_are_present_or_forgotten(self) -> None:
        for clone in self.clones:
            view = load_view(clone.memdir, self.now)
            for memory_id, text in clone.memories.items():
                state = view.states.get(memory_id)
                if state is None or (
                    memory_id not in clone.forgotten
                    and (state.memory is None or state.memory.text != text)
                ):
                    TALLY.lost += 1
                assert state is not None, f"{clone.root.name} lost {memory_id}"
                assert (state.status == "forgotten") == (memory_id in clone.forgotten)
                if memory_id not in clone.forgotten:
                    assert state.memory is not None and state.memory.text == text
            present = {turn.id for turn in journal.read_journal(clone.memdir).turns}
            assert clone.turns <= present, f"{clone.root.name} lost turns"

    @invariant()
    def no_forgotten_text_outside_git_history(self) -> None:
        for clone in self.clones:
            # a twin written on another clone that arrived after the forget keeps its own text
            kept = {clone.memories[memory_id] for memory_id in clone.live()}
            texts = [
                clone.memories[memory_id].encode()
                for memory_id in clone.forgotten
                if clone.memories[memory_id] not in kept
            ]
            if not texts:
                continue
            for path in clone.root.rglob("*"):
                parts = path.relative_to(clone.root).parts
                if path.is_file() and parts[0] not in (".git", ".memdir"):
                    blob = path.read_bytes()
                    found = [text for text in texts if text in blob]
                    TALLY.resurrected += len(found)
                    assert not found, f"{clone.root.name}: forgotten text in {path}"

    @invariant()
    def verify_is_clean(self) -> None:
        for clone in self.clones:
            report = verify(clone.memdir)
            assert report.clean, f"{clone.root.name}: {report.problems}"

    @invariant()
    def the_fold_ignores_line_order_and_repeats(self) -> None:
        for clone in self.clones:
            lines = list(read_lines(clone.memdir))
            shuffled = lines + lines[: len(lines) // 3]
            random.Random(len(lines)).shuffle(shuffled)
            state = fold(lines, self.now)
            again = fold(shuffled, self.now)
            assert {s.id: (s.status, s.durable_since) for s in state} == {
                s.id: (s.status, s.durable_since) for s in again
            }

    @invariant()
    def clones_with_the_same_lines_fold_and_recall_alike(self) -> None:
        seen: dict[frozenset[bytes], Clone] = {}
        for clone in self.clones:
            lines = line_set(clone.root)
            other = seen.setdefault(lines, clone)
            if other is clone or not lines:
                continue
            TALLY.compared += 1
            assert fingerprint(clone.memdir, self.now) == fingerprint(other.memdir, self.now)
            assert people.read_people(clone.memdir) == people.read_people(other.memdir)
            # each clone's own index, updated incrementally along its own history: BM25 must
            # not depend on that history (updater.compact_fulltext)
            mine, theirs = self._recalled(clone), self._recalled(other)
            if mine != theirs:
                TALLY.recall_differed += 1
            assert mine == theirs, f"{clone.root.name}: {mine}\n{other.root.name}: {theirs}"

    def _recalled(self, clone: Clone) -> list[tuple[str, float]]:
        index = MemoryIndex(clone.memdir)
        try:
            index.update()
            options = RecallOptions()
            result = recall(clone.memdir, QUERY, self.now, options, record=False, index=index)
        finally:
            index.close()
        return [(candidate.id, round(candidate.score, 9)) for candidate in result.results]
