"""`memdir context`: the per-prompt block — kinds, markers, budget, the verdict's say, privacy."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0_DT, shelf_lines

from memdir.archive_format import lifecycle
from memdir.archive_format.documents import estimate_tokens
from memdir.archive_format.memdir import Memdir
from memdir.usecases.prompt import prompt_context

PROMPT = "Does Sam take his coffee black, with sugar, before the deadline?"


@pytest.fixture
def stocked(hashed: Memdir) -> Memdir:
    lifecycle.teach(hashed, "Sam takes his coffee black, no sugar", T0_DT)
    lifecycle.teach(hashed, "The deadline is Friday the 12th", T0_DT, key="deadline")
    lifecycle.teach(hashed, "Sam's coffee grinder is a Comandante", T0_DT)
    lifecycle.infer(hashed, "Sam might take his coffee black with sugar after all", T0_DT,
                    ttl=timedelta(days=7))  # fmt: skip
    lifecycle.teach(hashed, "Sam's coffee sugar debt is private", T0_DT, visibility="private")
    lifecycle.teach(hashed, "Sam's sealed coffee sugar secret", T0_DT, visibility="sealed")
    return hashed


def test_the_block_has_facts_memories_and_unconfirmed_items_with_ids_and_markers(
    stocked: Memdir,
) -> None:
    found = prompt_context(stocked, PROMPT, T0_DT, record=False)
    assert found.verdict == "GROUNDED"
    kinds = {entry.kind: entry for entry in found.entries}
    assert kinds["fact"].key == "deadline" and kinds["fact"].marker == "teaching"
    assert kinds["memory"].marker == "teaching"
    assert kinds["review"].marker.startswith("inference, provisional ×")
    text = found.markdown()
    for entry in found.entries:
        assert f"({entry.id}, {entry.marker})" in text
    assert text.index("Hard facts") < text.index("Relevant memories") < text.index("Unconfirmed")
    assert "private" not in text and "sealed" not in text
    assert found.to_dict()["text"] == text and found.to_dict()["tokens"] == estimate_tokens(text)


@pytest.mark.parametrize("budget", [20, 45, 60, 90, 150, 400])
def test_the_block_stays_within_the_budget_and_counts_what_it_left_out(
    stocked: Memdir, budget: int
) -> None:
    everything = prompt_context(stocked, PROMPT, T0_DT, record=False)
    found = prompt_context(stocked, PROMPT, T0_DT, budget=budget, record=False)
    text = found.markdown()
    assert text == "" or estimate_tokens(text) <= budget
    assert len(found.entries) + found.left_out == len(everything.entries)
    if found.entries and found.left_out:
        assert f"{found.left_out} more left out" in text
    order = ["fact", "memory", "review"]
    kinds = [order.index(entry.kind) for entry in found.entries]
    assert kinds == sorted(kinds)


def test_nothing_relevant_prints_nothing_and_records_nothing(stocked: Memdir) -> None:
    found = prompt_context(stocked, "zebra quantum lattice", T0_DT)
    assert found.verdict != "GROUNDED" and found.markdown() == "" and found.entries == []
    assert not [line for line in shelf_lines(stocked) if line.get("kind") == "recall"]


def test_what_is_shown_is_recorded_as_a_recall(stocked: Memdir) -> None:
    found = prompt_context(stocked, PROMPT, T0_DT)
    [line] = [line for line in shelf_lines(stocked) if line.get("kind") == "recall"]
    assert line["memories"] == [entry.id for entry in found.entries]
