"""2. Correction retention: after the user corrects a guess, which version wins later?"""

from __future__ import annotations

import random
from typing import Any

from memdir.archive_format import lifecycle

from .harness import ARMS, SAFE, K, Lab, Measure, Metric, compare, mentions, share
from .user import ATTRIBUTES, on_day


def corrections(lab: Lab, rng: random.Random, sessions: int) -> tuple[list[Metric], dict[str, Any]]:
    """Teach, contradict by inference, correct; then ask in later sessions which version wins."""
    truths = {key: rng.choice(values) for key, _, _, values in ATTRIBUTES}
    wrongs = {key: rng.choice([v for v in values if v != truths[key]])
              for key, _, _, values in ATTRIBUTES}  # fmt: skip
    later = sorted({2 + round(i * 28 / max(1, sessions - 1)) for i in range(min(sessions, 10))})
    found: dict[str, dict[str, float]] = {}
    for arm in ARMS:
        memdir = lab.memdir(f"correct-{arm}", small_talk=True)
        for key, _, template, _ in ATTRIBUTES:
            fact = f"user.{key}" if arm == SAFE else None
            lifecycle.teach(memdir, template.format(truths[key]), on_day(0, 1), key=fact)
            wrong_id = lab.conclude(memdir, template.format(wrongs[key]), on_day(1, 2), arm)
            correction = f"Correction from the user: {template.format(truths[key])}"
            if arm == SAFE:
                lifecycle.reject(memdir, wrong_id, "the user corrected it", on_day(1, 5))
                lifecycle.teach(memdir, correction, on_day(1, 5), key=fact)
            else:  # no lifecycle: the correction is just one more memory
                lifecycle.teach(memdir, correction, on_day(1, 5))
        index = lab.index(memdir)
        top1_right, wrong_seen, wake_wrong = [], [], []
        for day in later:
            now = on_day(day, 10)
            wake = [t for texts in lab.wake(memdir, now).values() for t in texts]
            for key, question, template, _ in ATTRIBUTES:
                results = lab.recall(index, question, now, arm)
                texts = [c.memory.text for c in results]
                wrong = template.format(wrongs[key])
                top1_right.append(bool(texts) and truths[key] in texts[0])
                wrong_seen.append(wrong in texts)
                wake_wrong.append(mentions(wake, wrong))
        found[arm] = {
            "top1_correct": share(top1_right),
            "wrong_in_top_k": share(wrong_seen),
            "wrong_in_wake": share(wake_wrong),
        }
    metrics = compare(
        "2 correction",
        found,
        Measure("corrected version is recall's top 1", "top1_correct", lower_is_better=False),
        Measure(f"wrong version in recall top-{K}", "wrong_in_top_k"),
        Measure("wrong version in wake", "wrong_in_wake"),
    )
    return metrics, {**found, "session_days": later}
