"""The core (`memdir core`, CAMA's get_core): the few things that define the person, within a
token budget — the self notes, the hard facts (archive_format/cutoffs.py `is_hard_fact`: the
current memory of a supersede key, a pinned memory, a FINANCIAL or MEDICATION teaching; the
rule recall's cut-offs and wake use, so the core keeps them at any age) and the high-importance
milestones. Only durable memories the policy's `core` row lets a prompt carry (normal ones)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memdir.archive_format import people
from memdir.archive_format.cutoffs import is_hard_fact
from memdir.archive_format.documents import estimate_tokens
from memdir.archive_format.fold import MemoryState
from memdir.archive_format.lifecycle import load_view
from memdir.archive_format.memdir import Memdir

DEFAULT_BUDGET = 600  # tokens
CORE_IMPORTANCE = 8  # a milestone this important or more is core


def why_core(state: MemoryState) -> str | None:
    """Why a memory is core ('hard fact' or 'milestone'), None when it is not."""
    memory = state.memory
    if memory is None or state.status != "durable" or state.text_on("core") is None:
        return None
    if is_hard_fact(key=memory.key, pinned=memory.pinned, source=memory.source, type=memory.type):
        return "hard fact"
    if memory.temporal == "milestone" and memory.importance >= CORE_IMPORTANCE:
        return "milestone"
    return None


def core(memdir: Memdir, now: datetime, budget: int | None = None) -> dict[str, Any]:
    """The self notes, then the hard facts, then the milestones (each group most important and
    newest first), as many as fit in `budget` tokens (each line costs estimate_tokens)."""
    limit = budget or DEFAULT_BUDGET
    used, left_out = 0, 0
    notes = []
    for field, entry in people.read_self(memdir).items():
        cost = estimate_tokens(f"- {field}: {entry['value']}\n")
        if used + cost > limit:
            left_out += 1
            continue
        used += cost
        notes.append({"field": field, "value": entry["value"], "by": entry["by"]})
    found = [(why, state, state.memory) for state in load_view(memdir, now)
             if (why := why_core(state)) and state.memory is not None]  # fmt: skip
    found.sort(key=lambda item: item[1].created, reverse=True)  # newest first, then (stable):
    found.sort(key=lambda item: (item[0] != "hard fact", -item[2].importance))
    memories = []
    for why, state, memory in found:
        cost = estimate_tokens(f"- {memory.text} ({state.id})\n")
        if used + cost > limit:
            left_out += 1
            continue
        used += cost
        row: dict[str, Any] = {"id": state.id, "why": why, "text": memory.text,
                               "status": state.status, "visibility": memory.visibility,
                               "importance": memory.importance}  # fmt: skip
        if memory.key:
            row["key"] = memory.key
        if memory.pinned:
            row["pinned"] = True
        memories.append(row)
    return {"budget": limit, "tokens": used, "self": notes, "memories": memories,
            "left_out": left_out}  # fmt: skip
