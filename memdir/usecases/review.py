"""What needs the user's decision (`memdir review`, wake's and boot's "Needs your decision"):

- the review queue: provisional inferences, newest first, each with its expiry;
- contradiction candidates: two live memories linked `contradiction-candidate` (sleep's relink)
  or `contradicts` (the user or the assistant), both sides with their source, author and date.
  A candidate is settled when one side is no longer live (rejected, forgotten, superseded) or
  the pair is linked `compatible` (both hold: `memdir link A B --type compatible`);
- automatic supersedes: teachings sleep superseded by a newer teaching that restates them
  (docs/CONTINUITY.md), each with its undo (`memdir link NEW OLD --type compatible`);
- stale hard facts: the current memory of a supersede key, last taught or confirmed more than
  STALE_DAYS ago — worth asking whether it still holds (teach its current wording with its
  key to renew it — the same text again is the same memory and renews nothing — or forget it).

Only what the visibility rule lets a document show is listed (private and sealed never).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memdir.archive_format.clock import format_duration, format_time, parse_time
from memdir.archive_format.fold import ArchiveView, MemoryState
from memdir.archive_format.lifecycle import load_view
from memdir.archive_format.memdir import Memdir

from .documents import DREAM_AUTHOR, shown

CONTRADICTION_LINKS = ("contradiction-candidate", "contradicts")
SETTLING_LINK = "compatible"
STALE_DAYS = 180
SUMMARIES_COMMAND = "memdir review --summaries"


def is_summary(row: dict[str, Any]) -> bool:
    """Whether a review-queue row is one of dream's conversation summaries (author memdir):
    those are one line of the review and of wake, listed only when asked for."""
    return row.get("author") == DREAM_AUTHOR


def side(state: MemoryState) -> dict[str, Any]:
    """One side of a contradiction, or a listed memory: what it says and where it came from."""
    assert state.memory is not None
    memory = state.memory
    return {"id": state.id, "text": memory.text, "source": memory.source,
            "author": memory.author, "created": state.created, "status": state.status,
            "key": memory.key}  # fmt: skip


def contradiction_pairs(
    states: Iterable[MemoryState], lookup: dict[str, MemoryState]
) -> list[dict[str, Any]]:
    """Open contradiction candidates among `states` (links from them), newest link first;
    `lookup` holds every state a link may point to."""
    settled: set[frozenset[str]] = set()
    found: dict[frozenset[str], dict[str, Any]] = {}
    for state in states:
        for event in state.events:
            if event.op != "link" or not event.to:
                continue
            pair = frozenset((state.id, event.to))
            if event.link_type == SETTLING_LINK:
                settled.add(pair)
            elif event.link_type in CONTRADICTION_LINKS and pair not in found:
                found[pair] = {"link": event.link_type, "at": event.at, "by": event.actor,
                               "from": state.id, "to": event.to}  # fmt: skip
        if state.memory is not None:
            for link in state.memory.links:
                pair = frozenset((state.id, link.get("to", "")))
                if link.get("type") == SETTLING_LINK:
                    settled.add(pair)
                elif link.get("type") in CONTRADICTION_LINKS and pair not in found:
                    found[pair] = {"link": link["type"], "at": state.created,
                                   "by": state.memory.author, "from": state.id,
                                   "to": link.get("to", "")}  # fmt: skip
    rows = []
    for pair, row in found.items():
        one, other = lookup.get(row["from"]), lookup.get(row["to"])
        if pair in settled or one is None or other is None or not (shown(one) and shown(other)):
            continue
        assert one is not None and other is not None
        if not (one.live and other.live):
            continue
        rows.append({**row, "sides": [side(one), side(other)]})
    rows.sort(key=lambda row: row["at"], reverse=True)
    return rows


def automatic_supersedes(
    states: Iterable[MemoryState], lookup: dict[str, MemoryState], since: datetime | None = None
) -> list[dict[str, Any]]:
    """Teachings sleep superseded on its own (a `superseded-by` link by actor `memdir`) since
    `since` (all when None), newest first: sleep never changes a teaching's status unseen, so
    each stays listed — with how to undo it, `memdir link NEW OLD --type compatible` (both
    hold) — until the user settles it (that link, or rejecting or forgetting either side)."""
    rows = []
    for state in states:
        memory = state.memory
        if state.status != "superseded" or memory is None or memory.source != "teaching":
            continue
        for event in state.events:
            if event.op != "link" or event.link_type != "superseded-by" or event.actor != "memdir":
                continue
            if since is not None and parse_time(event.at) < since:
                continue
            newer = lookup.get(event.to or "")
            # the policy's review and wake rows show a superseded teaching only here (asked)
            replaced = state.text_on("boot", asked=("superseded",)) is not None
            if newer is None or not (replaced and shown(newer)) or not newer.live:
                continue
            rows.append({"at": event.at, "old": side(state), "new": side(newer)})
    rows.sort(key=lambda row: str(row["at"]), reverse=True)
    return rows


def last_affirmed(state: MemoryState) -> str:
    """When the user last stood by a memory: its creation, durability or last confirmation."""
    times = [state.created, state.durable_since or state.created]
    times += [event.at for event in state.events if event.op == "confirm"]
    return max(times, key=parse_time)


def stale_facts(states: Iterable[MemoryState], now: datetime) -> list[dict[str, Any]]:
    """Hard facts (durable, with a key) last affirmed more than STALE_DAYS before `now`,
    oldest first."""
    limit = now - timedelta(days=STALE_DAYS)
    rows = []
    for state in states:
        memory = state.memory
        if state.status != "durable" or not shown(state) or memory is None or not memory.key:
            continue
        affirmed = last_affirmed(state)
        if parse_time(affirmed) < limit:
            age = format_duration(now - parse_time(affirmed))
            rows.append({**side(state), "affirmed": affirmed, "age": age})
    rows.sort(key=lambda row: parse_time(row["affirmed"]))
    return rows


def review_queue(states: Iterable[MemoryState], now: datetime) -> list[dict[str, Any]]:
    """Provisional inferences awaiting the user's confirmation, newest first."""
    rows = []
    for state in states:
        if state.status != "provisional" or not shown(state):
            continue
        assert state.memory is not None
        expires = state.memory.expires
        left = format_duration(parse_time(expires) - now) if expires else None
        rows.append({**side(state), "expires": expires, "expires_in": left})
    rows.sort(key=lambda row: row["created"], reverse=True)
    return rows


