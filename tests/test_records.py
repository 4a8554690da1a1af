"""Line types: round-trips, content ids, and the mini validator against the `jsonschema` package."""

from __future__ import annotations

import calendar
import hashlib
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from memdir.archive_format.clock import format_time
from memdir.archive_format.records import (
    EVENT_FIELDS,
    EVENT_OPS,
    MEMORY_FIELDS,
    PLUTCHIK,
    SOURCES,
    STORES,
    TEMPORAL_CLASSES,
    TOMBSTONE_FIELDS,
    Event,
    Memory,
    Tombstone,
    content_id,
    encode_line,
    new_event,
    new_memory,
)
from memdir.archive_format.validate import SCHEMA_DIR, line_problems, load_schema, problems
from memdir.archive_format.visibility import VISIBILITIES

# --- strategies -------------------------------------------------------------------------------

timestamps = st.datetimes(
    min_value=datetime(1970, 1, 1),
    max_value=datetime(2200, 12, 31),
    timezones=st.just(timezone.utc),
).map(format_time)
words = st.text(min_size=1, max_size=20)
optional_words = st.none() | words
names = st.from_regex(r"\A[A-Za-z][A-Za-z0-9_-]{0,8}\Z")
unit = st.floats(0, 1, allow_nan=False)
hex_ids = st.text(alphabet="0123456789abcdef", min_size=16, max_size=16)
memory_ids = hex_ids.map(lambda digits: f"m-{digits}")

affects = st.fixed_dictionaries(
    {},
    optional={
        "valence": st.floats(-1, 1, allow_nan=False),
        "arousal": unit,
        "chord": st.dictionaries(st.sampled_from(PLUTCHIK), unit, max_size=3),
        "annotator": st.text(max_size=10),
    },
)
metas = st.fixed_dictionaries(
    {},
    optional={
        "intent": st.text(max_size=10),
        "rationale": st.text(max_size=10),
        "evidence": st.text(max_size=10),
        "alternatives": st.lists(st.text(max_size=5), max_size=3),
        "confidence": unit,
    },
)
link_lists = st.lists(st.fixed_dictionaries({"type": words, "to": words}), max_size=3)


@st.composite
def memories(draw: st.DrawFn) -> Memory:
    """Any memory a writer could produce (id derived from the content)."""
    typed = draw(st.booleans())
    return new_memory(
        created=draw(timestamps),
        text=draw(st.text(min_size=1, max_size=60)),
        source=draw(st.sampled_from(SOURCES)),
        author=draw(words),
        store=draw(st.sampled_from(STORES)),
        importance=draw(st.integers(1, 10)),
        temporal=draw(st.sampled_from(TEMPORAL_CLASSES)),
        visibility=draw(st.sampled_from(VISIBILITIES)),
        type=draw(names) if typed else None,
        subtype=draw(st.none() | names) if typed else None,
        key=draw(optional_words),
        affect=draw(affects),
        personas=tuple(draw(st.lists(words, max_size=3))),
        meta=draw(metas),
        links=tuple(draw(link_lists)),
        session=draw(optional_words),
        thread=draw(optional_words),
        expires=draw(st.none() | timestamps),
        pinned=draw(st.booleans()),
        origin=draw(optional_words),
    )


@st.composite
def events(draw: st.DrawFn) -> Event:
    return new_event(
        at=draw(timestamps),
        op=draw(st.sampled_from(EVENT_OPS)),
        target=draw(memory_ids),
        actor=draw(words),
        reason=draw(optional_words),
        evidence=draw(optional_words),
        to=draw(optional_words),
        link_type=draw(optional_words),
        redacted=draw(st.booleans()),
    )


tombstones = st.builds(Tombstone, id=memory_ids, created=timestamps, forgotten=timestamps)
any_record = memories() | events() | tombstones

# --- round-trip -------------------------------------------------------------------------------

