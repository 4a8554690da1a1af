"""9. Secrets on every surface: sealed and secret text planted as memories and journal turns,
then every read surface probed — the CLI commands as subprocesses, the MCP tools called in
process — and every occurrence of the planted text counted.

It measures whatever the surfaces do today: a surface that leaks shows up as a count, per
surface, in the details. The unrestricted arm is a memory without visibility levels (the same
text planted as normal and public), so its counts show what each surface would carry."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from memdir.archive_format import journal, lifecycle

from .harness import ARMS, SAFE, Lab, Measure, Metric, compare
from .user import on_day

# (needle, how it is planted, a query that finds it)
PLANTS = (
    ("ZX-LOCKER-4417", "memory:sealed", "What is the code of the user's gym locker?"),
    ("ZX-VAULT-5120", "memory:secret-turn", "What is the vault password?"),
    ("ZX-PIN-8830", "turn:secret", "What is the user's bank PIN?"),
    ("ZX-SHED-2291", "turn:sealed", "Where is the spare shed key hidden?"),
)
TEXTS = {
    "ZX-LOCKER-4417": "The code of the user's gym locker is ZX-LOCKER-4417.",
    "ZX-VAULT-5120": "The vault password is ZX-VAULT-5120.",
    "ZX-PIN-8830": "My bank PIN is ZX-PIN-8830, keep it to yourself.",
    "ZX-SHED-2291": "The spare shed key is hidden under the stone marked ZX-SHED-2291.",
}


def _plant(memdir: Any, arm: str) -> str:
    """The plants, hidden (safeguarded) or plain (unrestricted); returns the sealed memory's id."""
    at = on_day(1, 9)
    hidden = arm == SAFE
    sealed = lifecycle.teach(memdir, TEXTS["ZX-LOCKER-4417"], at,
                             visibility="sealed" if hidden else "normal").id  # fmt: skip
    lifecycle.teach(memdir, "The user's gym is open until ten at night.", at)
    turns = [
        journal.new_turn(at, "user", "vault", TEXTS["ZX-VAULT-5120"],
                         secrecy="secret" if hidden else "public"),
        journal.new_turn(at + timedelta(minutes=1), "user", "bank", TEXTS["ZX-PIN-8830"],
                         secrecy="secret" if hidden else "public"),
        journal.new_turn(at + timedelta(minutes=2), "user", "shed", TEXTS["ZX-SHED-2291"],
                         visibility="sealed" if hidden else "normal"),
        journal.new_turn(at + timedelta(minutes=3), "user", "shed",
                         "I keep forgetting where the spare shed key is."),
    ]  # fmt: skip
    journal.add_turns(memdir, turns)
    return sealed


def _cli_surfaces(lab: Lab, memdir: Any, now: Any, sealed: str) -> dict[str, str]:
    """Every CLI read surface's output (stdout), and the files a user shares (export)."""
    import tarfile

    def run(*args: str) -> str:
        done = lab.cli(memdir, now, {}, *args)
        return done.stdout + done.stderr

    seen: dict[str, str] = {}
    for needle, _, query in PLANTS:
        seen[f"recall --explain:{needle}"] = run("recall", query, "--explain", "--json")
        seen[f"search:{needle}"] = run("search", needle.split("-")[1].lower(), "--json")
        seen[f"similar:{needle}"] = run("similar", query, "--json")
    seen["list"] = run("list", "--json")
    seen["list --status all"] = run("list", "--status", "all", "--json")
    seen["show"] = run("show", sealed, "--json")
    seen["log"] = run("log", sealed, "--json")
    seen["journal read"] = run("journal", "read", "--json")
    seen["journal read --all"] = run("journal", "read", "--all", "--json")
    seen["ring"] = run("ring")
    seen["wake"] = run("wake")
    seen["boot"] = run("boot")
    out = memdir.root.parent / f"{memdir.root.name}-export.tar.gz"
    run("export", "--out", str(out))
    if out.exists():
        with tarfile.open(out) as archive:
            seen["export"] = "".join(
                archive.extractfile(member).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                for member in archive.getmembers() if member.isfile()
            )  # fmt: skip
        out.unlink()
    return seen


def _allowed(probe: str) -> bool:
    """Whether the policy matrix lets this probe's surface show sealed and secret text (the
    exports: the user's own backup, docs/POLICY.md)."""
    from memdir.archive_format import visibility

    surface = probe.removeprefix("mcp ").split(":")[0].removesuffix(" --status all")
    if surface not in visibility.SURFACES:
        return False
    return all(
        visibility.decide(surface, "durable", exposure) is visibility.Show.TEXT
        for exposure in ("sealed", "secret")
    )


def _mcp_surfaces(memdir: Any, sealed: str) -> dict[str, str]:
    """The MCP tools' answers (the tool methods the server exposes, called in process)."""
    import json

    from memdir.cli.mcp_server import MemdirTools
    from memdir.usecases.provenance import DEFAULT_WINDOW

    tools = MemdirTools(memdir, DEFAULT_WINDOW)
    seen: dict[str, str] = {}

    def ask(name: str, call: Any) -> None:
        try:
            seen[f"mcp {name}"] = json.dumps(call(), default=str)
        except Exception as error:  # a tool refusing is an answer too  # noqa: BLE001
            seen[f"mcp {name}"] = str(error)

    for needle, _, query in PLANTS:
        ask(f"recall:{needle}", lambda query=query: tools.recall(query, explain=True))
        ask(f"search:{needle}", lambda needle=needle: tools.search(needle.split("-")[1].lower()))
    ask("show", lambda: tools.show(sealed))
    ask("journal_read", lambda: tools.journal_read())
    ask("ring", tools.ring)
    ask("wake", lambda: tools.wake())
    ask("boot", tools.boot)
    return seen


def leakage(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    """Plant, dream and sleep (documents, summaries, the ring), then probe every surface."""
    from memdir.usecases.sleep import sleep

    del rng  # nothing random: the same plants, the same probes
    found: dict[str, dict[str, Any]] = {}
    for arm in ARMS:
        memdir = lab.memdir(f"leak-{arm}", small_talk=True)
        sealed = _plant(memdir, arm)
        now = on_day(2, 3)
        sleep(memdir, now)
        surfaces = {**_cli_surfaces(lab, memdir, now, sealed), **_mcp_surfaces(memdir, sealed)}
        hits = {
            name: sorted(needle for needle, _, _ in PLANTS if needle in text)
            for name, text in surfaces.items()
        }
        leaking = {name: needles for name, needles in hits.items() if needles}
        forbidden = {name: needles for name, needles in leaking.items() if not _allowed(name)}
        found[arm] = {
            "occurrences": sum(len(needles) for needles in forbidden.values()),
            "allowed_occurrences": sum(len(n) for n in leaking.values())
            - sum(len(n) for n in forbidden.values()),
            "surfaces_probed": len(surfaces),
            "surfaces_leaking": len(forbidden),
            "leaks": leaking,
        }
    metrics = compare(
        "9 secret leakage",
        found,
        Measure("sealed/secret text: occurrences on read surfaces", "occurrences",
                note="every CLI read command and MCP tool, outside what the policy matrix "
                     "allows (exports); details list them"),
        Measure("sealed/secret text: surfaces showing any", "surfaces_leaking"),
    )  # fmt: skip
    return metrics, found
