"""The context block for one prompt: what an assistant should see before it answers.

One recall for the prompt (the same pipeline, filters and visibility rule as `memdir recall`,
private memories never included), split into three kinds, each entry with its id and a
provenance marker:

- hard facts: the current memory of a supersede key the prompt names (or every one, with
  `context.hard_facts: always`);
- memories: the other durable memories recall ranked, best first;
- review items: unconfirmed inferences recall found relevant — shown as questions for the
  user, never as known.

Each entry is what the policy's `context` row (archive_format/visibility.py) lets a prompt
carry: durable and provisional memories of normal visibility, never private, sealed, expired,
rejected or superseded ones. Only what bears on the prompt is carried (`bearing`: a relevance
floor, an adaptive size, health memories only when the prompt is about them; docs/MCP.md), and
nothing is shown unless a durable memory among it grounds the prompt: a weak match in every
prompt is noise. Results that sit side by side in one conversation (a reply sent as two
messages, a question and its answer) and both bear on the prompt are one entry, shown in the
conversation's order. With `context.hard_facts: always` every current keyed memory joins.
When no memory answers, the block carries instead the journal's turns of other conversations
that hold the prompt's words (`journal_entries`: an imported history is in the journal, not in
memories), normal turns only. The block (headers and markers included) stays within the token
budget; entries are taken in the order hard facts, memories, review items, journal turns, each
kind by rank, and what did not fit is counted. The memory ids that made it into the block are
recorded as a recall (rehearsal) by `context`.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memdir.archive_format import visibility
from memdir.archive_format.documents import estimate_tokens
from memdir.archive_format.errors import LockedError
from memdir.archive_format.lifecycle import record_recall
from memdir.archive_format.memdir import Memdir

from .recall import recall

if TYPE_CHECKING:
    from memdir.archive_format.settings import VerdictSettings
    from memdir.indexers.recall import RecallOptions, RecallResult
    from memdir.indexers.recall.result import Candidate

log = logging.getLogger("memdir")

DEFAULT_BUDGET = 400  # tokens
CANDIDATES = 12  # recall's k: more than ever fit a small budget
KINDS = ("fact", "memory", "review", "journal")  # the order the budget is filled in
TITLES = {
    "fact": "Hard facts (current value per key):",
    "memory": "Relevant memories:",
    "review": "Unconfirmed (inferred, not known; ask the user before relying on them):",
    "journal": "From the journal (verbatim turns, not memories: what was said then):",
}
JOURNAL_SURFACE = "context (journal)"  # the policy's row for the block's journal turns
TEXT_WIDTH = 300
MAX_ENTRIES = 5
HEALTH_WORDS = re.compile(
    r"\b(allerg\w*|anaphyla\w*|diagnos\w*|medication\w*|medicine\w*|pills?|tablets?|"
    r"inhaler\w*|insulin|epipen|prescri\w*|dose\w*|mg)\b",
    re.IGNORECASE,
)
QUERY_CHARS = 2000  # of a long prompt (a pasted file), the start is what recall is asked


@dataclass(frozen=True)
class Shape:
    """What the block is made of: the relevance floor and the adaptive size, chosen with
    `memdir bench delivery` on two samples of each dev file (docs/MCP.md, BENCHMARKS.md). A
    result enters when it is at least this close to the prompt (raw cosine ≥ `floor_cosine` or
    BM25 ≥ `floor_bm25`) and at least `relative` as relevant as the best, up to `max_entries`
    entries; a result beside one of an entry's memories in their conversation, as close to the
    prompt, joins that entry at `neighbour` of the best. `memdir bench delivery --shape`
    measures others."""

    floor_cosine: float = 0.3
    floor_bm25: float = 3.0
    relative: float = 0.8
    neighbour: float = 0.8
    max_entries: int = MAX_ENTRIES
    # when no memory answers: up to `journal_turns` journal turns holding at least
    # `journal_least` of the prompt's words and `journal_share` of them (`journal_entries`)
    journal_turns: int = 2
    journal_least: int = 2
    journal_share: float = 0.3


@dataclass(frozen=True)
class Entry:
    """One memory of the block. Memories of one `unit` are one entry of the block: results
    side by side in a conversation, shown together in `order` (their time, then iid)."""

    kind: str
    id: str
    text: str
    marker: str
    score: float
    key: str | None = None
    status: str = "durable"
    visibility: str = "normal"
    unit: int = 0
    order: tuple[str, int] = ("", 0)

    def line(self, first: bool = True) -> str:
        flat = " ".join(self.text.split())
        flat = flat if len(flat) <= TEXT_WIDTH else flat[: TEXT_WIDTH - 1] + "…"
        prefix = f"{self.key}: " if self.key else ""
        return f"{'-' if first else ' '} {prefix}{flat} ({self.id}, {self.marker})"


@dataclass
class PromptContext:
    verdict: str
    budget: int
    entries: list[Entry] = field(default_factory=list)
    left_out: int = 0

    def markdown(self) -> str:
        """The block as the assistant sees it; empty when there is nothing to show."""
        return render(self.entries, self.left_out)

    def units(self) -> list[list[Entry]]:
        """The block's entries as the assistant sees them: each a list of memories."""
        return units_of(self.entries)

    def to_dict(self) -> dict[str, Any]:
        text = self.markdown()
        return {
            "verdict": self.verdict,
            "budget": self.budget,
            "tokens": estimate_tokens(text) if text else 0,
            "left_out": self.left_out,
            "units": len(self.units()),
            "entries": [
                {
                    "kind": e.kind,
                    "id": e.id,
                    "key": e.key,
                    "text": e.text,
                    "marker": e.marker,
                    "status": e.status,
                    "visibility": e.visibility,
                    "score": round(e.score, 4),
                    "unit": e.unit,
                }
                for e in self.entries
            ],  # fmt: skip
            "text": text,
        }


