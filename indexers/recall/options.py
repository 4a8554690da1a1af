"""How to recall: the caller's options, and what recall reads from memdir.yaml (in one place,
`read_settings`, once per recall)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta, tzinfo
from typing import Any

from memdir.archive_format.clock import local_zone, parse_duration
from memdir.archive_format.decay import DecaySettings

PROFILES: dict[str, dict[str, float]] = {
    # Tuned on the LoCoMo dev file (docs/RECALL.md): the six relevance components, light
    # importance and link-degree priors. Affect resonance and recency measured as a small loss
    # there (R@10 0.804 → 0.798), so they are 0 here; time is decay's job (rehearsal-aware).
    "default": {
        "semantic": 1.0, "bm25": 1.0, "context_semantic": 1.0, "context_bm25": 1.0,
        "speaker": 1.0, "session": 0.5, "affect": 0.0, "degree": 0.1, "recency": 0.0,
        "importance": 0.1, "keyword": 0.0, "half_life_days": 30.0,
    },
    # CAMA's blend: 0.45 semantic, 0.25 affect, 0.15 relational degree, 0.15 recency (30 days).
    "cama": {
        "semantic": 0.45, "affect": 0.25, "degree": 0.15, "recency": 0.15, "half_life_days": 30.0,
    },
    # ANIMA's blend: 0.60 similarity, 0.25 importance, 0.15 recency, keyword boost up to 0.15.
    "anima": {
        "semantic": 0.60, "importance": 0.25, "recency": 0.15, "keyword": 0.15,
        "half_life_days": 30.0,
    },
}  # fmt: skip

DEFAULT_CUTOFFS = {"emotion": "48h", "date": "168h", "financial": "168h"}
DEFAULT_HALF_LIVES = {"fact": 3650.0, "rule": 3650.0, "howto": 3650.0, "emotion": 2.0}
DEFAULT_VERDICT = {"grounded_cosine": 0.45, "weak_cosine": 0.25, "grounded_bm25": 4.0}


@dataclass(frozen=True)
class RecallOptions:
    """How to recall; the defaults are what `memdir recall QUERY` does."""

    k: int = 10
    profile: str | None = None
    include_expired: bool = False
    include_private: bool = False
    persona: str | None = None
    budget: int | None = None
    counterweights: bool = True
    mmr: bool = False
    pool: int = 30  # the best-scored memories that go on to the filters and priors (≥ 3·k)
    guaranteed_slots: int = 2
    perfect: bool = False  # ignore decay (`memdir recall --perfect`)


@dataclass(frozen=True)
class RecallSettings:
    """The settings one recall runs with (docs/RECALL.md names each)."""

    profile: str
    weights: dict[str, float]
    zone: tzinfo
    cutoffs: dict[str, timedelta]  # per type or subtype: older memories are dropped
    half_lives: dict[str, Any]  # per type, days (the recency prior)
    verdict: dict[str, Any]  # thresholds on raw cosine and BM25
    decay: DecaySettings


def read_settings(settings: dict[str, Any], profile: str | None) -> RecallSettings:
    """Everything recall reads from memdir.yaml's settings, over the defaults."""
    chosen, weights = profile_weights(settings, profile)
    cutoffs = {
        name: parse_duration(str(value))
        for name, value in {
            **DEFAULT_CUTOFFS,
            **(settings.get("recall", {}).get("cutoffs") or {}),
        }.items()
    }
    half_lives = {**DEFAULT_HALF_LIVES, **(settings.get("recall", {}).get("half_lives_days") or {})}
    verdict = dict(DEFAULT_VERDICT)
    verdict.update((settings.get("recall") or {}).get("verdict") or {})
    return RecallSettings(
        profile=chosen,
        weights=weights,
        zone=local_zone(settings),
        cutoffs=cutoffs,
        half_lives=half_lives,
        verdict=verdict,
        decay=DecaySettings.from_settings(settings),
    )


def profile_weights(settings: dict[str, Any], name: str | None) -> tuple[str, dict[str, float]]:
    """The named weight profile, with overrides from memdir.yaml (recall.profiles.NAME)."""
    recall_settings = settings.get("recall") or {}
    chosen = name or str(recall_settings.get("profile", "default"))
    custom = (recall_settings.get("profiles") or {}).get(chosen) or {}
    if chosen not in PROFILES and not custom:
        raise ValueError(f"unknown recall profile {chosen!r}; known: {', '.join(PROFILES)}")
    weights = {
        **PROFILES.get(chosen, PROFILES["default"]),
        **{k: float(v) for k, v in custom.items()},
    }
    return chosen, weights
