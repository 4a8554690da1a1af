"""The self and people notes: small notes an assistant keeps about itself and the user's people.

    self      who the assistant is to this user (name, tone, commitments): fields
    people    the people the user talks about: per person, fields and who set them

They change, but two clones must merge them without conflicts, so they are event-sourced:
each change is a `note` line appended to state/notes.jsonl (union-merged like a shelf) and the
notes are a fold over those lines — per field the latest (`at`, then `id`) wins, a person
dropped stays dropped for every change made before the drop. Every field remembers when and by
whom it was last set (`by`: 'user' from the command line, 'assistant' through MCP) — a note is
not a teaching. The state/self.yaml and state/people.yaml of older memdirs are read as the
starting point and never written again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from . import shelf
from .clock import format_time
from .errors import BadInputError, NotFoundError
from .memdir import Memdir
from .records import content_id, encode_line
from .state import read_yaml
from .tombstones import writing
from .validate import line_problems

MAX_KEY = 64
MAX_VALUE = 2000
SELF = "self"
PERSON = "person:"


def notes_path(memdir: Memdir) -> Path:
    return memdir.state_dir / "notes.jsonl"


def self_path(memdir: Memdir) -> Path:
    """An older memdir's self notes (read, never written)."""
    return memdir.state_dir / "self.yaml"


def people_path(memdir: Memdir) -> Path:
    """An older memdir's people notes (read, never written)."""
    return memdir.state_dir / "people.yaml"


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _check(values: Mapping[str, str], remove: Iterable[str]) -> None:
    for key, value in values.items():
        if not key.strip() or len(key) > MAX_KEY:
            raise BadInputError(f"field name {key!r} must be 1–{MAX_KEY} characters")
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_VALUE:
            raise BadInputError(f"field {key!r}: the value must be 1–{MAX_VALUE} characters")
    both = set(values) & set(remove)
    if both:
        raise BadInputError(f"field {sorted(both)[0]!r} is both set and removed")


def _line(at: str, op: str, subject: str, by: str, field: str | None = None,
          value: str | None = None) -> bytes:  # fmt: skip
    line: dict[str, Any] = {"kind": "note", "at": at, "op": op, "subject": subject}
    if field is not None:
        line["field"] = field
    if value is not None:
        line["value"] = value
    line["by"] = by
    line = {
        "kind": "note",
        "id": content_id("n", line),
        **{k: v for k, v in line.items() if k != "kind"},
    }
    found = line_problems(line, ("note",))
    if found:
        raise BadInputError(f"invalid note: {found[0]}")
    return encode_line(line)


def _changes(subject: str, values: Mapping[str, str], remove: Iterable[str], at: str,
             by: str) -> list[bytes]:  # fmt: skip
    lines = [_line(at, "unset", subject, by, key.strip()) for key in remove]
    lines += [
        _line(at, "set", subject, by, key.strip(), value.strip()) for key, value in values.items()
    ]
    return lines


def _fold(memdir: Memdir) -> dict[str, dict[str, Any]]:
    """subject → {field: {value, at, by}}: the older YAML files, then every note line in
    (`at`, `id`) order, so the order of the lines (a merge's) does not matter."""
    subjects: dict[str, dict[str, Any]] = {}
    own = _mapping(_mapping(read_yaml(self_path(memdir), {})).get("fields"))
    if own:
        subjects[SELF] = own
    for name, fields in _mapping(
        _mapping(read_yaml(people_path(memdir), {})).get("people")
    ).items():
        subjects[PERSON + str(name)] = _mapping(fields)
    lines = {item.data["id"]: item.data for item in shelf.read(notes_path(memdir), kinds=("note",))}  # fmt: skip
    for line in sorted(lines.values(), key=lambda line: (line["at"], line["id"])):
        subject, op = line["subject"], line["op"]
        if op == "drop":
            subjects.pop(subject, None)
            continue
        fields = subjects.setdefault(subject, {})
        if op == "set":
            fields[line["field"]] = {"value": line["value"], "at": line["at"], "by": line["by"]}
        elif op == "unset":
            fields.pop(line["field"], None)
    return subjects


