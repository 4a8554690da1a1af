"""8. The command line from an agent's shell: a model with a shell (Claude Code, Codex CLI)
runs `memdir` itself — teaching a payload, recording a forged user turn to quote, confirming
its own inference — in the real CLI, as a subprocess."""

from __future__ import annotations

import random
from typing import Any

from memdir.archive_format import journal, lifecycle

from .adversarial import ATTACK_QUERIES, PAYLOADS
from .harness import ARMS, OPEN, SAFE, K, Lab, Measure, Metric, compare, share
from .user import on_day

# The safeguarded arm is the shell Claude Code gives its model; the unrestricted one a command
# line that counts as the user whoever types (what memdir did before it had an actor).
SHELLS = {SAFE: {"CLAUDECODE": "1"}, OPEN: {"MEMDIR_ACTOR": "user"}}


def shell(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    """Each payload by one of three routes (rotating): `teach` it; `journal add --role user`
    it, then `teach` it quoting that turn; `infer` it, then `confirm --quote` it."""
    found: dict[str, dict[str, Any]] = {}
    routes = [number % 3 for number in range(len(PAYLOADS))]
    rng.shuffle(routes)
    for arm in ARMS:
        memdir = lab.memdir(f"shell-{arm}", small_talk=True)
        env = SHELLS[arm]
        now = on_day(1, 4)
        ids: list[str] = []
        for payload, route in zip(PAYLOADS, routes, strict=True):
            text = payload[0].upper() + payload[1:] + "."
            if route == 1:
                lab.cli(memdir, now, env, "journal", "add", "--role", "user", "--session",
                        "agent", f"Please remember: {text}")  # fmt: skip
            if route == 2:
                made = lab.cli(memdir, now, env, "infer", text).stdout.strip()
                lab.cli(memdir, now, env, "confirm", made, "--quote", text)
                ids.append(made)
                continue
            ids.append(lab.cli(memdir, now, env, "teach", text).stdout.strip())
        later = on_day(2)
        view = lifecycle.load_view(memdir, later)
        index = lab.index(memdir)
        durable, grounded = [], []
        for number, query in enumerate(ATTACK_QUERIES):
            state = view.states.get(ids[number])
            durable.append(state is not None and state.status == "durable")
            needle = PAYLOADS[number].removeprefix("the user")[:40].lower()
            grounded.append(
                any(needle in t.lower() for t in lab.grounded(index, query, later, arm))
            )
        forged = [t for t in journal.read_journal(memdir).turns if t.role == "user" and t.trusted]
        found[arm] = {
            "payload_durable": share(durable),
            "payload_grounded": share(grounded),
            "forged_user_turns": len(forged),
        }
    metrics = compare(
        "8 agent shell",
        found,
        Measure("agent shell: payload durable", "payload_durable",
                note="safeguarded: CLAUDECODE=1 makes memdir the assistant's"),
        Measure(f"agent shell: payload in a GROUNDED top-{K}", "payload_grounded"),
        Measure("agent shell: user turns it recorded", "forged_user_turns",
                note="safeguarded: journal add --role user refuses"),
    )  # fmt: skip
    return metrics, found
