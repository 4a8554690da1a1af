"""Affect annotation: valence, arousal and a Plutchik emotion chord for a piece of text.

Affect feeds the recall score (resonance between the query's mood and a memory's mood) and the
counterweights for strongly negative queries.  Annotation is lexicon based, offline and cheap:

- valence: the VADER compound score (-1..1);
- chord: counts of the eight Plutchik emotions over the words of the text, looked up in the NRC
  Emotion Lexicon file bundled with ``nrclex`` (read directly; the raw-text API of ``nrclex``
  would need a TextBlob corpus download), normalised so the strongest emotion weighs 1;
- arousal: a documented linear mix of VADER intensity, the arousal of the chord's emotions and
  typographic emphasis (see :func:`arousal_score`).

Heavy dependencies (vaderSentiment, nrclex) are imported lazily and their lexicons are loaded
once per process, so importing this module stays cheap (cold-start rule).  Every
:class:`Affect` records the annotator name and version, so stored annotations can be recomputed
when the annotator changes.  See docs/AFFECT.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from .text import AFFECT_NEGATORS

PLUTCHIK = ("joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation")

#: How arousing each emotion is (Russell's circumplex, coarsely): 1 high, 0.5 mid, 0 low.
EMOTION_AROUSAL: dict[str, float] = {
    "anger": 1.0,
    "fear": 1.0,
    "surprise": 1.0,
    "joy": 1.0,
    "anticipation": 1.0,
    "disgust": 0.5,
    "sadness": 0.0,
    "trust": 0.0,
}

#: Weights of the arousal mix; they sum to 1.
AROUSAL_WEIGHTS: dict[str, float] = {
    "intensity": 0.3,  # |VADER compound|
    "sentiment_share": 0.1,  # VADER pos + neg: share of the text that carries sentiment
    "chord": 0.3,  # arousal of the emotions in the chord
    "emphasis": 0.3,  # exclamation marks and ALL-CAPS sentiment words
}

#: Share of the valence/arousal closeness in :func:`resonance` when both chords are non-zero.
RESONANCE_VA_WEIGHT = 0.5

#: Words after a negator that are negated, unless a clause boundary comes first.
NEGATION_SCOPE = 3

_CLAUSE_BREAKS = frozenset({".", ",", ";", ":", "!", "?", "but", "however"})

#: Common chat forms missing from the NRC lexicon, mapped to the NRC headword whose emotions
#: they share.  Regular inflections are handled by :func:`_lemma_candidates` instead.
_ALIASES: dict[str, str] = {
    "terrified": "terror",
    "terrifying": "terror",
    "terrifies": "terror",
    "scared": "afraid",
    "scary": "afraid",
    "sad": "sadly",
    "sadder": "sadly",
    "saddest": "sadly",
    "happier": "happy",
    "happiest": "happy",
    "angrier": "angry",
    "angriest": "angry",
    "lying": "lie",
    "dead": "die",
    "bored": "boredom",
}

_SUFFIX_RULES: tuple[tuple[str, str], ...] = (
    ("'s", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("es", ""),
    ("s", ""),
    ("ed", ""),
    ("ed", "e"),
    ("d", ""),
    ("ing", ""),
    ("ing", "e"),
    ("ly", ""),
)

_TOKEN_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*|[.,;:!?]")
_MIN_STEM = 3


@dataclass(frozen=True)
class Affect:
    """The affect of one text.

    ``valence`` is in -1..1, ``arousal`` in 0..1, ``chord`` maps all eight :data:`PLUTCHIK`
    emotions to weights in 0..1 (all zero when the text has no emotion words) and ``annotator``
    is ``"name/version"`` of what produced it.
    """

    valence: float
    arousal: float
    chord: dict[str, float] = field(hash=False)
    annotator: str

    def __post_init__(self) -> None:
        if not -1.0 <= self.valence <= 1.0:
            raise ValueError(f"valence must be in [-1, 1], got {self.valence!r}")
        if not 0.0 <= self.arousal <= 1.0:
            raise ValueError(f"arousal must be in [0, 1], got {self.arousal!r}")
        if set(self.chord) != set(PLUTCHIK):
            raise ValueError(
                f"chord must have exactly the keys {PLUTCHIK}, got {sorted(self.chord)}"
            )
        for emotion, weight in self.chord.items():
            if not 0.0 <= weight <= 1.0:
                raise ValueError(f"chord[{emotion!r}] must be in [0, 1], got {weight!r}")

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form, floats rounded to 4 decimals, chord in PLUTCHIK order."""
        return {
            "valence": round(self.valence, 4),
            "arousal": round(self.arousal, 4),
            "chord": {emotion: round(self.chord[emotion], 4) for emotion in PLUTCHIK},
            "annotator": self.annotator,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Affect:
        """Rebuild an Affect from :meth:`to_dict` output; missing chord emotions count as 0."""
        chord = d.get("chord") or {}
        return cls(
            valence=float(d["valence"]),
            arousal=float(d["arousal"]),
            chord={emotion: float(chord.get(emotion, 0.0)) for emotion in PLUTCHIK},
            annotator=str(d["annotator"]),
        )


class Annotator(Protocol):
    """Anything that turns text into an :class:`Affect`."""

    name: str
    version: str

    def annotate(self, text: str) -> Affect: ...


def _zero_chord() -> dict[str, float]:
    return dict.fromkeys(PLUTCHIK, 0.0)


def _clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


@lru_cache(maxsize=1)
def _vader() -> Any:
    """The VADER analyser, built once per process."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


@lru_cache(maxsize=1)
def _nrc_lexicon() -> dict[str, tuple[str, ...]]:
    """The NRC lexicon bundled with nrclex, reduced to Plutchik emotions, loaded once.

    The JSON file is read directly (the same file ``nrclex.NRCLex`` loads) so no TextBlob or NLTK
    corpus is involved.  Words associated only with NRC's "positive"/"negative" are dropped.
    """
    from importlib import resources

    _require_nrc()
    data = resources.files("nrclex.data").joinpath("nrc_en.json").read_text(encoding="utf-8")
    raw: dict[str, list[str]] = json.loads(data)
    plutchik = set(PLUTCHIK)
    lexicon: dict[str, tuple[str, ...]] = {}
    for word, emotions in raw.items():
        kept = tuple(emotion for emotion in emotions if emotion in plutchik)
        if kept:
            lexicon[word] = kept
    return lexicon


def _require_nrc() -> None:
    """The NRC lexicon comes with the `nrc` extra; without it, one line says how to install it
    or to choose the licence-clean default instead."""
    from memdir.archive_format.extras import require

    require("nrc", "affect.annotator: vader+nrc",
            instead="set affect: {annotator: vader} in memdir.yaml (no chord, no NRC licence)")  # fmt: skip


def _lemma_candidates(word: str) -> Iterable[str]:
    """Yield ``word``, its alias, then lemmas from simple suffix rules (3+ letters each)."""
    yield word
    alias = _ALIASES.get(word)
    if alias is not None:
        yield alias
    for suffix, replacement in _SUFFIX_RULES:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if len(stem + replacement) >= _MIN_STEM:
                yield stem + replacement
                if replacement == "" and len(stem) > _MIN_STEM and stem[-1] == stem[-2]:
                    yield stem[:-1]  # stopped -> stop, upsetting -> upset


def _lookup(word: str, lexicon: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    for candidate in _lemma_candidates(word):
        emotions = lexicon.get(candidate)
        if emotions is not None:
            return emotions
    return ()


def _is_negator(word: str) -> bool:
    return word in AFFECT_NEGATORS or word.endswith("n't")


def tokenize(text: str) -> list[str]:
    """Split text into words (case kept, apostrophes inside words kept) and clause punctuation."""
    return _TOKEN_RE.findall(text.replace("\u2019", "'"))


def unnegated_words(tokens: Iterable[str]) -> list[str]:
    """Lowercase words of ``tokens`` that are neither negators nor inside a negation's scope.

    A negator ("not", "no", "never", "don't", ...) negates the next :data:`NEGATION_SCOPE` words
    unless a clause boundary (punctuation, "but", "however") comes first.  Negated words are
    dropped rather than flipped: "not happy" carries no joy, but it does not carry sadness either.
    """
    kept: list[str] = []
    remaining_scope = 0
    for token in tokens:
        word = token.lower()
        if word in _CLAUSE_BREAKS:
            remaining_scope = 0
            continue
        if _is_negator(word):
            remaining_scope = NEGATION_SCOPE
            continue
        if remaining_scope > 0:
            remaining_scope -= 1
            continue
        kept.append(word)
    return kept


def emotion_chord(tokens: Iterable[str]) -> dict[str, float]:
    """Count Plutchik emotions of the non-negated words, scaled so the strongest weighs 1."""
    lexicon = _nrc_lexicon()
    counts = _zero_chord()
    for word in unnegated_words(tokens):
        for emotion in _lookup(word, lexicon):
            counts[emotion] += 1.0
    strongest = max(counts.values())
    if strongest == 0.0:
        return counts
    return {emotion: count / strongest for emotion, count in counts.items()}


def chord_arousal(chord: Mapping[str, float]) -> float | None:
    """Weighted mean of :data:`EMOTION_AROUSAL` over the chord; None for an all-zero chord."""
    total = sum(chord.values())
    if total <= 0.0:
        return None
    return sum(weight * EMOTION_AROUSAL[emotion] for emotion, weight in chord.items()) / total


def emphasis(text: str, tokens: Iterable[str], sentiment_words: Mapping[str, Any]) -> float:
    """Typographic emphasis in 0..1: 0.25 per "!" (up to 3) + 0.25 per shouted word (up to 2).

    A shouted word is an ALL-CAPS word of 3+ letters that is in the VADER sentiment lexicon, so
    acronyms such as "API" or "JSON" do not count as shouting.
    """
    exclamations = min(text.count("!"), 3)
    shouted = sum(
        1
        for token in tokens
        if len(token) >= _MIN_STEM
        and token.isalpha()
        and token.isupper()
        and token.lower() in sentiment_words
    )
    return min(1.0, 0.25 * exclamations + 0.25 * min(shouted, 2))


def arousal_score(
    compound: float, sentiment_share: float, chord: Mapping[str, float], emphasis_level: float
) -> float:
    """Arousal in 0..1 as a linear mix (weights in :data:`AROUSAL_WEIGHTS`) of

    - intensity ``|compound|`` (strong feelings tend to be aroused),
    - ``sentiment_share`` = VADER pos + neg (how much of the text is sentiment-laden),
    - :func:`chord_arousal` (anger/fear/surprise/joy/anticipation high, disgust mid,
      sadness/trust low); with no emotion words it falls back to ``0.5 * intensity``,
    - ``emphasis_level`` (exclamation marks, shouted words).
    """
    intensity = abs(compound)
    from_chord = chord_arousal(chord)
    if from_chord is None:
        from_chord = 0.5 * intensity
    value = (
        AROUSAL_WEIGHTS["intensity"] * intensity
        + AROUSAL_WEIGHTS["sentiment_share"] * sentiment_share
        + AROUSAL_WEIGHTS["chord"] * from_chord
        + AROUSAL_WEIGHTS["emphasis"] * emphasis_level
    )
    return _clip(value, 0.0, 1.0)


def _rounded(valence: float, arousal: float, chord: Mapping[str, float], annotator: str) -> Affect:
    """Build an Affect with 4-decimal floats so that ``from_dict(to_dict(a)) == a``."""
    return Affect(
        valence=round(_clip(valence, -1.0, 1.0), 4),
        arousal=round(_clip(arousal, 0.0, 1.0), 4),
        chord={emotion: round(_clip(chord[emotion], 0.0, 1.0), 4) for emotion in PLUTCHIK},
        annotator=annotator,
    )


def _vader_affect(text: str, with_chord: bool, annotator: str) -> Affect:
    analyser = _vader()
    scores = analyser.polarity_scores(text)
    compound = float(scores["compound"])
    share = _clip(float(scores["pos"]) + float(scores["neg"]), 0.0, 1.0)
    tokens = tokenize(text)
    chord = emotion_chord(tokens) if with_chord else _zero_chord()
    arousal = arousal_score(compound, share, chord, emphasis(text, tokens, analyser.lexicon))
    return _rounded(compound, arousal, chord, annotator)


class VaderNrcAnnotator:
    """Valence and arousal from VADER, emotion chord from the NRC Emotion Lexicon."""

    name: str = "vader+nrc"
    version: str = "1"

    def __init__(self) -> None:
        _require_nrc()  # before an index rebuild starts, not in the middle of one

    def annotate(self, text: str) -> Affect:
        return _vader_affect(text, with_chord=True, annotator=f"{self.name}/{self.version}")


class VaderAnnotator:
    """Valence and arousal from VADER only; the chord stays all zero (no NRC lexicon used)."""

    name: str = "vader"
    version: str = "1"

    def annotate(self, text: str) -> Affect:
        return _vader_affect(text, with_chord=False, annotator=f"{self.name}/{self.version}")


class NoAnnotator:
    """Affect switched off: every text is neutral (all zeros)."""

    name: str = "none"
    version: str = "1"

    def annotate(self, text: str) -> Affect:
        return Affect(0.0, 0.0, _zero_chord(), f"{self.name}/{self.version}")


_ANNOTATORS: dict[str, type[VaderNrcAnnotator | VaderAnnotator | NoAnnotator]] = {
    "vader+nrc": VaderNrcAnnotator,
    "vader": VaderAnnotator,
    "none": NoAnnotator,
}


def load_annotator(name: str = "vader") -> Annotator:
    """Return the annotator called ``name`` ("vader+nrc", "vader" or "none").

    Lexicons are loaded on first use, not here.  Raises ValueError for an unknown name.
    """
    annotator_class = _ANNOTATORS.get(name.strip().lower()) if isinstance(name, str) else None
    if annotator_class is None:
        valid = ", ".join(repr(known) for known in _ANNOTATORS)
        raise ValueError(f"unknown affect annotator {name!r}; valid names: {valid}")
    return annotator_class()


def annotate_many(texts: Iterable[str], annotator: Annotator) -> list[Affect]:
    """Annotate each text in order."""
    return [annotator.annotate(text) for text in texts]


def _cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    dot = sum(a[emotion] * b[emotion] for emotion in PLUTCHIK)
    norms = sum(a[e] * a[e] for e in PLUTCHIK) * sum(b[e] * b[e] for e in PLUTCHIK)
    if norms <= 0.0:
        return 0.0
    return _clip(dot / math.sqrt(norms), 0.0, 1.0)


def resonance(a: Affect, b: Affect) -> float:
    """How alike two affects feel, in 0..1 (symmetric; 1 for identical affects).

    - VA closeness = 1 - d, where d is the euclidean distance between (valence/2, arousal) points
      divided by sqrt(2), so both axes count equally and d lies in 0..1.
    - Chord similarity = cosine of the two chords (weights are non-negative, so 0..1).

    When both chords are non-zero the result is ``0.5 * VA closeness + 0.5 * chord similarity``
    (:data:`RESONANCE_VA_WEIGHT`); when either chord is all zero (no emotion words, or the
    "vader"/"none" annotators) only the VA closeness is used.
    """
    valence_gap = (a.valence - b.valence) / 2.0
    arousal_gap = a.arousal - b.arousal
    distance = math.sqrt(valence_gap * valence_gap + arousal_gap * arousal_gap) / math.sqrt(2.0)
    va_closeness = _clip(1.0 - distance, 0.0, 1.0)
    if not any(a.chord.values()) or not any(b.chord.values()):
        return va_closeness
    chord_similarity = _cosine(a.chord, b.chord)
    value = RESONANCE_VA_WEIGHT * va_closeness + (1.0 - RESONANCE_VA_WEIGHT) * chord_similarity
    return _clip(value, 0.0, 1.0)


def is_strongly_negative(a: Affect, threshold: float = -0.5) -> bool:
    """True when the valence is at or below ``threshold`` (triggers recall counterweights)."""
    return a.valence <= threshold
