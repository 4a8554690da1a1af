"""What may be recalled, and at what weight: the island recall is scoped to (`--island`),
status at *now* (re-folded from the lines, so `--now` replays the past), persona, visibility,
per-type age cut-offs, and the provenance weight (durable 1, provisional `provisional_weight` (0.4), expired 0.2)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memdir.archive_format.clock import parse_time
from memdir.archive_format.cutoffs import is_hard_fact, past_cutoff
from memdir.archive_format.fold import fold
from memdir.archive_format.visibility import Withheld, present, withheld

from ..distill import effective
from .options import RecallOptions
from .result import Candidate, Stage, Trace

if TYPE_CHECKING:
    from .interface import RecallIndex

EXPIRED_WEIGHT = 0.2  # an expired inference, recalled only with --include-expired
RECALLED = ("durable", "provisional", "expired")
EXCLUDED = {"rejected": "rejected", "superseded": "superseded", "forgotten": "forgotten"}


def screen(
    index: RecallIndex, pool: list[Candidate], now: datetime, options: RecallOptions, cutoffs: dict[str, timedelta],
    distilled_cutoffs: bool = False,
) -> tuple[list[Candidate], Trace]:  # fmt: skip
    """The candidates that may be recalled (each with its status; the others with the reason
    they were dropped), and the trace. With `distilled_cutoffs`, the age cut-offs also apply
    to the labels distillation derived for memories the user did not label."""
    statuses = _fold_statuses(index, pool, now)
    distilled = index.distilled_of([c.memory for c in pool])
    for candidate in pool:
        candidate.status = statuses.get(candidate.id, "forgotten")
        candidate.distilled = distilled.get(candidate.id, {})
        candidate.dropped = _filter_reason(candidate, now, options, cutoffs, distilled_cutoffs)
    survivors = [c for c in pool if not c.dropped]
    trace = Trace(
        Stage.FILTERS, [{"id": c.id, "status": c.status, "dropped": c.dropped} for c in pool]
    )
    trace.notes.append(f"{len(survivors)} of {len(pool)} candidates kept")
    # hard facts keep only the current memory per key
    for candidate in survivors:
        if "hard-fact" in candidate.channels:
            candidate.channels.discard("hard-fact")
            if candidate.status == "durable":
                candidate.channels.add("hard-fact")
    return survivors, trace


def masked_pool(pool_trace: Trace, pool: list[Candidate], options: RecallOptions) -> Trace:
    """The candidate pool's trace as --explain shows it, once the filters know each candidate's
    status: the text of those recall may not show (visibility.py) or that belong to another
    persona masked. A new trace; the pool stage's own is left as it was."""
    by_id = {candidate.id: candidate for candidate in pool}
    rows = []
    for row in pool_trace.rows:
        candidate = by_id.get(row["id"])
        if candidate is not None and not row["text"].startswith("["):
            line = candidate.memory.line
            shown = present("recall", candidate.memory.text, candidate.status,
                            line.get("visibility", "normal"), asked=options.asked)  # fmt: skip
            if shown is None:
                row = {**row, "text": f"[{candidate.status}]"}
            elif (candidate.dropped or "").startswith("persona"):
                row = {**row, "text": "[another persona]"}
        rows.append(row)
    return Trace(pool_trace.name, rows, list(pool_trace.notes))


def weigh(candidates: list[Candidate], provisional_weight: float) -> None:
    """Give each candidate its provenance weight, which multiplies its score; a provisional
    inference weighs `provisional_weight` (memdir.yaml)."""
    weights = {"durable": 1.0, "provisional": provisional_weight, "expired": EXPIRED_WEIGHT}
    for candidate in candidates:
        candidate.weight = weights.get(candidate.status, 1.0)


def _fold_statuses(
    index: RecallIndex, candidates: list[Candidate], now: datetime
) -> dict[str, str]:
    """Each candidate's status at `now`, folded from its lines and those sharing its key."""
    memories = {c.id: c.memory for c in candidates}
    keys = [m.line["key"] for m in memories.values() if m.line.get("key")]
    peers = set(index.catalog.ids_with_keys(keys)) - set(memories)
    if peers:
        memories.update(index.catalog.memories_by_id(peers))
    lines = [m.line for m in memories.values()] + index.catalog.events_for(memories)
    view = fold(lines, now)
    return {memory_id: state.status for memory_id, state in view.states.items()}


def _filter_reason(candidate: Candidate, now: datetime, options: RecallOptions,
                   cutoffs: dict[str, timedelta], distilled_cutoffs: bool) -> str | None:  # fmt: skip
    line = candidate.memory.line
    if options.members is not None and candidate.id not in options.members:
        return f"not in the island {options.island!r}"
    if candidate.status in EXCLUDED:
        return EXCLUDED[candidate.status]
    if candidate.status == "expired" and not options.include_expired:
        return "expired (use --include-expired)"
    if candidate.status not in RECALLED:
        return f"status {candidate.status}"
    hidden = withheld(line.get("visibility", "normal"), include_private=options.include_private)
    if hidden is Withheld.PRIVATE:
        return "private (use --include-private)"
    if hidden is not None:
        return hidden.value
    personas = line.get("personas") or []
    if options.persona and personas and options.persona not in personas:
        return f"persona scope {', '.join(personas)}"
    labels: tuple[str | None, ...] = (line.get("type"), line.get("subtype"), line.get("temporal"))
    if distilled_cutoffs:
        derived = effective(line, candidate.distilled)
        labels += (derived["type"], derived["subtype"], derived["temporal"])
    hard = is_hard_fact(key=line.get("key"), pinned=bool(line.get("pinned")),
                        source=line.get("source"), type=line.get("type"))  # fmt: skip
    label = past_cutoff(labels, parse_time(line["created"]), now, cutoffs,
                        text=candidate.memory.text, hard=hard)  # fmt: skip
    return f"older than the {label} cut-off" if label else None
