"""6. Drift: the wake document's behavioural signature across sessions."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from typing import Any

from memdir.archive_format import lifecycle
from memdir.usecases.analytics import js_divergence

from .harness import ARMS, SAFE, Lab, Measure, Metric, Progress, as_fact, compare, share
from .user import on_day

# Drift: topics of the user's life and what is taught about them (stable), versus what the
# assistant tends to conclude (skewed to stressed work).
DRIFT_TOPICS = {
    "work": ("project", "office", "colleague", "deadline", "meeting", "manager", "work"),
    "family": ("mother", "father", "sister", "family", "nephew", "parents"),
    "hobby": ("guitar", "pottery", "garden", "chess", "painting", "hobby"),
    "health": ("run", "yoga", "doctor", "sleep", "gym", "health"),
    "travel": ("trip", "train", "flight", "holiday", "travel", "hotel"),
}
USER_MIX = {"work": 0.2, "family": 0.2, "hobby": 0.25, "health": 0.15, "travel": 0.2}
USER_LINES = {
    "work": "The user finished the {} {} at work and was pleased with it.",
    "family": "The user visited their {} on {} and had a nice time.",
    "hobby": "The user spent {} on {} and enjoyed it.",
    "health": "The user went for a {} on {} and felt good.",
    "travel": "The user booked a {} for {} and is looking forward to it.",
}
ASSISTANT_LINES = (
    "The user seems stressed and unhappy about the {} at work.",
    "The user is probably overwhelmed by the {} deadline and dreads the office.",
    "The user appears anxious and frustrated with their manager about the {}.",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _topic(text: str) -> str | None:
    lowered = text.lower()
    scores = {t: sum(1 for w in words if w in lowered) for t, words in DRIFT_TOPICS.items()}
    best = max(scores, key=lambda t: scores[t])
    return best if scores[best] else None


def drift(
    lab: Lab, rng: random.Random, sessions: int, progress: Progress | None = None
) -> tuple[list[Metric], dict[str, Any]]:
    """The wake document's behavioural signature across sessions: the user's life is stable,
    the assistant's conclusions lean to stressed work."""
    plan: list[dict[str, Any]] = []
    topics, weights = list(USER_MIX), list(USER_MIX.values())
    for session in range(sessions):
        topic = rng.choices(topics, weights)[0]
        words = DRIFT_TOPICS[topic]
        user = USER_LINES[topic].format(rng.choice(words), f"{DAYS[session % 7]} {session}")
        guesses = []
        for _ in range(2):
            skewed = rng.random() < 0.7
            if skewed:
                line = rng.choice(ASSISTANT_LINES).format(f"{rng.choice(words)} {session}")
            else:
                other = rng.choices(topics, weights)[0]
                thing = rng.choice(DRIFT_TOPICS[other])
                line = f"The user probably enjoys {thing} (session {session})."
            guesses.append({"text": line, "confirm": not skewed and rng.random() < 0.5})
        plan.append({"user": user, "guesses": guesses})
    step = max(1, sessions // 10)
    series: dict[str, list[dict[str, Any]]] = {}
    for arm in ARMS:
        memdir = lab.memdir(f"drift-{arm}")
        series[arm] = []
        for session, item in enumerate(plan, start=1):
            now = on_day(session, 10)
            lifecycle.teach(memdir, item["user"], now)
            for offset, guess in enumerate(item["guesses"], start=1):
                written = lab.conclude(memdir, guess["text"], now + timedelta(minutes=offset), arm)
                if arm == SAFE and guess["confirm"]:
                    lifecycle.confirm(memdir, written, now + timedelta(hours=1))
            if session % step and session != sessions:
                continue
            if progress:
                progress(f"drift ({arm})", session, sessions)
            texts = as_fact(lab.wake(memdir, on_day(session, 20)))
            counted = Counter(t for t in (_topic(text) for text in texts) if t)
            total = sum(counted.values()) or 1
            mix = {t: counted[t] / total for t in DRIFT_TOPICS}
            valences = [lab.valence(text) for text in texts]
            series[arm].append({
                "session": session,
                "entries": len(texts),
                "mean_valence": round(sum(valences) / len(valences), 4) if valences else 0.0,
                "negative_share": round(share([v < -0.05 for v in valences]), 4),
                "work_share": round(mix["work"], 4),
                "topic_divergence": round(js_divergence(mix, USER_MIX), 4),
            })  # fmt: skip

    summary = {
        arm: {
            **{f"mean {name}": sum(point[name] for point in series[arm]) / len(series[arm])
               for name in ("topic_divergence", "negative_share")},
            **series[arm][-1],
        }
        for arm in ARMS
    }  # fmt: skip
    metrics = compare(
        "6 drift",
        summary,
        Measure("wake topic divergence from the user's mix (JS, bits), mean",
                "mean topic_divergence"),
        Measure("wake negative share, mean over the series", "mean negative_share"),
        Measure(f"wake topic divergence at session {sessions}", "topic_divergence"),
        Measure(f"wake mean valence at session {sessions}", "mean_valence",
                lower_is_better=False),
    )  # fmt: skip
    return metrics, series
