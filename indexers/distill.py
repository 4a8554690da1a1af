"""Distillation without an LLM: a type, importance, temporal class and relational impact for
every memory the user did not label, from the local embedder and a few rules.

Type (the taxonomy, docs/RECALL.md): each class has a handful of prototype sentences; a memory
takes the class whose prototypes its vector is closest to (the mean of the two best cosines),
when it leads the runner-up by at least MARGIN — else it stays untyped. Rules with clear cues
(a dose, a currency amount, an imperative "always/never …", a clock time with a weekday) win
over the embedding. Temporal class follows the type (milestones, and ephemeral emotions and
appointments), importance a base per type plus cues ("allergic", "never", "always"), relational
impact the people it names. Each annotation records its annotator and version and the
confidence (the margin, or 1 for a rule); it is derived state, kept in the index and recomputed
by `memdir distill --recompute`; what the user gave always wins (`effective`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

ANNOTATOR = "memdir-distill"
VERSION = "1"
MARGIN = 0.02  # the best class must lead the runner-up by this much mean cosine
MIN_COSINE = 0.2  # below this the memory is about nothing the taxonomy knows

PROTOTYPES: dict[str, tuple[str, ...]] = {
    "FACT:preference": (
        "I love eating sushi", "My favourite film is Casablanca", "I don't like crowded places",
        "I prefer the mountains to the beach", "I hate cold showers", "I'd rather read than watch TV",
    ),
    "FACT:personal": (
        "I live in Madrid", "I work as a nurse", "I was born in 1990", "I have a dog",
        "I am allergic to cats", "I studied biology at university",
    ),
    "PERSON": (
        "My brother is a pilot", "My friend Clara lives in Rome", "My mother is a teacher",
        "My colleague Sam works in sales", "My wife loves gardening", "Our neighbour has three kids",
    ),
    "EMOTION": (
        "I feel so sad today", "I'm really stressed out", "I am happy and excited",
        "I feel angry about it", "I'm worried and anxious", "I feel lonely tonight",
    ),
    "MILESTONE": (
        "We got married", "I graduated from college", "Our baby was born", "I started a new job",
        "We bought a house", "My grandfather died", "I retired last year",
    ),
    "DATE:appointment": (
        "Doctor appointment on Monday at 10 am", "Meeting on Thursday at 3 pm",
        "My flight is on the 4th at noon", "The electrician comes tomorrow at 9",
        "Dinner booked for Saturday at 8 pm", "Exam on the 12th of May",
    ),
    "MEDICATION": (
        "I take 20 mg of citalopram daily", "I use an inhaler for my asthma",
        "I take pills for my blood pressure", "My doctor prescribed antibiotics",
        "I take vitamin supplements", "I inject insulin",
    ),
    "RULE": (
        "Always reply in Spanish", "Never wake me before eight", "Don't mention politics",
        "Please keep it brief", "Do not book anything without asking me", "Call me by my nickname",
    ),
    "HOWTO": (
        "To restart the heater, press the reset button", "The key is hidden under the mat",
        "To clean the filter, rinse it under the tap", "You open the gate with code 1234",
        "To install it, run the setup script", "To get there, take the number 5 bus",
    ),
    "FINANCIAL": (
        "The rent is 800 dollars a month", "I owe my friend 50 euros", "My salary arrives on the 28th",
        "The insurance costs 300 a year", "I have 5,000 in savings", "The phone bill is 20 a month",
    ),
    "EVENT": (
        "We went to the beach yesterday", "Last weekend we visited my parents",
        "I watched a great film last night", "We had a barbecue on Saturday",
        "Today I went for a long run", "We played football in the park",
    ),
}  # fmt: skip

TEMPORAL = {"MILESTONE": "milestone", "EMOTION": "ephemeral", "DATE": "ephemeral"}
IMPORTANCE = {"MEDICATION": 8, "MILESTONE": 8, "RULE": 7, "PERSON": 6, "DATE": 6,
              "FINANCIAL": 6, "FACT": 5, "HOWTO": 5, "EVENT": 4, "EMOTION": 4}  # fmt: skip
_VITAL = re.compile(r"\b(allerg\w*|epipen|emergency|never|always|must|password|diagnos\w*)\b", re.I)
_RELATION = re.compile(
    r"\b(mum|mom|mother|dad|father|parents?|sister|brother|son|daughter|wife|husband|partner|"
    r"friend|boss|colleague|neighbou?r|aunt|uncle|cousin|nephew|niece|grand\w+|girlfriend|"
    r"boyfriend|kids?|children|family|therapist|landlord)\b",
    re.I,
)
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("MEDICATION", re.compile(
        r"\b\d+\s?(mg|mcg|micrograms?|ml)\b|\b(pills?|tablets?|inhaler|insulin|antibiotics?|"
        r"prescri\w+|medication|medicine|dose)\b", re.I)),
    ("FINANCIAL", re.compile(
        r"[€$£]\s?\d|\b\d[\d,.]*\s?(euros?|dollars?|pounds?|eur|usd|gbp)\b|\b(salary|rent|mortgage|"
        r"loan|savings|bill|budget|owe|lent|pension)\b", re.I)),
    ("RULE", re.compile(r"^(please\s+)?(always|never|don'?t|do not|use|reply|address|keep)\b", re.I)),
    ("PERSON", re.compile(r"^(my|our)\s+(best\s+|oldest\s+)?" + _RELATION.pattern[2:], re.I)),
    ("DATE:appointment", re.compile(
        r"\b(appointment|booked|reservation|meeting|interview|check-up|session)\b.*\b(at \d|on \w+day|"
        r"\d{1,2}(:\d\d)?\s?(am|pm)|tomorrow|next \w+)|\b(on|next) \w+day\b.*\bat \d", re.I)),
)  # fmt: skip


@dataclass(frozen=True)
class Distillation:
    """What the distiller derived for one memory (type None: no class was clear enough)."""

    type: str | None
    subtype: str | None
    importance: int
    temporal: str
    relational: float  # 0 (about no one) … 1 (about the user's people, with feeling)
    confidence: float
    annotator: str = f"{ANNOTATOR}/{VERSION}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def label(self) -> str | None:
        if self.type is None:
            return None
        return f"{self.type}:{self.subtype}" if self.subtype else self.type


class Distiller:
    """Nearest-prototype classification on an embedder's vectors, plus the rules."""

    def __init__(self, embedder: Any) -> None:
        import numpy as np

        self.labels = list(PROTOTYPES)
        texts = [text for label in self.labels for text in PROTOTYPES[label]]
        self.owner = np.asarray([i for i, label in enumerate(self.labels)
                                 for _ in PROTOTYPES[label]])  # fmt: skip
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        self.prototypes = vectors / np.maximum(
            np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12
        )

    def distill(self, texts: Sequence[str], vectors: np.ndarray) -> list[Distillation]:
        """One distillation per text; `vectors` are the texts' embeddings (rows aligned)."""
        import numpy as np

        if not len(texts):
            return []
        matrix = np.asarray(vectors, dtype=np.float32)
        matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        cosines = matrix @ self.prototypes.T
        per_class = np.full((len(texts), len(self.labels)), -1.0, dtype=np.float32)
        for index in range(len(self.labels)):
            mine = np.sort(cosines[:, self.owner == index], axis=1)[:, -2:]
            per_class[:, index] = mine.mean(axis=1)
        found = []
        for row, text in enumerate(texts):
            order = np.argsort(-per_class[row])
            best, second = float(per_class[row, order[0]]), float(per_class[row, order[1]])
            label: str | None = self.labels[int(order[0])]
            confidence = round(best - second, 4)
            if best < MIN_COSINE or best - second < MARGIN:
                label = None
            ruled = next((name for name, pattern in _RULES if pattern.search(text)), None)
            if ruled is not None:
                label, confidence = ruled, 1.0
            found.append(_describe(text, label, confidence))
        return found


