"""The self and people state files: small notes an assistant keeps and rewrites.

    state/self.yaml    who the assistant is to this user (name, tone, commitments): fields
    state/people.yaml  the people the user talks about: per person, fields and who set them

Unlike shelf lines these are mutable, so each file is replaced atomically under the writer
lock, and every field remembers when and by whom it was last set (`by`: 'user' from the
command line, 'assistant' through MCP) — a note is not a teaching.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .clock import format_time
from .errors import BadInputError, NotFoundError
from .memdir import Memdir
from .state import read_yaml, write_yaml

MAX_KEY = 64
MAX_VALUE = 2000


def self_path(memdir: Memdir) -> Path:
    return memdir.state_dir / "self.yaml"


def people_path(memdir: Memdir) -> Path:
    return memdir.state_dir / "people.yaml"


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


@dataclass(frozen=True)
class FieldChange:
    """One update of a note: fields to set (name → value) and to remove, when and by whom."""

    values: Mapping[str, str]
    remove: tuple[str, ...]
    now: datetime
    by: str

    def check(self) -> None:
        """A field name or value out of bounds, or one both set and removed: BadInputError."""
        for key, value in self.values.items():
            if not key.strip() or len(key) > MAX_KEY:
                raise BadInputError(f"field name {key!r} must be 1–{MAX_KEY} characters")
            if not isinstance(value, str) or not value.strip() or len(value) > MAX_VALUE:
                raise BadInputError(f"field {key!r}: the value must be 1–{MAX_VALUE} characters")
        both = set(self.values) & set(self.remove)
        if both:
            raise BadInputError(f"field {sorted(both)[0]!r} is both set and removed")

    def applied(self, fields: dict[str, Any]) -> dict[str, Any]:
        """`fields` with the change made, each set field stamped with `at` and `by`."""
        at = format_time(self.now)
        for key in self.remove:
            fields.pop(key, None)
        for key, value in self.values.items():
            fields[key.strip()] = {"value": value.strip(), "at": at, "by": self.by}
        return fields


def read_self(memdir: Memdir) -> dict[str, Any]:
    """{field: {value, at, by}}."""
    return _mapping(_mapping(read_yaml(self_path(memdir), {})).get("fields"))


def update_self(memdir: Memdir, change: FieldChange) -> dict[str, Any]:
    """Set and remove fields of state/self.yaml; returns the new fields."""
    change.check()
    with memdir.lock():
        fields = change.applied(read_self(memdir))
        write_yaml(self_path(memdir), {"fields": fields})
    return fields


def read_people(memdir: Memdir) -> dict[str, dict[str, Any]]:
    """{name: {field: {value, at, by}}}."""
    people = _mapping(_mapping(read_yaml(people_path(memdir), {})).get("people"))
    return {str(name): _mapping(fields) for name, fields in people.items()}


def update_person(memdir: Memdir, name: str, change: FieldChange) -> dict[str, Any]:
    """Set and remove fields of one person (created when new); returns their fields."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_KEY:
        raise BadInputError(f"a person's name must be 1–{MAX_KEY} characters")
    change.check()
    with memdir.lock():
        people = read_people(memdir)
        fields = change.applied(people.get(name, {}))
        people[name] = fields
        write_yaml(people_path(memdir), {"people": dict(sorted(people.items()))})
    return fields


def remove_person(memdir: Memdir, name: str) -> None:
    """Drop a person and all their fields."""
    with memdir.lock():
        people = read_people(memdir)
        if name not in people:
            raise NotFoundError(f"no person named {name!r} in {people_path(memdir).name}")
        del people[name]
        write_yaml(people_path(memdir), {"people": people})
