"""What every command needs: the chosen memdir and the current time (both overridable)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

import typer

from memdir.archive_format import clock
from memdir.archive_format.memdir import Memdir, find_root

if TYPE_CHECKING:
    from memdir.actor import Actor
    from memdir.indexers.index import Progress

    from .render import Answer

P = TypeVar("P")

NowOpt = Annotated[
    str | None,
    typer.Option("--now", help="Pretend it is this ISO date-time (also $MEMDIR_NOW)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@dataclass
class Options:
    """Global options given before the command name."""

    dir: str | None = None
    now: str | None = None
    debug: bool = False
    memdir: Memdir | None = None  # opened once per command (memdir.yaml and its settings read once)
    actor: Actor | None = None


def options(ctx: typer.Context) -> Options:
    root = ctx.find_root()
    if not isinstance(root.obj, Options):
        root.obj = Options()
    return root.obj


def open_memdir(ctx: typer.Context, lenient: bool = False) -> Memdir:
    """The memdir chosen by --dir, $MEMDIR, or the nearest one upward; opened (and its settings
    checked) once per command, however often a command asks. `lenient`: see Memdir.open."""
    chosen = options(ctx)
    if chosen.memdir is None:
        chosen.memdir = opened(chosen.dir, lenient)
    return chosen.memdir


def opened(given: str | None, lenient: bool = False) -> Memdir:
    """Open the memdir `given` (a --dir) names, as every command does before it reads: with the
    forgets a merge may have undone re-applied (not when `lenient`: verify, doctor and export
    look at the files as they are)."""
    memdir = Memdir.open(find_root(given), lenient)
    if not lenient:
        from memdir.archive_format.tombstones import catch_up

        catch_up(memdir)
    return memdir


@contextmanager
def no_progress() -> Iterator[Progress]:
    yield lambda stage, done, total: None


@dataclass(frozen=True)
class Invocation:
    """What the adapter that runs a command supplies besides its parameters: the memdir and
    who acts (each found when first asked for), the time (the global --now, or a service
    request's), the width to lay results out for, standard input (the text of a '-' argument)
    and a progress display. The command line fills it from its own process (`invocation`), the
    service (cli/serve.py) from a request."""

    memdir_of: Callable[[], Memdir]
    actor_of: Callable[[], Actor]
    now: str | None
    room: int | None
    stdin: Callable[[], str]
    progress: Callable[[], AbstractContextManager[Progress]] = no_progress

    def memdir(self) -> Memdir:
        return self.memdir_of()

    def actor(self) -> Actor:
        return self.actor_of()

    def moment(self, override: str | None = None) -> datetime:
        """A command's --now, else the invocation's, else $MEMDIR_NOW, else the clock."""
        return clock.now(override or self.now)

    def text(self, given: str) -> str:
        """An argument that may be '-': standard input's text then."""
        return self.stdin() if given == "-" else given


@dataclass(frozen=True)
class Served(Generic[P]):
    """A command `memdir serve` answers: its parameters (the dataclass its options are declared
    by, `parameters.group`) and the function that answers them, the one the command runs."""

    params: type[P]
    answer: Callable[[Invocation, P], Answer]

    def run(self, at: Invocation, values: dict[str, Any]) -> Answer:
        return self.answer(at, self.params(**values))


def invocation(ctx: typer.Context) -> Invocation:
    """The command line's invocation: this process's memdir, actor, clock, terminal and stdin."""
    from .layout import width

    return Invocation(lambda: open_memdir(ctx), lambda: actor(ctx), options(ctx).now, width(),
                      _stdin, _progress_bar)  # fmt: skip


def _stdin() -> str:
    from .commands.lifecycle import read_text

    return read_text("-")


def _progress_bar() -> AbstractContextManager[Progress]:
    """A progress bar on a terminal's stderr (commands/index.py)."""
    from .commands.index import progress_bar

    return progress_bar()


def actor(ctx: typer.Context) -> Actor:
    """Who runs this command: MEMDIR_ACTOR, or an agent harness's marker, else the user."""
    from memdir.actor import actor_from

    chosen = options(ctx)
    if chosen.actor is None:
        chosen.actor = actor_from(os.environ)
    return chosen.actor


def now(ctx: typer.Context, override: str | None = None) -> datetime:
    """A command's --now, else the global --now, else $MEMDIR_NOW, else the clock."""
    return clock.now(override or options(ctx).now)


def writer(ctx: typer.Context, override: str | None = None) -> tuple[Memdir, datetime, Actor]:
    """What a write command needs: the memdir, the time and who writes. An assistant writes at
    the real time (memdir/actor.py: refuse_moved_clock), so `--now` cannot reopen a quote window."""
    from memdir.actor import refuse_moved_clock

    who, moment = actor(ctx), now(ctx, override)
    refuse_moved_clock(who, moment, datetime.now(timezone.utc))
    return open_memdir(ctx), moment, who
