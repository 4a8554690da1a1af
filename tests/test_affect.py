"""Tests for indexers.affect: annotators, chord, arousal, serialisation, resonance, cold start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.indexers.affect import (
    PLUTCHIK,
    Affect,
    annotate_many,
    is_strongly_negative,
    load_annotator,
    resonance,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
NEUTRAL = "The meeting is at 3pm."
CALM = "I feel calm and relaxed today."
FURIOUS = "I'm FURIOUS, they lied to me again!!!"


@pytest.fixture(scope="module")
def annotator():
    return load_annotator("vader+nrc")  # the chord's tests need the NRC lexicon (the nrc extra)


def top_emotion(affect: Affect) -> str:
    return max(affect.chord, key=lambda emotion: affect.chord[emotion])


@pytest.mark.parametrize(
    "text", ["I love this, what a wonderful day!", "Thanks, that was really helpful."]
)
def test_positive_text_has_positive_valence(annotator, text):
    assert annotator.annotate(text).valence > 0.3


@pytest.mark.parametrize("text", ["This is terrible, I hate it.", FURIOUS, "I feel so sad."])
def test_negative_text_has_negative_valence(annotator, text):
    assert annotator.annotate(text).valence < -0.3


def test_neutral_text_is_neutral_and_calm(annotator):
    affect = annotator.annotate(NEUTRAL)
    assert affect.valence == 0.0
    assert affect.arousal < 0.1
    assert not any(affect.chord.values())


def test_arousal_orders_neutral_calm_furious(annotator):
    neutral, calm, furious = annotate_many([NEUTRAL, CALM, FURIOUS], annotator)
    assert neutral.arousal < calm.arousal < furious.arousal
    assert furious.arousal > 0.6


def test_shouting_and_exclamations_raise_arousal(annotator):
    plain = annotator.annotate("I'm furious, they lied to me again.")
    assert annotator.annotate(FURIOUS).arousal > plain.arousal


def test_acronyms_are_not_shouting(annotator):
    assert annotator.annotate("The API returns JSON over HTTP.").arousal == 0.0


def test_chord_picks_up_fear(annotator):
    affect = annotator.annotate("I'm terrified of the dark")
    assert affect.chord["fear"] == 1.0


def test_chord_picks_up_joy(annotator):
    affect = annotator.annotate("what a wonderful happy day")
    assert affect.chord["joy"] == 1.0
    assert affect.chord["anger"] == affect.chord["fear"] == 0.0


def test_chord_handles_inflections(annotator):
    assert annotator.annotate("They betrayed us").chord["anger"] > 0
    assert annotator.annotate("she cried all night").chord["sadness"] > 0


@pytest.mark.parametrize(
    ("negated", "plain"),
    [
        ("I am not happy", "I am happy"),
        ("I'm not very happy", "I'm very happy"),
        ("I don\u2019t feel happy", "I feel happy"),
        ("never happy", "always happy"),
        ("no fear at all", "fear at all"),
    ],
)
def test_negation_suppresses_emotion(annotator, negated, plain):
    assert not any(annotator.annotate(negated).chord.values())
    assert any(annotator.annotate(plain).chord.values())


def test_negation_scope_ends_at_clause_boundary(annotator):
    affect = annotator.annotate("Not today, but I am happy")
    assert affect.chord["joy"] == 1.0


def test_annotator_name_and_version(annotator):
    affect = annotator.annotate("hello")
    assert annotator.name == "vader+nrc"
    assert affect.annotator == f"{annotator.name}/{annotator.version}"


def test_vader_annotator_has_no_chord():
    vader = load_annotator("vader")
    affect = vader.annotate(FURIOUS)
    assert affect.annotator.startswith("vader/")
    assert affect.valence < -0.3
    assert affect.arousal > 0.5
    assert affect.chord == dict.fromkeys(PLUTCHIK, 0.0)


def test_none_annotator_is_neutral():
    affect = load_annotator("none").annotate(FURIOUS)
    assert affect == Affect(0.0, 0.0, dict.fromkeys(PLUTCHIK, 0.0), "none/1")


def test_unknown_annotator_lists_valid_names():
    with pytest.raises(ValueError) as error:
        load_annotator("liwc")
    for name in ("vader+nrc", "vader", "none"):
        assert repr(name) in str(error.value)


def test_is_strongly_negative(annotator):
    assert is_strongly_negative(annotator.annotate(FURIOUS))
    assert not is_strongly_negative(annotator.annotate(NEUTRAL))
    assert not is_strongly_negative(annotator.annotate(FURIOUS), threshold=-0.95)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_annotate_never_raises_and_ranges_hold(text):
    annotator = load_annotator("vader+nrc")
    affect = annotator.annotate(text)
    assert -1.0 <= affect.valence <= 1.0
    assert 0.0 <= affect.arousal <= 1.0
    assert tuple(affect.chord) == PLUTCHIK
    assert all(0.0 <= weight <= 1.0 for weight in affect.chord.values())
    assert max(affect.chord.values()) in (0.0, 1.0)
    assert annotator.annotate(text) == affect
    assert Affect.from_dict(affect.to_dict()) == affect


unit = st.floats(0.0, 1.0, allow_nan=False).map(lambda x: round(x, 4))
affects = st.builds(
    Affect,
    valence=st.floats(-1.0, 1.0, allow_nan=False).map(lambda x: round(x, 4)),
    arousal=unit,
    chord=st.fixed_dictionaries({emotion: unit for emotion in PLUTCHIK}),
    annotator=st.sampled_from(["vader+nrc/1", "vader/1", "none/1"]),
)


@given(affects)
def test_to_dict_from_dict_round_trip(affect):
    data = affect.to_dict()
    assert set(data) == {"valence", "arousal", "chord", "annotator"}
    assert Affect.from_dict(json.loads(json.dumps(data))) == affect


def test_from_dict_fills_missing_emotions():
    affect = Affect.from_dict(
        {"valence": 0.2, "arousal": 0.1, "chord": {"joy": 1}, "annotator": "x"}
    )
    assert affect.chord == {**dict.fromkeys(PLUTCHIK, 0.0), "joy": 1.0}


def test_out_of_range_values_are_rejected():
    with pytest.raises(ValueError):
        Affect(1.5, 0.0, dict.fromkeys(PLUTCHIK, 0.0), "x")
    with pytest.raises(ValueError):
        Affect(0.0, 0.0, {"joy": 1.0}, "x")


@given(affects, affects)
def test_resonance_is_symmetric_and_bounded(a, b):
    value = resonance(a, b)
    assert 0.0 <= value <= 1.0
    assert value == resonance(b, a)


@given(affects)
def test_resonance_of_identical_affects_is_one(affect):
    assert resonance(affect, affect) == pytest.approx(1.0)


def test_resonance_prefers_similar_moods(annotator):
    furious, angry, happy = annotate_many(
        [FURIOUS, "I'm so angry, this is outrageous!", "what a wonderful happy day"], annotator
    )
    assert resonance(furious, angry) > resonance(furious, happy)


def test_resonance_without_chord_uses_valence_arousal_only():
    zeros = dict.fromkeys(PLUTCHIK, 0.0)
    joyful = {**zeros, "joy": 1.0}
    a = Affect(0.5, 0.5, zeros, "vader/1")
    b = Affect(0.5, 0.5, joyful, "vader+nrc/1")
    assert resonance(a, b) == 1.0
    opposite = Affect(-1.0, 0.0, zeros, "vader/1")
    assert resonance(Affect(1.0, 1.0, zeros, "vader/1"), opposite) == pytest.approx(0.0)


def test_import_is_light():
    code = (
        "import indexers.affect, sys; "
        "print(sorted(m for m in ('numpy', 'nltk', 'textblob', 'vaderSentiment', 'nrclex') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
