"""Forget reaches everything derived (docs/POLICY.md "Forget").

`forget_memory` and `forget_turns` remove the text from the canonical files (shelves, journal:
a tombstone stays), then from what was derived from it, in the same command: the digests of a
forgotten turn and the dream summaries they name (forgotten too; the next dream summarises the
group's other turns again), the console ring, the boot and wake documents (written again
without it), and the index under .memdir/ (brought up to date, which rebuilds it without the
text; the id cache follows the rewrites from their edits, archive_format/rewrite.py). Git history is the one place left:
the CLI says how to purge it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.errors import (
    AmbiguousIdError,
    BadInputError,
    MemdirError,
    NotFoundError,
)
from memdir.archive_format.journal import Turn
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.tombstones import writing

from . import documents

log = logging.getLogger("memdir")


@dataclass
class Forgotten:
    """What one forget removed: memory and turn ids, and the digests that named the turns."""

    memories: list[str] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[str]]:
        return {"memories": self.memories, "turns": self.turns, "digests": self.digests}


def forget_memory(memdir: Memdir, given: str, now: datetime, actor: str = "user") -> Forgotten:
    """Forget one memory (an id or unique prefix) and refresh what was derived from it."""
    present = documents_present(memdir)
    memory_id = lifecycle.forget(memdir, given, now, actor)
    refresh_derived(memdir, now, present)
    return Forgotten(memories=[memory_id])


def forget_turns(memdir: Memdir, given: list[str], session: str | None, now: datetime,
                 actor: str = "user") -> Forgotten:  # fmt: skip
    """Forget journal turns (ids or unique prefixes, and/or a whole session), the digests that
    name them and the summaries those digests name; then refresh what was derived."""
    present = documents_present(memdir)
    with writing(memdir):
        book = journal.read_journal(memdir)
        # a turn a merge brought back beside its tombstone can be forgotten again
        every = [*book.turns, *journal.returned_turns(memdir)]
        chosen = {turn.id: turn for turn in _resolve(every, given)}
        if session is not None:
            chosen.update({t.id: t for t in book.turns if t.session == session})
        if not chosen:
            raise NotFoundError(
                f"no journal turn in session {session!r}" if session else "no journal turn given",
                hint="`memdir journal read --json` lists turn ids and sessions",
            )
        digests = journal.forget_turns(memdir, chosen.values(), now)
        report = Forgotten(turns=sorted(chosen), digests=[digest.id for digest in digests])
        for memory_id in sorted({m for digest in digests for m in digest.summaries}):
            try:
                report.memories.append(lifecycle.forget(memdir, memory_id, now, actor))
            except NotFoundError:
                continue  # a digest may name a summary another clone has not sent yet
    refresh_derived(memdir, now, present)
    return report


def _resolve(turns: list[Turn], given: list[str]) -> list[Turn]:
    found = []
    for wanted in given:
        if not wanted.startswith("t-"):
            raise BadInputError(f"{wanted!r} is not a turn id", hint="turn ids start with t-")
        matches = [turn for turn in turns if turn.id.startswith(wanted)]
        if not matches:
            raise NotFoundError(f"no journal turn with id {wanted}",
                                hint="`memdir journal read --json` lists turn ids")  # fmt: skip
        if len(matches) > 1:
            raise AmbiguousIdError(f"{wanted} names {len(matches)} turns", hint="give more of it")
        found.append(matches[0])
    return found


def documents_present(memdir: Memdir) -> dict[str, bool]:
    return {"boot": documents.boot_path(memdir).exists(),
            "wake": documents.wake_path(memdir).exists()}  # fmt: skip


def refresh_derived(memdir: Memdir, now: datetime, present: dict[str, bool]) -> None:
    """After a forget: write the generated documents that existed again (forget removed them),
    and bring an existing index up to date, which rebuilds it without the forgotten text."""
    boot = present["boot"] or documents.boot_path(memdir).exists()
    wake = present["wake"] or documents.wake_path(memdir).exists()
    if boot or wake:  # the briefing both are written from is read once, and only for them
        briefing = documents.gather(memdir, now)
        if boot:
            documents.refresh_boot(memdir, now, briefing)
        if wake:
            documents.write_wake(memdir, now, briefing=briefing)
    if _has_index(memdir):
        from .recall import fresh_index

        try:
            fresh_index(memdir).close()
        except MemdirError as error:
            if memdir.settings.index.backend != "postgres":
                raise
            error.message = (
                f"forgotten in the files, but the index database still holds the text: "
                f"{error.message}"
            )
            error.hint = "run `memdir index` once the database answers; it removes the text"
            raise


def _has_index(memdir: Memdir) -> bool:
    """Whether an index may hold the forgotten text: a local one has its catalog file; a
    PostgreSQL one lives on the server, so it is always brought up to date (an unreachable
    server is an error: the text would stay in the database)."""
    if memdir.settings.index.backend == "postgres":
        return True
    return (memdir.cache_dir / "index" / "catalog.sqlite").exists()
