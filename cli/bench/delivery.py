"""`memdir bench delivery`: what an agent's per-prompt hook receives, scored (issue 26).

Each sample of a LoCoMo-style file becomes the same memdir `memdir bench locomo` builds
(`locomo.build_memdir`: one observation per turn). Every question then goes the hook's path:
the `memdir context` block (`usecases.prompt`: the same recall options and `delivered`, the
block with its journal turns), beside recall's own top 10 (as `memdir bench locomo` ranks it),
and scores:

- **answered**: the block holds an evidence turn;
- **silent with the answer available**: the block is empty although recall's top 10 holds an
  evidence turn;
- **noise**: the share of the block's entries that hold no evidence turn (over the blocks
  shown). An entry is what the block shows as one: a memory, or results side by side in their
  conversation (usecases/prompt.py); so beside it, always,
- **turn noise**: the share of the block's memories (turns) that are not evidence;
- **tokens**: the block's estimated tokens (characters ÷ 4), over the blocks shown.

`answered_when_available` is answered over the questions whose evidence is in the top 10: the
share the block delivers of what recall found. The questions carry no date of their own, so
each is asked where `memdir bench locomo` asks it, a day after the sample's last session.
Each sample's wake document (`memdir wake`, the session-start path) is measured too: its
tokens and how many of its entries are turns of the sample.

`--in-journal` keeps each sample's turns in the journal only, as an import leaves a
conversation (no memory of them): every block is then the journal turns the block carries when
no memory answers, and "available" means the journal search's top 10 (what `recall
--include-journal` would show the assistant) holds an evidence turn. `--shape` measures other
block shapes (usecases/prompt.py's `Shape`) on the same recalls.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.archive_format.documents import estimate_tokens

from .locomo import CATEGORIES, build_memdir, load_samples

if TYPE_CHECKING:
    from memdir.usecases.prompt import Shape

TOP = 10  # recall's top k that says whether memory had the answer


def _question(block: Any, top: list[str], by_id: dict[str, str], evidence: set[str]
              ) -> dict[str, Any]:  # fmt: skip
    units = [[by_id.get(entry.id, "") for entry in unit] for unit in block.units()]
    shown = [dia for unit in units for dia in unit]
    available = bool(evidence & set(top[:TOP]))
    answered = bool(evidence & set(shown))
    text = block.markdown()
    return {
        "available": available,
        "answered": answered,
        "silent": not shown,
        "entries": len(units),
        "noise": sum(1 for unit in units if not evidence & set(unit)),
        "turns": len(shown),
        "turn_noise": sum(1 for dia in shown if dia not in evidence),
        "tokens": estimate_tokens(text) if text else 0,
    }


def _result(candidate: Any, by_id: dict[str, str]) -> dict[str, Any]:
    """One result of the block's recall, for `--per-question`: what a relevance rule looks at."""
    return {"dia_id": by_id.get(candidate.id, ""), "score": round(candidate.score, 4),
            "relevance": round(candidate.relevance, 4),
            "cosine": round(candidate.raw.get("cosine", 0.0), 4),
            "bm25": round(candidate.raw.get("bm25", 0.0), 4),
            "channels": sorted(candidate.channels), "status": candidate.status,
            "tokens": estimate_tokens(candidate.memory.text),
            "components": {name: round(value, 4) for name, value in candidate.components.items()}}  # fmt: skip


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The delivery figures over `rows` (one per question)."""
    if not rows:
        return {"n": 0}
    available = [r for r in rows if r["available"]]
    spoken = [r for r in rows if not r["silent"]]
    entries = sum(r["entries"] for r in spoken)
    turns = sum(r["turns"] for r in spoken)

    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    return {
        "n": len(rows),
        "available": share(len(available), len(rows)),
        "answered": share(sum(r["answered"] for r in rows), len(rows)),
        "answered_when_available": share(sum(r["answered"] for r in available), len(available)),
        "silent_with_answer": share(sum(r["silent"] for r in available), len(rows)),
        "silent": share(sum(r["silent"] for r in rows), len(rows)),
        "noise": share(sum(r["noise"] for r in spoken), entries),
        "turn_noise": share(sum(r["turn_noise"] for r in spoken), turns),
        "mean_entries": round(statistics.fmean(r["entries"] for r in spoken), 2) if spoken else 0,
        "mean_turns": round(statistics.fmean(r["turns"] for r in spoken), 2) if spoken else 0,
        "mean_tokens": round(statistics.fmean(r["tokens"] for r in spoken), 1) if spoken else 0,
    }


def _report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_category: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_category.setdefault(row["category"], []).append(row)
    return {
        "overall": summarise([r for r in rows if r["category"] != 5]),
        "categories": {
            str(category): {"name": CATEGORIES.get(category, "?"), **summarise(part)}
            for category, part in sorted(by_category.items())
        },
    }


def build_journal(sample: Any, root: Path, settings: dict[str, Any] | None = None
                  ) -> dict[str, str]:  # fmt: skip
    """A memdir whose journal holds the sample's turns as an import leaves them — verbatim,
    speaker-prefixed as `build_memdir`'s memories, the first speaker's as the user's, the
    other's as the assistant's, a second apart in their session — and no memory of them;
    returns turn id → dia_id."""
    from memdir.archive_format import journal
    from memdir.archive_format.memdir import init

    first = min((turn.created for turn in sample.turns), default=datetime.now(timezone.utc))
    memdir, _ = init(root, first, settings=settings or None)
    user = sample.turns[0].text.split(":", 1)[0] if sample.turns else ""
    turns, by_id, position = [], {}, 0
    for number, turn in enumerate(sample.turns):
        same = number and sample.turns[number - 1].session == turn.session
        position = position + 1 if same else 0
        role = "user" if turn.text.split(":", 1)[0] == user else "assistant"
        made = journal.new_turn(turn.created + timedelta(seconds=position), role,
                                f"{sample.sample_id}/session_{turn.session}", turn.text,
                                "import:locomo")  # fmt: skip
        turns.append(made)
        by_id[made.id] = turn.dia_id
    journal.add_turns(memdir, turns)
    return by_id


def _journal_top(memdir: Any, asked: Any, now: Any) -> list[dict[str, Any]]:
    """The journal search's best TOP turns for the question (what `recall --include-journal`
    shows the assistant): whether the journal had the answer."""
    from memdir.usecases.journal import search_turns
    from memdir.usecases.prompt import JOURNAL_SURFACE
    from memdir.usecases.recall import journal_words

    return search_turns(memdir, journal_words(asked.analysis), now, TOP, surface=JOURNAL_SURFACE)


def shape_arms(items: list[str]) -> dict[str, Shape]:
    """`--shape NAME=VALUE[,NAME=VALUE…]` items as {item: Shape}, each laid over the default
    shape (usecases/prompt.py); a name the shape does not have, or a value that is not a
    number, is refused."""
    from dataclasses import fields, replace

    from memdir.archive_format.errors import BadInputError
    from memdir.usecases.prompt import Shape

    known = {field.name: field.type for field in fields(Shape)}
    arms: dict[str, Shape] = {}
    for item in items:
        changes: dict[str, float] = {}
        for part in item.split(","):
            name, equals, value = part.partition("=")
            name = name.strip()
            try:
                whole = isinstance(getattr(Shape(), name, None), int)
                number = int(value) if whole else float(value)
            except ValueError:
                number = None
            if not equals or name not in known or number is None or number < 0:
                raise BadInputError(f"--shape {item!r}: expected NAME=VALUE pairs, NAME one of "
                                    f"{', '.join(known)}, VALUE a number ≥ 0",
                                    hint="e.g. --shape relative=0.9,max_entries=3")  # fmt: skip
            changes[name] = number
        arms[item] = replace(Shape(), **changes)  # type: ignore[arg-type]
    return arms


def _run_file(path: Path, limit: int | None, budget: int, settings: dict[str, Any] | None,
              progress: Callable[[str, int, int], None] | None,
              per_question: list[dict[str, Any]] | None,
              arms: dict[str, Shape], in_journal: bool = False
              ) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:  # fmt: skip
    from memdir.archive_format.memdir import Memdir
    from memdir.indexers.index import MemoryIndex
    from memdir.indexers.recall import RecallOptions, recall
    from memdir.usecases.documents import wake
    from memdir.usecases.prompt import QUERY_CHARS, context_options, delivered

    samples = load_samples(path)[:limit]
    rows: list[dict[str, Any]] = []
    arm_rows: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    wakes: list[dict[str, Any]] = []
    total = sum(len(sample.questions) for sample in samples)
    done = 0
    for sample in samples:
        with tempfile.TemporaryDirectory(prefix="memdir-delivery-") as scratch:
            build = build_journal if in_journal else build_memdir
            by_id = build(sample, Path(scratch) / sample.sample_id, settings)
            memdir = Memdir.open(Path(scratch) / sample.sample_id)
            now = max(turn.created for turn in sample.turns) + timedelta(days=1)
            index = MemoryIndex(memdir)
            index.update(progress)
            ranking = RecallOptions(k=TOP)
            for number, question in enumerate(sample.questions):
                done += 1
                if progress:
                    progress("questions", done, total)
                if not question.evidence:
                    continue
                top = recall(index, question.text, now, ranking)
                asked = recall(index, question.text[:QUERY_CHARS], now, context_options())
                found = delivered(memdir, asked, now, budget)
                ranked = ([by_id.get(row["id"], "") for row in _journal_top(memdir, asked, now)]
                          if in_journal else [by_id.get(c.id, "") for c in top.results])  # fmt: skip
                row = {"category": question.category,
                       **_question(found, ranked, by_id, set(question.evidence))}  # fmt: skip
                rows.append(row)
                for name, shape in arms.items():
                    other = delivered(memdir, asked, now, budget, shape)
                    arm_rows[name].append({"category": question.category,
                                           **_question(other, ranked, by_id,
                                                       set(question.evidence))})  # fmt: skip
                if per_question is not None:
                    per_question.append({"file": path.name, "sample": sample.sample_id,
                                         "question_number": number, "question": question.text,
                                         "evidence": question.evidence, "top": ranked,
                                         "block": [[by_id.get(e.id, "") for e in unit]
                                                   for unit in found.units()],
                                         "verdict": found.verdict, **row,
                                         "results": [_result(c, by_id) for c in asked.results]})  # fmt: skip
            index.parts.drop()
            index.close()
            document = wake(memdir, now)
            wakes.append({"sample": sample.sample_id, "tokens": estimate_tokens(document.markdown),
                          "memories": sum(1 for memory_id in by_id if memory_id in document.markdown)})  # fmt: skip
    report = {**_report(rows), "samples": len(samples), "budget": budget, "wake": wakes,
              "shapes": {name: _report(part) for name, part in arm_rows.items()}}  # fmt: skip
    return report, {"": rows, **arm_rows}


def run(paths: list[Path], limit: int | None = None, budget: int | None = None,
        settings: dict[str, Any] | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        per_question: list[dict[str, Any]] | None = None,
        shapes: list[str] | None = None, in_journal: bool = False) -> dict[str, Any]:  # fmt: skip
    """Each file's delivery figures under `files`, and pooled over all of them; each of
    `shapes` (`--shape` items) is another block shape measured on the same recalls, under
    `shapes` beside the default's figures."""
    from memdir.usecases.prompt import DEFAULT_BUDGET

    arms = shape_arms(shapes or [])
    files: dict[str, dict[str, Any]] = {}
    pooled: dict[str, list[dict[str, Any]]] = {"": [], **{name: [] for name in arms}}
    for path in paths:
        files[str(path)], rows = _run_file(path, limit, budget or DEFAULT_BUDGET, settings,
                                           progress, per_question, arms, in_journal)  # fmt: skip
        for name, part in rows.items():
            pooled[name].extend(part)
    return {"files": files, "pooled": {**_report(pooled[""]), "shapes": {
        name: _report(part) for name, part in pooled.items() if name}}}  # fmt: skip
