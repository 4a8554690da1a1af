"""Decay: the closed form, rehearsal (recall hits and confirms) slowing it, emotional
modulation, invariance to how often sleep runs, `memdir decay`, and recall --perfect."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from conftest import T0_DT, configure
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.decay import fidelity, intensity
from memdir.archive_format.memdir import Memdir, init
from memdir.archive_format.settings import DecaySettings
from memdir.indexers.decay import describe, rehearsals

DEFAULT = DecaySettings()
DAY = 86400.0


def at(days: float = 0, hours: float = 0, minutes: float = 0) -> datetime:
    return T0_DT + timedelta(days=days, hours=hours, minutes=minutes)


def fast(memdir: Memdir) -> Memdir:
    """The same memdir with the lexical hashing embedder: relink and recall without the model."""
    return configure(memdir, embedder={"kind": "hashing", "path": None})


def test_the_closed_form_with_default_settings() -> None:
    week = fidelity(T0_DT, [], at(days=7), "episodic", 0.0, DEFAULT)
    assert week.value == pytest.approx(2**-0.5)  # t = S = 7 days, d = 0.5
    fact = fidelity(T0_DT, [], at(days=7), "semantic", 0.0, DEFAULT)
    assert fact.value == pytest.approx((1 + 7 / 30) ** -0.5)
    moving = fidelity(T0_DT, [], at(days=7), "episodic", 1.0, DEFAULT)
    assert moving.stability_days == pytest.approx(14.0)  # intensity 1 doubles S
    assert moving.value > week.value
    fresh = fidelity(T0_DT, [], T0_DT, "episodic", 0.0, DEFAULT)
    assert fresh.value == 1.0


moments = st.lists(st.floats(min_value=0, max_value=400, allow_nan=False), max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    days=moments,
    extra=st.floats(min_value=0, max_value=400, allow_nan=False),
    later=st.floats(min_value=0, max_value=800, allow_nan=False),
    store=st.sampled_from(("episodic", "semantic", "procedural")),
    emotion=st.floats(min_value=0, max_value=1),
)
def test_a_rehearsal_never_lowers_fidelity(days, extra, later, store, emotion) -> None:
    """Adding a rehearsal before *now* can only raise F; without one F only falls."""
    now = at(days=max([later, *days, extra])) + timedelta(seconds=1)  # after every rehearsal
    base = sorted(T0_DT.timestamp() + d * DAY for d in days)
    more = sorted([*base, T0_DT.timestamp() + extra * DAY])
    before = fidelity(T0_DT, base, now, store, emotion, DEFAULT)
    after = fidelity(T0_DT, more, now, store, emotion, DEFAULT)
    assert 0 < before.value <= 1 and after.value >= before.value - 1e-12
    assert after.rehearsals >= before.rehearsals
    later_still = fidelity(T0_DT, base, now + timedelta(days=3), store, emotion, DEFAULT)
    assert later_still.value <= before.value


@settings(max_examples=200, deadline=None)
@given(
    days=moments,
    linked=st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=400, allow_nan=False),
            st.floats(min_value=0, max_value=1),
        ),
        max_size=8,
    ),  # fmt: skip
    extra=st.tuples(
        st.floats(min_value=0, max_value=400, allow_nan=False),
        st.floats(min_value=0.01, max_value=1),
    ),  # fmt: skip
    store=st.sampled_from(("episodic", "semantic")),
)
def test_a_reactivation_never_lowers_fidelity(days, linked, extra, store) -> None:
    """Reactivation (a linked memory's rehearsal) can only raise F, never costs a rehearsal
    its count, and without any the closed form is the one without links."""
    now = at(days=max([*days, *(d for d, _ in linked), extra[0]])) + timedelta(seconds=1)
    base = sorted(T0_DT.timestamp() + d * DAY for d in days)
    partial = [(T0_DT.timestamp() + d * DAY, factor) for d, factor in linked]
    more = [*partial, (T0_DT.timestamp() + extra[0] * DAY, extra[1])]
    plain = fidelity(T0_DT, base, now, store, 0.0, DEFAULT)
    before = fidelity(T0_DT, base, now, store, 0.0, DEFAULT, partial)
    after = fidelity(T0_DT, base, now, store, 0.0, DEFAULT, more)
    assert fidelity(T0_DT, base, now, store, 0.0, DEFAULT, ()).value == plain.value
    assert plain.value - 1e-12 <= before.value <= after.value + 1e-12
    assert plain.rehearsals == before.rehearsals == after.rehearsals
    assert after.reactivated >= before.reactivated


NEUTRAL = {"valence": 0.0, "arousal": 0.0, "annotator": "user"}


def test_rehearsal_slows_decay_and_cramming_counts_once(md: Memdir) -> None:
    spaced = lifecycle.teach(md, "Ana's birthday is on the 3rd of March", at(), affect=NEUTRAL).id
    ignored = lifecycle.teach(md, "The office wifi is called Orion", at(), affect=NEUTRAL).id
    crammed = lifecycle.teach(md, "The bike lock code starts with 7", at(), affect=NEUTRAL).id
    confirmed = lifecycle.infer(
        md, "Sam prefers tea after lunch", at(), ttl=timedelta(days=9), affect=NEUTRAL
    ).id
    for day in (1, 3, 7):
        lifecycle.record_recall(md, [spaced], at(days=day))
    for minute in range(10):
        lifecycle.record_recall(md, [crammed], at(days=7, minutes=minute))
    lifecycle.confirm(md, confirmed, at(days=2))
    now = at(days=30)
    view = lifecycle.load_view(md, now)
    result = {mid: describe(md, view.states[mid].memory.to_line(), now)  # type: ignore[union-attr]
              for mid in (spaced, ignored, crammed, confirmed)}  # fmt: skip
    assert result[spaced]["rehearsals"] == 3 and result[spaced]["stability_days"] == 240
    assert result[crammed]["rehearsals"] == 1 and result[crammed]["stability_days"] == 60
    assert result[confirmed]["rehearsals"] == 1  # a confirm is a rehearsal
    assert result[ignored]["rehearsals"] == 0
    assert result[spaced]["fidelity"] > result[crammed]["fidelity"] > result[ignored]["fidelity"]
    assert result[confirmed]["fidelity"] > result[ignored]["fidelity"]
    assert result[ignored]["fidelity"] == pytest.approx((1 + 30 / 30) ** -0.5, abs=1e-4)
    # --now in the past sees only the rehearsals that had happened
    early = describe(md, view.states[spaced].memory.to_line(), at(days=2))  # type: ignore[union-attr]
    assert early["rehearsals"] == 1


def test_user_affect_modulates_decay(md: Memdir) -> None:
    calm = lifecycle.teach(md, "The meeting moved to room 4", at()).id
    moving = lifecycle.teach(md, "The day Biscuit came home", at(), affect={
        "valence": 0.9, "arousal": 0.8, "annotator": "user"}).id  # fmt: skip
    view = lifecycle.load_view(md, at(days=60))
    values = {mid: describe(md, view.states[mid].memory.to_line(), at(days=60))  # type: ignore[union-attr]
              for mid in (calm, moving)}  # fmt: skip
    assert values[moving]["affect_from"] == "user" and values[moving]["intensity"] == 0.9
    assert values[moving]["fidelity"] > values[calm]["fidelity"]


def build_history(root, sleep_every_hour: bool) -> Memdir:
    """The same two days of teaching, inferring, talking and recalling; sleep hourly or never."""
    from memdir.usecases.sleep import sleep

    memdir = fast(init(root, T0_DT)[0])
    talk = [
        (0, "user", "I ran 20 km this morning, my legs hurt!"),
        (2, "assistant", "Well done on the 20 km run."),
        (4, "user", "The run felt great after km 12."),
    ]

    def chat(h: int) -> None:
        turns = [journal.new_turn(at(hours=h, minutes=m), r, "s1", t) for m, r, t in talk]
        journal.add_turns(memdir, turns)

    def recall(*words: str) -> Callable[[int], object]:
        return lambda h: lifecycle.record_recall(memdir, ids(memdir, *words), at(hours=h))

    plan: dict[int, list[Callable[[int], object]]] = {
        0: [lambda h: lifecycle.teach(memdir, "I take my coffee black", at(hours=h), key="coffee"),
            lambda h: lifecycle.infer(memdir, "Sam is preparing a marathon", at(hours=h),
                                      ttl=timedelta(hours=20))],
        2: [chat],
        5: [recall("coffee")],
        9: [recall("coffee", "marathon")],
        30: [lambda h: lifecycle.teach(memdir, "Now oat milk", at(hours=h), key="coffee")],
        31: [recall("oat", "marathon")],
    }  # fmt: skip
    for hour in range(48):
        for step in plan.get(hour, []):
            step(hour)
        if sleep_every_hour:
            sleep(memdir, at(hours=hour, minutes=59))
    return memdir


def ids(memdir: Memdir, *words: str) -> list[str]:
    view = lifecycle.load_view(memdir, at(days=30))
    return [s.id for s in view if s.memory and any(w in s.memory.text for w in words)]


def by_text(memdir: Memdir, by_id: dict[str, Any]) -> dict[str, Any]:
    """`by_id` keyed by each memory's text instead of its id."""
    view = lifecycle.load_view(memdir, at(days=30))
    names = {memory_id: s.memory.text for memory_id, s in view.states.items() if s.memory}
    return {names.get(memory_id, memory_id): value for memory_id, value in by_id.items()}


def test_decay_is_the_same_whether_sleep_ran_hourly_or_once(tmp_path) -> None:
    from memdir.usecases.sleep import sleep

    hourly = build_history(tmp_path / "hourly", sleep_every_hour=True)
    once = build_history(tmp_path / "once", sleep_every_hour=False)
    sleep(once, at(hours=47, minutes=59))
    # the two histories are written apart, so each teaching has its own nonce (format 1.1) and
    # id: memories are matched by their text
    assert by_text(hourly, rehearsals(hourly)) == by_text(once, rehearsals(once))
    for now in (at(hours=48), at(days=9), at(days=90)):
        views = [lifecycle.load_view(m, now) for m in (hourly, once)]
        texts = [{s.memory.text: s for s in view.states.values() if s.memory} for view in views]
        common = sorted(set(texts[0]) & set(texts[1]))
        sources = {texts[0][text].memory.source for text in common}  # type: ignore[union-attr]
        # the dream's summary quotes the assistant, so it is an inference too (issue 12)
        assert len(common) == 4 and sources == {"teaching", "inference"}
        for text in common:
            a = describe(hourly, texts[0][text].memory.to_line(), now)  # type: ignore[union-attr]
            b = describe(once, texts[1][text].memory.to_line(), now)  # type: ignore[union-attr]
            assert a["fidelity"] == b["fidelity"] and a["rehearsals"] == b["rehearsals"]
    assert len(list((hourly.journal_dir / "entries").glob("*.md"))) >= 2  # it did really run


def test_cli_decay_shows_fidelity_and_a_falling_forecast(cli, md: Memdir) -> None:
    memory = lifecycle.teach(md, "The spare key is under the blue pot", at()).id
    done = cli("--dir", str(md.root), "decay", memory[:8], "--json", now="2026-05-15T09:00:00Z")
    assert done.code == 0, done
    data = json.loads(done.out)
    assert data["id"] == memory and data["elapsed_days"] == 14.0
    assert data["fidelity"] == pytest.approx((1 + 14 / 30) ** -0.5, abs=1e-4)
    forecast = [row["fidelity"] for row in data["forecast"]]
    assert forecast == sorted(forecast, reverse=True) and forecast[0] < data["fidelity"]
    assert data["recall_multiplier"] == pytest.approx(1 - 0.1 * (1 - data["fidelity"]), abs=1e-3)
    half = datetime.fromisoformat(data["below_half_at"].replace("Z", "+00:00"))
    assert half == at(days=90)  # S (1/0.25 - 1) = 30 × 3 days after writing
    text = cli("--dir", str(md.root), "decay", memory, now="2026-05-15T09:00:00Z")
    assert "fidelity 0.8" in text.out and "forecast" in text.out


def test_recall_multiplies_by_decay_and_perfect_ignores_it(md: Memdir) -> None:
    from memdir.indexers.recall import RecallOptions, Stage
    from memdir.usecases.recall import recall

    memdir = fast(md)
    old = lifecycle.teach(memdir, "We hiked the Rota Vicentina trail in Portugal", at()).id
    now = at(days=120)
    lifecycle.teach(memdir, "We hiked the Pennine Way trail in England", now - timedelta(days=1))
    plain = recall(memdir, "hiked trail", now, RecallOptions(k=5), record=False)
    perfect = recall(memdir, "hiked trail", now, RecallOptions(k=5, perfect=True), record=False)
    faded = next(c for c in plain.results if c.id == old)
    kept = next(c for c in perfect.results if c.id == old)
    assert kept.components["decay"] == 1.0
    expected = fidelity(T0_DT, [], now, "semantic", intensity(faded.affect), DEFAULT).value
    assert faded.components["decay"] == pytest.approx(expected)
    assert faded.score == pytest.approx(kept.score * (1 - 0.1 * (1 - faded.components["decay"])))
    stages = {stage.name: stage for stage in plain.stages}
    assert Stage.DECAY in stages and math.isfinite(faded.score)
    assert any("perfect" in note for note in {s.name: s for s in perfect.stages}[Stage.DECAY].notes)


def shelf_rehearsals(memdir: Memdir) -> dict[str, list[float]]:
    """Every memory's rehearsal times as a fold over the shelves, read from scratch."""
    from memdir.archive_format import shelf
    from memdir.archive_format.decay import rehearsal_times

    return rehearsal_times(item.data for path in memdir.shelves() for item in shelf.read(path))


def test_the_rehearsal_cache_is_a_fold_over_the_shelves(md: Memdir) -> None:
    """The index's rehearsal times (recall lines and confirm events, the one rehearsal cache)
    equal a fold over the shelves, incrementally and after a rebuild; recall and `memdir
    decay` read them, and a rehearsed memory fades less than an equal one that was not."""
    from memdir.indexers.index import MemoryIndex
    from memdir.indexers.recall import RecallOptions
    from memdir.usecases.recall import recall

    memdir = fast(md)
    rehearsed = lifecycle.teach(memdir, "We hiked the Rota Vicentina trail in Portugal", at()).id
    other = lifecycle.teach(memdir, "We hiked the Camino trail in Spain", at()).id
    guess = lifecycle.infer(memdir, "The user likes hiking trails", at()).id
    index = MemoryIndex(memdir)
    for day in (2, 9, 30):
        lifecycle.record_recall(memdir, [rehearsed], at(days=day))
        index.update()  # one recall line at a time
        assert index.rehearsals() == shelf_rehearsals(memdir)
    lifecycle.confirm(memdir, guess, at(days=3))
    now = at(days=60)
    result = recall(memdir, "hiked trail", now, RecallOptions(k=5), record=False)
    decay = {c.id: c.components["decay"] for c in result.results}
    assert decay[rehearsed] > decay[other]
    folded = shelf_rehearsals(memdir)
    assert len(folded[rehearsed]) == 3 and len(folded[guess]) == 1 and other not in folded
    assert index.rehearsals() == folded == rehearsals(memdir)
    assert index.rehearsals([rehearsed, other]) == {rehearsed: folded[rehearsed]}
    index.update(rebuild=True)
    assert index.rehearsals() == folded
    index.close()
    line = lifecycle.load_view(memdir, now).states[rehearsed].memory.to_line()  # type: ignore[union-attr]
    assert describe(memdir, line, now)["rehearsals"] == 3
    assert not (memdir.cache_dir / "rehearsals.json").exists()  # no second cache


def test_cli_decay_reads_rehearsals_from_the_shelves_without_building_an_index(
    cli, md: Memdir
) -> None:
    memory = lifecycle.teach(md, "The heron nests by the lake", T0_DT).id
    other = lifecycle.teach(md, "The bakery opens at seven", T0_DT).id
    for days in (1, 3):
        lifecycle.record_recall(md, [memory, other], at(days=days), "test")
    lifecycle.record_recall(md, [other], at(days=5), "test")
    done = cli("--dir", str(md.root), "decay", memory, "--json", now="2026-05-15T09:00:00Z")
    assert done.code == 0, done
    assert json.loads(done.out)["rehearsals"] == 2
    assert not (md.cache_dir / "index").exists(), "one memory's decay needs no index"
