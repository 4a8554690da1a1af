"""Who runs a command: the user, or an assistant (an agent with a shell).

Kept apart from the teaching guard (usecases/provenance.py) so the client path to a running
service (cli/service.py) can say who is asking without importing the archive's modules.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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
    # MEMDIR_ACTOR=user inside an agent harness: a prompt hook relaying the user's prompt, or
    # the model claiming to be one. It writes as the assistant; the user turns it records are
    # trusted only when the harness's transcript holds them (memdir/harness.py).
    hook: bool = False

    @property
    def assistant(self) -> bool:
        return self.name == ASSISTANT


def actor_from(environ: Mapping[str, str]) -> Actor:
    """An agent harness's marker variable makes the actor the assistant, and so does
    MEMDIR_ACTOR=assistant; MEMDIR_ACTOR=user counts only outside a harness. Inside one it is
    what a prompt hook sets — and what the model could set as well — so the actor stays the
    assistant, marked `hook`: its user turns are checked against the harness's transcript."""
    from memdir.archive_format.errors import BadInputError

    served = getattr(_served, "actor", None)
    if served is not None:
        return served
    declared = environ.get("MEMDIR_ACTOR", "").strip().casefold()
    if declared and declared not in ACTORS:
        raise BadInputError(
            f"MEMDIR_ACTOR={declared!r} is neither 'user' nor 'assistant'",
            hint="set MEMDIR_ACTOR=assistant in an agent's shell, or unset it",
        )
    if declared == ASSISTANT:
        return Actor(ASSISTANT, "MEMDIR_ACTOR=assistant")
    for variable, harness in HARNESS_MARKERS:
        if environ.get(variable):
            if declared == "user":
                return Actor(ASSISTANT, f"MEMDIR_ACTOR=user inside {harness} (a prompt hook)",
                             hook=True)  # fmt: skip
            return Actor(ASSISTANT, f"{variable} is set ({harness})")
    if declared == "user":
        return Actor("user", "MEMDIR_ACTOR=user")
    return Actor("user", "the command line")


# The actor the resident service derived for the request this thread runs (memdir/usecases/
# serve.py): it wins over the service's own environment, which may be an agent's shell.
_served = threading.local()


@contextmanager
def serving_as(actor: Actor) -> Iterator[None]:
    """Run the block (one served request, on this thread) as `actor`."""
    before = getattr(_served, "actor", None)
    _served.actor = actor
    try:
        yield
    finally:
        _served.actor = before


def peer_environ(pid: int) -> dict[str, str] | None:
    """The environment a local process was started with (/proc/PID/environ, readable for the
    same user), or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    pairs = (item.partition(b"=") for item in data.split(b"\0") if item)
    return {key.decode("utf-8", "replace"): value.decode("utf-8", "replace")
            for key, _, value in pairs}  # fmt: skip


def caller_actor(environ: Mapping[str, str] | None, claimed: object) -> Actor:
    """Who a service request comes from: read from the caller's own environment (its process
    as the kernel names it, SO_PEERCRED), never from the request alone. The request's `actor`
    may only make it weaker ('assistant'), or, from inside a harness, say that a prompt hook
    relays the user's prompt (`hook`: its user turns are checked against the transcript).
    An environment that cannot be read counts as the assistant's."""
    if not environ:  # unreadable, or empty (a process caught mid-exec): never the user
        return Actor(ASSISTANT, "the caller's environment could not be read")
    found = actor_from_environment(environ)
    if claimed == ASSISTANT and not found.assistant:
        return Actor(ASSISTANT, "the request says the assistant asks")
    if claimed == "user" and found.assistant and not found.hook:
        why = f"{found.reason}; the request says a prompt hook relays the user"
        return Actor(ASSISTANT, why, hook=True)
    return found


def actor_from_environment(environ: Mapping[str, str]) -> Actor:
    """actor_from for another process's environment (a served request's thread-local actor
    aside); a bad MEMDIR_ACTOR there counts as the assistant."""
    from memdir.archive_format.errors import BadInputError

    before = getattr(_served, "actor", None)
    _served.actor = None
    try:
        return actor_from(environ)
    except BadInputError:
        return Actor(ASSISTANT, "the caller's MEMDIR_ACTOR is not valid")
    finally:
        _served.actor = before


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
