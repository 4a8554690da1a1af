"""`memdir bench locomo`: turn-level retrieval on LoCoMo-style conversations, no LLM.

Each sample becomes a fresh memdir: every turn an observation (speaker-prefixed, image caption
appended, the session's date-time as its time, the session as its session), indexed, then
every question goes through the same recall pipeline as `memdir recall`, with *now* just after
the conversation's last session.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.archive_format.clock import format_time
from memdir.archive_format.errors import BadInputError, FormatError
from memdir.archive_format.lifecycle import add_memories
from memdir.archive_format.memdir import init
from memdir.archive_format.records import new_memory

if TYPE_CHECKING:
    from memdir.indexers.recall import RecallResult

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
PER_QUESTION_CANDIDATES = 30  # the scored candidates a `--per-question` row lists


@dataclass
class Turn:
    dia_id: str
    session: int
    text: str
    created: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Sample:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    repairs: dict[str, int] = field(default_factory=dict)


def parse_session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → a UTC datetime."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        raise FormatError(f"session date-time {text!r} not understood") from None


def repair_evidence(raw: list[Any], known: set[str], counts: dict[str, int]) -> list[str]:
    """Evidence ids as listed, repaired: several ids in one string are split, 'D:11:26' and
    'D30:05' are normalised; ids that do not exist (or a bare 'D') are dropped. Counts each."""
    found: list[str] = []
    for item in raw:
        text = str(item).strip()
        pieces = _EVIDENCE.findall(text)
        normal = [f"D{session}:{turn}" for session, turn in pieces]
        if len(pieces) != 1 or normal[0] != text:
            counts["repaired" if normal else "dropped"] = (
                counts.get("repaired" if normal else "dropped", 0) + 1
            )
        for dia_id in normal:
            if dia_id not in known:
                counts["dropped"] = counts.get("dropped", 0) + 1
            elif dia_id not in found:
                found.append(dia_id)
    return found


def load_samples(path: Path) -> list[Sample]:
    """Read a locomo10.json-style file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInputError(f"{path}: cannot read as JSON ({error})") from None
    if not isinstance(data, list):
        raise BadInputError(f"{path}: expected a JSON list of samples")
    samples: list[Sample] = []
    for number, raw in enumerate(data):
        try:
            samples.append(_sample(raw))
        except (KeyError, TypeError) as error:
            raise BadInputError(f"{path}: sample {number} is malformed (missing {error})") from None
    return samples


