"""Islands as the CLI and the MCP server show them: the fold of state/islands.jsonl
(archive_format/islands.py) read against the memories' state at *now*, each member through
the policy (archive_format/visibility.py: the `island show` rows)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memdir.archive_format import islands
from memdir.archive_format.fold import ArchiveView
from memdir.archive_format.lifecycle import load_view
from memdir.archive_format.memdir import Memdir


def listed(memdir: Memdir, now: datetime) -> list[dict[str, Any]]:
    """Every island: name, about, when and by whom it was made, how many members it has."""
    view = load_view(memdir, now)
    return [
        {"name": name, "about": island["about"], "created": island["created"],
         "by": island["by"], "members": len(islands.members(island, view))}
        for name, island in islands.read(memdir).items()
    ]  # fmt: skip


def shown(memdir: Memdir, name: str, now: datetime, surface: str = "island show",
          view: ArchiveView | None = None) -> dict[str, Any]:  # fmt: skip
    """One island with its members as `surface` may show them (a private or sealed member
    masked, a forgotten one gone), each with when and by whom it was added."""
    island = islands.known(memdir, name)
    view = view or load_view(memdir, now)
    rows = []
    for memory_id in islands.members(island, view):
        data = view.states[memory_id].shown_on(surface)
        if data is not None:
            rows.append({**data, "added": island["members"][memory_id]})
    return {"name": " ".join(name.split()), "about": island["about"],
            "created": island["created"], "by": island["by"], "members": rows}  # fmt: skip


def live_members(memdir: Memdir, name: str | None, now: datetime) -> frozenset[str] | None:
    """The ids recall and wake may draw from when scoped to the island `name`: its members not
    forgotten (the recall filters then apply to them as to every candidate); None, every
    memory, when no island is named."""
    if name is None:
        return None
    island = islands.known(memdir, name)
    return frozenset(islands.members(island, load_view(memdir, now)))
