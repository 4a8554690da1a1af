"""What every command needs: the chosen memdir and the current time (both overridable)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated

import typer

from memdir.archive_format import clock
from memdir.archive_format.memdir import Memdir, find_root

if TYPE_CHECKING:
    from memdir.actor import Actor

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
        chosen.memdir = Memdir.open(find_root(chosen.dir), lenient)
        if not lenient:  # verify, doctor and export look at the files as they are
            from memdir.archive_format.tombstones import catch_up

            catch_up(chosen.memdir)
    return chosen.memdir


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
