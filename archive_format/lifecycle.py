"""The write path and the provenance rules: teach, infer, confirm, reject, expire, forget, link.

Every write takes the memdir's writer lock, validates the line against its schema, and appends
it to a shelf. The rules enforced here (not just documented):
- a teaching's author is the user ('user' or 'user:NAME'); an inference's author is not;
- only `confirm` turns an inference durable, and only an inference can be confirmed;
- writing a memory that is already live (same content) is a no-op that returns its id.
Lookups on the write path (ids, prefixes, same content, supersede keys, what is due to expire)
go through the id cache (idcache.py) and fold only the lines it points at, so a write costs
the same at a million memories as at a thousand; readers of the whole archive use load_view.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from . import attachments, idcache, ring, secrets, shelf, tombstones
from .clock import format_time, parse_time
from .errors import BadInputError, LifecycleError, MemdirError, NotFoundError
from .fold import ArchiveView, MemoryState, fold, impossible_line, supersessors
from .idcache import IdCache
from .memdir import Memdir
from .records import (
    DEFAULT_STORE,
    Event,
    Memory,
    author_is_user,
    content_id,
    encode_line,
    new_event,
    new_memory,
    new_nonce,
)
from .tombstones import writing
from .validate import line_problems

log = logging.getLogger("memdir")
TURN_ID = re.compile(r"t-[0-9a-f]{16}")


@dataclass(frozen=True)
class WriteResult:
    """The id written, and whether a new line was added (False: it was already there)."""

    id: str
    added: bool


def follow_up(what: str, step: Callable[[], object]) -> bool:
    """Run a step that comes after a write succeeded (the console ring, a boot refresh).

    What was stored stays stored and its command still succeeds: a failing follow-up is a
    warning on the log (stderr), never the command's error. Returns whether the step ran."""
    try:
        step()
    except (MemdirError, OSError) as error:
        message = error.message if isinstance(error, MemdirError) else str(error)
        hint = f" ({error.hint})" if isinstance(error, MemdirError) and error.hint else ""
        log.warning("warning: %s skipped: %s%s", what, message, hint)
        return False
    return True


def read_lines(memdir: Memdir) -> Iterable[dict[str, Any]]:
    """Every valid line of every shelf; a malformed one is skipped with a warning naming it
    (shelf.read), a line of a later minor version's kind is passed over."""
    for path in memdir.shelves():
        for item in shelf.read(path):
            yield item.data


def load_view(memdir: Memdir, now: datetime) -> ArchiveView:
    """The archive folded to its state at `now` (from the valid lines only)."""
    return fold(read_lines(memdir), now)


def view_of(
    memdir: Memdir,
    ids: Iterable[str],
    now: datetime,
    cache: IdCache | None = None,
    keys: Iterable[str] = (),
) -> ArchiveView:
    """The fold at `now` of the memories `ids` and of what their status depends on (their
    events, and the memories that could supersede them, by key or by link), read through the id
    cache; `keys` adds each of those keys' current memory.

    Only those states are exact; when the cache points at a line that is not there, or a line
    cannot be folded, every shelf is read instead (and a broken line named).
    """
    cache = cache or idcache.open_cache(memdir)
    wanted = set(ids)
    try:
        for key in cache.keys_of(wanted) | set(keys):
            wanted |= _contenders(cache, key, now)
        view = _folded(cache, wanted, now)
        # a `superseded-by` link holds while its successor is durable: fold the successors too
        successors = {to for state in view for to in supersessors(state)} - wanted
        return _folded(cache, wanted | successors, now) if successors else view
    except idcache.Stale as error:
        log.debug("id cache out of step (%s): reading every shelf", error)
        return load_view(memdir, now)
    except _Unfoldable:
        return load_view(memdir, now)


class _Unfoldable(Exception):
    """A line the cache pointed at breaks the fold: the full read names it."""


def _folded(cache: IdCache, ids: Iterable[str], now: datetime) -> ArchiveView:
    lines = cache.lines(ids)  # valid lines only: the cache skips a malformed one
    try:
        return fold(lines, now)
    except (TypeError, ValueError, AttributeError, KeyError, BadInputError):
        raise _Unfoldable from None


