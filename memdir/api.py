"""The public Python API: `memdir.open(path, actor=...)` and the methods of `Memdir`.

A program that embeds memdir is one more *surface*, like the command line and the MCP server:
each method calls the same use-case function the matching command calls (the command is named
in its docstring and in `SURFACE_OF`, the policy row of archive_format/visibility.py that
applies), with the same provenance rule and actor check. Nothing here decides what may be
shown or stored; it only chooses the use case by the caller's actor, as the command does.

Who is writing is never assumed. `open` and `init` take `actor`, with no default:

- "user": the program speaks for the user, as `memdir` run in the user's own shell does (a
  prompt hook, a script the user runs): teachings are durable, and the user turns it journals
  are trusted (channel `api`), so the teaching guard can later quote them.
- "assistant": a model's actions (an agent loop's tools). Writes go through the teaching guard
  (memdir/usecases/provenance.py) exactly as over MCP or from an agent's shell: `teach` is a
  teaching only when its text quotes a recent trusted user turn, else it is stored as an
  inference; `confirm`, `reject` and `forget` need the user's quoted words; user turns,
  imports and turn forgetting are refused (channel `api:assistant` on the turns it may add).

The environment can only make an actor weaker: when MEMDIR_ACTOR=assistant or an agent
harness's marker is set (memdir/actor.py), an `actor="user"` handle runs as the assistant, as a
`memdir serve` request does. Errors are the archive's `MemdirError` classes (`memdir.errors`),
each with the exit status the command line would end with.

This module stays cheap to import; numpy, FAISS and Tantivy load only inside `recall`,
`context`, `sleep` and the others that read the index.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.actor import ACTORS, ASSISTANT, Actor, actor_from
from memdir.archive_format import clock, lifecycle
from memdir.archive_format.errors import BadInputError, LifecycleError
from memdir.archive_format.lifecycle import WriteResult
from memdir.archive_format.memdir import Memdir as Archive
from memdir.archive_format.memdir import find_root
from memdir.archive_format.memdir import init as init_archive
from memdir.archive_format.records import Event
from memdir.usecases import provenance
from memdir.usecases.provenance import Outcome

if TYPE_CHECKING:
    from memdir.indexers.recall import RecallResult
    from memdir.usecases.archive import ExportReport
    from memdir.usecases.documents import Wake
    from memdir.usecases.imports import ImportReport
    from memdir.usecases.prompt import PromptContext
    from memdir.usecases.sleep import SleepReport

__all__ = ["ACTORS", "Memdir", "Outcome", "SURFACE_OF", "WriteResult", "init", "open"]

Moment = datetime | str | None

# Each public method and the command it is (its row in visibility.SURFACES or NO_RECORDS).
SURFACE_OF = {
    "teach": "teach",
    "infer": "infer",
    "confirm": "confirm",
    "reject": "reject",
    "forget": "forget",
    "link": "link",
    "attach": "attach",
    "attachments": "attachments",
    "recall": "recall",
    "recall_journal": "recall --include-journal",
    "context": "context",
    "journal_add": "journal add",
    "journal_read": "journal read",
    "sleep": "sleep",
    "wake": "wake",
    "import_file": "import",
    "export": "export",
}


def _actor(declared: str) -> Actor:
    """The declared actor, made the assistant when the environment says an assistant runs."""
    name = str(declared).strip().casefold()
    if name not in ACTORS:
        raise BadInputError(
            f"actor={declared!r} is neither 'user' nor 'assistant'",
            hint="actor='assistant' for what a model decides, 'user' for the user's own words",
        )
    found = actor_from(os.environ)
    if found.assistant:
        return found
    return Actor(name, f"the program declared actor={name!r}")


def open(path: str | os.PathLike[str] | None = None, *, actor: str) -> Memdir:
    """Open the memdir at `path` (else $MEMDIR, else the nearest one upward, as `--dir` is
    resolved) for `actor`, "user" or "assistant" (see the module docstring)."""
    chosen = _actor(actor)
    root = find_root(None if path is None else str(path))
    return Memdir(Archive.open(root), chosen)


def init(
    path: str | os.PathLike[str],
    *,
    actor: str,
    settings: dict[str, Any] | None = None,
    now: Moment = None,
) -> Memdir:
    """Create a memdir at `path` (or fill in what is missing, as `memdir init` does), with
    `settings` (memdir.yaml's top-level settings keys) over the defaults, and open it."""
    chosen = _actor(actor)
    archive, _created = init_archive(Path(path), _moment(now), settings)
    return Memdir(archive, chosen)


def _moment(now: Moment, name: str = "now") -> datetime:
    """`now` as given (a datetime, or an ISO string as `--now` takes), else $MEMDIR_NOW, else
    the clock."""
    if isinstance(now, datetime):
        return now
    if now:
        return clock.parse_time(now, name)
    return clock.now()


def _refused(outcome: Outcome, actor: Actor) -> Outcome:
    """A guarded write's outcome, or the guard's refusal as the command line's error."""
    if outcome.refused:
        raise LifecycleError(
            f"{outcome.id}: {outcome.message}",
            hint=f"memdir runs as the assistant here ({actor.reason}); the user's own words "
            "decide, so ask the user",
        )
    return outcome


@dataclass(frozen=True)
class Memdir:
    """An open memdir and who is acting on it. Every method takes `now` (a datetime or an
    ISO string; default $MEMDIR_NOW, else the clock), as every command takes `--now`."""

    archive: Archive
    actor: Actor

    @property
    def root(self) -> Path:
        return self.archive.root

    # writing memories ---------------------------------------------------------------------
    def teach(self, text: str, *, by: str | None = None, now: Moment = None,
              **fields: Any) -> Outcome:  # fmt: skip
        """`memdir teach`: store what the user taught, durable from the start. As the
        assistant, a teaching only when `text` quotes a recent trusted user turn, else an
        inference (the outcome's `stored_as` says which). `fields` are teach's options:
        type ("TYPE:subtype"), key, importance, temporal, store, persona (a list),
        visibility, session, thread, valence, arousal, intent, rationale, evidence,
        confidence, pin. `by` names the user when several share the memdir."""
        moment, options = _moment(now), _fields(fields)
        if self.actor.assistant:
            window = self.archive.settings.mcp.quote_window
            via = f"through the Python API as the assistant ({self.actor.reason})"
            return provenance.teach(self.archive, text, moment, window, via, **options)
        written = lifecycle.teach(self.archive, text, moment, _user(by), **options)
        said = "" if written.added else " (it was already stored)"
        return Outcome(written.id, written.added, "durable", f"Stored as a teaching{said}",
                       stored_as="teaching")  # fmt: skip

    def infer(self, text: str, *, ttl: str | None = None, by: str = ASSISTANT,
              now: Moment = None, **fields: Any) -> WriteResult:  # fmt: skip
        """`memdir infer`: store an assistant's inference, provisional until the user confirms
        it; `ttl` like "3d" (default from memdir.yaml), `fields` as for `teach`."""
        lifetime = clock.parse_duration(ttl) if ttl else None
        return lifecycle.infer(self.archive, text, _moment(now), lifetime, by, **_fields(fields))

    def confirm(self, memory_id: str, *, evidence: str | None = None, quote: str | None = None,
                by: str | None = None, now: Moment = None) -> Outcome:  # fmt: skip
        """`memdir confirm`: the user confirms an inference, which becomes durable. As the
        assistant it needs `quote`: the user's answer, from a trusted journal turn after the
        inference, about it and saying yes (else a LifecycleError)."""
        moment = _moment(now)
        if self.actor.assistant:
            outcome = provenance.confirm(self.archive, memory_id, quote or evidence or "", moment)
            return _refused(outcome, self.actor)
        memory, event = lifecycle.confirm(self.archive, memory_id, moment, _user(by), evidence)
        if event is None:
            return Outcome(memory, False, "durable", f"{memory} is already durable")
        return Outcome(memory, True, "durable", "Confirmed.", evidence=evidence)

    def reject(self, memory_id: str, *, reason: str, quote: str | None = None,
               by: str | None = None, now: Moment = None) -> Outcome:  # fmt: skip
        """`memdir reject`: mark a memory wrong (kept for audit, never recalled). As the
        assistant it withdraws its own unconfirmed inference; anything else needs `quote`."""
        moment = _moment(now)
        if self.actor.assistant:
            outcome = provenance.reject(self.archive, memory_id, reason, moment, quote)
            return _refused(outcome, self.actor)
        memory, event = lifecycle.reject(self.archive, memory_id, reason, moment, _user(by))
        if event is None:
            return Outcome(memory, False, "rejected", f"{memory} was already rejected")
        return Outcome(memory, True, "rejected", "Rejected.")

    def forget(self, memory_id: str, *, quote: str | None = None, now: Moment = None) -> Outcome:
        """`memdir forget`: remove a memory's text from every file under the memdir, leaving a
        tombstone (a `t-…` id forgets that journal turn, which the assistant may not). As the
        assistant it needs `quote`: the user's recent request to forget it. Git history, if
        the memdir was committed, still holds the text."""
        from memdir.usecases import forgetting

        moment = _moment(now)
        if memory_id.startswith("t-"):
            provenance.refuse_turn_forget(self.actor)
            done = forgetting.forget_turns(self.archive, [memory_id], None, moment)
            return Outcome(memory_id, True, "forgotten",
                           f"Forgotten: turn(s) {', '.join(done.turns)}, summaries "
                           f"{', '.join(done.memories) or 'none'}")  # fmt: skip
        if self.actor.assistant:
            present = forgetting.documents_present(self.archive)
            window = self.archive.settings.mcp.quote_window
            outcome = provenance.forget(self.archive, memory_id, quote or "", moment, window)
            _refused(outcome, self.actor)
            if outcome.done:
                forgetting.refresh_derived(self.archive, moment, present)
            return outcome
        forgotten = forgetting.forget_memory(self.archive, memory_id, moment).memories[0]
        return Outcome(forgotten, True, "forgotten", "Forgotten.")

    def link(self, memory_id: str, to: str, *, link_type: str = "related",
             now: Moment = None) -> Event:  # fmt: skip
        """`memdir link`: a typed link from one memory to another (or to a journal turn); the
        event records this handle's actor."""
        return lifecycle.link(self.archive, memory_id, to, link_type, _moment(now),
                              actor=self.actor.name)  # fmt: skip

    def attach(self, memory_id: str, path: str | os.PathLike[str], *,
               now: Moment = None) -> str:  # fmt: skip
        """`memdir attach`: keep a file with a memory (stored once by its hash, its text and
        metadata read and indexed with the memory); returns the attachment id (`a-…`). The link
        event records this handle's actor."""
        from memdir.usecases import attachments

        done = attachments.attach(self.archive, memory_id, Path(path), _moment(now),
                                  self.actor.name)  # fmt: skip
        return done.attached.id

    def attachments(self, memory_id: str, *, now: Moment = None) -> dict[str, Any]:
        """`memdir attachments --json`: a memory's attached files with what was read from
        them (a sealed memory's masked)."""
        from memdir.usecases import attachments

        return attachments.listing(self.archive, memory_id, _moment(now))

    # reading ------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        profile: str | None = None,
        budget: int | None = None,
        include_expired: bool = False,
        include_private: bool = False,
        persona: str | None = None,
        counterweights: bool = True,
        mmr: bool = False,
        perfect: bool = False,
        record: bool = True,
        now: Moment = None,
    ) -> RecallResult:
        """`memdir recall`: the memories that matter for `query`, ranked, with a verdict
        (GROUNDED, LOW_CONFIDENCE or NO_DATA) and every stage's trace; `.to_dict()` is what
        `--json` prints (`explain=True`: with the stages). Unless `record` is off, what
        surfaced is recorded as a recall by this handle's actor."""
        from memdir.indexers.recall import RecallOptions
        from memdir.usecases.recall import recall as run

        text = query.strip()
        if not text:
            raise BadInputError("the query is empty")
        options = RecallOptions(
            k=k, profile=profile, include_expired=include_expired, include_private=include_private,
            persona=persona, budget=budget, counterweights=counterweights, mmr=mmr,
            perfect=perfect,
        )  # fmt: skip
        return run(self.archive, text, _moment(now), options, record=record,
                   actor=self.actor.name)  # fmt: skip

    def recall_journal(
        self, recalled: RecallResult, *, k: int = 10, include_private: bool = False
    ) -> dict[str, Any]:
        """`memdir recall --include-journal`'s group for a result of `recall`: the journal's
        turns (imported and journalled conversations) that hold its query's words, apart from
        the memories, through the policy row of this handle's actor (the assistant's: normal
        turns only); what `--json` prints under `journal`."""
        from memdir.usecases.recall import journal_group

        if self.actor.assistant:
            return journal_group(self.archive, recalled, k, assistant=True)
        return journal_group(self.archive, recalled, k, include_private)

    def context(self, prompt: str, *, budget: int | None = None, k: int | None = None,
                record: bool = True, now: Moment = None, session: str | None = None,
                journal: bool = True) -> PromptContext:  # fmt: skip
        """`memdir context`: the block an assistant should see before answering `prompt`
        (`.markdown()`; `.to_dict()` is `--json`): the memories that bear on it when one
        grounds it, else the journal turns of other conversations than `session` that hold its
        words (none without `journal`), else nothing."""
        from memdir.usecases.prompt import CANDIDATES, DEFAULT_BUDGET, prompt_context

        text = prompt.strip()
        if not text:
            raise BadInputError("the prompt is empty")
        return prompt_context(self.archive, text, _moment(now), budget or DEFAULT_BUDGET,
                              record=record, k=k or CANDIDATES, session=session,
                              journal=journal)  # fmt: skip

    # the journal --------------------------------------------------------------------------
    def journal_add(
        self,
        text: str,
        *,
        role: str,
        session: str,
        topic: str | None = None,
        visibility: str = "normal",
        secrecy: str = "public",
        at: Moment = None,
        now: Moment = None,
    ) -> WriteResult:
        """`memdir journal add`: store one verbatim turn (role user, assistant or tool). The
        assistant may not record user turns: they are what the teaching guard trusts."""
        from memdir.usecases.journal import record_turns, refuse_user_turns, turn_from_fields

        moment = _moment(now)
        channel = "api:assistant" if self.actor.assistant else "api"
        fields = {"role": role, "session": session, "text": text, "topic": topic,
                  "visibility": visibility, "secrecy": secrecy,
                  "at": clock.format_time(_moment(at, "at")) if at is not None else None}  # fmt: skip
        turn = turn_from_fields(fields, moment, channel)
        refuse_user_turns(self.actor, [turn])
        [(stored, added)] = record_turns(self.archive, [turn], moment)
        return WriteResult(stored.id, added)

    def journal_read(
        self,
        *,
        session: str | None = None,
        role: str | None = None,
        since: Moment = None,
        window: bool = False,
        everything: bool = False,
        now: Moment = None,
    ) -> list[dict[str, Any]]:
        """`memdir journal read --json`: turns as of `now`, oldest first, each with the
        memories that summarise it; private, sealed and secret text masked (`everything`,
        like `--all`, shows private text, never sealed or secret text). `since` is a datetime,
        an ISO time or a duration back from now ("2d", "6h"), as `--since` takes."""
        from memdir.usecases.journal import read_turns

        moment = _moment(now)
        start = since if isinstance(since, datetime) else clock.parse_moment(since, moment, "since")
        return read_turns(self.archive, moment, session, role, start, window, everything)

    # continuity ---------------------------------------------------------------------------
    def sleep(self, *, dry_run: bool = False, now: Moment = None) -> SleepReport:
        """`memdir sleep`: expire, decay bookkeeping, dream, relink, refresh boot, write the
        wake document and a journal entry; locked and idempotent."""
        from memdir.usecases.sleep import sleep as run

        return run(self.archive, _moment(now), dry_run=dry_run)

    def wake(self, *, budget: int | None = None, persona: str | None = None,
             now: Moment = None) -> Wake:  # fmt: skip
        """`memdir wake`: the wake document (`.markdown`) for the next session's system
        prompt, within `budget` tokens (default wake.budget); writes nothing."""
        from memdir.usecases.documents import wake as build

        return build(self.archive, _moment(now), budget, persona=persona)

    # import and export --------------------------------------------------------------------
    def import_file(
        self,
        path: str | os.PathLike[str],
        *,
        format: str | None = None,  # the command's --format
        skip_malformed: bool = False,
        visibility: str = "normal",
        secrecy: str = "public",
        now: Moment = None,
    ) -> ImportReport:
        """`memdir import`: ChatGPT, Claude or JSONL conversations into the journal (format
        detected unless given). Imported user turns count as the user's, so the assistant
        may not import."""
        from memdir.usecases.imports import FORMATS, import_file

        if self.actor.assistant:
            raise LifecycleError(
                f"an assistant cannot import conversations ({self.actor.reason}): imported "
                "user turns count as the user's own words",
                hint="ask the user to run `memdir import` themselves",
            )
        if format is not None and format not in FORMATS:
            raise BadInputError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
        return import_file(self.archive, Path(path), format, _moment(now), skip_malformed,
                           visibility, secrecy)  # fmt: skip

    def export(self, out: str | os.PathLike[str], *, passphrase: str | None = None) -> ExportReport:
        """`memdir export`: the canonical files (not the .memdir/ cache) as one tar.gz at
        `out`, encrypted when a passphrase is given."""
        from memdir.usecases.archive import export as run

        return run(self.archive, Path(out), passphrase)


def _user(name: str | None) -> str:
    """The author or actor a user write records: 'user', or 'user:NAME' (`--by`)."""
    return provenance.user(name)


def _fields(given: dict[str, Any]) -> dict[str, Any]:
    """teach's and infer's options as memory fields, by the command line's one rule
    (usecases/fields.py); an unknown name is the caller's mistake."""
    import inspect

    from memdir.usecases.fields import memory_fields

    known = {name.rstrip("_") for name in inspect.signature(memory_fields).parameters}
    unknown = sorted(set(given) - known)
    if unknown:
        raise BadInputError(
            f"unknown memory field {unknown[0]!r}",
            hint=f"the fields are {', '.join(sorted(known))}",
        )
    renamed = {("type_" if name == "type" else name): value for name, value in given.items()}
    return memory_fields(**renamed)
