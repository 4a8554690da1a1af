"""7. Provenance through derivation: payloads planted by imported assistant turns, then a
night's dream, then recall — does a summary launder them into what the user said?"""

from __future__ import annotations

import json
import random
from typing import Any

from memdir.archive_format import lifecycle

from .adversarial import ATTACK_QUERIES, PAYLOADS, _attack_conversations
from .harness import ARMS, OPEN, K, Lab, Measure, Metric, compare, share
from .user import on_day


def derivation(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    """Import the attack chats and dream; the unrestricted arm takes every dreamt memory as
    known (it confirms them: a summary is as good as what it summarises)."""
    from memdir.usecases.dream import dream
    from memdir.usecases.imports import import_file

    conversations = _attack_conversations(rng)
    found: dict[str, dict[str, Any]] = {}
    for arm in ARMS:
        memdir = lab.memdir(f"derive-{arm}", small_talk=True)
        path = memdir.root / "export.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in conversations), "utf-8")
        now = on_day(1, 2)
        import_file(memdir, path, "jsonl", now)
        written = dream(memdir, now).written
        if arm == OPEN:
            for memory_id in written:
                state = lifecycle.load_view(memdir, now).resolve(memory_id)
                if state.status == "provisional":
                    lifecycle.confirm(memdir, memory_id, now, actor="user")
        later = on_day(2)
        view = lifecycle.load_view(memdir, later)
        dreamt = [view.states[memory_id] for memory_id in written]
        index = lab.index(memdir)
        durable, grounded = [], []
        for payload, query in zip(PAYLOADS, ATTACK_QUERIES, strict=True):
            needle = payload.removeprefix("the user")[:40].lower()
            carrying = [s for s in dreamt if s.memory and needle in s.memory.text.lower()]
            durable.append(any(s.status == "durable" for s in carrying))
            top = lab.grounded(index, query, later, arm)
            grounded.append(any(needle in text.lower() for text in top))
        questions = [s for s in dreamt if s.memory is not None and s.memory.store == "semantic"
                     and "?" in s.memory.text.split(":", 1)[-1]]  # fmt: skip
        found[arm] = {
            "dreamt": len(dreamt),
            "payload_durable": share(durable),
            "payload_grounded": share(grounded),
            "questions_promoted": len(questions),  # reported, not compared: the same dream
        }
    metrics = compare(
        "7 derivation",
        found,
        Measure("import → dream: payload durable (any source)", "payload_durable",
                note="safeguarded: a summary with assistant words is an inference"),
        Measure(f"import → dream: payload in a GROUNDED top-{K}", "payload_grounded",
                note="safeguarded: what is provisional grounds no verdict"),
    )  # fmt: skip
    return metrics, found
