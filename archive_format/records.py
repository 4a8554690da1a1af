"""The line types of a shelf (memory, event, tombstone): construction, ids, encoding.

Every line is one JSON object with a stable key order. Ids are derived from content: SHA-256
over the canonical JSON of every field but the id, so writing the same line twice is a no-op
and a hand-edited line no longer matches its id.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from typing import Any, ClassVar, TypeVar, get_origin, get_type_hints

from .errors import BadInputError

SOURCES = ("teaching", "inference", "observation", "derived")
STORES = ("episodic", "semantic", "procedural")
TEMPORAL_CLASSES = ("ephemeral", "persistent", "milestone")
# The memory types a writer may give (`--type TYPE[:subtype]`, the subtype is free): the
# distiller's taxonomy (docs/RECALL.md). Lines already stored with another type stay readable.
MEMORY_TYPES = ("FACT", "PERSON", "EMOTION", "MILESTONE", "DATE", "MEDICATION", "RULE", "HOWTO",
                "FINANCIAL", "EVENT", "SONG")  # fmt: skip


def memory_type(given: str | None) -> tuple[str | None, str | None]:
    """`TYPE` or `TYPE:subtype` as (type, subtype): the type one of MEMORY_TYPES, in capitals
    whatever case it was given in; anything else is refused with the list."""
    kind, _, subtype = (given or "").strip().partition(":")
    if not kind:
        if subtype:
            raise BadInputError(f"type {given!r} has a subtype but no type",
                                hint=f"write TYPE:subtype, TYPE one of {', '.join(MEMORY_TYPES)}")  # fmt: skip
        return None, None
    if kind.upper() not in MEMORY_TYPES:
        raise BadInputError(
            f"unknown memory type {kind!r}",
            hint=f"use one of {', '.join(MEMORY_TYPES)}, optionally with a subtype "
            "(FACT:preference)",
        )
    return kind.upper(), subtype.strip() or None


EVENT_OPS = ("confirm", "reject", "expire", "forget", "link")
PLUTCHIK = ("joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation")

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


R = TypeVar("R", bound="LineRecord")


class LineRecord:
    """A frozen dataclass written as one line: `KIND`, then its fields in the order they are
    declared in (the line's key order, docs/FORMAT.md: `line_fields`).

    The one codec of every line type: tuples are written as lists and read back as tuples,
    mappings are copied, a False flag and empty optional fields are left out, and an absent
    optional field reads as its default.
    """

    KIND: ClassVar[str]

    def to_line(self) -> dict[str, Any]:
        codec = _codec(type(self))
        values = {"kind": self.KIND, **vars(self)}
        for name in codec.sequences:
            values[name] = [_copy(item) for item in values[name]]
        for name in codec.mappings:
            values[name] = dict(values[name])
        for name in codec.flags:
            values[name] = values[name] or None
        return ordered_line(values, codec.order)

    def with_content_id(self: R, prefix: str) -> R:
        """This record (a draft) with the id its content gives it: `content_id(prefix, …)`."""
        line = self.to_line()
        return type(self).from_line({**line, "id": content_id(prefix, line)})

    @classmethod
    def from_line(cls: type[R], line: dict[str, Any]) -> R:
        """Build from a decoded line; unknown fields are ignored (forward compatibility)."""
        codec = _codec(cls)
        values = {name: line[name] for name in codec.required}
        values.update({name: line.get(name, default) for name, default in codec.optional})
        for name in codec.sequences:
            values[name] = tuple(_copy(item) for item in line.get(name) or ())
        for name in codec.mappings:
            values[name] = dict(line.get(name) or {})
        for name, kind in codec.coerced:
            values[name] = kind(values[name])
        return cls(**values)


@dataclass
class _Codec:
    """A record class's fields, grouped by how they are read and written."""

    order: tuple[str, ...] = ()  # the line's keys: kind, then every field as declared
    required: list[str] = field(default_factory=list)  # as they are; absent is a KeyError
    optional: list[tuple[str, Any]] = field(default_factory=list)  # absent: the default
    coerced: list[tuple[str, type]] = field(default_factory=list)  # bool and int, on reading
    flags: list[str] = field(default_factory=list)  # bool: False is written as absent
    sequences: list[str] = field(default_factory=list)  # tuple: a list in the line
    mappings: list[str] = field(default_factory=list)  # dict: copied both ways


_CODECS: dict[type, _Codec] = {}


def _codec(cls: type) -> _Codec:
    """The codec of a record class, worked out once from its dataclass fields."""
    if cls not in _CODECS:
        codec, hints = _Codec(), get_type_hints(cls)
        codec.order = ("kind", *(spec.name for spec in fields(cls)))
        for spec in fields(cls):
            name, hint = spec.name, hints[spec.name]
            if get_origin(hint) is tuple:
                codec.sequences.append(name)
            elif get_origin(hint) is dict:
                codec.mappings.append(name)
            elif spec.default is MISSING:
                codec.required.append(name)
            else:
                codec.optional.append((name, spec.default))
            if hint in (bool, int):
                codec.coerced.append((name, hint))
            if hint is bool:
                codec.flags.append(name)
        _CODECS[cls] = codec
    return _CODECS[cls]


def line_fields(cls: type[LineRecord]) -> tuple[str, ...]:
    """The keys of a line type's lines, in their order: `kind`, then its fields."""
    return _codec(cls).order


def _copy(item: Any) -> Any:
    """An element of a tuple field: a mapping (a link) is copied, a string kept."""
    return dict(item) if isinstance(item, dict) else item


@dataclass(frozen=True)
class Memory(LineRecord):
    """A memory record as written to a shelf. Status is not here: it is a fold over events."""

    KIND = "memory"

    id: str
    created: str
    text: str
    source: str
    author: str
    store: str
    type: str | None = None
    subtype: str | None = None
    key: str | None = None
    importance: int = 5
    temporal: str = "persistent"
    affect: dict[str, Any] = field(default_factory=dict)
    personas: tuple[str, ...] = ()
    visibility: str = "normal"
    meta: dict[str, Any] = field(default_factory=dict)
    links: tuple[dict[str, str], ...] = ()
    session: str | None = None
    thread: str | None = None
    expires: str | None = None
    pinned: bool = False
    origin: str | None = None
    nonce: str | None = None

    @property
    def type_label(self) -> str | None:
        """'TYPE:subtype' as users write it, or None."""
        if not self.type:
            return None
        return f"{self.type}:{self.subtype}" if self.subtype else self.type


MEMORY_FIELDS = line_fields(Memory)


def new_memory(**fields: Any) -> Memory:
    """A memory with its content-derived id filled in."""
    return Memory(id="m-0000000000000000", **fields).with_content_id("m")


@dataclass(frozen=True)
class Event(LineRecord):
    """A lifecycle event about one memory."""

    KIND = "event"

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
    nonce: str | None = None


EVENT_FIELDS = line_fields(Event)


def new_nonce() -> str:
    """128 random bits for a line's `nonce`: its id then hashes a value that leaves with the
    line, so after a forget nothing left (a tombstone, a redacted event) is a hash that a
    guessed text could reproduce (docs/FORMAT.md, "Ids")."""
    return secrets.token_hex(16)


def new_event(**fields: Any) -> Event:
    """An event with its content-derived id filled in; one that carries someone's free text (a
    reason, evidence) gets a nonce, since its id outlives that text when forget redacts it.
    memdir's own reasons (the TTL sweep's) are fixed words: those events stay reproducible, so
    clones sweeping at the same time write one line."""
    free_text = fields.get("reason") or fields.get("evidence")
    if free_text and fields.get("actor") != "memdir" and not fields.get("nonce"):
        fields["nonce"] = new_nonce()
    return Event(id="e-0000000000000000", **fields).with_content_id("e")


@dataclass(frozen=True)
class Tombstone(LineRecord):
    """What `forget` leaves where a memory line was."""

    KIND = "tombstone"

    id: str
    created: str
    forgotten: str


TOMBSTONE_FIELDS = line_fields(Tombstone)
