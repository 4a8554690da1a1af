"""Who runs a command: the user, or an assistant (an agent with a shell).

Kept apart from the teaching guard (usecases/provenance.py) so the client path to a running
service (cli/service.py) can say who is asking without importing the archive's modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ASSISTANT = "assistant"
# Variables that agent harnesses set in the shells they give the model (docs/MCP.md)
HARNESS_MARKERS = (
    ("CLAUDECODE", "Claude Code"),
    ("CODEX_SANDBOX", "Codex CLI"),
    ("CODEX_SANDBOX_NETWORK_DISABLED", "Codex CLI"),
    ("CODEX_THREAD_ID", "Codex CLI"),
)
ACTORS = ("user", ASSISTANT)


@dataclass(frozen=True)
class Actor:
    """Who is running the command line: the user, or an assistant (and how that is known)."""

    name: str
    reason: str

    @property
    def assistant(self) -> bool:
        return self.name == ASSISTANT


def actor_from(environ: Mapping[str, str]) -> Actor:
    """MEMDIR_ACTOR (user | assistant) when set, else an agent harness's marker variable makes
    the actor the assistant, else the user. MEMDIR_ACTOR=user is what a client's prompt hook
    sets (the words it records come from the client, not the model)."""
    from memdir.archive_format.errors import BadInputError

    declared = environ.get("MEMDIR_ACTOR", "").strip().casefold()
    if declared:
        if declared not in ACTORS:
            raise BadInputError(
                f"MEMDIR_ACTOR={declared!r} is neither 'user' nor 'assistant'",
                hint="set MEMDIR_ACTOR=assistant in an agent's shell, or unset it",
            )
        return Actor(declared, f"MEMDIR_ACTOR={declared}")
    for variable, harness in HARNESS_MARKERS:
        if environ.get(variable):
            return Actor(ASSISTANT, f"{variable} is set ({harness})")
    return Actor("user", "the command line")
