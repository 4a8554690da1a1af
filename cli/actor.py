"""Who runs a command: the user, or an assistant (an agent with a shell).

Kept apart from the teaching guard (usecases/provenance.py) so the client path to a running
service (cli/service.py) can say who is asking without importing the archive's modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

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


# How far an assistant's clock may stray from the system clock on a write: the service client
# pins its own time on a request (cli/service.py), so a few seconds of skew are normal; more is
# an assistant moving time (e.g. `--now` back into a 24 h quote window that has closed).
WRITE_CLOCK_SKEW = 300.0  # seconds


def refuse_user_claim(actor: Actor, claimed: str, what: str) -> None:
    """An assistant cannot write as the user: `claimed` (an author or `--by`) naming the user
    ('user' or 'user:NAME') from an assistant's shell is refused."""
    from memdir.archive_format.errors import LifecycleError

    named = claimed.strip().casefold()
    if actor.assistant and (named == "user" or named.startswith("user:")):
        raise LifecycleError(
            f"an assistant cannot {what} as {claimed!r} ({actor.reason})",
            hint="only the user's own shell writes as the user; leave the author out",
        )


def refuse_moved_clock(actor: Actor, moment: datetime, real: datetime) -> None:
    """An assistant's write happens now: a `--now` or $MEMDIR_NOW more than WRITE_CLOCK_SKEW
    from the system clock is refused (it would move the quote window and the recorded times)."""
    from memdir.archive_format.errors import LifecycleError

    if actor.assistant and abs((moment - real).total_seconds()) > WRITE_CLOCK_SKEW:
        raise LifecycleError(
            f"an assistant's write cannot move the clock ({actor.reason})",
            hint="leave out --now and $MEMDIR_NOW: an assistant writes at the real time",
        )
