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
prompt is noise. With `context.hard_facts: always` every current keyed memory joins. The
block (headers and markers included) stays within the token budget; entries are taken in the
order hard facts, memories, review items, each kind by rank, and what did not fit is counted.
The ids that made it into the block are recorded as a recall (rehearsal) by `context`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
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
KINDS = ("fact", "memory", "review")  # the order the budget is filled in
TITLES = {
    "fact": "Hard facts (current value per key):",
    "memory": "Relevant memories:",
    "review": "Unconfirmed (inferred, not known; ask the user before relying on them):",
}
TEXT_WIDTH = 300
# The relevance floor and the adaptive size, chosen with `memdir bench delivery` on two samples
# of each dev file (docs/MCP.md, BENCHMARKS.md): a result enters the block when it is at least
# this close to the prompt and at least RELATIVE as relevant as the best, up to MAX_ENTRIES.
FLOOR_COSINE = 0.3
FLOOR_BM25 = 3.0
RELATIVE = 0.8
MAX_ENTRIES = 5
HEALTH_WORDS = re.compile(
    r"\b(allerg\w*|anaphyla\w*|diagnos\w*|medication\w*|medicine\w*|pills?|tablets?|"
    r"inhaler\w*|insulin|epipen|prescri\w*|dose\w*|mg)\b",
    re.IGNORECASE,
)
QUERY_CHARS = 2000  # of a long prompt (a pasted file), the start is what recall is asked


@dataclass(frozen=True)
class Entry:
    kind: str
    id: str
    text: str
    marker: str
    score: float
    key: str | None = None
    status: str = "durable"
    visibility: str = "normal"

    def line(self) -> str:
        flat = " ".join(self.text.split())
        flat = flat if len(flat) <= TEXT_WIDTH else flat[: TEXT_WIDTH - 1] + "…"
        prefix = f"{self.key}: " if self.key else ""
        return f"- {prefix}{flat} ({self.id}, {self.marker})"


@dataclass
class PromptContext:
    verdict: str
    budget: int
    entries: list[Entry] = field(default_factory=list)
    left_out: int = 0

    def markdown(self) -> str:
        """The block as the assistant sees it; empty when there is nothing to show."""
        return render(self.entries, self.left_out)

    def to_dict(self) -> dict[str, Any]:
        text = self.markdown()
        return {
            "verdict": self.verdict,
            "budget": self.budget,
            "tokens": estimate_tokens(text) if text else 0,
            "left_out": self.left_out,
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


def entry(candidate: Candidate) -> Entry | None:
    """The candidate as a block entry, or None when the policy keeps it out of a prompt."""
    line = candidate.memory.line
    seen = str(line.get("visibility", "normal"))
    text = visibility.present("context", candidate.memory.text, candidate.status, seen)
    if text is None:
        return None
    return Entry(kind_of(candidate), candidate.id, text, marker(candidate), candidate.score,
                 line.get("key"), candidate.status, seen)  # fmt: skip


def kind_of(candidate: Candidate) -> str:
    if "hard-fact" in candidate.channels:
        return "fact"
    return "memory" if candidate.status == "durable" else "review"


def render(entries: list[Entry], left_out: int = 0) -> str:
    if not entries:
        return ""
    lines = ["## From memory (memdir)"]
    for kind in KINDS:
        chosen = [entry for entry in entries if entry.kind == kind]
        if chosen:
            lines += ["", TITLES[kind], *(entry.line() for entry in chosen)]
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
) -> PromptContext:
    """The context block for `prompt` at `now` (see the module doc)."""
    result = recall(memdir, prompt[:QUERY_CHARS], now, context_options(k), record=False)
    always = always_on(memdir, now) if memdir.settings.context.hard_facts == "always" else []
    found = block(result, budget, always, memdir.settings.recall.verdict)
    if record and found.entries:
        try:
            record_recall(
                memdir,
                [e.id for e in found.entries],
                now,
                "user",
                f"context: {prompt[:200]}",
                via="context",
            )
        except LockedError:
            log.warning("the memdir is busy; this context was not recorded")
    return found


def context_options(k: int = CANDIDATES) -> RecallOptions:
    """What the block's one recall runs with (the delivery benchmark runs the same)."""
    from memdir.indexers.recall import RecallOptions

    return RecallOptions(k=k)


def block(result: RecallResult, budget: int = DEFAULT_BUDGET,
          always: list[Entry] | None = None,
          thresholds: VerdictSettings | None = None) -> PromptContext:  # fmt: skip
    """The block a recall result gives (the module doc): the entries that bear on the prompt
    (`bears_on`), or nothing when none of them is a durable memory that grounds it; `always`
    are the hard facts the user wants in every prompt (`context.hard_facts: always`)."""
    from memdir.archive_format.settings import VerdictSettings
    from memdir.indexers.recall.verdict import grounds

    thresholds = thresholds or VerdictSettings()
    relevant = bearing(result.results, thresholds)
    grounded = any(c.status == "durable" and ("hard-fact" in c.channels or grounds(c, thresholds))
                   for c in relevant)  # fmt: skip
    found = PromptContext(result.verdict if grounded else _quiet(result.verdict), budget)
    entries = [shown for shown in map(entry, relevant) if shown is not None] if grounded else []
    known = {e.id for e in entries}
    entries = [e for e in always or [] if e.id not in known] + entries
    found.entries, found.left_out = within_budget(entries, budget)
    return found


def _quiet(verdict: str) -> str:
    """The verdict a silent block reports: never GROUNDED (nothing it would carry grounds)."""
    return "LOW_CONFIDENCE" if verdict == "GROUNDED" else verdict


def bearing(results: list[Candidate], thresholds: VerdictSettings) -> list[Candidate]:
    """The results that bear on the prompt, best first: a hard fact the prompt names; else a
    result above the relevance floor (raw cosine ≥ FLOOR_COSINE or BM25 ≥ FLOOR_BM25; a health
    memory only at the verdict's GROUNDED thresholds, so medication and allergies do not ride
    along with a prompt about tea) whose relevance is at least RELATIVE of the best durable
    result's; at most
    MAX_ENTRIES (an adaptive size: a sharp answer comes alone, a broad question brings more)."""
    # relevance, not the score: a provenance weight says how far to trust a memory, not how
    # much it bears on the prompt (an unconfirmed one is shown, as a question); measured against
    # the best durable result, the only kind that can ground the block
    best = max((c.relevance for c in results if c.status == "durable"), default=0.0)
    chosen: list[Candidate] = []
    for candidate in results:
        if "hard-fact" in candidate.channels:
            chosen.append(candidate)
        elif candidate.relevance >= RELATIVE * best and _above_floor(candidate, thresholds):
            chosen.append(candidate)
    facts = [c for c in chosen if "hard-fact" in c.channels]
    return facts + [c for c in chosen if c not in facts][: max(0, MAX_ENTRIES - len(facts))]


def _above_floor(candidate: Candidate, thresholds: VerdictSettings) -> bool:
    from memdir.indexers.recall.verdict import grounds

    if is_health(candidate):
        return grounds(candidate, thresholds)
    return (candidate.raw.get("cosine", 0.0) >= FLOOR_COSINE
            or candidate.raw.get("bm25", 0.0) >= FLOOR_BM25)  # fmt: skip


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