def _describe(text: str, label: str | None, confidence: float) -> Distillation:
    kind, _, subtype = (label or "").partition(":")
    importance = IMPORTANCE.get(kind, 5) + (2 if _VITAL.search(text) else 0)
    people = len(_RELATION.findall(text))
    relational = min(1.0, 0.5 * people + (0.3 if people and kind == "EMOTION" else 0.0))
    return Distillation(
        type=kind or None,
        subtype=subtype or None,
        importance=max(1, min(10, importance)),
        temporal=TEMPORAL.get(kind, "persistent"),
        relational=round(relational, 2),
        confidence=confidence,
    )


def effective(line: Mapping[str, Any], distilled: Mapping[str, Any] | None) -> dict[str, Any]:
    """A memory's type, subtype, importance and temporal class: what the user gave, else the
    distillation's (a line's defaults, importance 5 and `persistent`, count as not given)."""
    distilled = distilled or {}
    given_type = line.get("type")
    return {
        "type": given_type or distilled.get("type"),
        "subtype": line.get("subtype") if given_type else distilled.get("subtype"),
        "importance": line.get("importance", 5)
        if line.get("importance", 5) != 5
        else distilled.get("importance", 5),
        "temporal": line.get("temporal", "persistent")
        if line.get("temporal", "persistent") != "persistent"
        else distilled.get("temporal", "persistent"),
    }
