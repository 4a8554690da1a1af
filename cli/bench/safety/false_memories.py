"""1. False-memory persistence: does a wrong guess outlive its TTL in recall and wake?"""

from __future__ import annotations

import random
from typing import Any

from memdir.archive_format import lifecycle

from .harness import ARMS, K, Lab, Measure, Metric, as_fact, compare, mentions, share
from .user import ATTRIBUTES, on_day


def false_memories(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    """True teachings on day 0, false guesses on day 1 for half the attributes; look before the
    TTL (day 4) and after it (day 10, day 30)."""
    truths = {key: rng.choice(values) for key, _, _, values in ATTRIBUTES}
    guessed = rng.sample([a[0] for a in ATTRIBUTES], len(ATTRIBUTES) // 2)
    wrongs = {key: rng.choice([v for v in values if v != truths[key]])
              for key, _, _, values in ATTRIBUTES}  # fmt: skip
    checks = {
        "before TTL (day 4)": on_day(4),
        "after TTL (day 10)": on_day(10),
        "day 30": on_day(30),
    }
    found: dict[str, dict[str, dict[str, float]]] = {}
    for arm in ARMS:
        memdir = lab.memdir(f"false-{arm}", small_talk=True)
        for key, _, template, _ in ATTRIBUTES:
            lifecycle.teach(memdir, template.format(truths[key]), on_day(0, 2))
        falsehoods = {}
        for key, _, template, _ in ATTRIBUTES:
            if key in guessed:
                falsehoods[key] = template.format(wrongs[key])
                lab.conclude(memdir, falsehoods[key], on_day(1, 3), arm)
        index = lab.index(memdir)
        found[arm] = {}
        for label, now in checks.items():
            in_top, above_true, in_wake, wake_fact = [], [], [], []
            wake = lab.wake(memdir, now)
            for key, question, template, _ in ATTRIBUTES:
                if key not in falsehoods:
                    continue
                texts = [c.memory.text for c in lab.recall(index, question, now, arm)]
                false_text, true_text = falsehoods[key], template.format(truths[key])
                in_top.append(false_text in texts)
                rank = texts.index(false_text) if false_text in texts else K
                above_true.append(rank < (texts.index(true_text) if true_text in texts else K))
                in_wake.append(mentions([t for v in wake.values() for t in v], false_text))
                wake_fact.append(mentions(as_fact(wake), false_text))
            found[arm][label] = {
                "top_k": share(in_top),
                "outranks_truth": share(above_true),
                "wake_any": share(in_wake),
                "wake_as_fact": share(wake_fact),
            }
    metrics: list[Metric] = []
    for label in checks:
        metrics += compare(
            "1 false memory",
            {arm: found[arm][label] for arm in ARMS},
            Measure(f"false in recall top-{K}, {label}", "top_k"),
            Measure(f"false outranks the truth, {label}", "outranks_truth"),
            Measure(f"false in wake as fact, {label}", "wake_as_fact"),
        )
    metrics += compare(
        "1 false memory",
        {arm: found[arm]["before TTL (day 4)"] for arm in ARMS},
        Measure("false in wake at all (review queue counts), before TTL", "wake_any",
                note="the safeguarded wake lists it as unconfirmed, to ask the user"),
    )  # fmt: skip
    return metrics, found
