"""Checks a decoded line against the JSON Schemas in archive_format/schemas/.

The schema files are the single source of truth. This is a small validator for the subset of
JSON Schema they use (type, const, enum, required, properties, items, minimum, maximum,
minLength, pattern, format: date-time), so reading a memdir needs no third-party validator;
a test checks it agrees with the reference `jsonschema` package.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).parent / "schemas"
LINE_KINDS = ("memory", "event", "tombstone", "recall")
JOURNAL_KINDS = ("turn", "digest", "tombstone")  # lines of journal/*.jsonl

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The schema named `name` (memory, event, tombstone, config)."""
    with open(SCHEMA_DIR / f"{name}.schema.json", encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


@cache
def _pattern(expression: str) -> re.Pattern[str]:
    return re.compile(expression)


_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))"
)


def _is_date_time(value: str) -> bool:
    """RFC 3339 `date-time` (what JSON Schema's format means), leap seconds aside.

    Stricter than datetime.fromisoformat, which also takes '09:00', a space for 'T', '+0200'
    or week dates.
    """
    match = _DATE_TIME.fullmatch(value)
    if not match:
        return False
    offset_hours, offset_minutes = match.group(7), match.group(8)
    if offset_hours is not None and (int(offset_hours) > 23 or int(offset_minutes) > 59):
        return False
    try:
        year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return True


def problems(value: Any, schema: dict[str, Any], where: str = "") -> list[str]:
    """Every way `value` breaks `schema`, as short messages naming the field."""
    found: list[str] = []
    label = where or "line"
    if "const" in schema and value != schema["const"]:
        return [f"{label}: expected {schema['const']!r}, got {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{label}: {value!r} is not one of {', '.join(map(str, schema['enum']))}"]
    expected = schema.get("type")
    if expected:
        ok = isinstance(value, _TYPES[expected])
        if ok and expected in ("integer", "number") and isinstance(value, bool):
            ok = False
        if ok and isinstance(value, float) and not math.isfinite(value):
            return [f"{label}: {value} is not a finite number (JSON has no NaN or infinity)"]
        if expected == "integer" and isinstance(value, float):
            ok = value.is_integer()  # JSON Schema: 5.0 is an integer
        if not ok:
            return [f"{label}: expected {expected}, got {type(value).__name__}"]
    if isinstance(value, dict):
        for name in schema.get("required", ()):
            if name not in value:
                found.append(f"{label}: missing field {name!r}")
        for name, subschema in schema.get("properties", {}).items():
            if name in value:
                found.extend(
                    problems(value[name], subschema, name if not where else f"{where}.{name}")
                )
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found.extend(problems(item, schema["items"], f"{label}[{index}]"))
    elif isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            found.append(f"{label}: must not be empty")
        if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            found.append(f"{label}: {value!r} does not match {schema['pattern']}")
        if schema.get("format") == "date-time" and not _is_date_time(value):
            found.append(f"{label}: {value!r} is not an ISO-8601 date-time with a UTC offset")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            found.append(f"{label}: {value} is below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            found.append(f"{label}: {value} is above {schema['maximum']}")
    return found


def line_problems(line: dict[str, Any], kinds: tuple[str, ...] = LINE_KINDS) -> list[str]:
    """Problems of one line (of a shelf, or of the journal with `kinds=JOURNAL_KINDS`): its
    kind must be known and its fields must fit that schema."""
    kind = line.get("kind")
    if kind not in kinds:
        return [f"unknown line kind {kind!r} (expected one of {', '.join(kinds)})"]
    return problems(line, load_schema(str(kind)))