def marker(candidate: Candidate) -> str:
    """Where a memory comes from and how far it is trusted: its source, then the policy's
    marker (status and exposure, when not durable and normal) and the provenance weight when it
    is not durable (e.g. `inference, provisional ×0.4`)."""
    source = str(candidate.memory.line.get("source", "unknown"))
    exposed = visibility.exposure(str(candidate.memory.line.get("visibility", "normal")))
    mark = visibility.marker(candidate.status, exposed)
    weight = f" ×{candidate.weight:g}" if candidate.status != "durable" else ""
    return f"{source}, {mark}{weight}" if mark else source


def entry(candidate: Candidate, unit: int = 0) -> Entry | None:
    """The candidate as a memory of the block's entry `unit`, or None when the policy keeps it
    out of a prompt."""
    line = candidate.memory.line
    seen = str(line.get("visibility", "normal"))
    text = visibility.present("context", candidate.memory.text, candidate.status, seen)
    if text is None:
        return None
    return Entry(kind_of(candidate), candidate.id, text, marker(candidate), candidate.score,
                 line.get("key"), candidate.status, seen, unit,
                 (str(line.get("created", "")), candidate.memory.iid))  # fmt: skip


def kind_of(candidate: Candidate) -> str:
    if "hard-fact" in candidate.channels:
        return "fact"
    return "memory" if candidate.status == "durable" else "review"


def units_of(entries: list[Entry]) -> list[list[Entry]]:
    """The memories grouped by entry (in the order entries first appear), each entry's in its
    conversation's order."""
    grouped: dict[int, list[Entry]] = {}
    for entry in entries:
        grouped.setdefault(entry.unit, []).append(entry)
    return [sorted(members, key=lambda e: e.order) for members in grouped.values()]


def render(entries: list[Entry], left_out: int = 0) -> str:
    if not entries:
        return ""
    lines = ["## From memory (memdir)"]
    for kind in KINDS:
        chosen = units_of([entry for entry in entries if entry.kind == kind])
        if chosen:
            lines += ["", TITLES[kind]]
            lines += [member.line(first=at == 0) for unit in chosen
                      for at, member in enumerate(unit)]  # fmt: skip
    if left_out:
        lines += ["", f"({left_out} more left out for the budget; `memdir recall` shows them)"]
    return "\n".join(lines) + "\n"


def within_budget(candidates: list[Entry], budget: int) -> tuple[list[Entry], int]:
    """The entries that fit `budget` tokens as rendered, taken kind by kind in KINDS order."""
    ordered = sorted(candidates, key=lambda entry: KINDS.index(entry.kind))
    chosen: list[Entry] = []
    for entry in ordered:
        trial = chosen + [entry]
        if estimate_tokens(render(trial, len(ordered) - len(trial))) <= budget:
            chosen = trial
    return chosen, len(ordered) - len(chosen)


def prompt_context(
    memdir: Memdir,
    prompt: str,
    now: datetime,
    budget: int = DEFAULT_BUDGET,
    record: bool = True,
    k: int = CANDIDATES,
    session: str | None = None,
    journal: bool = True,
) -> PromptContext:
    """The context block for `prompt` at `now` (see the module doc); `session` is the
    conversation the prompt belongs to, whose turns the journal entries leave out; without
    `journal`, the memories only."""
    result = recall(memdir, prompt[:QUERY_CHARS], now, context_options(k), record=False)
    found = delivered(memdir, result, now, budget, session=session, journal=journal)
    remembered = [e.id for e in found.entries if e.kind != "journal"]
    if record and remembered:
        try:
            record_recall(memdir, remembered, now, "user", f"context: {prompt[:200]}",
                          via="context")  # fmt: skip
        except LockedError:
            log.warning("the memdir is busy; this context was not recorded")
    return found