def _append(memdir: Memdir, lines: list[bytes]) -> None:
    shelf.append(notes_path(memdir), lines, memdir.quarantine_dir)


def read_self(memdir: Memdir) -> dict[str, Any]:
    """{field: {value, at, by}}."""
    return _fold(memdir).get(SELF, {})


def update_self(
    memdir: Memdir,
    values: Mapping[str, str],
    remove: Iterable[str],
    now: datetime,
    by: str,
) -> dict[str, Any]:
    """Set and remove fields of the self notes; returns the new fields."""
    return _update(memdir, SELF, values, remove, now, by)


def read_people(memdir: Memdir) -> dict[str, dict[str, Any]]:
    """{name: {field: {value, at, by}}}, by name."""
    subjects = _fold(memdir)
    return {
        subject[len(PERSON) :]: fields
        for subject, fields in sorted(subjects.items())
        if subject.startswith(PERSON)
    }


def update_person(
    memdir: Memdir,
    name: str,
    values: Mapping[str, str],
    remove: Iterable[str],
    now: datetime,
    by: str,
) -> dict[str, Any]:
    """Set and remove fields of one person (created when new); returns their fields."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_KEY:
        raise BadInputError(f"a person's name must be 1–{MAX_KEY} characters")
    return _update(memdir, PERSON + name, values, remove, now, by)


def _update(memdir: Memdir, subject: str, values: Mapping[str, str], remove: Iterable[str],
            now: datetime, by: str) -> dict[str, Any]:  # fmt: skip
    """Set and remove fields of the self or of a person (added first when new); returns the
    subject's fields."""
    remove = list(remove)
    _check(values, remove)
    at = format_time(now)
    with writing(memdir):
        new = subject != SELF and subject not in _fold(memdir)
        lines = [_line(at, "add", subject, by)] if new else []
        lines += _changes(subject, values, remove, at, by)
        _append(memdir, lines)
        return _fold(memdir).get(subject, {})


def remove_person(
    memdir: Memdir, name: str, now: datetime | None = None, by: str = "assistant"
) -> None:
    """Drop a person and all their fields."""
    from .clock import now as clock_now

    with writing(memdir):
        if name not in read_people(memdir):
            raise NotFoundError(f"no person named {name!r} in the people notes")
        _append(memdir, [_line(format_time(now or clock_now()), "drop", PERSON + name, by)])


ALIASES = "aliases"  # a person's field: the other names they go by, comma-separated


def aliases_of(fields: Mapping[str, Any]) -> list[str]:
    """A person's aliases, from their `aliases` field ("Sam, Sammy, user")."""
    entry = fields.get(ALIASES)
    value = entry.get("value", "") if isinstance(entry, dict) else ""
    return [name for name in (" ".join(part.split()) for part in str(value).split(",")) if name]


def set_aliases(memdir: Memdir, name: str, add: Iterable[str], remove: Iterable[str],
                now: datetime, by: str) -> dict[str, Any]:  # fmt: skip
    """Add and remove aliases of a person (created when new); returns their fields. An alias
    may be the speaker handle the journal or an import uses for them (`user` for the user)."""
    for alias in [*add, *remove]:
        if "," in alias or not alias.strip():
            raise BadInputError(f"alias {alias!r}: one non-empty name without commas")
    current = aliases_of(read_people(memdir).get(" ".join(name.split()), {}))
    dropped = {" ".join(alias.split()).casefold() for alias in remove}
    kept = [alias for alias in current if alias.casefold() not in dropped]
    for alias in (" ".join(alias.split()) for alias in add):
        if alias.casefold() not in {a.casefold() for a in kept}:
            kept.append(alias)
    if kept:
        return update_person(memdir, name, {ALIASES: ", ".join(kept)}, [], now, by)
    return update_person(memdir, name, {}, [ALIASES] if current else [], now, by)


def names_by_person(memdir: Memdir) -> dict[str, list[str]]:
    """Each person in the notes → every name they go by: their name, then their aliases."""
    return {name: [name, *aliases_of(fields)] for name, fields in read_people(memdir).items()}
