"""1. False-memory persistence: does a wrong guess outlive its TTL in recall and wake?"""

from __future__ import annotations

import random
from typing import Any

from memdir.archive_format import lifecycle

from .harness import (
    ARMS,
    ATTRIBUTES,
    OPEN,
    SAFE,
    K,
    Lab,
    Metric,
    as_fact,
    assistant_writes,
    mentions,
    on_day,
    share,
    small_talk,
    top_k,
    wake_texts,
)


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
        memdir = lab.memdir(f"false-{arm}")
        small_talk(memdir)
        for key, _, template, _ in ATTRIBUTES:
            lifecycle.teach(memdir, template.format(truths[key]), on_day(0, 2))
        falsehoods = {}
        for key, _, template, _ in ATTRIBUTES:
            if key in guessed:
                falsehoods[key] = template.format(wrongs[key])
                assistant_writes(memdir, falsehoods[key], on_day(1, 3), arm)
        index = lab.index(memdir)
        found[arm] = {}
        for label, now in checks.items():
            in_top, above_true, in_wake, wake_fact = [], [], [], []
            wake = wake_texts(memdir, now)
            for key, question, template, _ in ATTRIBUTES:
                if key not in falsehoods:
                    continue
                texts = [c.memory.text for c in top_k(index, question, now, arm)]
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
    metrics = []
    for label in checks:
        s, u = found[SAFE][label], found[OPEN][label]
        metrics += [
            Metric("1 false memory", f"false in recall top-{K}, {label}", s["top_k"], u["top_k"]),
            Metric(
                "1 false memory",
                f"false outranks the truth, {label}",
                s["outranks_truth"],
                u["outranks_truth"],
            ),  # fmt: skip
            Metric(
                "1 false memory",
                f"false in wake as fact, {label}",
                s["wake_as_fact"],
                u["wake_as_fact"],
            ),  # fmt: skip
        ]
    metrics.append(
        Metric("1 false memory", "false in wake at all (review queue counts), before TTL",
               found[SAFE]["before TTL (day 4)"]["wake_any"],
               found[OPEN]["before TTL (day 4)"]["wake_any"],
               note="the safeguarded wake lists it as unconfirmed, to ask the user"),
    )  # fmt: skip
    return metrics, found
