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

from .text import RESTATEMENT_NEGATION

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


# what an automatic supersede may replace: states of affairs, which a newer one ends; events,
# milestones, feelings and appointments pile up instead (docs/CONTINUITY.md)
# cosine at or above which a restatement supersedes: on tests/fixtures/supersede-pairs.jsonl
# (benchmarks/supersede_threshold.py) 0.6 / 0.65 / 0.7 / 0.75 gave precision 0.885 / 0.909 /
# 1.000 / 1.000 at recall 0.767 / 0.667 / 0.533 / 0.500: a wrong supersede hides a true memory,
# a missed one leaves the old memory beside the new, so precision first
SUPERSEDE_COSINE = 0.7
SUPERSEDABLE = frozenset({"FACT", "PERSON", "MEDICATION", "RULE", "HOWTO", "FINANCIAL"})
_SAME_PERSON = {"mum": "mother", "mom": "mother", "dad": "father", "kid": "children",
                "kids": "children", "parent": "parents"}  # fmt: skip
_STARTERS = frozenset(
    "i i'm i've i'd my our we we're the a an this that these it it's he she they you your "
    "always never please don't do not to today yesterday tomorrow last next every on in at "
    "when if and but so now no yes there here what where who how after before since".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def subject(text: str) -> frozenset[str]:
    """Who a memory is about, for automatic supersede: the relations it names ("my sister"),
    a name right after one ("my friend Clara") and a name it opens with ("Clara works …");
    empty: the user. Places and things are not the subject — the cosine judges those."""
    words = _WORD.findall(text)
    found: set[str] = set()
    for position, word in enumerate(words):
        lower = word.lower()
        if _RELATION.fullmatch(lower):
            found.add(_SAME_PERSON.get(lower, lower))
        elif (
            word[0].isupper()
            and lower not in _STARTERS
            and (position == 0 or _RELATION.fullmatch(words[position - 1].lower()))
        ):
            found.add(lower)
    return frozenset(found)


_ADDITION = re.compile(r"\b(also|too|as well|another|besides|in addition|especially)\b", re.I)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9'’-]*", re.I)
_FILLER = frozenset(
    "a an the is are was were am be been i i'm my our we me you your it its of to in on at for "
    "and or but with from by as that this these those now these days then still so very just "
    "really has have had do does did will would".split()
)


def _content(text: str) -> set[str]:
    return {token.lower() for token in _TOKEN.findall(text)} - _FILLER


# Verbs that relate a subject to a place, a thing or a role: two memories differing only in one
# of these ("lives in Krakow" / "works in Krakow as a nurse") tell two facts that both hold.
_RELATION_VERBS = frozenset(
    """live lives living lived work works working worked study studies studying studied stay
    stays staying stayed teach teaches teaching taught go goes going born grew grow grows
    volunteer volunteers volunteering share shares sharing play plays playing is was""".split()
)
# Words that announce a change: with one of them a newer statement replaces the older at the
# lower CHANGE_COSINE ("I live in Madrid" → "I now live in Berlin" is at cosine 0.46).
_CHANGE = re.compile(
    r"\b(now|moved|retired|no longer|any ?more|these days|switched|changed|instead|since then)\b",
    re.I,
)
CHANGE_COSINE = 0.45


def restates(older: str, newer: str) -> bool:
    """Whether `newer` says something else about what `older` says, rather than adding to it:
    it drops or replaces one of the older's content words or numbers ("800" → "850", "tea" →
    "coffee"), or one of the two negates and the other does not; and it carries no cue of an
    addition ("also", "too", "as well", "another", "especially"). A pair that keeps every
    content word of the older but a relation verb ("lives" → "works … as a nurse") adds a
    second fact about the same place or thing, and restates nothing — unless it announces a
    change ("moved from Rome to Milan", "retired from the bakery")."""
    if _ADDITION.search(newer):
        return False
    if bool(RESTATEMENT_NEGATION.search(older)) != bool(RESTATEMENT_NEGATION.search(newer)):
        return True
    dropped = _content(older) - _content(newer)
    return bool(dropped) and (not dropped <= _RELATION_VERBS or bool(_CHANGE.search(newer)))


def supersede_cosine(newer: str) -> float:
    """The cosine at or above which `newer` may replace a close older memory: SUPERSEDE_COSINE,
    or CHANGE_COSINE when it announces a change ("now", "moved", "no longer", "switched")."""
    return CHANGE_COSINE if _CHANGE.search(newer) else SUPERSEDE_COSINE


def replaces(older: str, older_label: str | None, newer: str, newer_label: str | None,
             cosine: float) -> bool:  # fmt: skip
    """Sleep's automatic-supersede rule on one pair (docs/CONTINUITY.md): the same supersedable
    type and subject, the newer restating the older, close enough in meaning."""
    return (cosine >= supersede_cosine(newer)
            and same_subject(newer, newer_label, older, older_label)
            and restates(older, newer))  # fmt: skip


def same_subject(text: str, label: str | None, other_text: str, other_label: str | None) -> bool:
    """Whether two memories state the same kind of thing about the same subject: the same
    supersedable type (and subtype), and `subject` alike; whether they say it in close enough
    words is the cosine's part (SUPERSEDE_COSINE)."""
    if label is None or label != other_label or label.partition(":")[0] not in SUPERSEDABLE:
        return False
    about = subject(text)
    # a PERSON memory that names no one is a guess of the distiller ("… about gardening")
    return about == subject(other_text) and (bool(about) or label != "PERSON")


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


_PROTOTYPE_VECTORS: dict[str, np.ndarray] = {}  # normalised, by the embedder's model_id


class Distiller:
    """Nearest-prototype classification on an embedder's vectors, plus the rules."""

    def __init__(self, embedder: Any) -> None:
        import numpy as np

        self.labels = list(PROTOTYPES)
        self.owner = np.asarray([i for i, label in enumerate(self.labels)
                                 for _ in PROTOTYPES[label]])  # fmt: skip
        # model_id names the vector space (the index re-embeds when it changes), so the same
        # id gives the same prototype vectors: embedded once per process, not per index.
        prototypes = _PROTOTYPE_VECTORS.get(embedder.model_id)
        if prototypes is None:
            texts = [text for label in self.labels for text in PROTOTYPES[label]]
            vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
            prototypes = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            prototypes.setflags(write=False)
            _PROTOTYPE_VECTORS[embedder.model_id] = prototypes
        self.prototypes: np.ndarray = prototypes

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


class CommandDistiller:
    """The user's own distiller (`distill.command`, e.g. a script around a local model): the
    texts as JSON lines `{"text": …}` on stdin, one JSON object per text on stdout with `type`
    (None or a TYPE), `subtype`, `importance` 1–10, `temporal` and optionally `relational` and
    `confidence` (0–1). Its annotations record `command:NAME`."""

    def __init__(self, command: str, timeout: float) -> None:
        import shlex

        self.argv = shlex.split(command)
        self.timeout = timeout
        names = [part.rsplit("/", 1)[-1] for part in self.argv[:2]]
        if len(names) == 2 and re.fullmatch(r"(python|sh|bash|node|perl|ruby)[\d.]*", names[0]):
            names = names[1:]  # an interpreter: the script names the distiller
        self.annotator = f"command:{names[0] if names else ''}"

    def distill(self, texts: Sequence[str], vectors: Any = None) -> list[Distillation]:
        """One distillation per text; raises ValueError (naming what went wrong) when the
        command fails or answers out of shape."""
        import json
        import subprocess

        if not texts:
            return []
        payload = "".join(json.dumps({"text": text}, ensure_ascii=False) + "\n" for text in texts)
        try:
            done = subprocess.run(self.argv, input=payload.encode("utf-8"), capture_output=True,
                                  timeout=self.timeout, check=False)  # fmt: skip
        except (OSError, ValueError, subprocess.TimeoutExpired) as error:
            raise ValueError(f"distiller {' '.join(self.argv)!r} failed: {error}") from None
        if done.returncode != 0:
            raise ValueError(f"distiller {' '.join(self.argv)!r} exited {done.returncode}")
        lines = [
            line for line in done.stdout.decode("utf-8", "replace").splitlines() if line.strip()
        ]
        if len(lines) != len(texts):
            raise ValueError(f"distiller answered {len(lines)} lines for {len(texts)} memories")
        return [self._parse(line) for line in lines]

    def _parse(self, line: str) -> Distillation:
        import json

        try:
            data = json.loads(line)
            kind = data.get("type")
            importance = int(data.get("importance", 5))
            temporal = str(data.get("temporal", "persistent"))
            relational = float(data.get("relational", 0.0))
            confidence = float(data.get("confidence", 1.0))
        except (ValueError, TypeError, AttributeError) as error:
            raise ValueError(f"distiller answered {line[:80]!r}: {error}") from None
        if kind is not None and not (isinstance(kind, str) and re.fullmatch(r"[A-Z][A-Z_]*", kind)):
            raise ValueError(f"distiller answered type {kind!r} (a TYPE in capitals, or null)")
        if not 1 <= importance <= 10 or temporal not in ("ephemeral", "persistent", "milestone"):
            raise ValueError(f"distiller answered {line[:80]!r}: importance 1–10, temporal "
                             "ephemeral|persistent|milestone")  # fmt: skip
        subtype = data.get("subtype")
        return Distillation(
            type=kind, subtype=str(subtype) if subtype and kind else None, importance=importance,
            temporal=temporal, relational=round(min(1.0, max(0.0, relational)), 2),
            confidence=round(min(1.0, max(0.0, confidence)), 4), annotator=self.annotator,
        )  # fmt: skip