def _contenders(cache: IdCache, key: str, now: datetime) -> set[str]:
    """The memories with `key` that could be its newest durable one at `now` (and so decide
    every other one's status): ranked by the latest time each could have become durable, they
    are folded a few at a time until the rest rank below the best durable one found."""
    ranked = cache.ranked(key)
    best: float | None = None
    taken, step = 0, 8
    while taken < len(ranked):
        batch = [memory_id for memory_id, _ in ranked[taken : taken + step]]
        taken, step = taken + len(batch), step * 4
        for state in _folded(cache, batch, now):
            if state.status in ("durable", "superseded"):
                since = parse_time(state.durable_since or state.created).timestamp()
                best = since if best is None else max(best, since)
        # a rank is whole seconds rounded down: one below best - 1 can neither beat nor tie it
        if best is not None and taken < len(ranked) and ranked[taken][1] <= best - 1:
            break
    return {memory_id for memory_id, rank in ranked if best is None or rank > best - 1}


def lookup(memdir: Memdir, given: str, now: datetime, cache: IdCache | None = None) -> MemoryState:
    """The memory named by an id or a unique id prefix, folded from its own lines."""
    cache = cache or idcache.open_cache(memdir)
    return view_of(memdir, cache.matching(given), now, cache).resolve(given)


def short_ids(memdir: Memdir, ids: Iterable[str]) -> dict[str, str]:
    """Each id's shortest unique prefix (10 characters or more), for narrow tables: `lookup`
    and every command that takes an id accept it."""
    return idcache.open_cache(memdir).unique_prefixes(ids)


def recent_view(memdir: Memdir, now: datetime, since: datetime) -> ArchiveView:
    """What a briefing can show, folded alone: memories created or decided since `since`,
    every inference still open at `now`, the memories in the console ring, the ones kept at
    any age (cutoffs.stands: pinned, important, hard facts), those naming a day from today on
    (upcoming) and each supersede key's current memory. Iterating it yields those states (and,
    after a fallback, others)."""
    cache = idcache.open_cache(memdir)
    ids = cache.since(since) | cache.open_inferences(now) | cache.standing() | cache.dated(now)
    ids.update(str(slot.get("id", "")) for slot in ring.read_ring(memdir))
    return view_of(memdir, ids, now, cache, keys=cache.keys())


def _check(line: dict[str, Any]) -> None:
    found = line_problems(line)
    if found:
        raise BadInputError(f"invalid {line['kind']}: {found[0]}")


def _identity(memory: Memory) -> dict[str, Any]:
    line = memory.to_line()
    for name in ("id", "created", "expires", "nonce"):
        line.pop(name, None)
    return line


def _find_live_duplicate(
    memdir: Memdir, memory: Memory, now: datetime, cache: IdCache
) -> str | None:
    """The memory's own id when a line already carries it, else a live memory with the same
    content (timestamps aside); None when there is neither."""
    if cache.present([memory.id]):
        return memory.id
    candidates = cache.with_text(memory.text)
    if not candidates:
        return None
    wanted = _identity(memory)
    for state in view_of(memdir, candidates, now, cache):
        if state.id in candidates and state.live and state.memory is not None:
            if _identity(state.memory) == wanted:
                return state.id
    return None


def write_memory(memdir: Memdir, memory: Memory, now: datetime) -> WriteResult:
    """Validate and append one memory; an already-live identical memory is returned instead."""
    line = memory.to_line()
    _check(line)
    impossible = impossible_line(line)  # the fold's rule: it would leave such a line out
    if impossible:
        raise LifecycleError(
            impossible, hint="store what the assistant concluded with `memdir infer`"
        )
    if memory.source == "inference" and author_is_user(memory.author):
        raise LifecycleError(
            "an inference is written by the assistant, not the user",
            hint="store what the user said with `memdir teach`",
        )
    with writing(memdir):
        existing = _find_live_duplicate(memdir, memory, now, idcache.open_cache(memdir))
        if existing:
            return WriteResult(existing, False)
        target = secrets.shelf_for(memdir, memory.visibility)
        shelf.append(target, [encode_line(line)], memdir.quarantine_dir)
    return WriteResult(memory.id, True)


# what a caller may set on a new memory (the rest is derived: id, created, text, source, …)
_OPTIONAL_MEMORY_FIELDS = frozenset(f.name for f in dataclass_fields(Memory)) - {
    "id", "created", "text", "source", "author", "store", "personas", "links", "nonce",
}  # fmt: skip


