"""The line types of a shelf (memory, event, tombstone): construction, ids, encoding.

Every line is one JSON object with a stable key order. Ids are derived from content: SHA-256
over the canonical JSON of every field but the id, so writing the same line twice is a no-op
and a hand-edited line no longer matches its id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .errors import BadInputError

SOURCES = ("teaching", "inference", "observation", "derived")
STORES = ("episodic", "semantic", "procedural")
TEMPORAL_CLASSES = ("ephemeral", "persistent", "milestone")
EVENT_OPS = ("confirm", "reject", "expire", "forget", "link")
PLUTCHIK = ("joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation")

MEMORY_FIELDS = (
    "kind", "id", "created", "text", "source", "author", "store", "type", "subtype", "key",
    "importance", "temporal", "affect", "personas", "visibility", "meta", "links", "session",
    "thread", "expires", "pinned", "origin",
)  # fmt: skip
EVENT_FIELDS = (
    "kind", "id", "at", "op", "target", "actor", "reason", "evidence", "to", "link_type",
    "redacted",
)  # fmt: skip
TOMBSTONE_FIELDS = ("kind", "id", "created", "forgotten")

DEFAULT_STORE = {
    "teaching": "semantic",
    "inference": "semantic",
    "observation": "episodic",
    "derived": "episodic",
}


def canonical_json(data: dict[str, Any]) -> str:
    """The hashing form: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_id(prefix: str, line: dict[str, Any]) -> str:
    """'<prefix>-' + 16 hex digits of SHA-256 over every field except `id`."""
    body = {name: value for name, value in line.items() if name != "id"}
    try:
        payload = canonical_json(body).encode("utf-8")
    except UnicodeEncodeError:
        # Undecodable bytes from argv or a file arrive as lone surrogates (surrogateescape).
        name = next(name for name, value in body.items() if not _utf8_safe(value))
        raise BadInputError(f"the {name} is not valid UTF-8", hint="pass UTF-8 text") from None
    return f"{prefix}-{hashlib.sha256(payload).hexdigest()[:16]}"


def _utf8_safe(value: Any) -> bool:
    try:
        canonical_json({"": value}).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def encode_line(line: dict[str, Any]) -> bytes:
    """One shelf line: compact JSON in the line's own key order, newline-terminated."""
    return (json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def author_is_user(author: str) -> bool:
    """Teachings come from the user: 'user' or 'user:NAME'."""
    return author == "user" or author.startswith("user:")


@cache
def _required(kind: str) -> frozenset[str]:
    from .validate import load_schema

    return frozenset(load_schema(kind)["required"])


def ordered_line(values: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """Keep the schema's key order; drop absent (None/empty) optional fields.

    A required field is kept even when empty, so validation names it instead of the line
    silently lacking it.
    """
    required = _required(values["kind"])
    return {
        name: values[name]
        for name in order
        if name in required or values.get(name) not in (None, [], {}, "")
    }


@dataclass(frozen=True)
class Memory:
    """A memory record as written to a shelf. Status is not here: it is a fold over events."""

    id: str
    created: str
    text: str
    source: str
    author: str
    store: str
    importance: int = 5
    temporal: str = "persistent"
    visibility: str = "normal"
    type: str | None = None
    subtype: str | None = None
    key: str | None = None
    affect: dict[str, Any] = field(default_factory=dict)
    personas: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    links: tuple[dict[str, str], ...] = ()
    session: str | None = None
    thread: str | None = None
    expires: str | None = None
    pinned: bool = False
    origin: str | None = None

    @property
    def type_label(self) -> str | None:
        """'TYPE:subtype' as users write it, or None."""
        if not self.type:
            return None
        return f"{self.type}:{self.subtype}" if self.subtype else self.type

    def to_line(self) -> dict[str, Any]:
        values = {
            "kind": "memory",
            "id": self.id,
            "created": self.created,
            "text": self.text,
            "source": self.source,
            "author": self.author,
            "store": self.store,
            "type": self.type,
            "subtype": self.subtype,
            "key": self.key,
            "importance": self.importance,
            "temporal": self.temporal,
            "affect": dict(self.affect),
            "personas": list(self.personas),
            "visibility": self.visibility,
            "meta": dict(self.meta),
            "links": [dict(link) for link in self.links],
            "session": self.session,
            "thread": self.thread,
            "expires": self.expires,
            "pinned": self.pinned or None,
            "origin": self.origin,
        }
        return ordered_line(values, MEMORY_FIELDS)

    @classmethod
    def from_line(cls, line: dict[str, Any]) -> Memory:
        """Build from a decoded line; unknown fields are ignored (forward compatibility)."""
        return cls(
            id=line["id"],
            created=line["created"],
            text=line["text"],
            source=line["source"],
            author=line["author"],
            store=line["store"],
            importance=int(line.get("importance", 5)),
            temporal=line.get("temporal", "persistent"),
            visibility=line.get("visibility", "normal"),
            type=line.get("type"),
            subtype=line.get("subtype"),
            key=line.get("key"),
            affect=dict(line.get("affect") or {}),
            personas=tuple(line.get("personas") or ()),
            meta=dict(line.get("meta") or {}),
            links=tuple(dict(link) for link in line.get("links") or ()),
            session=line.get("session"),
            thread=line.get("thread"),
            expires=line.get("expires"),
            pinned=bool(line.get("pinned", False)),
            origin=line.get("origin"),
        )


def new_memory(**fields: Any) -> Memory:
    """A memory with its content-derived id filled in."""
    draft = Memory(id="m-0000000000000000", **fields)
    line = draft.to_line()
    return Memory.from_line({**line, "id": content_id("m", line)})


@dataclass(frozen=True)
class Event:
    """A lifecycle event about one memory."""

    id: str
    at: str
    op: str
    target: str
    actor: str
    reason: str | None = None
    evidence: str | None = None
    to: str | None = None
    link_type: str | None = None
    redacted: bool = False

    def to_line(self) -> dict[str, Any]:
        values = {
            "kind": "event",
            "id": self.id,
            "at": self.at,
            "op": self.op,
            "target": self.target,
            "actor": self.actor,
            "reason": self.reason,
            "evidence": self.evidence,
            "to": self.to,
            "link_type": self.link_type,
            "redacted": self.redacted or None,
        }
        return ordered_line(values, EVENT_FIELDS)

    @classmethod
    def from_line(cls, line: dict[str, Any]) -> Event:
        return cls(
            id=line["id"],
            at=line["at"],
            op=line["op"],
            target=line["target"],
            actor=line["actor"],
            reason=line.get("reason"),
            evidence=line.get("evidence"),
            to=line.get("to"),
            link_type=line.get("link_type"),
            redacted=bool(line.get("redacted", False)),
        )


def new_event(**fields: Any) -> Event:
    """An event with its content-derived id filled in."""
    line = Event(id="e-0000000000000000", **fields).to_line()
    return Event.from_line({**line, "id": content_id("e", line)})


@dataclass(frozen=True)
class Tombstone:
    """What `forget` leaves where a memory line was."""

    id: str
    created: str
    forgotten: str

    def to_line(self) -> dict[str, Any]:
        return {
            "kind": "tombstone",
            "id": self.id,
            "created": self.created,
            "forgotten": self.forgotten,
        }

    @classmethod
    def from_line(cls, line: dict[str, Any]) -> Tombstone:
        return cls(id=line["id"], created=line["created"], forgotten=line["forgotten"])
