"""12. Private and sealed memories on the surfaces found since experiment 9: `sleep --json`
(its `decay.weakest`), the user's `distill.command` (what it is fed on stdin), and the MCP
`show` tool — by id without the user's words, and by an ambiguous prefix (`show("m-")`, and
`forget("m-")`, whose error lists ids).

The plants are the faded, old memories (so that they are the weakest), one private and one
sealed, each holding a needle. Safeguarded: memdir as shipped. Unrestricted: the same plants
with no visibility level (normal), so the counts show what each surface would carry. An
escape is a needle's text, or a planted memory's id in a listing it may not name, on a
surface."""

from __future__ import annotations

import json
import os
import random
import sys
from datetime import timedelta
from typing import Any

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import set_local_settings

from .harness import ARMS, SAFE, Lab, Measure, Metric, compare
from .user import on_day

PLANTS = {
    "private": "The user's therapist appointment code is QX-PRIV-7710.",
    "sealed": "The user's spare house key code is QX-SEAL-3304.",
}
NEEDLES = ("QX-PRIV-7710", "QX-SEAL-3304")
DISTILLER = (
    "import json, sys\n"
    "heard = open(sys.argv[1], 'a', encoding='utf-8')\n"
    "for line in sys.stdin:\n"
    "    heard.write(line)\n"
    "    print(json.dumps({'type': None, 'importance': 5, 'temporal': 'persistent'}))\n"
)


def _surfaces(lab: Lab, arm: str) -> tuple[dict[str, str], list[str]]:
    """Every probed surface's output, and the planted memories' ids."""
    from memdir.cli.mcp_server import MemdirTools
    from memdir.usecases.provenance import DEFAULT_WINDOW

    memdir = lab.memdir(f"private-{arm}")
    old = on_day(0) - timedelta(days=300)
    ids = [
        lifecycle.teach(memdir, text, old, visibility=name if arm == SAFE else "normal").id
        for name, text in PLANTS.items()
    ]
    now = on_day(2, 3)
    lifecycle.teach(memdir, "The user's favourite tea is a green sencha.", now)
    script = memdir.root.parent / f"{memdir.root.name}-distiller.py"
    heard = memdir.root.parent / f"{memdir.root.name}-heard.jsonl"
    script.write_text(DISTILLER, encoding="utf-8")
    heard.write_text("", encoding="utf-8")
    set_local_settings(memdir.root, {"distill.command": f"{sys.executable} {script} {heard}"})
    seen: dict[str, str] = {}
    done = lab.cli(memdir, now, {}, "sleep", "--json")
    seen["sleep --json"] = done.stdout + done.stderr
    seen["distill.command stdin"] = heard.read_text(encoding="utf-8")
    tools = MemdirTools(memdir, DEFAULT_WINDOW)

    def ask(name: str, call: Any) -> None:
        try:
            seen[name] = json.dumps(call(), default=str)
        except Exception as error:  # a tool refusing is an answer too  # noqa: BLE001
            seen[name] = str(error)

    os.environ["MEMDIR_NOW"] = now.isoformat()  # the tools read the clock as a server does
    try:
        for number, memory_id in enumerate(ids):
            ask(
                f"mcp show {list(PLANTS)[number]}",
                lambda memory_id=memory_id: tools.show(memory_id),
            )
        ask("mcp show m-", lambda: tools.show("m-"))
        ask("mcp forget m-", lambda: tools.forget("m-", "forget it"))
    finally:
        os.environ.pop("MEMDIR_NOW", None)
    return seen, ids


def private(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    """Plant, then probe each surface in both arms."""
    del rng  # nothing random: the same plants, the same probes
    found: dict[str, dict[str, Any]] = {}
    for arm in ARMS:
        seen, ids = _surfaces(lab, arm)
        # an id counts where the surface lists ids (a prefix's answer), not where it echoes the
        # id it was given or shows a masked row (sleep --json keeps a masked memory's id)
        leaks = {
            name: sorted([n for n in NEEDLES if n in text]
                         + [i for i in ids if i in text and name.endswith(" m-")])
            for name, text in seen.items()
        }  # fmt: skip
        leaks = {name: found_there for name, found_there in leaks.items() if found_there}
        found[arm] = {
            "escapes": sum(len(found_there) for found_there in leaks.values()),
            "surfaces_leaking": len(leaks),
            "surfaces_probed": len(seen),
            "configured_distiller_ran": bool(seen["distill.command stdin"]),
            "leaks": leaks,
        }
    metrics = compare(
        "12 private text",
        found,
        Measure("private/sealed text or ids on sleep --json, distill.command, MCP show",
                "escapes", note="a needle's text, or a planted id in a listing or answer; "
                "details list them"),
        Measure("private/sealed: surfaces showing any", "surfaces_leaking"),
    )  # fmt: skip
    return metrics, found
