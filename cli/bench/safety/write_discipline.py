"""5. The write-discipline ablation: two guesses a session, one of them wrong, over N sessions."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from memdir.archive_format import lifecycle

from .harness import ARMS, SAFE, K, Lab, Measure, Metric, Progress, as_fact, compare, share
from .user import ATTRIBUTES, on_day


def write_discipline(
    lab: Lab, rng: random.Random, sessions: int, progress: Progress | None = None
) -> tuple[list[Metric], dict[str, Any]]:
    """Each session the assistant concludes two things about the user, one of them wrong; the
    user confirms a right one now and then and rejects a wrong one now and then."""
    truths = {key: rng.choice(values) for key, _, _, values in ATTRIBUTES}
    plan: list[dict[str, Any]] = []
    for _ in range(sessions):
        key, _, template, values = rng.choice(ATTRIBUTES)
        wrong = rng.choice([v for v in values if v != truths[key]])
        right_key, _, right_template, _ = rng.choice(ATTRIBUTES)
        plan.append({
            "false": f"Probably: {template.format(wrong)}",
            "true": f"Probably: {right_template.format(truths[right_key])}",
            "confirm": rng.random() < 0.5, "reject": rng.random() < 0.2,
        })  # fmt: skip
    checkpoints = sorted({max(1, round(sessions * f)) for f in (0.25, 0.5, 0.75, 1.0)})
    false_texts = {item["false"] for item in plan}
    series: dict[str, list[dict[str, Any]]] = {}
    for arm in ARMS:
        memdir = lab.memdir(f"discipline-{arm}")
        for key, _, template, _ in ATTRIBUTES:
            lifecycle.teach(memdir, template.format(truths[key]), on_day(0, 1))
        index = lab.index(memdir)
        series[arm] = []
        for session, item in enumerate(plan, start=1):
            now = on_day(session, 10)
            false_id = lab.conclude(memdir, item["false"], now, arm)
            true_id = lab.conclude(memdir, item["true"], now + timedelta(minutes=1), arm)
            if arm == SAFE:
                later = now + timedelta(hours=2)
                if item["confirm"]:
                    lifecycle.confirm(memdir, true_id, later)
                if item["reject"]:
                    lifecycle.reject(memdir, false_id, "the user said it is wrong", later)
            if session not in checkpoints:
                continue
            if progress:
                progress(f"write discipline ({arm})", session, sessions)
            check = on_day(session, 20)
            view = lifecycle.load_view(memdir, check)
            false_states = [
                s for s in view if s.memory is not None and s.memory.text in false_texts
            ]
            wake_fact = as_fact(lab.wake(memdir, check))
            shares, top1 = [], []
            for _, question, _, _ in ATTRIBUTES:
                texts = [c.memory.text for c in lab.recall(index, question, check, arm)]
                shares.append(share([t in false_texts for t in texts]))
                top1.append(bool(texts) and texts[0] in false_texts)
            series[arm].append({
                "session": session,
                "false_durable": sum(1 for s in false_states if s.status == "durable"),
                "false_live": sum(1 for s in false_states if s.live),
                "false_share_top_k": round(sum(shares) / len(shares), 4),
                "false_top1": round(share(top1), 4),
                "false_in_wake_as_fact": sum(1 for t in wake_fact if t in false_texts),
                "right_inferences_durable": sum(
                    1 for s in view if s.memory is not None and s.memory.source == "inference"
                    and s.status == "durable"
                ) if arm == SAFE else sum(1 for p in plan[:session] if p["true"]),
            })  # fmt: skip
    name = f"after {sessions} sessions"
    metrics = compare(
        "5 write discipline",
        {arm: series[arm][-1] for arm in ARMS},
        Measure(f"hallucinated memories durable, {name}", "false_durable"),
        Measure(f"hallucinated memories live (any weight), {name}", "false_live"),
        Measure(f"hallucinated share of recall top-{K}, {name}", "false_share_top_k"),
        Measure(f"hallucinated memory is top 1, {name}", "false_top1"),
        Measure(f"hallucinated entries in wake as fact, {name}", "false_in_wake_as_fact"),
    )
    return metrics, series
