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
from collections.abc import Callable
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from .clock import FIRST_YEAR, LAST_YEAR

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

_PLAIN_DATE_TIME = re.compile(
    r"[1-8][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3])"
    r":[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?Z"
)


def _is_date_time(value: str) -> bool:
    """RFC 3339 `date-time` (what JSON Schema's format means), leap seconds aside, in the
    years FIRST_YEAR to LAST_YEAR (so adding any TTL or decay time to it cannot overflow).

    Stricter than datetime.fromisoformat, which also takes '09:00', a space for 'T', '+0200'
    or week dates.
    """
    if _PLAIN_DATE_TIME.fullmatch(value):
        return True  # a day up to 28 and a UTC 'Z' is valid in every month: no calendar needed
    match = _DATE_TIME.fullmatch(value)
    if not match:
        return False
    offset_hours, offset_minutes = match.group(7), match.group(8)
    if offset_hours is not None and (int(offset_hours) > 23 or int(offset_minutes) > 59):
        return False
    try:
        year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
        datetime(year, month, day, hour, minute, second)
        if not FIRST_YEAR <= year <= LAST_YEAR:
            return False
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
            found.append(
                f"{label}: {value!r} is not an ISO-8601 date-time with a UTC offset "
                f"(years {FIRST_YEAR}-{LAST_YEAR})"
            )
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = schema.get("minimum", -MAX_INTEGER), schema.get("maximum", MAX_INTEGER)
        if value < low:
            found.append(f"{label}: {_shown(value)} is below {low}")
        if value > high:
            found.append(f"{label}: {_shown(value)} is above {high}")
    return found


def _shown(value: float) -> str:
    text = str(value) if abs(value) < 10**30 else f"a {len(str(abs(int(value))))}-digit number"
    return text


def line_problems(line: dict[str, Any], kinds: tuple[str, ...] = LINE_KINDS) -> list[str]:
    """Problems of one line (of a shelf, or of the journal with `kinds=JOURNAL_KINDS`): its
    kind must be known and its fields must fit that schema."""
    kind = line.get("kind")
    if kind not in kinds:
        return [f"unknown line kind {kind!r} (expected one of {', '.join(kinds)})"]
    return problems(line, load_schema(str(kind)))


# the fast path -------------------------------------------------------------------------------
# Readers validate every line they read. `problems` above explains a bad line; the checkers
# below only answer "valid or not", compiled once per schema into closures, so a valid line
# costs a few dictionary lookups per field. A test checks both agree.
MAX_INTEGER = 2**63  # what SQLite and every other reader can hold
Check = Callable[[Any], bool]


def _compile(schema: dict[str, Any]) -> Check:
    if "const" in schema:
        constant = schema["const"]
        return lambda value: type(value) is type(constant) and value == constant
    if "enum" in schema:
        allowed = frozenset(schema["enum"])  # the schemas' enums are strings
        return lambda value: type(value) is str and value in allowed
    kind = schema.get("type")
    if kind == "string":
        return _compile_string(schema)
    if kind in ("integer", "number"):
        low = schema.get("minimum", -MAX_INTEGER)
        high = schema.get("maximum", MAX_INTEGER)
        whole = kind == "integer"

        def number(value: Any) -> bool:
            kind_of = type(value)
            if kind_of is int:
                return low <= value <= high
            if kind_of is float:
                return (
                    math.isfinite(value)
                    and low <= value <= high
                    and (not whole or value.is_integer())
                )
            return False

        return number
    if kind == "boolean":
        return lambda value: type(value) is bool
    if kind == "array":
        item = _compile(schema["items"]) if "items" in schema else None
        if item is None:
            return lambda value: type(value) is list
        return lambda value: type(value) is list and all(map(item, value))
    if kind == "object":
        return _compile_object(schema)
    return lambda value: True


def _compile_string(schema: dict[str, Any]) -> Check:
    shortest = schema.get("minLength", 0)
    pattern = _pattern(schema["pattern"]).search if "pattern" in schema else None
    stamp = schema.get("format") == "date-time"

    def string(value: Any) -> bool:
        if type(value) is not str or len(value) < shortest:
            return False
        if pattern is not None and pattern(value) is None:
            return False
        return not stamp or _is_date_time(value)

    return string


def _compile_object(schema: dict[str, Any]) -> Check:
    """An object's checker as one generated function: a required field is checked inline, an
    optional one only when present, so a valid line costs no call per plain field."""
    required = schema.get("required", ())
    names: dict[str, Any] = {"REQUIRED": frozenset(required), "isfinite": math.isfinite}
    body = ["def checked(v):", "    if type(v) is not dict or not v.keys() >= REQUIRED:",
            "        return False"]  # fmt: skip
    for number, (name, sub) in enumerate(schema.get("properties", {}).items()):
        test = _inline(sub, f"x{number}", names)
        if name in required:
            body += [
                f"    x{number} = v[{name!r}]",
                f"    if not ({test}):",
                "        return False",
            ]
        else:
            body += [f"    if {name!r} in v:", f"        x{number} = v[{name!r}]",
                     f"        if not ({test}):", "            return False"]  # fmt: skip
    body.append("    return True")
    exec("\n".join(body), names)  # the source is built from the schema files only
    checked: Check = names["checked"]
    return checked


def _inline(schema: dict[str, Any], x: str, names: dict[str, Any]) -> str:
    """A Python expression true when the value in variable `x` fits `schema`."""
    kind = schema.get("type")
    if "const" in schema:
        names[f"C_{x}"] = schema["const"]
        return f"type({x}) is type(C_{x}) and {x} == C_{x}"
    if "enum" in schema:
        names[f"E_{x}"] = frozenset(schema["enum"])
        return f"type({x}) is str and {x} in E_{x}"
    if kind == "string" and set(schema) <= {"type", "description", "minLength"}:
        return f"type({x}) is str and len({x}) >= {schema.get('minLength', 0)}"
    if kind == "boolean":
        return f"type({x}) is bool"
    if kind == "array" and "items" not in schema:
        return f"type({x}) is list"
    if kind == "integer":
        low, high = schema.get("minimum", -MAX_INTEGER), schema.get("maximum", MAX_INTEGER)
        names[f"F_{x}"] = _compile(schema)
        return (
            f"(type({x}) is int and {low} <= {x} <= {high}) or (type({x}) is float and F_{x}({x}))"
        )
    names[f"F_{x}"] = _compile(schema)
    return f"F_{x}({x})"


@cache
def checker(kind: str) -> Check:
    """Whether a decoded line of `kind` fits its schema (fast; `problems` says why not)."""
    return _compile(load_schema(kind))


def line_is_valid(line: dict[str, Any], kinds: tuple[str, ...] = LINE_KINDS) -> bool:
    """`not line_problems(line, kinds)`, a few times faster."""
    kind = line.get("kind")
    return type(kind) is str and kind in kinds and checker(kind)(line)