def _memory(text: str, source: str, author: str, now: datetime, **options: Any) -> Memory:
    text = text.strip()
    if not text:
        raise BadInputError("the memory text is empty", hint="pass the text, or '-' to read stdin")
    store = options.pop("store", None) or DEFAULT_STORE[source]
    personas = tuple(options.pop("personas", None) or ())
    links = tuple(options.pop("links", None) or ())
    fields = {key: value for key, value in options.items() if value is not None}
    unknown = sorted(set(fields) - _OPTIONAL_MEMORY_FIELDS)
    if unknown:
        raise BadInputError(f"unknown memory field: {unknown[0]!r}")
    return new_memory(
        created=format_time(now),
        text=text,
        source=source,
        author=author,
        store=store,
        personas=personas,
        links=links,
        **fields,
        nonce=new_nonce(),  # the id is no hash of the text alone: a forget leaves no oracle
    )


def teach(
    memdir: Memdir, text: str, now: datetime, author: str = "user", **options: Any
) -> WriteResult:
    """Store what the user taught: durable from the start. It enters the console ring."""
    memory = _memory(text, "teaching", author, now, **options)
    with writing(memdir):
        result = write_memory(memdir, memory, now)
        follow_up(
            "the console ring",
            lambda: ring.push(memdir, now, "taught", result.id, memory.text, memory.visibility),
        )
    return result


def infer(
    memdir: Memdir,
    text: str,
    now: datetime,
    ttl: timedelta | None = None,
    author: str = "assistant",
    **options: Any,
) -> WriteResult:
    """Store what the assistant concluded: provisional until the user confirms, expiring after its TTL."""
    lifetime = ttl if ttl is not None else memdir.settings.inference_ttl
    if lifetime.total_seconds() <= 0:
        raise BadInputError("the TTL must be positive", hint="e.g. --ttl 7d")
    options["expires"] = format_time(now + lifetime)
    return write_memory(memdir, _memory(text, "inference", author, now, **options), now)


def observe(memdir: Memdir, text: str, now: datetime, author: str, **options: Any) -> WriteResult:
    """Store something seen verbatim (an imported turn, a tool result): durable, never a teaching."""
    return write_memory(memdir, _memory(text, "observation", author, now, **options), now)


def add_memories(memdir: Memdir, memories: Iterable[Memory]) -> int:
    """Bulk append (imports, benchmarks): validated, ids already present are skipped.

    Returns how many lines were added.
    """
    batch = list(memories)
    with writing(memdir):
        known = idcache.open_cache(memdir).present(memory.id for memory in batch)
        payload: dict[Path, list[bytes]] = {}
        for memory in batch:
            if memory.id in known:
                continue
            line = memory.to_line()
            _check(line)
            impossible = impossible_line(line)
            if impossible:
                raise LifecycleError(impossible, hint="an import or tool writes observations")
            known.add(memory.id)
            target = secrets.shelf_for(memdir, memory.visibility)
            payload.setdefault(target, []).append(encode_line(line))
        for target, lines in payload.items():
            shelf.append(target, lines, memdir.quarantine_dir)
    return sum(len(lines) for lines in payload.values())


def _append_event(memdir: Memdir, event: Event) -> None:
    line = event.to_line()
    _check(line)
    target = secrets.event_shelf_for(memdir, {event.target, *([event.to] if event.to else [])})
    shelf.append(target, [encode_line(line)], memdir.quarantine_dir)


def _live_target(state: MemoryState) -> MemoryState:
    if state.status == "forgotten":
        raise LifecycleError(f"{state.id} was forgotten", hint="`memdir log ID` shows its history")
    return state


def confirm(
    memdir: Memdir, given: str, now: datetime, actor: str = "user", evidence: str | None = None
) -> tuple[str, Event | None]:
    """Make an inference durable. Only the user confirms; the event records who and when.

    Returns the memory id and the new event (None when it was already durable).
    """
    if not author_is_user(actor):
        raise LifecycleError(
            f"only the user can confirm an inference, not {actor!r}",
            hint="ask the user, then record their answer with `memdir confirm ID`",
        )
    with writing(memdir):
        state = _live_target(lookup(memdir, given, now))
        assert state.memory is not None
        if state.memory.source != "inference":
            raise LifecycleError(
                f"{state.id} is a {state.memory.source}, not an inference; only inferences are confirmed"
            )
        if state.status in ("durable", "superseded"):
            return state.id, None
        event = new_event(
            at=format_time(now), op="confirm", target=state.id, actor=actor, evidence=evidence
        )
        _append_event(memdir, event)
        memory = state.memory
        follow_up(
            "the console ring",
            lambda: ring.push(memdir, now, "confirmed", state.id, memory.text, memory.visibility),
        )
    return state.id, event


