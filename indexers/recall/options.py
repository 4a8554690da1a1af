"""How to recall: the caller's options, and what recall reads from memdir.yaml (in one place,
`read_settings`, once per recall)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta, tzinfo

from memdir.archive_format.errors import BadInputError
from memdir.archive_format.settings import DecaySettings, RecallSettings, Settings, VerdictSettings

_DEFAULT = {
    "semantic": 1.0, "bm25": 1.0, "context_semantic": 1.0, "context_bm25": 1.0,
    "speaker": 1.0, "session": 0.5, "when": 2.0, "meta_bm25": 0.25,
    "affect": 0.0, "degree": 0.1, "recency": 0.0,
    "importance": 0.1, "keyword": 0.0, "use": 0.0, "half_life_days": 30.0, "questions": 0.4,
}  # fmt: skip
PROFILES: dict[str, dict[str, float]] = {
    # Tuned on the LoCoMo and REALTALK dev files (docs/RECALL.md): the relevance components, light
    # importance and link-degree priors. Affect resonance and recency measured as a small loss
    # there (R@10 0.804 → 0.798), so they are 0 here; time is decay's job (rehearsal-aware).
    # meta_bm25 (intent, rationale, evidence) is small: the dev files carry no meta-memory, so
    # it leaves their rankings exactly as they were (measured), and it only tips a tie.
    # `questions` is no component: the text components of a memory that is mostly questions
    # are × (1 − questions) (relevance.demote_questions; measured on both dev files).
    "default": _DEFAULT,
    # The quality setup (docs/RECALL.md): the default with the dense components weighted up,
    # for the larger embedder (embedder.mpnet), whose cosines measured more telling.
    "quality": {**_DEFAULT, "semantic": 1.5, "context_semantic": 1.5},
    # Learned fusion (benchmarks/fit_fusion.py, BENCHMARKS.md "Issue 27"): the blend fitted by
    # coordinate ascent on the LoCoMo and REALTALK dev questions, leave-one-conversation-out CV.
    # Dense up, lexical and session down, the named speaker and the time window up. On REALTALK
    # val (people the fit never saw) R@5 +0.025 [+0.002, +0.050]; on LoCoMo it costs single-hop
    # 0.023 and the adversarial questions (which name the wrong person) 0.26, so it is a profile
    # for real conversations between people, not the default.
    "fitted": {
        **_DEFAULT, "semantic": 3.0, "bm25": 0.75, "context_semantic": 0.75,
        "context_bm25": 0.75, "speaker": 2.0, "session": 0.5, "when": 3.0, "importance": 0.0,
    },
    # CAMA's blend: 0.45 semantic, 0.25 affect, 0.15 relational degree, 0.15 recency (30 days),
    # each component min-max normalised over the candidates, as CAMA scores them.
    "cama": {
        "semantic": 0.45, "affect": 0.25, "degree": 0.15, "recency": 0.15, "half_life_days": 30.0,
        "minmax": 1.0,
    },
    # ANIMA's blend: 0.60 similarity, 0.25 importance, 0.15 recency, keyword boost up to 0.15.
    "anima": {
        "semantic": 0.60, "importance": 0.25, "recency": 0.15, "keyword": 0.15,
        "half_life_days": 30.0,
    },
}  # fmt: skip


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
    interference: float | None = None  # human recall's noise (None: recall.interference)
    seed: int = 0  # the interference draws' seed
    island: str | None = None  # `--island NAME`: recall only among `members`
    members: frozenset[str] | None = None  # the island's live members (memdir/usecases/islands.py)

    @property
    def asked(self) -> frozenset[str]:
        """What the caller asked to see beyond the defaults, in visibility.py's words."""
        flags = (("private", self.include_private), ("expired", self.include_expired))
        return frozenset(name for name, on in flags if on)


@dataclass(frozen=True)
class RecallConfig:
    """What one recall runs with: memdir.yaml's settings (docs/FORMAT.md) and the chosen profile."""

    profile: str
    weights: dict[str, float]
    zone: tzinfo
    cutoffs: dict[str, timedelta]  # per type or subtype: older memories are dropped
    half_lives: dict[str, float]  # per type, days (the recency prior)
    verdict: VerdictSettings  # thresholds on raw cosine and BM25
    decay: DecaySettings
    provisional_weight: float
    distilled_cutoffs: bool  # the cut-offs also apply to distilled labels
    activation: bool = True  # spreading activation along typed links
    interference: float = 0.0  # human recall's noise among alike memories (interference.py)


def read_settings(settings: Settings, profile: str | None) -> RecallConfig:
    """Everything recall reads from memdir.yaml's settings, with the profile's weights."""
    chosen, weights = profile_weights(settings.recall, profile)
    return RecallConfig(
        profile=chosen,
        weights=weights,
        zone=settings.zone,
        cutoffs=settings.recall.cutoffs,
        half_lives=settings.recall.half_lives_days,
        verdict=settings.recall.verdict,
        decay=settings.decay,
        provisional_weight=settings.provisional_weight,
        distilled_cutoffs=settings.recall.distilled_cutoffs,
        activation=settings.recall.activation,
        interference=settings.recall.interference,
    )


def profile_weights(settings: RecallSettings, name: str | None) -> tuple[str, dict[str, float]]:
    """The named weight profile, with overrides from memdir.yaml (recall.profiles.NAME)."""
    chosen = name or settings.profile
    custom = settings.profiles.get(chosen) or {}
    if chosen not in PROFILES and not custom:
        raise BadInputError(
            f"unknown recall profile {chosen!r}",
            hint=f"use one of {', '.join(PROFILES)}, or define it under recall.profiles in memdir.yaml",
        )
    weights = {**PROFILES.get(chosen, PROFILES["default"]), **custom}
    if not 0 <= weights.get("questions", 0.0) <= 1:
        raise BadInputError(
            f"recall profile {chosen!r}: questions is {weights['questions']:g}, not between 0"
            " and 1", hint="it is the share of their text relevance mostly-questions memories"
            " lose: 0 keeps it all, 1 drops it (recall.profiles in memdir.yaml)",
        )  # fmt: skip
    return chosen, weights