ORDER = {Memory: MEMORY_FIELDS, Event: EVENT_FIELDS, Tombstone: TOMBSTONE_FIELDS}


@given(any_record)
def test_every_line_type_round_trips(record: Memory | Event | Tombstone) -> None:
    line = record.to_line()
    raw = encode_line(line)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1, "one line, newline-terminated"
    decoded = json.loads(raw.decode("utf-8"))
    assert decoded == line
    assert list(decoded) == list(line), "key order survives the file"
    order = ORDER[type(record)]
    assert list(line) == [name for name in order if name in line], "keys in schema order"
    assert type(record).from_line(decoded) == record
    assert encode_line(type(record).from_line(decoded).to_line()) == raw, (
        "re-encoding is byte-identical"
    )
    assert line_problems(decoded) == []


@given(
    any_record,
    st.dictionaries(
        st.text(min_size=1).filter(lambda k: k not in MEMORY_FIELDS + EVENT_FIELDS),
        st.integers(),
        max_size=3,
    ),
)
def test_unknown_fields_are_ignored(
    record: Memory | Event | Tombstone, extra: dict[str, int]
) -> None:
    line = {**record.to_line(), **extra}
    assert type(record).from_line(line) == record


@given(memories() | events())
def test_ids_are_derived_from_content(record: Memory | Event) -> None:
    line = record.to_line()
    prefix = line["id"][0]
    body = {name: value for name, value in line.items() if name != "id"}
    digest = hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    ).hexdigest()
    assert line["id"] == f"{prefix}-{digest[:16]}"
    assert content_id(prefix, line) == line["id"]


@given(memories(), st.text(min_size=1, max_size=20))
def test_an_edited_text_changes_the_id(memory: Memory, other: str) -> None:
    line = memory.to_line()
    edited = {**line, "text": line["text"] + other}
    assert content_id("m", edited) != line["id"]


