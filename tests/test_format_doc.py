"""docs/FORMAT.md's field tables and the JSON Schemas must say the same thing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memdir.archive_format.validate import load_schema

DOC = Path(__file__).parent.parent / "docs" / "FORMAT.md"


def documented_fields(kind: str) -> list[tuple[str, bool]]:
    """(field, required) rows of the table under the heading for `kind` lines."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"### `{kind}` lines", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| [^|]*(?:\\\|[^|]*)* \| (yes|no) \|", section, re.M)
    return [(name, required == "yes") for name, required in rows]


@pytest.mark.parametrize(
    "kind",
    ["memory", "event", "tombstone", "recall", "turn", "digest", "note", "island", "attachment"],
)
def test_format_doc_tables_match_schemas(kind: str) -> None:
    schema = load_schema(kind)
    expected = [(name, name in schema["required"]) for name in schema["properties"]]
    assert documented_fields(kind) == expected


def test_format_doc_names_every_status_and_op() -> None:
    from memdir.archive_format.fold import STATUSES
    from memdir.archive_format.records import EVENT_OPS

    text = DOC.read_text(encoding="utf-8")
    for word in (*STATUSES, *EVENT_OPS):
        assert f"`{word}`" in text, word


def test_schema_enums_match_code_constants() -> None:
    from memdir.archive_format import records, visibility

    memory = load_schema("memory")["properties"]
    assert tuple(memory["source"]["enum"]) == records.SOURCES
    assert tuple(memory["store"]["enum"]) == records.STORES
    assert tuple(memory["temporal"]["enum"]) == records.TEMPORAL_CLASSES
    assert tuple(memory["visibility"]["enum"]) == visibility.VISIBILITIES
    assert tuple(load_schema("event")["properties"]["op"]["enum"]) == records.EVENT_OPS
    assert tuple(load_schema("memory")["properties"]) == records.MEMORY_FIELDS
    assert tuple(load_schema("event")["properties"]) == records.EVENT_FIELDS
    assert tuple(memory["affect"]["properties"]["chord"]["properties"]) == records.PLUTCHIK
