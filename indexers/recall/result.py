"""What recall returns: the ranked candidates with their components, a trace of every stage
(for `--explain` and `--json --explain`) and the verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from memdir.archive_format.clock import format_time

from ..catalog import CatalogMemory
from .query import QueryAnalysis


class Stage(str, Enum):
    """The pipeline's stages, in order; the value is the name `--explain` and `--json` show."""

    QUERY = "query analysis"
    POOL = "candidate pool"
    FILTERS = "filters"
    DECAY = "decay"
    SCORE = "score"
    ACTIVATION = "activation"
    INTERFERENCE = "interference"
    GUARANTEED = "guaranteed slots"
    COUNTERWEIGHTS = "counterweights"
    DIVERSITY = "diversity"
    BUDGET = "budget"
    VERDICT = "verdict"  # the result's own field, so it leaves no trace


@dataclass
class Trace:
    """What one stage did: a row per candidate it looked at, and notes."""

    name: Stage
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name.value, "rows": self.rows, "notes": self.notes}


@dataclass
class Candidate:
    """A memory on its way through the pipeline (docs/RECALL.md: channels, components)."""

    memory: CatalogMemory
    channels: set[str] = field(default_factory=set)
    raw: dict[str, float] = field(default_factory=dict)
    components: dict[str, float] = field(default_factory=dict)
    status: str = ""
    weight: float = 1.0
    relevance: float = 0.0
    score: float = 0.0
    affect: dict[str, Any] = field(default_factory=dict)
    distilled: dict[str, Any] = field(default_factory=dict)  # indexers/distill.py, if any
    dropped: str | None = None
    note: str = ""
    # the memories just before and after it in its session, as iids (-1: none); set for the
    # results only (neighbours.py), for the context block's entries
    beside: tuple[int, int] = (-1, -1)

    @property
    def id(self) -> str:
        return self.memory.id

    def to_dict(self) -> dict[str, Any]:
        line = self.memory.line
        return {
            "id": self.memory.id,
            "text": self.memory.text,
            "score": round(self.score, 4),
            "relevance": round(self.relevance, 4),
            "components": {name: round(value, 4) for name, value in self.components.items()},
            "raw": {name: round(value, 4) for name, value in self.raw.items()},
            "status": self.status,
            "visibility": line.get("visibility", "normal"),
            "weight": self.weight,
            "source": line["source"],
            "created": line["created"],
            "type": line.get("type"),
            "session": line.get("session"),
            "channels": sorted(self.channels),
            "note": self.note,
        }


@dataclass
class RecallResult:
    analysis: QueryAnalysis
    now: datetime
    profile: str
    verdict: str
    results: list[Candidate]
    stages: list[Trace]
    milliseconds: float = 0.0
    over_budget: int = 0  # memories the verdict counted that the token budget left out

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "query": self.analysis.query,
            "now": format_time(self.now),
            "profile": self.profile,
            "verdict": self.verdict,
            "results": [candidate.to_dict() for candidate in self.results],
            "analysis": self.analysis.to_dict(),
            "milliseconds": round(self.milliseconds, 2),
            "over_budget": self.over_budget,
        }
        if explain:
            data["stages"] = [trace.to_dict() for trace in self.stages]
        return data