def _shuffled(value: Any, rng: st.DataObject) -> Any:
    """The same JSON value with every object's keys in a random order."""
    if isinstance(value, dict):
        keys = rng.draw(st.permutations(list(value)))
        return {key: _shuffled(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


@given(memories() | events(), st.data())
def test_ids_do_not_depend_on_key_order(record: Memory | Event, data: st.DataObject) -> None:
    line = record.to_line()
    shuffled = _shuffled(line, data)
    assert content_id(line["id"][0], shuffled) == line["id"]
    again = type(record).from_line(shuffled)
    assert again == record
    assert list(again.to_line()) == list(line), "writers restore the canonical field order"


def test_new_memory_id_does_not_depend_on_keyword_order() -> None:
    fields = {
        "created": "2026-05-01T09:00:00Z",
        "text": "Kaffee schwarz, bitte ☕",
        "source": "teaching",
        "author": "user",
        "store": "semantic",
        "key": "coffee",
        "affect": {"valence": 0.5, "chord": {"joy": 0.2, "trust": 0.7}},
        "meta": {"intent": "remember", "confidence": 0.9},
    }
    forward = new_memory(**fields)
    backward = new_memory(**dict(reversed(list(fields.items()))))
    assert forward.id == backward.id
    assert re.fullmatch(r"m-[0-9a-f]{16}", forward.id)


# Lines whose ids are computed here and in fresh interpreters with different hash seeds.
SAMPLE_LINES = [
    {"kind": "memory", "created": "2026-05-01T09:00:00Z", "text": "I take my coffee black",
     "source": "teaching", "author": "user", "store": "semantic", "importance": 5,
     "temporal": "persistent", "visibility": "normal"},
    {"visibility": "private", "temporal": "milestone", "importance": 9, "store": "episodic",
     "author": "assistant", "source": "inference", "text": "Zoë ❤ 東京 \n\t \"quoted\" \\",
     "created": "2026-05-01T09:00:00Z", "kind": "memory", "expires": "2026-05-08T09:00:00Z",
     "affect": {"chord": {"trust": 0.25, "joy": 0.5}, "valence": -0.125, "arousal": 1},
     "meta": {"alternatives": ["a", "b"], "confidence": 0.3333333333333333},
     "personas": ["work", "home"], "links": [{"to": "m-0123456789abcdef", "type": "supports"}]},
    {"kind": "event", "at": "2026-05-02T10:00:00Z", "op": "confirm",
     "target": "m-0123456789abcdef", "actor": "user:ana", "evidence": "yes, that's right"},
]  # fmt: skip

ID_SCRIPT = """
import json, sys
from memdir.archive_format.records import content_id
lines = json.load(sys.stdin)
print(json.dumps([content_id("e" if line["kind"] == "event" else "m", line) for line in lines]))
"""


@pytest.mark.parametrize("hash_seed", ["0", "1", "4242"])
def test_ids_are_stable_across_processes(hash_seed: str) -> None:
    here = [content_id("e" if line["kind"] == "event" else "m", line) for line in SAMPLE_LINES]
    reordered = [dict(reversed(list(line.items()))) for line in SAMPLE_LINES]
    done = subprocess.run(
        [sys.executable, "-c", ID_SCRIPT],
        input=json.dumps(reordered, ensure_ascii=False),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        check=True,
    )
    assert json.loads(done.stdout) == here
    assert len(set(here)) == len(here)


def test_ids_are_stable_across_releases() -> None:
    """Golden ids: changing the hashing rule would orphan every existing event and link."""
    assert (
        content_id("m", SAMPLE_LINES[0])
        == "m-"
        + hashlib.sha256(
            b'{"author":"user","created":"2026-05-01T09:00:00Z","importance":5,"kind":"memory",'
            b'"source":"teaching","store":"semantic","temporal":"persistent",'
            b'"text":"I take my coffee black","visibility":"normal"}'
        ).hexdigest()[:16]
    )


# --- the mini validator agrees with jsonschema ------------------------------------------------

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"([Zz]|[+-]([0-9]{2}):([0-9]{2}))"
)


def rfc3339_date_time(value: object) -> bool:
    """RFC 3339 section 5.6 `date-time`, which JSON Schema's format means (no leap seconds:
    Python datetimes cannot hold them). jsonschema checks this format only with an optional
    package, so the reference check is written out here from the RFC's grammar."""
    if not isinstance(value, str):
        return True
    match = _RFC3339.fullmatch(value)
    if not match:
        return False
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(max(year, 1), month)[1]):
        return False
    if year == 0 or hour > 23 or minute > 59 or second > 59:
        return False
    if match.group(9) is not None and (int(match.group(9)) > 23 or int(match.group(10)) > 59):
        return False
    return True


_FORMATS = FormatChecker(formats=())
_FORMATS.checks("date-time")(rfc3339_date_time)
SCHEMAS = tuple(sorted(path.name.split(".")[0] for path in SCHEMA_DIR.glob("*.schema.json")))
REFERENCE = {
    name: Draft202012Validator(load_schema(name), format_checker=_FORMATS) for name in SCHEMAS
}


def test_schemas_are_valid_draft_2020_12() -> None:
    for name in SCHEMAS:
        Draft202012Validator.check_schema(load_schema(name))


def _agree(name: str, value: Any) -> bool:
    """Assert both validators reach the same verdict; return it."""
    mine = problems(value, load_schema(name))
    reference = [error.message for error in REFERENCE[name].iter_errors(value)]
    assert bool(mine) == bool(reference), (
        f"{name}: mini={mine} jsonschema={reference} for {value!r}"
    )
    return not mine


configs = st.fixed_dictionaries(
    {
        "format": st.from_regex(r"\A[0-9]{1,2}\.[0-9]{1,2}\Z"),
        "id": words,
        "created": timestamps,
    },
    optional={
        "settings": st.dictionaries(st.text(max_size=5), st.integers() | st.text(), max_size=3)
    },
)


