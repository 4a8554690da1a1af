"""Provenance analytics (`memdir stats --provenance`): what became of the assistant's
inferences — confirmed, rejected, expired or still pending — by month, type and author, with
the median time from an inference to the user's decision. Read-only, from the fold at *now*.

CAMA's research question is what confirmation rate the epistemic safeguard needs: these are
the numbers it is asked about. A forgotten inference is not counted (its tombstone keeps no
source, type or author); an inference's outcome is its latest decision (docs/FORMAT.md,
section 4), else expired when its TTL ended or the sweep expired it, else pending.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import median
from typing import Any

from memdir.archive_format.clock import parse_time
from memdir.archive_format.fold import ArchiveView, MemoryState

OUTCOMES = ("confirmed", "rejected", "expired", "pending")
NO_TYPE = "(none)"


def outcome(state: MemoryState) -> tuple[str, float | None]:
    """An inference's outcome and, when the user decided, the hours from its writing to that."""
    decision = state.decision
    if decision is not None:
        hours = (parse_time(decision.at) - parse_time(state.created)).total_seconds() / 3600
        return ("confirmed" if decision.op == "confirm" else "rejected"), hours
    if state.status == "expired":
        return "expired", None
    return "pending", None


def _summary(rows: Iterable[tuple[str, float | None]]) -> dict[str, Any]:
    rows = list(rows)
    counts = {name: sum(1 for found, _ in rows if found == name) for name in OUTCOMES}
    total = len(rows)
    waits = [hours for _, hours in rows if hours is not None]
    return {
        "inferences": total,
        **counts,
        **{f"{name}_rate": round(counts[name] / total, 4) if total else None
           for name in ("confirmed", "rejected", "expired")},
        "median_hours_to_decision": round(median(waits), 2) if waits else None,
    }  # fmt: skip


def provenance(view: ArchiveView) -> dict[str, Any]:
    """The report: every inference, then by month written (UTC), by type and by author."""
    found = [
        (state, outcome(state))
        for state in view
        if state.memory is not None and state.memory.source == "inference"
    ]
    groups: dict[str, dict[str, list[tuple[str, float | None]]]] = {
        "by_month": {}, "by_type": {}, "by_author": {}
    }  # fmt: skip
    for state, result in found:
        memory = state.memory
        assert memory is not None
        for group, key in (("by_month", state.created[:7]),
                           ("by_type", memory.type or NO_TYPE), ("by_author", memory.author)):  # fmt: skip
            groups[group].setdefault(key, []).append(result)
    return {
        "all": _summary(result for _, result in found),
        **{group: {key: _summary(rows) for key, rows in sorted(by.items())}
           for group, by in groups.items()},
    }  # fmt: skip
