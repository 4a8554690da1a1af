"""Islands: named groups of memories (CAMA's create_island / get_islands).

An island is not a memory: it names memories. Two clones must merge islands without conflicts,
so they are event-sourced like the self and people notes (people.py): each change is an
`island` line appended to state/islands.jsonl (union-merged like a shelf) and the islands are
a fold over those lines in (`at`, op rank, `id`) order — `create` makes an island (or changes
what it is about), `add` and `remove` change its members, `drop` removes it with every member
added before it. In the same second `remove` beats `add`. Readers leave out members that are
forgotten: a forgotten memory leaves every island, whatever a merge brings back.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from . import shelf
from .clock import format_time
from .errors import BadInputError, LifecycleError, NotFoundError
from .fold import ArchiveView
from .memdir import Memdir
from .records import content_id, encode_line
from .tombstones import writing
from .validate import line_problems

KIND = "island"
OPS = ("create", "add", "remove", "drop")
MAX_NAME = 64
MAX_ABOUT = 2000
_RANK = {op: rank for rank, op in enumerate(OPS)}


def islands_path(memdir: Memdir) -> Path:
    return memdir.state_dir / "islands.jsonl"


def _line(at: str, op: str, island: str, by: str, about: str | None = None,
          members: Iterable[str] = ()) -> bytes:  # fmt: skip
    line: dict[str, Any] = {"kind": KIND, "at": at, "op": op, "island": island}
    if about is not None:
        line["about"] = about
    if members:
        line["members"] = sorted(set(members))
    line["by"] = by
    line = {"kind": KIND, "id": content_id("i", line), **{k: v for k, v in line.items() if k != "kind"}}  # fmt: skip
    found = line_problems(line, (KIND,))
    if found:
        raise BadInputError(f"invalid island line: {found[0]}")
    return encode_line(line)


def lines(memdir: Memdir) -> list[dict[str, Any]]:
    """Every valid island line, once per id (a union merge may leave copies)."""
    found = {item.data["id"]: item.data for item in shelf.read(islands_path(memdir), kinds=(KIND,))}  # fmt: skip
    return list(found.values())


def fold(found: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """name → {about, created, by, members: {id: {at, by}}}, by name; the order of the lines
    does not matter."""
    islands: dict[str, dict[str, Any]] = {}
    for line in sorted(found, key=lambda line: (line["at"], _RANK[line["op"]], line["id"])):
        name, op = line["island"], line["op"]
        if op == "drop":
            islands.pop(name, None)
            continue
        island = islands.setdefault(
            name, {"about": None, "created": line["at"], "by": line["by"], "members": {}}
        )
        if op == "create" and "about" in line:
            island["about"] = line["about"]
        for member in line.get("members", ()):
            if op == "add":
                island["members"].setdefault(member, {"at": line["at"], "by": line["by"]})
            elif op == "remove":
                island["members"].pop(member, None)
    return dict(sorted(islands.items()))


def read(memdir: Memdir) -> dict[str, dict[str, Any]]:
    """The islands as they stand (forgotten members not yet left out: see `members`)."""
    return fold(lines(memdir))


def members(island: dict[str, Any], view: ArchiveView) -> list[str]:
    """An island's members that are not forgotten, in the order they were added."""
    states = view.states
    added = sorted(island["members"].items(), key=lambda item: (item[1]["at"], item[0]))
    return [
        memory_id
        for memory_id, _ in added
        if memory_id in states and states[memory_id].status != "forgotten"
    ]


def _name(name: str) -> str:
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME:
        raise BadInputError(f"an island's name must be 1–{MAX_NAME} characters")
    return name


def known(memdir: Memdir, name: str) -> dict[str, Any]:
    """The island called `name`, or a NotFoundError naming the islands there are."""
    islands = read(memdir)
    name = " ".join(name.split())
    if name not in islands:
        raise NotFoundError(
            f"no island named {name!r}",
            hint=f"known: {', '.join(islands) or 'none'}; `memdir island create NAME` makes one",
        )
    return islands[name]


def create(memdir: Memdir, name: str, about: str | None, now: datetime, by: str) -> str:
    """Make an island; returns its name. An island of that name already there is refused."""
    name = _name(name)
    if about is not None:
        about = " ".join(about.split())
        if not about or len(about) > MAX_ABOUT:
            raise BadInputError(f"--about must be 1–{MAX_ABOUT} characters")
    with writing(memdir):
        if name in read(memdir):
            raise LifecycleError(
                f"an island named {name!r} already exists",
                hint=f"`memdir island add {name!r} ID…` adds memories to it",
            )
        shelf.append(islands_path(memdir), [_line(format_time(now), "create", name, by, about)],
                     memdir.quarantine_dir)  # fmt: skip
    return name


def change(memdir: Memdir, name: str, ids: list[str], op: str, view: ArchiveView,
           now: datetime, by: str) -> list[str]:  # fmt: skip
    """Add (`op` "add") or remove ("remove") memories, named by ids or unique prefixes, to or
    from an island; returns the full ids. A forgotten memory cannot be added."""
    if not ids:
        raise BadInputError("no memory ids given", hint="e.g. memdir island add trips m-1a2b")
    with writing(memdir):
        island = known(memdir, name)
        name = _name(name)
        current = set(members(island, view))
        chosen: list[str] = []
        for given in ids:
            state = view.resolve(given, among=lambda state: state.status != "forgotten")
            if op == "remove" and state.id not in current:
                raise NotFoundError(f"{state.id} is not in the island {name!r}",
                                    hint=f"`memdir island show {name!r}` lists its members")  # fmt: skip
            if state.id not in chosen:
                chosen.append(state.id)
        shelf.append(islands_path(memdir), [_line(format_time(now), op, name, by, members=chosen)],
                     memdir.quarantine_dir)  # fmt: skip
    return chosen


def drop(memdir: Memdir, name: str, now: datetime, by: str) -> None:
    """Drop an island (its lines stay: the fold leaves it out); its memories are untouched."""
    with writing(memdir):
        known(memdir, name)
        shelf.append(islands_path(memdir), [_line(format_time(now), "drop", _name(name), by)],
                     memdir.quarantine_dir)  # fmt: skip