def identified(prefix: str, line: dict[str, Any]) -> dict[str, Any]:
    """A generated line as a writer stores it: absent (None) fields dropped, the content id
    right after `kind`."""
    line = {name: value for name, value in line.items() if value is not None}
    rest = {name: value for name, value in line.items() if name != "kind"}
    return {"kind": line["kind"], "id": content_id(prefix, line), **rest}


def journal_lines(kind: str, prefix: str, **fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Lines of one kind with a time: each field drawn from its strategy, then identified."""
    drawn = st.fixed_dictionaries({"kind": st.just(kind), "at": timestamps, **fields})
    return drawn.map(lambda line: identified(prefix, line))


turn_ids = hex_ids.map(lambda digits: f"t-{digits}")
recalls = journal_lines("recall", "r", memories=st.lists(memory_ids, max_size=4), actor=words)
turns = journal_lines(
    "turn",
    "t",
    role=st.sampled_from(["user", "assistant", "tool"]),
    session=words,
    text=words,
    topic=optional_words,
    visibility=st.sampled_from(VISIBILITIES),
    secrecy=st.sampled_from(["public", "sensitive", "secret"]),
    channel=st.sampled_from(["cli", "mcp", "import:chatgpt", "import:x/y.json"]),
)
digests = journal_lines(
    "digest",
    "d",
    turns=st.lists(turn_ids, max_size=3),
    withheld=st.none() | st.lists(turn_ids, max_size=2),
    memory=st.none() | memory_ids,
    promoted=st.none() | memory_ids,
    method=st.none() | st.sampled_from(["extractive", "command"]),
)


def op_lines(
    kind: str, prefix: str, ops: list[str], **fields: Any
) -> st.SearchStrategy[dict[str, Any]]:
    """Lines of a state file folded by op (notes, islands): one of `ops`, then each field drawn
    from its strategy or, given as (ops, strategy), only on those ops (absent on the others)."""

    @st.composite
    def lines(draw: st.DrawFn) -> dict[str, Any]:
        op = draw(st.sampled_from(ops))
        line = {"kind": kind, "at": draw(timestamps), "op": op}
        for name, field in fields.items():
            only, strategy = field if isinstance(field, tuple) else (ops, field)
            line[name] = draw(strategy) if op in only else None
        return identified(prefix, line)

    return lines()


writers = st.sampled_from(["user", "assistant"])
notes = op_lines(
    "note",
    "n",
    ["set", "unset", "add", "drop"],
    subject=st.sampled_from(["self", "person:Sam"]),
    field=(("set", "unset"), words),
    value=(("set",), words),
    by=writers,
)
islands = op_lines(
    "island",
    "i",
    ["create", "add", "remove", "drop"],
    island=words,
    about=(("create",), optional_words),
    members=(("add", "remove"), st.lists(memory_ids, min_size=1, max_size=3)),
    by=writers,
)


@st.composite
def attachments(draw: st.DrawFn) -> dict[str, Any]:
    sha = draw(st.text("0123456789abcdef", min_size=64, max_size=64))
    extracted = st.fixed_dictionaries(
        {"method": st.sampled_from(["pypdf", "exifread", "mutagen", "text"])},
        optional={"text": words, "truncated": st.booleans(),
                  "metadata": st.dictionaries(words, words, max_size=2)},
    )  # fmt: skip
    line = {
        "kind": "attachment",
        "id": f"a-{sha[:16]}",
        "sha256": sha,
        "bytes": draw(st.integers(0, 2**40)),
        "media_type": draw(st.sampled_from(["application/pdf", "image/jpeg", "text/plain"])),
        "name": draw(optional_words),
        "extracted": draw(st.none() | extracted),
        "skipped": draw(optional_words),
    }
    return {name: value for name, value in line.items() if value is not None}


VALID = {
    "attachment": attachments(),
    "note": notes,
    "island": islands,
    "turn": turns,
    "digest": digests,
    "memory": memories().map(lambda r: r.to_line()),
    "event": events().map(lambda r: r.to_line()),
    "tombstone": tombstones.map(lambda r: r.to_line()),
    "recall": recalls,
    "config": configs,
}
valid_values = st.one_of(
    *(VALID[name].map(lambda v, n=name: (n, v)) for name in SCHEMAS if name in VALID)
)


def test_every_schema_has_a_generator() -> None:
    assert set(SCHEMAS) <= set(VALID), "a new schema needs a generator here"
    assert set(SCHEMAS) <= set(GOOD_LINES), "and a sample line"


@given(valid_values)
def test_validators_accept_valid_lines(case: tuple[str, dict[str, Any]]) -> None:
    name, value = case
    assert _agree(name, value)


TRICKY_STRINGS = [
    "", " ", "x", "memory", "event", "tombstone", "teaching", "inference", "user", "FACT", "9x",
    "m-0123456789abcdef", "m-0123456789ABCDEF", "m-0123456789abcde", "e-0123456789abcdef",
    "1.0", "2.0", "1", "1.x",
    "2026-05-01T09:00:00Z", "2026-05-01t09:00:00z", "2026-05-01T09:00:00.123456+02:00",
    "2026-05-01T09:00:00-05:30", "2026-05-01T09:00Z", "2026-05-01", "2026-05-01 09:00:00Z",
    "2026-05-01T09:00:00", "2026-05-01T09:00:00+0200", "2026-05-01T09:00:00+02",
    "20260501T090000Z", "2026-02-30T00:00:00Z", "2024-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
    "2026-05-01T24:00:00Z", "2026-05-01T09:60:00Z", "2026-05-01T09:00:00+24:00",
    "2026-W18-5T09:00:00Z", "2026-05-01T09:00:00.Z", "2026-05-01T09:00:00Z\n",
]  # fmt: skip
TRICKY_NUMBERS = [0, 1, 5, 10, 11, -1, 0.5, 1.5, 5.0, -1.0000001, 1e300, True, False]
scalars = (
    st.none()
    | st.booleans()
    | st.sampled_from(TRICKY_NUMBERS)
    | st.integers(-20, 20)
    | st.floats(allow_nan=False)
    | st.sampled_from(TRICKY_STRINGS)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a JSON value, as a path of keys and indexes."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _mutate(value: Any, path: tuple[Any, ...], action: str, new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    if action == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return copy


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(valid_values, st.data())
def test_validators_agree_on_mutated_lines(
    case: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    name, value = case
    paths = _paths(value)
    path = data.draw(st.sampled_from(paths))
    action = data.draw(st.sampled_from(["replace", "replace", "delete"]))
    new = data.draw(json_values)
    _agree(name, _mutate(value, path, action, new))


@given(st.sampled_from(SCHEMAS), json_values)
def test_validators_agree_on_arbitrary_json(name: str, value: Any) -> None:
    _agree(name, value)


GOOD_MEMORY = SAMPLE_LINES[1] | {"id": content_id("m", SAMPLE_LINES[1])}


@pytest.mark.parametrize(
    "path, new",
    [
        (("importance",), 0),
        (("importance",), 11),
        (("importance",), "5"),
        (("importance",), True),
        (("created",), "2026-05-01"),
        (("created",), "2026-05-01T09:00Z"),
        (("created",), "2026-02-30T00:00:00Z"),
        (("id",), "m-XYZ"),
        (("text",), ""),
        (("source",), "rumour"),
        (("kind",), "memories"),
        (("personas", 0), ""),
        (("affect", "valence"), 1.5),
        (("affect", "chord", "joy"), -0.1),
        (("meta", "alternatives", 0), 3),
        (("links", 0, "to"), ""),
        (("expires",), "next week"),
    ],
)
def test_both_validators_reject_known_bad_values(path: tuple[Any, ...], new: Any) -> None:
    assert not _agree("memory", _mutate(GOOD_MEMORY, path, "replace", new))


GOOD_LINES = {
    "memory": GOOD_MEMORY,
    "event": SAMPLE_LINES[2]
    | {
        "id": content_id("e", SAMPLE_LINES[2]),
        "reason": "r",
        "to": "t",
        "link_type": "l",
        "redacted": False,
    },
    "tombstone": {
        "kind": "tombstone",
        "id": "m-0123456789abcdef",
        "created": "2026-05-01T09:00:00Z",
        "forgotten": "2026-05-02T09:00:00Z",
    },
    "config": {
        "format": "1.0",
        "id": "abc",
        "created": "2026-05-01T09:00:00Z",
        "settings": {"timezone": "UTC"},
    },
    "turn": {
        "kind": "turn",
        "id": "t-0123456789abcdef",
        "at": "2026-05-01T09:00:00Z",
        "role": "user",
        "session": "s1",
        "text": "hello",
        "topic": "greeting",
        "visibility": "normal",
        "secrecy": "public",
        "channel": "import:chat",
    },
    "digest": {
        "kind": "digest",
        "id": "d-0123456789abcdef",
        "at": "2026-05-01T09:00:00Z",
        "turns": ["t-0123456789abcdef"],
        "withheld": ["t-fedcba9876543210"],
        "memory": "m-0123456789abcdef",
        "promoted": "m-fedcba9876543210",
        "method": "extractive",
    },
    "note": {
        "kind": "note",
        "id": "n-0123456789abcdef",
        "at": "2026-05-01T09:00:00Z",
        "op": "set",
        "subject": "person:Sam",
        "field": "relation",
        "value": "brother",
        "by": "assistant",
    },
    "island": {
        "kind": "island",
        "id": "i-0123456789abcdef",
        "at": "2026-05-01T09:00:00Z",
        "op": "add",
        "island": "garden",
        "about": "the allotment",
        "members": ["m-0123456789abcdef"],
        "by": "user",
    },
    "attachment": {
        "kind": "attachment",
        "id": "a-0123456789abcdef",
        "sha256": "0123456789abcdef" * 4,
        "bytes": 1234,
        "media_type": "application/pdf",
        "name": "invoice.pdf",
        "extracted": {"method": "pypdf", "text": "the invoice", "metadata": {"pages": 1}},
    },
    "recall": {
        "kind": "recall",
        "id": "r-0123456789abcdef",
        "at": "2026-05-01T09:00:00Z",
        "memories": ["m-0123456789abcdef", "m-fedcba9876543210"],
        "actor": "user",
    },
}


@pytest.mark.parametrize("name", SCHEMAS)
def test_validators_agree_on_every_field_with_tricky_values(name: str) -> None:
    """Exhaustive: every place in a good line, set to every tricky value or removed."""
    good = GOOD_LINES[name]
    assert _agree(name, good)
    disagreements = []
    for path in _paths(good):
        cases = [("delete", None)] + [
            ("replace", value) for value in (*TRICKY_STRINGS, *TRICKY_NUMBERS, None, [], {})
        ]
        for action, new in cases:
            value = _mutate(good, path, action, new)
            mine = bool(problems(value, load_schema(name)))
            reference = bool(list(REFERENCE[name].iter_errors(value)))
            if mine != reference:
                disagreements.append(
                    (path, action, new, "mini rejects" if mine else "mini accepts")
                )
    assert disagreements == []


@pytest.mark.parametrize("field", sorted(load_schema("memory")["required"]))
def test_both_validators_reject_a_missing_required_field(field: str) -> None:
    assert not _agree("memory", _mutate(GOOD_MEMORY, (field,), "delete", None))


def test_line_problems_dispatches_on_kind() -> None:
    assert line_problems(GOOD_MEMORY) == []
    assert line_problems({**GOOD_MEMORY, "kind": "event"})  # a memory is not a valid event
    assert "unknown line kind" in line_problems({**GOOD_MEMORY, "kind": "note"})[0]