def delivered(memdir: Memdir, result: RecallResult, now: datetime, budget: int = DEFAULT_BUDGET,
              shape: Shape = Shape(), session: str | None = None,
              journal: bool = True) -> PromptContext:  # fmt: skip
    """The block for the prompt `result` recalled, as the hook gets it: `block` (with the
    hard facts the user wants always), then, when no memory answers, the journal's turns
    (`journal_entries`, unless `context.journal` is off or `journal` is False)."""
    always = always_on(memdir, now) if memdir.settings.context.hard_facts == "always" else []
    found = block(result, budget, always, memdir.settings.recall.verdict, shape)
    if journal and memdir.settings.context.journal and found.verdict != "GROUNDED":
        turns = journal_entries(memdir, result, now, session, shape)
        found = with_journal(found, turns, budget)
    return found


def journal_entries(memdir: Memdir, result: RecallResult, now: datetime,
                    session: str | None = None, shape: Shape = Shape()) -> list[Entry]:  # fmt: skip
    """For a prompt no memory answers: the journal turns — imported and journalled
    conversations — that hold its words (recall's BM25 words, as `recall --include-journal`
    searches them), at least `shape.journal_least` of them (all, when it has fewer) and
    `shape.journal_share` of them, the best `shape.journal_turns` by the search's order; never
    a turn of `session` (the conversation in progress, which the assistant already has) nor
    one that is mostly questions, and only what the policy's `context (journal)` row shows an
    assistant: normal turns."""
    from memdir.indexers.questions import MOSTLY, question_share

    from .journal import search_terms, search_turns
    from .recall import journal_words

    words = journal_words(result.analysis)
    count = len(search_terms(words))
    least = max(min(shape.journal_least, count), math.ceil(shape.journal_share * count))
    if not count or shape.journal_turns <= 0:
        return []
    rows = search_turns(memdir, words, now, shape.journal_turns + JOURNAL_SPARE,
                        surface=JOURNAL_SURFACE, least=least)  # fmt: skip
    # a question asks, it rarely tells (docs/RECALL.md §2): the user's earlier prompts, which
    # the hook journals, would otherwise come back as answers to the same question
    rows = [row for row in rows if (session is None or row["session"] != session)
            and question_share(row["text"]) < MOSTLY]  # fmt: skip
    return [journal_entry(row) for row in rows[: shape.journal_turns]]


JOURNAL_SPARE = 8  # turns searched beyond those shown, for the session left out


def journal_entry(row: dict[str, Any]) -> Entry:
    """A journal turn as an entry of its own: who said it (a user turn that arrived by a
    channel that cannot vouch for the user is `user (unverified)`), when, and its id."""
    role = row["role"] if row["trusted"] else f"{row['role']} (unverified)"
    return Entry("journal", row["id"], row["text"], f"journal, {role}, {row['at'][:10]}",
                 0.0, None, "turn", "normal", 0, (row["at"], 0))  # fmt: skip


def with_journal(found: PromptContext, turns: list[Entry], budget: int) -> PromptContext:
    """The block with the journal turns after its entries, each an entry of its own, within
    the budget."""
    if not turns:
        return found
    first = max((e.unit for e in found.entries), default=-1) + 1
    entries = found.entries + [replace(turn, unit=first + n) for n, turn in enumerate(turns)]
    kept, left_out = within_budget(entries, budget)
    return PromptContext(found.verdict, budget, kept, found.left_out + left_out)


def context_options(k: int = CANDIDATES) -> RecallOptions:
    """What the block's one recall runs with (the delivery benchmark runs the same)."""
    from memdir.indexers.recall import RecallOptions

    return RecallOptions(k=k)


def block(result: RecallResult, budget: int = DEFAULT_BUDGET,
          always: list[Entry] | None = None,
          thresholds: VerdictSettings | None = None,
          shape: Shape = Shape()) -> PromptContext:  # fmt: skip
    """The block a recall result gives (the module doc): the entries that bear on the prompt
    (`bears_on`), or nothing when none of them is a durable memory that grounds it; `always`
    are the hard facts the user wants in every prompt (`context.hard_facts: always`)."""
    from memdir.archive_format.settings import VerdictSettings
    from memdir.indexers.recall.verdict import grounds

    thresholds = thresholds or VerdictSettings()
    relevant = bearing(result.results, thresholds, shape)
    grounded = any(c.status == "durable" and ("hard-fact" in c.channels or grounds(c, thresholds))
                   for unit in relevant for c in unit)  # fmt: skip
    found = PromptContext(result.verdict if grounded else _quiet(result.verdict), budget)
    entries = [shown for number, unit in enumerate(relevant, start=len(always or []))
               for shown in (entry(c, number) for c in unit) if shown is not None] if grounded else []  # fmt: skip
    known = {e.id for e in entries}
    entries = [replace(e, unit=number) for number, e in enumerate(always or [])
               if e.id not in known] + entries  # fmt: skip
    found.entries, found.left_out = within_budget(entries, budget)
    return found