def reject(
    memdir: Memdir, given: str, reason: str, now: datetime, actor: str = "user"
) -> tuple[str, Event | None]:
    """Mark a memory wrong: kept for audit, never recalled. A reason is required."""
    if not reason or not reason.strip():
        raise BadInputError(
            "a rejection needs a reason", hint='e.g. --reason "the user corrected this"'
        )
    with writing(memdir):
        state = _live_target(lookup(memdir, given, now))
        if state.status == "rejected":
            return state.id, None
        event = new_event(
            at=format_time(now), op="reject", target=state.id, actor=actor, reason=reason.strip()
        )
        _append_event(memdir, event)
    return state.id, event


def expire(memdir: Memdir, now: datetime) -> list[str]:
    """The TTL sweep (for cron): record an expire event for each inference past its TTL."""
    expired: list[str] = []
    with writing(memdir):
        cache = idcache.open_cache(memdir)
        due = cache.due(now)
        for state in view_of(memdir, due, now, cache):
            already = any(event.op == "expire" for event in state.events)
            if state.id in due and state.status == "expired" and not already:
                event = new_event(
                    at=format_time(now),
                    op="expire",
                    target=state.id,
                    actor="memdir",
                    reason="TTL passed unconfirmed",
                )
                _append_event(memdir, event)
                expired.append(state.id)
    return expired


def recall_line(
    ids: list[str], now: datetime, actor: str = "user", via: str | None = None
) -> dict[str, Any]:
    """The shelf line recording what a recall surfaced (`via`: 'context' for the per-prompt
    block's delivery, 'use' for memories a reply used), validated."""
    line: dict[str, Any] = {
        "kind": "recall",
        "at": format_time(now),
        "memories": ids,
        "actor": actor,
        **({"via": via} if via else {}),
    }
    line = {
        "kind": "recall",
        "id": content_id("r", line),
        **{k: v for k, v in line.items() if k != "kind"},
    }
    _check(line)
    return line


def record_recall(
    memdir: Memdir,
    ids: list[str],
    now: datetime,
    actor: str = "user",
    label: str = "",
    via: str | None = None,
) -> str:
    """Append what a recall surfaced (rehearsal statistics) and push the top one into the ring.

    The same line (the same memories at the same second by the same actor: one content id)
    is appended once: a command that ran in `memdir serve` and again in-process, because its
    client gave up waiting, records one recall (the client pins the clock for both)."""
    line = recall_line(ids, now, actor, via)
    with writing(memdir, timeout=2.0):
        if shelf.tail_holds(memdir.recall_shelf, f'"id":"{line["id"]}"'.encode("ascii")):
            return str(line["id"])
        shelf.append(memdir.recall_shelf, [encode_line(line)], memdir.quarantine_dir)
        if ids and via != "use":  # a reply's use is no news for the ring
            what = label or f"{len(ids)} memories"
            follow_up("the console ring", lambda: ring.push(memdir, now, "recalled", ids[0], what))
    return str(line["id"])


def link(
    memdir: Memdir, given: str, to: str, link_type: str, now: datetime, actor: str = "user"
) -> Event:
    """Add a typed link from one memory to another (or to a journal turn id)."""
    with writing(memdir):
        cache = idcache.open_cache(memdir)
        ids = cache.matching(given) | cache.present([to])
        if to.startswith("m-"):
            ids |= cache.matching(to)
        view = view_of(memdir, ids, now, cache)
        source = _live_target(view.resolve(given))
        if to.startswith("t-"):  # a journal turn: only one that exists (an id, not a path)
            if not (TURN_ID.fullmatch(to) and cache.turns_present([to])):
                raise NotFoundError(
                    f"no journal turn with id {to!r}",
                    hint="link to a memory id or to an existing turn id (`memdir journal show`)",
                )
            target_id = to
        elif to.startswith("a-"):  # an attachment: one stored where this memory keeps its files
            assert source.memory is not None
            sealed = source.memory.visibility == "sealed"
            if attachments.find(memdir, to, sealed=sealed) is None:
                raise NotFoundError(
                    f"no attachment {to!r} stored for {source.id}",
                    hint="attach a file with `memdir attach ID FILE`",
                )
            if link_type != attachments.LINK_TYPE:
                raise BadInputError(
                    f"a link to an attachment has the type {attachments.LINK_TYPE!r}",
                    hint=f"--type {attachments.LINK_TYPE}",
                )
            target_id = to
        else:
            target_id = view.resolve(to).id  # a memory (an id or a unique prefix), or NotFound
        if target_id == source.id:
            raise BadInputError(
                f"{source.id} cannot link to itself", hint="link it to another memory's id"
            )
        event = new_event(
            at=format_time(now),
            op="link",
            target=source.id,
            actor=actor,
            to=target_id,
            link_type=link_type,
        )
        # the same link in the same second has the same content id: appended once
        if not any(known.id == event.id for known in source.events):
            _append_event(memdir, event)
    return event


