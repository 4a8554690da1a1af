"""Current state as a fold over the shelves: each memory's status from its lifecycle events.

Statuses:
  durable      a teaching, observation or derived memory; or an inference the user confirmed
  provisional  an inference inside its TTL (recalled at the provisional weight, default 0.4)
  expired      an inference whose TTL passed unconfirmed (not contradicted; still confirmable)
  rejected     rejected by the latest decision (kept for audit, never recalled)
  superseded   a newer durable memory with the same supersede key replaced it, or a durable
               one its `superseded-by` link names (sleep's automatic supersede; history kept)
  forgotten    removed by `forget`; only a tombstone is left
The fold sees the archive as of `now`: memories and events dated after it are left out, so
`--now` replays the past.

It is a CRDT over lines (docs/FORMAT.md, "Sync"): the state depends on the set of lines, not on
their order or on how often a line occurs, so clones whose shelves were union-merged fold alike.
- a line counts once per id (a redacted copy of an event wins over the unredacted one);
- a tombstone or a forget event wins over the memory it names;
- events are ordered by (`at`, op rank, id), so that the latest decision wins and, in the same
  second, reject beats confirm; among equal ops the larger id — any fixed order would do;
- supersede ties are broken by id, not by position.

Lines no writer of this memdir produces are ignored, whichever clone they come from (a clone is
data, not authority): a teaching whose author is not the user, a confirm whose actor is not
the user (lifecycle.py refuses both). The view lists them in `ignored` (id → why) and verify
reports them; recall, wake and every list leave them out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from . import visibility
from .clock import parse_time
from .errors import AmbiguousIdError, NotFoundError
from .records import Event, Memory, author_is_user

STATUSES = ("durable", "provisional", "expired", "rejected", "superseded", "forgotten")
LIVE_STATUSES = frozenset({"durable", "provisional"})


@lru_cache(maxsize=65536)
def _moment(text: str) -> datetime:
    return parse_time(text)


@dataclass
class MemoryState:
    """One memory as it stands now."""

    id: str
    created: str
    memory: Memory | None  # None once forgotten
    status: str = "durable"
    events: list[Event] = field(default_factory=list)
    durable_since: str | None = None
    superseded_by: str | None = None
    forgotten_at: str | None = None

    @property
    def live(self) -> bool:
        return self.status in LIVE_STATUSES

    @property
    def decision(self) -> Event | None:
        """The latest confirm or reject: the user's last word on this memory."""
        decisions = [event for event in self.events if event.op in ("confirm", "reject")]
        return decisions[-1] if decisions else None

    @property
    def links(self) -> list[dict[str, str]]:
        """Links written with the memory plus those added later by link events."""
        own = [dict(link) for link in self.memory.links] if self.memory else []
        added = [
            {"type": event.link_type or "related", "to": event.to}
            for event in self.events
            if event.op == "link" and event.to
        ]
        return own + added

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON form used by `--json` output and the MCP server."""
        memory = self.memory
        data: dict[str, Any] = {
            "id": self.id,
            "text": memory.text if memory else None,
            "source": memory.source if memory else None,
            "status": self.status,
            "created": self.created,
        }
        if memory is not None:
            line = memory.to_line()
            for name in ("kind", "id", "created", "text", "source"):
                line.pop(name)
            data.update(line)
        data["durable_since"] = self.durable_since
        data["superseded_by"] = self.superseded_by
        data["forgotten_at"] = self.forgotten_at
        data["links"] = self.links
        data["events"] = [event.to_line() for event in self.events]
        return data

    def text_on(self, surface: str, asked: Iterable[str] = ()) -> str | None:
        """The text `surface` may show of this memory (`[why]` when masked, None: left out;
        archive_format/visibility.py decides)."""
        memory = self.memory
        visible = memory.visibility if memory else "normal"
        return visibility.present(surface, memory.text if memory else "", self.status, visible,
                                  asked=asked)  # fmt: skip

    def shown_on(self, surface: str, asked: Iterable[str] = ()) -> dict[str, Any] | None:
        """`to_dict` as `surface` may show it: None when left out; a masked memory keeps its
        id, status and times, its text and meta replaced by the mask."""
        text = self.text_on(surface, asked)
        if text is None:
            return None
        data = self.to_dict()
        if self.memory is not None and text != self.memory.text:
            data.pop("meta", None)
            data.pop("origin", None)
            data["text"] = text
        return data


class ArchiveView:
    """All memories of a memdir folded to their state at `now`."""

    def __init__(
        self, states: dict[str, MemoryState], now: datetime, ignored: dict[str, str] | None = None
    ) -> None:
        self.states = states
        self.now = now
        self.ignored = ignored or {}  # line id → why the fold left it out (impossible_line)

    def __iter__(self) -> Iterator[MemoryState]:
        return iter(self.states.values())

    def __len__(self) -> int:
        return len(self.states)

    def live(self) -> list[MemoryState]:
        return [state for state in self.states.values() if state.live]

    def incoming(self, memory_id: str) -> list[dict[str, str]]:
        """Links from other memories to this one ({"type", "from", "at"}), oldest first; `show`
        and `log` list them beside its own."""
        found = []
        for state in self.states.values():
            if state.id == memory_id:
                continue
            own = state.memory.links if state.memory else ()
            found += [{"type": link.get("type", "related"), "from": state.id, "at": state.created}
                      for link in own if link.get("to") == memory_id]  # fmt: skip
            found += [{"type": event.link_type or "related", "from": state.id, "at": event.at}
                      for event in state.events if event.op == "link" and event.to == memory_id]  # fmt: skip
        return sorted(found, key=lambda link: (_moment(link["at"]), link["from"]))

    def resolve(
        self,
        given: str,
        among: Callable[[MemoryState], bool] | None = None,
        named: Callable[[MemoryState], bool] | None = None,
    ) -> MemoryState:
        """The memory named by an id or a unique id prefix ('m-' may be left out). A surface
        that may not show every memory passes `among` (the others are as if absent: not found,
        never listed) and `named` (which ids an ambiguous prefix's error may list)."""
        given = given.strip()
        states = self.states
        if among is not None:
            states = {key: state for key, state in states.items() if among(state)}
        if given in states:
            return states[given]
        prefixes = {given} if given.startswith("m-") else {given, f"m-{given}"}
        candidates = sorted(
            state_id for state_id in states if any(state_id.startswith(p) for p in prefixes)
        )
        if len(candidates) == 1:
            return states[candidates[0]]
        if not candidates or len(given) < 1:
            raise NotFoundError(
                f"no memory with id {given!r}", hint="`memdir list` shows ids; a prefix is enough"
            )
        if named is not None:
            listed = [state_id for state_id in candidates if named(states[state_id])]
            shown = ", ".join(listed[:10]) + (" …" if len(listed) > 10 else "")
            raise AmbiguousIdError(
                f"id prefix {given!r} matches several memories"
                + (f", among them {shown}" if shown else ""),
                hint="give more characters of the id",
            )
        shown = ", ".join(candidates[:10]) + (" …" if len(candidates) > 10 else "")
        raise AmbiguousIdError(
            f"id prefix {given!r} matches {len(candidates)} memories: {shown}",
            hint="give more characters of the id",
        )


# same second: an expire or link first, then confirm, then reject (reject beats confirm), forget last
_OP_RANK = {"expire": 0, "link": 1, "confirm": 2, "reject": 3, "forget": 4}


def event_order(event: Event) -> tuple[datetime, int, str]:
    """The fold's total order of events, the same on every clone."""
    return (_moment(event.at), _OP_RANK.get(event.op, 1), event.id)


def impossible_line(line: dict[str, Any]) -> str | None:
    """Why no writer could have written this line (None when one could): only the user
    teaches and only the user confirms (lifecycle.teach's authors, lifecycle.confirm's check),
    so such a line came from a crafted file or clone."""
    kind = line.get("kind")
    if kind == "memory" and line.get("source") == "teaching":
        author = str(line.get("author", ""))
        if not author_is_user(author):
            return f"a teaching by {author!r}: only the user teaches"
    if kind == "event" and line.get("op") == "confirm":
        actor = str(line.get("actor", ""))
        if not author_is_user(actor):
            return f"a confirm by {actor!r}: only the user confirms"
    return None


def fold(lines: Iterable[dict[str, Any]], now: datetime) -> ArchiveView:
    """Fold decoded shelf lines (in any order, duplicates allowed) into each memory's state at
    `now`."""
    states: dict[str, MemoryState] = {}
    tombstones: dict[str, str] = {}
    events: dict[str, Event] = {}
    ignored: dict[str, str] = {}
    for line in lines:
        kind = line.get("kind")
        impossible = impossible_line(line) if kind in ("memory", "event") else None
        if impossible is not None:
            ignored[str(line.get("id"))] = impossible
            continue
        if kind == "memory":
            if _moment(line["created"]) <= now and (
                line["id"] not in states or states[line["id"]].memory is None
            ):
                memory = Memory.from_line(line)
                states[memory.id] = MemoryState(memory.id, memory.created, memory)
        elif kind == "event":
            if _moment(line["at"]) <= now and not (
                line["id"] in events and events[line["id"]].redacted
            ):
                events[line["id"]] = Event.from_line(line)
        elif kind == "tombstone":
            earliest = min(line["forgotten"], tombstones.get(line["id"], line["forgotten"]))
            tombstones[line["id"]] = earliest
            if line["id"] not in states and _moment(line["created"]) <= now:
                states[line["id"]] = MemoryState(line["id"], line["created"], None)
    about: dict[str, list[Event]] = {}
    for event in events.values():
        about.setdefault(event.target, []).append(event)
    for state in states.values():
        state.events = sorted(about.get(state.id, []), key=event_order)
        _settle(state, tombstones.get(state.id), now)
    _apply_supersede(states)
    return ArchiveView(states, now, ignored)


def _settle(state: MemoryState, tombstone_at: str | None, now: datetime) -> None:
    forget = next((event for event in state.events if event.op == "forget"), None)
    if state.memory is None or forget is not None or tombstone_at is not None:
        state.status = "forgotten"
        state.forgotten_at = forget.at if forget else tombstone_at
        state.memory = None  # a merge may bring the line back; its text is not shown
        return
    decision = state.decision
    if decision is not None and decision.op == "reject":
        state.status = "rejected"
        return
    memory = state.memory
    if memory.source != "inference":
        state.status = "durable"
        state.durable_since = memory.created
        return
    if decision is not None and decision.op == "confirm":
        state.status = "durable"
        state.durable_since = decision.at
        return
    swept = any(event.op == "expire" for event in state.events)
    if swept or (memory.expires is not None and now >= _moment(memory.expires)):
        state.status = "expired"
    else:
        state.status = "provisional"


SUPERSEDED_BY = "superseded-by"  # the link sleep writes from an old memory to its successor
COMPATIBLE = "compatible"  # the user's word that two memories both hold: it undoes a supersede


def supersessors(state: MemoryState) -> list[str]:
    """The memories an automatic (or the user's) `superseded-by` link names as this one's
    successors; an assistant's link of that type counts for nothing (provenance)."""
    return [event.to for event in state.events
            if event.op == "link" and event.link_type == SUPERSEDED_BY and event.to
            and (event.actor == "memdir" or author_is_user(event.actor))]  # fmt: skip


def _apply_supersede(states: dict[str, MemoryState]) -> None:
    """Among durable memories sharing a supersede key the newest stays; the rest are superseded.
    A durable memory with a `superseded-by` link to a durable one is superseded by it (while
    that one stays durable: rejecting or forgetting the successor brings the old one back, and
    so does the user linking the two `compatible`)."""
    settled = {state.id: state.status for state in states.values()}
    both_hold = {frozenset((state.id, event.to)) for state in states.values()
                 for event in state.events if event.op == "link" and event.to
                 and event.link_type == COMPATIBLE and author_is_user(event.actor)}  # fmt: skip
    for state in states.values():
        if state.status != "durable":
            continue
        successor = next((to for to in supersessors(state) if settled.get(to) == "durable"
                          and frozenset((state.id, to)) not in both_hold), None)  # fmt: skip
        if successor is not None:
            state.status = "superseded"
            state.superseded_by = successor
    by_key: dict[str, list[MemoryState]] = {}
    for state in states.values():
        if settled[state.id] == "durable" and state.memory is not None and state.memory.key:
            by_key.setdefault(state.memory.key, []).append(state)
    for group in by_key.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda s: (_moment(s.durable_since or s.created), _moment(s.created), s.id))
        newest = group[-1]
        for older in group[:-1]:
            older.status = "superseded"
            older.superseded_by = newest.id  # the key's newest wins over a link