def _quiet(verdict: str) -> str:
    """The verdict a silent block reports: never GROUNDED (nothing it would carry grounds)."""
    return "LOW_CONFIDENCE" if verdict == "GROUNDED" else verdict


def bearing(results: list[Candidate], thresholds: VerdictSettings,
            shape: Shape = Shape()) -> list[list[Candidate]]:  # fmt: skip
    """The results that bear on the prompt as the block's entries, best first: a hard fact
    the prompt names; else a result above the relevance floor (`Shape`; a health memory only
    at the verdict's GROUNDED thresholds, so medication and allergies do not ride along with a
    prompt about tea) whose relevance is at least `shape.relative` of the best durable
    result's, together with the results beside it in its conversation (`beside`) above the
    floor at `shape.neighbour` of the best; at most `shape.max_entries` entries (an adaptive
    size: a sharp answer comes alone, a broad question brings more)."""
    # relevance, not the score: a provenance weight says how far to trust a memory, not how
    # much it bears on the prompt (an unconfirmed one is shown, as a question); measured against
    # the best durable result, the only kind that can ground the block
    best = max((c.relevance for c in results if c.status == "durable"), default=0.0)
    facts = [[c] for c in results if "hard-fact" in c.channels]
    taken = {unit[0].id for unit in facts}
    units: list[list[Candidate]] = []
    for candidate in results:
        if candidate.id in taken or candidate.relevance < shape.relative * best:
            continue
        if not _above_floor(candidate, thresholds, shape):
            continue
        joining = [c for c in results if c.id not in taken and "hard-fact" not in c.channels
                   and kind_of(c) == kind_of(candidate) and c.relevance >= shape.neighbour * best
                   and _above_floor(c, thresholds, shape)]  # fmt: skip
        unit = conversation_unit(candidate, joining)
        taken.update(c.id for c in unit)
        units.append(unit)
    return facts + units[: max(0, shape.max_entries - len(facts))]


def conversation_unit(seed: Candidate, joining: list[Candidate]) -> list[Candidate]:
    """`seed` and the candidates of `joining` that sit beside it in its conversation, or beside
    one that does (a chain of neighbours), best first."""
    unit = [seed]
    grown = True
    while grown:
        grown = False
        for candidate in joining:
            if candidate not in unit and any(_side_by_side(candidate, c) for c in unit):
                unit.append(candidate)
                grown = True
    return unit


def _side_by_side(one: Candidate, other: Candidate) -> bool:
    return one.memory.iid in other.beside or other.memory.iid in one.beside


def _above_floor(candidate: Candidate, thresholds: VerdictSettings, shape: Shape) -> bool:
    from memdir.indexers.recall.verdict import grounds

    if is_health(candidate):
        return grounds(candidate, thresholds)
    return (candidate.raw.get("cosine", 0.0) >= shape.floor_cosine
            or candidate.raw.get("bm25", 0.0) >= shape.floor_bm25)  # fmt: skip


def is_health(candidate: Candidate) -> bool:
    """A memory about the person's health: typed (by the user or the distiller) MEDICATION, or
    naming an allergy, a diagnosis or a medicine word."""
    kinds = {
        str(candidate.memory.line.get("type") or ""),
        str(candidate.distilled.get("type") or ""),
    }
    return "MEDICATION" in kinds or bool(HEALTH_WORDS.search(candidate.memory.text))


def always_on(memdir: Memdir, now: datetime) -> list[Entry]:
    """Every current keyed memory the policy lets a prompt carry (`context.hard_facts: always`)."""
    from memdir.archive_format.lifecycle import recent_view

    entries = []
    for state in recent_view(memdir, now, now):
        memory = state.memory
        if memory is None or not memory.key or state.status != "durable":
            continue
        text = visibility.present("context", memory.text, state.status, memory.visibility)
        if text is not None:
            entries.append(Entry("fact", state.id, text, memory.source, 0.0, memory.key,
                                 state.status, memory.visibility))  # fmt: skip
    return sorted(entries, key=lambda e: str(e.key))
