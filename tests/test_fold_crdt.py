"""The fold is a CRDT over lines (docs/FORMAT.md "Sync"): order, shelf and repetition of lines
do not change the state; the tombstone and same-second rules hold."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from conftest import T0, T0_DT
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.archive_format.fold import fold
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import Tombstone, new_event, new_memory

LATER = T0_DT + timedelta(days=1)
SAME = "2026-05-01T09:30:00Z"


def inference(text: str) -> dict[str, Any]:
    return new_memory(created=T0, text=text, source="inference", author="assistant",
                      store="semantic", expires="2026-05-08T09:00:00Z").to_line()  # fmt: skip


def event(op: str, target: str, at: str = SAME, **extra: Any) -> dict[str, Any]:
    return new_event(at=at, op=op, target=target, actor="user", **extra).to_line()


GUESS = inference("the user is vegetarian")
OTHER = inference("the user likes jazz")
GONE = new_memory(created=T0, text="a secret", source="teaching", author="user",
                  store="semantic").to_line()  # fmt: skip
LINES = [
    GUESS,
    OTHER,
    GONE,
    event("confirm", GUESS["id"]),
    event("reject", GUESS["id"], reason="eats fish"),
    event("confirm", OTHER["id"], at="2026-05-01T09:10:00Z"),
    event("reject", OTHER["id"], at="2026-05-01T09:05:00Z", reason="no"),
    event("link", OTHER["id"], to=GUESS["id"], link_type="related"),
    Tombstone(GONE["id"], T0, SAME).to_line(),
]


def teaching(text: str, created: str = T0) -> dict[str, Any]:
    return new_memory(created=created, text=text, source="teaching", author="user",
                      store="semantic").to_line()  # fmt: skip


OLD = teaching("I love sushi")
NEW = teaching("I don't like sushi any more", "2026-05-01T09:20:00Z")
SUPERSEDES = [
    OLD,
    NEW,
    new_event(at=SAME, op="link", target=OLD["id"], actor="memdir", to=NEW["id"],
              link_type="superseded-by").to_line(),
    # an assistant's link of that type supersedes nothing (provenance)
    new_event(at=SAME, op="link", target=NEW["id"], actor="assistant", to=OLD["id"],
              link_type="superseded-by").to_line(),
]  # fmt: skip


def test_a_superseded_by_link_holds_while_its_successor_is_durable() -> None:
    states = fold(SUPERSEDES, LATER).states
    assert states[OLD["id"]].status == "superseded"
    assert states[OLD["id"]].superseded_by == NEW["id"]
    assert states[NEW["id"]].status == "durable"
    rejected = fold([*SUPERSEDES, event("reject", NEW["id"], at=SAME, reason="misspoke")], LATER)
    assert rejected.states[OLD["id"]].status == "durable"
    assert rejected.states[OLD["id"]].superseded_by is None
    both = new_event(at=SAME, op="link", target=NEW["id"], actor="user", to=OLD["id"],
                     link_type="compatible").to_line()  # fmt: skip
    assert fold([*SUPERSEDES, both], LATER).states[OLD["id"]].status == "durable"


@settings(max_examples=60, deadline=None)
@given(st.permutations(SUPERSEDES + LINES), st.lists(st.sampled_from(SUPERSEDES), max_size=4))
def test_supersede_links_fold_alike_in_any_order(order: list[dict[str, Any]], extra: list) -> None:
    assert summary([*order, *extra]) == summary(SUPERSEDES + LINES)


def summary(lines: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    return {
        state.id: (
            state.status,
            state.memory is None,
            state.durable_since,
            len(state.events),
            state.superseded_by,
        )
        for state in fold(lines, LATER)
    }


def test_the_rules() -> None:
    states = fold(LINES, LATER).states
    assert states[GUESS["id"]].status == "rejected"  # same second: reject beats confirm
    assert states[OTHER["id"]].status == "durable"  # a later confirm overrules a reject
    assert states[GONE["id"]].status == "forgotten" and states[GONE["id"]].memory is None


@settings(max_examples=60, deadline=None)
@given(st.permutations(LINES), st.lists(st.sampled_from(LINES), max_size=6))
def test_any_order_and_any_repeats_fold_alike(order: list[dict[str, Any]], extra: list) -> None:
    assert summary([*order, *extra]) == summary(LINES)


def test_a_redacted_copy_of_an_event_wins_over_the_original() -> None:
    reject = event("reject", GONE["id"], reason="it quotes the secret")
    redacted = {**reject, "redacted": True}
    redacted.pop("reason")
    for lines in ([reject, redacted], [redacted, reject]):
        (only,) = fold([GONE, *lines], LATER).states[GONE["id"]].events
        assert only.redacted and only.reason is None
    assert replace(only, redacted=False).id == reject["id"]


def test_the_next_writer_removes_forgotten_text_appended_after_the_forget(md: Memdir) -> None:
    from memdir.archive_format import lifecycle, shelf

    taught = lifecycle.teach(md, "the alarm code is 1234", T0_DT)
    original = next(
        raw for raw in md.memory_shelf.read_bytes().splitlines(True) if taught.id.encode() in raw
    )
    lifecycle.forget(md, taught.id, T0_DT)
    with open(md.memory_shelf, "ab") as handle:  # as a union merge or a sync tool would
        handle.write(original)
    assert b"alarm code" in md.memory_shelf.read_bytes()
    lifecycle.teach(md, "something else", T0_DT)  # any command that takes the writer lock
    assert b"alarm code" not in md.memory_shelf.read_bytes()
    kinds = [item.data["kind"] for item in shelf.read(md.memory_shelf)]
    assert kinds.count("tombstone") == 1