def add_links(
    memdir: Memdir, links: Iterable[tuple[str, str, str]], now: datetime, actor: str = "memdir"
) -> list[Event]:
    """Append several typed links (source id, target id, type) at once, e.g. sleep's relink.

    The caller has resolved both ids; each event is validated like any other."""
    events = [
        new_event(
            at=format_time(now), op="link", target=source, actor=actor, to=target, link_type=kind
        )
        for source, target, kind in links
    ]
    for event in events:
        _check(event.to_line())
        if event.to == event.target:
            raise BadInputError(f"{event.target} cannot link to itself")
    with writing(memdir):
        view = view_of(memdir, {event.target for event in events}, now)
        present = {known.id for state in view for known in state.events}
        fresh = [event for event in events if event.id not in present]
        sealed = secrets.sealed_ids(memdir)
        for target in (memdir.event_shelf, memdir.sealed_shelf):
            lines = [
                encode_line(e.to_line())
                for e in fresh
                if secrets.event_shelf_for(memdir, {e.target, e.to or ""}, sealed) == target
            ]
            if lines:
                shelf.append(target, lines, memdir.quarantine_dir)
    return events


def forget(memdir: Memdir, given: str, now: datetime, actor: str = "user") -> str:
    """Remove a memory's text from every shelf by atomic compaction, leaving a tombstone; its
    twins (the same content written on another clone, with its own id) go with it.

    Events about it lose their reason and evidence (they may quote it). Git history still
    holds the old text: the CLI says how to purge it.
    """
    with writing(memdir):
        cache = idcache.open_cache(memdir)
        state = lookup(memdir, given, now, cache)
        twins = _twins(memdir, state, now, cache)
        if twins:
            log.warning("also forgot %s: the same memory, written on another clone",
                        ", ".join(twin.id for twin in twins))  # fmt: skip
        vouched = not tombstones.pending(memdir)  # (`writing` has just re-applied them)
        ids = [chosen.id for chosen in (state, *twins)]
        for path in memdir.shelves():
            shelf.quarantine_torn_tail(path, memdir.quarantine_dir)
            tombstones.compact(memdir, path, ids, now)
        for chosen in (state, *twins):
            if not any(event.op == "forget" for event in chosen.events):
                event = new_event(at=format_time(now), op="forget", target=chosen.id, actor=actor)
                _append_event(memdir, event)
        tombstones.forgotten_now(memdir, ids, vouched, now)
        prune_attachments(memdir)
    return state.id


EVERY_LINE = datetime(8999, 1, 1, tzinfo=timezone.utc)  # a fold that leaves no line out


def prune_attachments(memdir: Memdir) -> list[Path]:
    """Remove the attached files and sidecars that no memory left unforgotten links (forget's
    last step, under the writer lock): a forgotten memory's files go, one another memory still
    links stays. Reads every shelf, and only when the memdir holds attachments."""
    if not any(place.is_dir() and any(place.iterdir()) for place in attachments.folders(memdir)):
        return []
    wanted: dict[str, set[str]] = {"normal": set(), "sealed": set()}
    with writing(memdir):
        for state in load_view(memdir, EVERY_LINE):
            if state.status == "forgotten" or state.memory is None:
                continue
            place = "sealed" if state.memory.visibility == "sealed" else "normal"
            wanted[place].update(attachments.linked(state.links))
        return attachments.prune(memdir, wanted)


def _twins(memdir: Memdir, state: MemoryState, now: datetime, cache: IdCache) -> list[MemoryState]:
    """The other memories of the same content (timestamps and nonce aside) not forgotten yet:
    since format 1.1 the same teaching written on two clones has two ids, and forgetting it
    must leave its text in neither."""
    if state.memory is None:
        return []
    candidates = cache.with_text(state.memory.text) - {state.id}
    if not candidates:
        return []
    wanted = _identity(state.memory)
    return [
        twin
        for twin in view_of(memdir, candidates, now, cache)
        if twin.id in candidates
        and twin.status != "forgotten"
        and twin.memory is not None
        and _identity(twin.memory) == wanted
    ]
