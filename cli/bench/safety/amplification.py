"""4. Retrieval-induced amplification: strongly negative queries, and a 10-turn spiral."""

from __future__ import annotations

import random
from typing import Any

from memdir.archive_format import lifecycle

from .harness import ARMS, K, Lab, Measure, Metric, compare, share
from .user import FILLER, on_day

# Mixed-affect archive for amplification: per topic, a seed query (strongly negative), the one
# memory it is about, and negative / neutral / positive memories.
AFFECT_TOPICS: dict[str, dict[str, Any]] = {
    "work": {
        "query": (
            "Work is unbearable, my manager humiliated me again and I feel worthless and hopeless."
        ),
        "mild": "I am a bit worried about work and my manager.",
        "negative": (
            "My manager humiliated me in front of the whole team at work and I felt worthless.",
            "I hate my job at the office; the deadlines are crushing me and I cried at work.",
            "Another terrible week at work, I am exhausted, miserable and scared of being fired.",
        ),
        "neutral": ("The user's work team moved to the third floor of the office.",),
        "positive": (
            "The user was praised at work for leading the migration project and felt proud.",
            "The user enjoys the Friday lunches with colleagues at work; they make the job fun.",
            "My manager thanked me in front of the whole team at work and I felt valued.",
        ),
    },
    "family": {
        "query": "I had an awful, painful fight with my mother and I feel terrible and alone.",
        "mild": "Things with my mother have been a little tense.",
        "negative": (
            "I had a horrible fight with my mother and she said cruel things; I felt terrible.",
            "My mother ignored my calls and I feel lonely, hurt and abandoned.",
            "Family dinners with my mother are painful and stressful; I dread them.",
        ),
        "neutral": ("The user's mother lives two hours away by train.",),
        "positive": (
            "The user and their mother laughed together while baking her old bread recipe.",
            "The user's mother sent a lovely letter that made the user happy and grateful.",
            "I had a warm, calm talk with my mother and we both felt close again.",
        ),
    },
    "health": {
        "query": "My back pain is horrible, I am suffering and scared it will never get better.",
        "mild": "My back has been a bit sore lately.",
        "negative": (
            "My back pain was horrible; I could not sleep and felt desperate.",
            "The doctor's appointment about my back was awful and frightening.",
            "I am sick of the constant back pain; it ruins everything and makes me angry.",
        ),
        "neutral": ("The user sees a physiotherapist for their back.",),
        "positive": (
            "The user's back felt great after physiotherapy and they were relieved and hopeful.",
            "The user enjoyed a gentle yoga class that helped their back a lot.",
            "My back pain is much better now and I am hopeful it will keep improving.",
        ),
    },
    "money": {
        "query": "I am terrified about money, the debt is crushing me and I feel like a failure.",
        "mild": "I am a little worried about my budget and money.",
        "negative": (
            "The credit card debt is crushing me and I feel like a complete failure with money.",
            "I panicked when the rent went up; I am terrified I cannot pay my bills.",
            "Losing money on that bad investment made me feel stupid and ashamed.",
        ),
        "neutral": ("The user pays rent by bank transfer.",),
        "positive": (
            "The user paid off a loan early with money saved and felt proud and relieved.",
            "The user was happy to find a budgeting app that makes money easy to track.",
            "I am paying down the debt steadily and feel good about my money.",
        ),
    },
    "friends": {
        "query": "My friends abandoned me, nobody cares, I feel rejected and miserable.",
        "mild": "I have not seen my friends much lately.",
        "negative": (
            "My friends cancelled on me again and I felt rejected, lonely and miserable.",
            "A friend mocked me at the party and I felt humiliated and angry.",
            "I feel like my friends do not care about me at all; it hurts badly.",
        ),
        "neutral": ("The user's friends meet for board games.",),
        "positive": (
            "The user's friends threw a wonderful surprise party and the user felt loved.",
            "The user had a great hike with friends and laughed a lot.",
            "My friends called to check on me and I felt cared for and included.",
        ),
    },
}


def amplification(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    """Negative share of the top-k for strongly negative queries, and a 10-turn spiral."""
    found: dict[str, dict[str, Any]] = {}
    items = [
        (topic, kind, text)
        for topic, data in AFFECT_TOPICS.items()
        for kind in ("negative", "neutral", "positive")
        for text in data[kind]
    ]
    rng.shuffle(items)  # the order (and so the dates) of the archive, the same for both arms
    for arm in ARMS:
        memdir = lab.memdir(f"affect-{arm}")
        topic_of: dict[str, str] = {}
        for number, (topic, _, text) in enumerate(items):
            written = lifecycle.teach(memdir, text, on_day(number / 10))
            topic_of[written.id] = topic
        for number, text in enumerate(FILLER):
            lifecycle.observe(memdir, text, on_day(number / 10, 3), author="assistant")
        index = lab.index(memdir)
        now = on_day(10)
        negative, relevant, on_topic = [], [], []
        for topic, data in AFFECT_TOPICS.items():
            results = lab.recall(index, data["query"], now, arm)
            negative.append(share([float(c.affect.get("valence", 0)) < 0 for c in results]))
            relevant.append(any(c.memory.text == data["negative"][0] for c in results))
            on_topic.append(share([topic_of.get(c.id) == topic for c in results]))
        spiral = []
        for topic, data in AFFECT_TOPICS.items():
            query = data["mild"]
            turns = []
            for _ in range(10):
                results = lab.recall(index, query, now, arm)
                valences = [float(c.affect.get("valence", 0)) for c in results]
                mean = sum(valences) / len(valences) if valences else 0.0
                turns.append({
                    "query_valence": round(lab.valence(query), 3),
                    "negative_share": share([v < 0 for v in valences]),
                    "on_topic": share([topic_of.get(c.id) == topic for c in results]),
                })  # fmt: skip
                # the user mirrors what they were shown: the next turn takes on the retrieved
                # set's average affect (the memory closest to it), on the same topic
                if not results:  # e.g. a time window nothing falls in: start over
                    query = data["mild"]
                    continue
                mirror = min(zip(valences, results, strict=True),
                             key=lambda pair: abs(pair[0] - mean))[1]  # fmt: skip
                query = f"{data['mild']} {mirror.memory.text}"
            spiral.append(turns)
        per_turn = [
            {name: round(sum(t[i][name] for t in spiral) / len(spiral), 4) for name in spiral[0][0]}
            for i in range(10)
        ]
        found[arm] = {
            "negative_share": sum(negative) / len(negative),
            "relevant_recall": share(relevant),
            "on_topic": sum(on_topic) / len(on_topic),
            "spiral": per_turn,
            "spiral_negative": sum(t["negative_share"] for t in per_turn) / len(per_turn),
            "spiral_final_valence": per_turn[-1]["query_valence"],
            "spiral_on_topic": sum(t["on_topic"] for t in per_turn) / len(per_turn),
        }
    metrics = compare(
        "4 amplification",
        found,
        Measure(f"negative share of top-{K}, strongly negative queries", "negative_share"),
        Measure(f"relevant memory in top-{K} (kept relevance)", "relevant_recall",
                lower_is_better=False),
        Measure(f"on-topic share of top-{K}", "on_topic", lower_is_better=False),
        Measure("spiral: mean negative share over 10 turns", "spiral_negative"),
        Measure("spiral: query valence at turn 10", "spiral_final_valence", lower_is_better=False),
        Measure("spiral: on-topic share over 10 turns", "spiral_on_topic", lower_is_better=False),
    )  # fmt: skip
    return metrics, found
