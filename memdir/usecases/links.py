"""`memdir links ID [--depth N]`: the neighbourhood of a memory over its typed links, both
ways (the links it has, the links to it), breadth first up to `depth` hops — what spreading
activation walks (docs/RECALL.md), to be looked at.

Each memory is shown as the `links` row of the policy lets it (archive_format/visibility.py):
a private or sealed one masked with its id and status, a forgotten one gone, and the walk does
not pass through a memory it may not show. Links to journal turns are listed with the turn's
id only."""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Any

from memdir.archive_format.errors import BadInputError
from memdir.archive_format.fold import ArchiveView
from memdir.archive_format.lifecycle import load_view
from memdir.archive_format.memdir import Memdir

SURFACE = "links"
MAX_DEPTH = 5
SHOWN = ("id", "text", "status", "source", "type", "visibility", "created")


def _edges(view: ArchiveView) -> dict[str, list[dict[str, str]]]:
    """memory id → every link touching it (each {"from", "to", "type"}), both ways."""
    touching: dict[str, list[dict[str, str]]] = {}
    for state in view:
        for link in state.links:
            edge = {
                "from": state.id,
                "to": str(link.get("to")),
                "type": link.get("type") or "related",
            }
            touching.setdefault(edge["from"], []).append(edge)
            touching.setdefault(edge["to"], []).append(edge)
    return touching


def neighbourhood(memdir: Memdir, given: str, now: datetime, depth: int = 2,
                  view: ArchiveView | None = None) -> dict[str, Any]:  # fmt: skip
    """The memories within `depth` links of `given` (an id or unique prefix), each with its
    distance, and the links between them (`view`: the archive already folded at `now`)."""
    if not 1 <= depth <= MAX_DEPTH:
        raise BadInputError(f"--depth must be 1 to {MAX_DEPTH}, not {depth}", hint="e.g. --depth 2")
    view = view or load_view(memdir, now)
    start = view.resolve(given)
    touching = _edges(view)
    seen: dict[str, int] = {start.id: 0}
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, str]] = []
    queue = deque([start.id])
    while queue:
        current = queue.popleft()
        state = view.states.get(current)
        shown = state.shown_on(SURFACE) if state is not None else None
        if shown is None:
            continue  # gone, or not for this surface: neither listed nor walked through
        nodes.append({**{name: shown.get(name) for name in SHOWN}, "depth": seen[current]})
        if seen[current] == depth:
            continue
        for edge in touching.get(current, []):
            other = edge["to"] if edge["from"] == current else edge["from"]
            if other.startswith("t-"):
                if edge not in edges:
                    edges.append(edge)
                continue
            if other not in seen:
                seen[other] = seen[current] + 1
                queue.append(other)
    listed = {node["id"] for node in nodes}
    for memory_id in listed:
        for edge in touching.get(memory_id, []):
            if edge["from"] in listed and edge["to"] in listed and edge not in edges:
                edges.append(edge)
    edges.sort(key=lambda edge: (edge["from"], edge["to"], edge["type"]))
    return {"id": start.id, "depth": depth, "memories": nodes, "links": edges}
