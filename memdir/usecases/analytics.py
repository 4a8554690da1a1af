"""Provenance, drift and evolution analytics (`memdir stats --provenance`, `--drift`,
`--evolution`).

Provenance: what became of the assistant's inferences — confirmed, rejected, expired or still
pending — by month, type and author, with the median time from an inference to the user's
decision. Read-only, from the fold at *now*.

Drift (CAMA's question of the behavioural drift over many sessions): per month written, the
memories' mean valence and arousal, their strongest Plutchik emotion, and their mix of types
(the user's own labels: FACT, PERSON, EMOTION…), with the Jensen–Shannon divergence of each
month's mix from the month before and from the whole. Only memories every surface may show
count (normal visibility, not rejected or forgotten): an average over private or sealed ones
would summarise them. Affect is what the user gave, else the configured annotator's.

Evolution (Cerememory's evolution metrics): how the memdir changed, per month (UTC) — memories
written (by source), confirmed, rejected, expired, superseded (in the month of what replaced
them) and forgotten, links added, the live memories at the month's end and the churn (the
month's rejections, expiries, supersedes and forgets over the memories live at its start).
Counts only, from the fold at *now*: a forgotten memory counts as written in its month and as
forgotten in its tombstone's, and by no source (its tombstone keeps none).

CAMA's research question is what confirmation rate the epistemic safeguard needs: these are
the numbers it is asked about. A forgotten inference is not counted (its tombstone keeps no
source, type or author); an inference's outcome is its latest decision (docs/FORMAT.md,
section 4), else expired when its TTL ended or the sweep expired it, else pending.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from statistics import mean, median
from typing import Any

from memdir.archive_format.clock import parse_time
from memdir.archive_format.fold import ArchiveView, MemoryState
from memdir.archive_format.records import Memory

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


def js_divergence(p: dict[str, float], q: dict[str, float]) -> float:
    """Jensen–Shannon divergence of two distributions, in bits (0 the same, 1 disjoint)."""
    keys = set(p) | set(q)
    middle = {key: (p.get(key, 0.0) + q.get(key, 0.0)) / 2 for key in keys}

    def kl(a: dict[str, float]) -> float:
        return sum(a[k] * math.log2(a[k] / middle[k]) for k in keys if a.get(k, 0.0) > 0)

    return (kl(p) + kl(q)) / 2


def _mix(memories: list[Memory]) -> dict[str, float]:
    counts = Counter(memory.type or NO_TYPE for memory in memories)
    return {name: round(count / len(memories), 4) for name, count in sorted(counts.items())}


def _affect(memory: Memory, annotator: Any) -> tuple[float, float, dict[str, float]]:
    given = memory.affect or {}
    found = annotator.annotate(memory.text) if annotator is not None else None
    chord = dict(given.get("chord") or (found.chord if found else {}))
    if isinstance(given.get("valence"), int | float):
        return float(given["valence"]), float(given.get("arousal") or 0.0), chord
    if found is None:
        return 0.0, 0.0, chord
    return found.valence, found.arousal, chord


def drift(view: ArchiveView, annotator: Any) -> dict[str, Any]:
    """The report: one row per month written (UTC), oldest first, and the whole."""
    months: dict[str, list[Memory]] = {}
    for state in view:
        memory = state.memory
        if memory is None or state.status in ("rejected", "forgotten"):
            continue
        if memory.visibility != "normal":
            continue
        months.setdefault(state.created[:7], []).append(memory)
    everything = [memory for memories in months.values() for memory in memories]
    whole = _mix(everything) if everything else {}
    rows: list[dict[str, Any]] = []
    for month in sorted(months):
        memories = months[month]
        affects = [_affect(memory, annotator) for memory in memories]
        chord: Counter[str] = Counter()
        for _, _, weights in affects:
            chord.update({name: float(value) for name, value in weights.items()})
        strongest = max(chord, key=lambda name: chord[name]) if chord else None
        mix = _mix(memories)
        previous = rows[-1] if rows else None
        valence = round(mean(a[0] for a in affects), 4)
        rows.append({
            "month": month,
            "memories": len(memories),
            "valence": valence,
            "arousal": round(mean(a[1] for a in affects), 4),
            "emotion": strongest if strongest and chord[strongest] > 0 else None,
            "types": mix,
            "valence_change": None if previous is None else round(valence - previous["valence"], 4),
            "type_drift": None if previous is None else round(js_divergence(mix, previous["types"]), 4),
            "type_drift_from_whole": round(js_divergence(mix, whole), 4),
        })  # fmt: skip
    return {"months": rows, "memories": len(everything), "types": whole}


EVOLUTION = ("written", "teachings", "inferences", "observations", "derived", "confirmed",
             "rejected", "expired", "superseded", "forgotten", "links")  # fmt: skip


def evolution(view: ArchiveView) -> dict[str, Any]:
    """The per-month report (the module doc): counts, live at the end, churn."""
    months: dict[str, Counter[str]] = {}
    lost: dict[str, int] = {}  # month -> memories that stopped being live in it

    def add(at: str | None, what: str, ends_life: bool = False) -> None:
        if not at:
            return
        month = at[:7]
        months.setdefault(month, Counter())[what] += 1
        if ends_life:
            lost[month] = lost.get(month, 0) + 1

    states = list(view)
    created = {state.id: state.created for state in states}
    for state in states:
        add(state.created, "written")
        memory = state.memory
        if memory is not None:
            add(state.created, {"teaching": "teachings", "inference": "inferences",
                                "observation": "observations"}.get(memory.source, "derived"))  # fmt: skip
        for event in state.events:
            if event.op == "confirm":
                add(event.at, "confirmed")
            elif event.op == "link" and event.to:
                add(event.at, "links")
        if state.status == "rejected" and state.decision is not None:
            add(state.decision.at, "rejected", ends_life=True)
        elif state.status == "expired" and memory is not None:
            swept = next((e.at for e in state.events if e.op == "expire"), None)
            add(swept or memory.expires, "expired", ends_life=True)
        elif state.status == "superseded" and state.superseded_by:
            add(created.get(state.superseded_by), "superseded", ends_life=True)
        elif state.status == "forgotten":
            add(state.forgotten_at, "forgotten", ends_life=True)
    live, report = 0, []
    for month in sorted(months):
        counts = months[month]
        at_start = live
        live += counts["written"] - lost.get(month, 0)
        ended = lost.get(month, 0)
        report.append({"month": month, **{name: counts[name] for name in EVOLUTION},
                       "live_at_end": live,
                       "churn": round(ended / at_start, 4) if at_start else None})  # fmt: skip
    return {"months": report, "live": sum(1 for state in states if state.live)}
