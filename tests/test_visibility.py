"""The one visibility rule, case by case, and the surfaces that ask it."""

from __future__ import annotations

import json
import typing
from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import T0_DT

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.validate import load_schema
from memdir.archive_format.visibility import (
    SECRECY,
    VISIBILITIES,
    Withheld,
    shown,
    summary_visibility,
    withheld,
)

# visibility, secrecy, include_private → why withheld (None: shown)
CASES = [
    ("normal", "public", False, None),
    ("normal", "public", True, None),
    ("normal", "sensitive", False, None),
    ("normal", "secret", False, Withheld.SECRET),
    ("normal", "secret", True, Withheld.SECRET),
    ("private", "public", False, Withheld.PRIVATE),
    ("private", "public", True, None),
    ("private", "sensitive", True, None),
    ("private", "secret", True, Withheld.SECRET),
    ("sealed", "public", False, Withheld.SEALED),
    ("sealed", "public", True, Withheld.SEALED),
    ("sealed", "secret", True, Withheld.SECRET),
    # outside the format (hand-edited, a later minor version): fails closed
    ("team", "public", False, Withheld.UNKNOWN),
    ("team", "public", True, Withheld.UNKNOWN),
    ("", "public", True, Withheld.UNKNOWN),
    # an unknown secrecy does not withhold: only `secret` does
    ("normal", "classified", False, None),
]


@pytest.mark.parametrize(("visibility", "secrecy", "include_private", "reason"), CASES)
def test_rule(
    visibility: str, secrecy: str, include_private: bool, reason: Withheld | None
) -> None:
    assert withheld(visibility, secrecy, include_private=include_private) is reason
    assert shown(visibility, secrecy, include_private=include_private) is (reason is None)


@pytest.mark.parametrize(
    ("visibility", "include_private", "reason"),
    [
        ("normal", False, None),
        ("private", False, Withheld.PRIVATE),
        ("private", True, None),
        ("sealed", True, Withheld.SEALED),
    ],
)
def test_a_memory_has_no_secrecy(
    visibility: str, include_private: bool, reason: Withheld | None
) -> None:
    assert withheld(visibility, include_private=include_private) is reason


@pytest.mark.parametrize(
    ("secrecies", "expected"),
    [
        ([], "normal"),
        (["public", "public"], "normal"),
        (["public", "sensitive"], "private"),
        (iter(["sensitive"]), "private"),
    ],
)
def test_summary_visibility(secrecies: typing.Iterable[str], expected: str) -> None:
    assert summary_visibility(secrecies) == expected


def test_the_values_are_the_schemas() -> None:
    memory, turn = load_schema("memory")["properties"], load_schema("turn")["properties"]
    assert tuple(memory["visibility"]["enum"]) == VISIBILITIES
    assert tuple(turn["visibility"]["enum"]) == VISIBILITIES
    assert tuple(turn["secrecy"]["enum"]) == SECRECY


def test_the_mcp_tool_types_offer_the_same_values() -> None:
    from memdir.cli import mcp_server

    assert typing.get_args(mcp_server.Visibility) == VISIBILITIES


# the surfaces ---------------------------------------------------------------------------------
def test_a_turn_is_summarisable_when_shown_to_a_prompt() -> None:
    # written out, not derived from the rule: only normal, non-secret turns reach a prompt
    expected = {("normal", "public"), ("normal", "sensitive")}
    for visibility in (*VISIBILITIES, "team"):
        for secrecy in SECRECY:
            turn = journal.new_turn(T0_DT, "user", "s", "hello", "cli", "normal", secrecy)
            turn = replace(turn, visibility=visibility)
            assert turn.summarisable is ((visibility, secrecy) in expected), (visibility, secrecy)


def test_wake_documents_show_only_what_needs_no_asking(md: Memdir) -> None:
    from memdir.usecases.documents import shown as in_documents

    view_at = T0_DT + timedelta(days=1)
    ids = {
        name: lifecycle.teach(md, f"a {name} teaching", T0_DT, visibility=name).id
        for name in VISIBILITIES
    }
    view = lifecycle.load_view(md, view_at)
    assert {name for name, memory_id in ids.items() if in_documents(view.states[memory_id])} == {
        "normal"
    }


def test_recall_filters_by_the_rule_and_says_why(hashed: Memdir) -> None:
    from memdir.archive_format import shelf
    from memdir.archive_format.records import encode_line, new_memory
    from memdir.indexers.index import MemoryIndex
    from memdir.indexers.recall import RecallOptions, recall

    ids = {
        name: lifecycle.teach(
            hashed, f"the {name} heron nests by the lake", T0_DT, visibility=name
        ).id
        for name in VISIBILITIES
    }
    # a value outside the format, as a hand edit or a later minor version would leave it
    odd = new_memory(created="2026-05-01T09:00:00Z", text="the team heron nests by the lake",
                     source="teaching", author="user", store="semantic")  # fmt: skip
    line = {**odd.to_line(), "visibility": "team"}
    with hashed.lock():
        shelf.append(hashed.memory_shelf, [encode_line(line)], hashed.quarantine_dir)
    ids["team"] = odd.id
    index = MemoryIndex(hashed)
    try:
        index.update()
        now = T0_DT + timedelta(days=1)
        for include_private, expected in ((False, {"normal"}), (True, {"normal", "private"})):
            result = recall(
                index, "heron lake", now, RecallOptions(include_private=include_private)
            )
            found = {
                name
                for name, memory_id in ids.items()
                if memory_id in {c.id for c in result.results}
            }
            assert found == expected
        [filters] = [stage for stage in result.stages if stage.name == "filters"]
        dropped = {row["id"]: row["dropped"] for row in filters.rows}
        assert dropped[ids["sealed"]] == "sealed"
        # the index skips a line outside its schema (with a warning): it never reaches recall
        assert ids["team"] not in dropped
        result = recall(index, "heron lake", now, RecallOptions())
        [filters] = [stage for stage in result.stages if stage.name == "filters"]
        assert {row["id"]: row["dropped"] for row in filters.rows}[ids["private"]] == (
            "private (use --include-private)"
        )
        # --explain's candidate pool comes before the filters: it names withheld memories by
        # id only, never with their text (MCP `recall(explain=true)` hands it to the model)
        explained = json.dumps(result.to_dict(explain=True))
        [pool] = [stage for stage in result.stages if stage.name == "candidate pool"]
        texts = {row["id"]: row["text"] for row in pool.rows}
        assert texts[ids["normal"]] == "the normal heron nests by the lake"
        assert (texts[ids["private"]], texts[ids["sealed"]]) == ("[private]", "[sealed]")
        for name in ("private", "sealed", "team"):
            assert f"the {name} heron" not in explained
        with_private = recall(index, "heron lake", now, RecallOptions(include_private=True))
        assert "the private heron" in json.dumps(with_private.to_dict(explain=True))
    finally:
        index.close()