def _sample(raw: dict[str, Any]) -> Sample:
    conversation = raw["conversation"]
    turns: list[Turn] = []
    sessions = sorted(
        int(key.split("_")[1]) for key in conversation if re.fullmatch(r"session_\d+", key)
    )
    for session in sessions:
        created = parse_session_time(conversation[f"session_{session}_date_time"])
        for turn in conversation[f"session_{session}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], session, text, created))
    known = {turn.dia_id for turn in turns}
    counts: dict[str, int] = {}
    questions = [
        Question(
            qa["question"],
            int(qa["category"]),
            repair_evidence(qa.get("evidence") or [], known, counts),
        )
        for qa in raw["qa"]
    ]
    return Sample(str(raw.get("sample_id", "sample")), turns, questions, counts)


def weight_overrides(items: list[str], option: str = "--weight") -> dict[str, float]:
    """`--weight NAME=VALUE` items as {component: weight}; a name recall does not weigh, or a
    value that is not a number, is refused."""
    from memdir.indexers.recall.score import PARAMETERS, WEIGHTED

    known = (*WEIGHTED, *PARAMETERS)
    found: dict[str, float] = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or name.strip() not in known:
            raise BadInputError(
                f"{option} {item!r} is not COMPONENT=NUMBER for a recall component",
                hint=f"components: {', '.join(known)}; e.g. {option} session=0.25",
            )
        try:
            found[name.strip()] = float(value)
        except ValueError:
            raise BadInputError(
                f"{option} {item!r}: {value!r} is not a number", hint=f"e.g. {option} session=0.25"
            ) from None
    return found


def build_memdir(
    sample: Sample, root: Path, settings: dict[str, Any] | None = None
) -> dict[str, str]:
    """A memdir holding the sample's turns (with `settings` in memdir.yaml, but where its index
    lives in memdir.local.yaml: memdir.yaml's would be ignored); returns memory id → dia_id."""
    from memdir.archive_format.memdir import set_local_settings
    from memdir.archive_format.settings import split_local

    first = min((turn.created for turn in sample.turns), default=datetime.now(timezone.utc))
    shared, local = split_local(settings or {})
    memdir, _ = init(root, first, settings=shared or None)
    if local:
        set_local_settings(root, local)
    memories = []
    by_id: dict[str, str] = {}
    for turn in sample.turns:
        memory = new_memory(
            created=format_time(turn.created),
            text=turn.text,
            source="observation",
            author=f"locomo:{turn.text.split(':', 1)[0]}",
            store="episodic",
            session=f"{sample.sample_id}/session_{turn.session}",
            origin=f"locomo:{sample.sample_id}:{turn.dia_id}",
        )
        memories.append(memory)
        by_id[memory.id] = turn.dia_id
    add_memories(memdir, memories)
    return by_id


def _metrics(ranked: list[str], evidence: list[str]) -> dict[str, float]:
    wanted = set(evidence)
    sessions = {e.split(":")[0] for e in evidence}
    top5_sessions = {r.split(":")[0] for r in ranked[:5]}
    return {
        "recall@1": len(wanted & set(ranked[:1])) / len(wanted),
        "recall@5": len(wanted & set(ranked[:5])) / len(wanted),
        "recall@10": len(wanted & set(ranked[:10])) / len(wanted),
        "all@5": float(wanted <= set(ranked[:5])),
        "all@10": float(wanted <= set(ranked[:10])),
        "session_recall@5": len(sessions & top5_sessions) / len(sessions),
    }


def _average(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    keys = rows[0].keys()
    return {
        **{key: round(statistics.fmean(row[key] for row in rows), 4) for key in keys},
        "n": len(rows),
    }


@dataclass
class Measured:
    """One question's category and metrics, how long its recall took, and its chat."""

    category: int
    metrics: dict[str, float]
    milliseconds: float
    sample: str = ""


def summarise(measured: list[Measured]) -> dict[str, Any]:
    """Overall (categories 1–4), per-category and per-chat (categories 1–4) averages, and the
    mean ms per query."""
    by_category: dict[int, list[dict[str, float]]] = {}
    for row in measured:
        by_category.setdefault(row.category, []).append(row.metrics)
    timings = [row.milliseconds for row in measured]
    return {
        "overall": _average([row.metrics for row in measured if row.category != 5]),
        "categories": {
            str(category): {"name": CATEGORIES.get(category, "?"), **_average(rows)}
            for category, rows in sorted(by_category.items())
        },
        "ms_per_query": round(statistics.fmean(timings), 2) if timings else None,
        "chats": {
            sample: _average([row.metrics for row in measured if row.sample == sample
                              and row.category != 5])
            for sample in dict.fromkeys(row.sample for row in measured)
        },
    }  # fmt: skip


def question_row(path: Path, sample: Sample, number: int, question: Question,
                 result: RecallResult, by_id: dict[str, str],
                 metrics: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    """One line of `--per-question` (docs/RECALL.md): the question, where each piece of evidence
    ranked among the scored candidates (1-based; null when outside them), the results and the
    best candidates with their components."""
    from memdir.indexers.recall import Stage
    from memdir.indexers.recall.score import WEIGHTED

    scored: list[dict[str, Any]] = next(
        (trace.rows for trace in result.stages if trace.name is Stage.SCORE), []
    )
    order = [by_id.get(row["id"], "") for row in scored]
    shown = {c.id for c in result.results}
    return {
        "file": path.name,
        "sample": sample.sample_id,
        "question_number": number,
        "question": question.text,
        "category": question.category,
        "evidence": question.evidence,
        "evidence_ranks": {
            dia_id: (order.index(dia_id) + 1 if dia_id in order else None)
            for dia_id in question.evidence
        },
        "results": [by_id.get(c.id, "") for c in result.results],
        **metrics,
        "analysis": result.analysis.to_dict(),
        "candidates": [
            {
                "dia_id": by_id.get(row["id"], ""),
                "shown": row["id"] in shown,
                "evidence": by_id.get(row["id"]) in question.evidence,
                "score": round(row["score"], 4),
                "components": {
                    name: round(value, 4) for name, value in row.items() if name in WEIGHTED
                },
            }
            for row in scored[:PER_QUESTION_CANDIDATES]
        ],
        "milliseconds": round(result.milliseconds, 2),
    }


def _run_file(
    path: Path,
    arms: list[str | None],
    limit: int | None,
    progress: Callable[[str, int, int], None] | None,
    decay: bool,
    per_question: list[dict[str, Any]] | None,
    settings: dict[str, Any] | None,
    sleep: bool,
) -> tuple[dict[str, Any], list[list[Measured]]]:
    """One file through each arm (a profile name) on the same built index: the first arm's
    report, and every arm's measured questions in the same order (so they pair)."""
    from memdir.archive_format.memdir import Memdir
    from memdir.indexers.index import MemoryIndex
    from memdir.indexers.recall import RecallOptions, recall

    samples = load_samples(path)[:limit]
    measured: list[list[Measured]] = [[] for _ in arms]
    repairs: dict[str, int] = {}
    no_evidence = 0
    options = [RecallOptions(k=10, profile=arm, perfect=not decay) for arm in arms]
    total = sum(len(sample.questions) for sample in samples)
    done = 0
    for sample in samples:
        for name, count in sample.repairs.items():
            repairs[name] = repairs.get(name, 0) + count
        with tempfile.TemporaryDirectory(prefix="memdir-locomo-") as scratch:
            by_id = build_memdir(sample, Path(scratch) / sample.sample_id, settings)
            memdir = Memdir.open(Path(scratch) / sample.sample_id)
            now = max(turn.created for turn in sample.turns) + timedelta(days=1)
            if sleep:  # one night's relink first: links for activation to follow
                from memdir.usecases.sleep import sleep as run_sleep

                run_sleep(memdir, now - timedelta(hours=12))
            index = MemoryIndex(memdir)
            index.update(progress)
            for number, question in enumerate(sample.questions):
                done += 1
                if progress:
                    progress("questions", done, total)
                if not question.evidence:
                    no_evidence += 1
                    continue
                for arm, arm_options in enumerate(options):
                    began = time.perf_counter()
                    result = recall(index, question.text, now, arm_options)
                    milliseconds = (time.perf_counter() - began) * 1000
                    ranked = [by_id[c.id] for c in result.results if c.id in by_id]
                    metrics = _metrics(ranked, question.evidence)
                    measured[arm].append(
                        Measured(question.category, metrics, milliseconds, sample.sample_id)
                    )
                    if per_question is not None and arm == 0:
                        per_question.append(
                            question_row(path, sample, number, question, result, by_id, metrics)
                        )
            index.parts.drop()  # a scratch memdir: its index goes with it
            index.close()
    report = {
        **summarise(measured[0]),
        "evidence_repairs": {**repairs, "questions_without_evidence": no_evidence},
        "samples": len(samples),
        "profile": arms[0] or "default",
        "decay": decay,
        "sleep": sleep,
    }
    return report, measured


def run(
    paths: list[Path],
    profile: str | None = None,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    decay: bool = False,
    per_question: list[dict[str, Any]] | None = None,
    settings: dict[str, Any] | None = None,
    sleep: bool = False,
    weights: dict[str, float] | None = None,
    compare: list[Comparison] | None = None,
) -> dict[str, Any]:
    """Run the benchmark on each file; returns the report `memdir bench locomo --json` prints:
    each file's figures under `files` (by path, in the order given) and, over every question of
    all of them, `pooled`. With `per_question`, one row per question is appended to it.

    Decay is off unless asked for: the conversations carry no rehearsal record, so decay would
    only measure how old each session is (with it: docs/RECALL.md, BENCHMARKS.md). `settings`
    are the scratch memdirs' memdir.yaml settings (e.g. `index`, or a stage switched off);
    `sleep` runs one sleep (relink) on each before its questions. `weights` change the
    profile's weights there (`--weight NAME=VALUE`: a profile variant measured without editing
    the code), and the report names them.

    With `compare`, each comparison is one more arm (another profile, other weights) that
    answers the same questions on the same built index (embedding is the cost, so N arms cost
    little more than one), and `comparisons` holds, per file and pooled, each arm's deltas
    against the first with their paired bootstrap intervals over the questions (stats.py).
    """
    from memdir.archive_format.settings import load_settings

    settings = dict(settings or {})
    base = profile or load_settings(settings, "the bench's settings")[0].recall.profile
    comparisons = list(compare or [])
    arms: list[str | None] = [profile]
    if weights:
        settings = with_weights(settings, base, weights)
    for number, comparison in enumerate(comparisons):
        name = f"{VARIANT}-{number + 1}"
        arms.append(name)
        settings = _with_variant(settings, name, base, weights or {}, comparison)
    files: dict[str, dict[str, Any]] = {}
    pooled: list[list[Measured]] = [[] for _ in arms]
    for path in paths:
        files[str(path)], measured = _run_file(
            path, arms, limit, progress, decay, per_question, settings, sleep
        )
        files[str(path)]["weights"] = weights or {}
        for arm, rows in enumerate(measured):
            pooled[arm].extend(rows)
        if comparisons:
            files[str(path)]["comparisons"] = [
                compared(measured[0], measured[number + 1], comparison)
                for number, comparison in enumerate(comparisons)
            ]
    report: dict[str, Any] = {"files": files, "pooled": summarise(pooled[0])}
    if comparisons:
        report["comparisons"] = [
            compared(pooled[0], pooled[number + 1], comparison)
            for number, comparison in enumerate(comparisons)
        ]
    return report


VARIANT = "bench-variant"  # the compared arms' profile names in the scratch memdirs: -1, -2, …
COMPARED = ("recall@5", "recall@10")


@dataclass(frozen=True)
class Comparison:
    """One compared arm of `--compare`: a profile (None: the first arm's, with its `--weight`s)
    and weights laid over it; the bootstrap's resamples and seed."""

    profile: str | None = None
    weights: dict[str, float] = field(default_factory=dict)
    resamples: int = 2000
    seed: int = 0

    def describe(self) -> dict[str, Any]:
        return {"profile": self.profile, "weights": self.weights,
                "resamples": self.resamples, "seed": self.seed}  # fmt: skip


def comparison(spec: str, resamples: int = 2000, seed: int = 0) -> Comparison:
    """`--compare SPEC`: comma-separated NAME=VALUE weights, and `profile=NAME` for the arm's
    profile ("when=0", "profile=quality", "profile=quality,semantic=2")."""
    items = [item.strip() for item in spec.split(",") if item.strip()]
    profiles = [item.partition("=")[2].strip() for item in items if item.startswith("profile=")]
    if len(profiles) > 1 or (profiles and not profiles[0]) or not items:
        raise BadInputError(
            f"--compare {spec!r} is not NAME=VALUE[,NAME=VALUE…] with at most one profile=NAME",
            hint="e.g. --compare when=0 or --compare profile=quality,semantic=2",
        )
    weights = weight_overrides([i for i in items if not i.startswith("profile=")], "--compare")
    return Comparison(profiles[0] if profiles else None, weights, resamples, seed)


def compared(
    baseline: list[Measured], variant: list[Measured], comparison: Comparison
) -> dict[str, Any]:
    """The variant against the baseline on the same questions: R@5 and R@10 overall
    (categories 1–4), per category and per chat, each delta with its paired bootstrap
    interval, and the variant's own figures."""
    from .stats import paired_delta

    def deltas(keep: Callable[[Measured], bool]) -> dict[str, Any]:
        pairs = [(a, b) for a, b in zip(baseline, variant, strict=True) if keep(a)]
        return {
            metric: paired_delta([a.metrics[metric] for a, _ in pairs],
                                 [b.metrics[metric] for _, b in pairs],
                                 comparison.resamples, seed=comparison.seed).to_dict()
            for metric in COMPARED
        }  # fmt: skip

    categories = sorted({row.category for row in baseline})
    chats = list(dict.fromkeys(row.sample for row in baseline))
    return {
        "variant": comparison.describe(),
        "variant_figures": summarise(variant),
        "overall": deltas(lambda row: row.category != 5),
        "categories": {
            str(category): deltas(lambda row, c=category: row.category == c)  # type: ignore[misc]
            for category in categories
        },
        "chats": {
            chat: deltas(lambda row, s=chat: row.sample == s and row.category != 5)  # type: ignore[misc]
            for chat in chats
        },
    }


def with_weights(
    scratch: dict[str, Any], profile: str, weights: dict[str, float]
) -> dict[str, Any]:
    """The scratch memdirs' settings with `weights` laid over the profile's recall.profiles."""
    recall = dict(scratch.get("recall") or {})
    profiles = dict(recall.get("profiles") or {})
    profiles[profile] = {**(profiles.get(profile) or {}), **weights}
    return {**scratch, "recall": {**recall, "profiles": profiles}}


def _with_variant(
    scratch: dict[str, Any], name: str, base: str, weights: dict[str, float],
    comparison: Comparison,
) -> dict[str, Any]:  # fmt: skip
    """The scratch settings with a compared arm's profile `name` written out in full: the
    chosen profile's built-in weights, its recall.profiles overrides (with the first arm's
    `weights` when it is the first arm's profile), then the comparison's."""
    from memdir.indexers.recall.options import PROFILES

    chosen = comparison.profile or base
    custom = ((scratch.get("recall") or {}).get("profiles") or {}).get(chosen) or {}
    if chosen not in PROFILES and not custom:
        raise BadInputError(
            f"unknown recall profile {chosen!r} in --compare",
            hint=f"use one of {', '.join(PROFILES)}, or one defined in --settings",
        )
    laid = {**PROFILES.get(chosen, PROFILES["default"]), **custom}
    if comparison.profile is None:
        laid.update(weights)
    return with_weights(scratch, name, {**laid, **comparison.weights})