@dataclass
class Review:
    """Everything awaiting the user's decision at `now`."""

    now: datetime
    queue: list[dict[str, Any]] = field(default_factory=list)
    contradictions: list[dict[str, Any]] = field(default_factory=list)
    stale: list[dict[str, Any]] = field(default_factory=list)
    supersedes: list[dict[str, Any]] = field(default_factory=list)
    unvouched: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"now": format_time(self.now), "queue": self.queue,
                "contradictions": self.contradictions, "stale_hard_facts": self.stale,
                "stale_after_days": STALE_DAYS,
                "automatic_supersedes": self.supersedes,
                "unvouched_teachings": self.unvouched}  # fmt: skip


def review(memdir: Memdir, now: datetime, view: ArchiveView | None = None) -> Review:
    """The whole review at `now` (every memory folded: a command, not a per-turn document)."""
    view = view or load_view(memdir, now)
    states = list(view)
    return Review(
        now=now,
        queue=review_queue(states, now),
        contradictions=contradiction_pairs(states, view.states),
        stale=stale_facts(states, now),
        supersedes=automatic_supersedes(states, view.states),
        unvouched=unvouched_rows(memdir, states),
    )


def unvouched_rows(memdir: Memdir, states: list[MemoryState]) -> list[dict[str, Any]]:
    """Teachings that quote a turn no agent harness recorded (archive_format/verify.py)."""
    from memdir.archive_format.verify import unvouched_teachings

    live = {state.id: state for state in states if state.status == "durable" and shown(state)}
    # only a teaching whose evidence cites a turn can be unvouched: the others need no line
    lines = [state.memory.to_line() for state in live.values()
             if state.memory is not None and state.memory.meta.get("evidence")]  # fmt: skip
    return [{**side(live[memory_id]), "turn": turn_id, "channel": channel}
            for memory_id, turn_id, channel in unvouched_teachings(memdir, lines)]  # fmt: skip
