"""The context block for one prompt: what an assistant should see before it answers.

One recall for the prompt (the same pipeline, filters and visibility rule as `memdir recall`,
private memories never included), split into three kinds, each entry with its id and a
provenance marker:

- hard facts: the current memory of a supersede key the prompt names;
- memories: the other durable memories recall ranked, best first;
- review items: unconfirmed inferences recall found relevant — shown as questions for the
  user, never as known.

Each entry is what the policy's `context` row (archive_format/visibility.py) lets a prompt
carry: durable and provisional memories of normal visibility, never private, sealed, expired,
rejected or superseded ones. Nothing is shown unless the verdict is GROUNDED: a weak match in
every prompt is noise. The block (headers and markers included) stays within the token budget;
entries are taken in the order hard facts, memories, review items, each kind by rank, and what
did not fit is counted.
The ids that made it into the block are recorded as a recall (rehearsal) by `context`.
"""

from __future__ import annotations

import logging
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
    from memdir.indexers.recall import RecallOptions

    result = recall(memdir, prompt[:QUERY_CHARS], now, RecallOptions(k=k), record=False)
    found = PromptContext(result.verdict, budget)
    if result.verdict != "GROUNDED":
        return found
    entries = [shown for shown in map(entry, result.results) if shown is not None]
    found.entries, found.left_out = within_budget(entries, budget)
    if record and found.entries:
        try:
            record_recall(
                memdir, [e.id for e in found.entries], now, "user", f"context: {prompt[:200]}"
            )
        except LockedError:
            log.warning("the memdir is busy; this context was not recorded")
    return found
