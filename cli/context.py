"""What every command needs: the chosen memdir and the current time (both overridable), the
options many commands share, and a way to share a group of options."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, TypeVar, cast

import typer

from memdir.archive_format import clock
from memdir.archive_format.memdir import Memdir, find_root

NowOpt = Annotated[
    str | None,
    typer.Option("--now", help="Pretend it is this ISO date-time (also $MEMDIR_NOW)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Options:
    """Global options given before the command name."""

    dir: str | None = None
    now: str | None = None
    debug: bool = False


def options(ctx: typer.Context) -> Options:
    root = ctx.find_root()
    if not isinstance(root.obj, Options):
        root.obj = Options()
    return root.obj


def open_memdir(ctx: typer.Context) -> Memdir:
    """The memdir chosen by --dir, $MEMDIR, or the nearest one upward."""
    return Memdir.open(find_root(options(ctx).dir))


def now(ctx: typer.Context, override: str | None = None) -> datetime:
    """A command's --now, else the global --now, else $MEMDIR_NOW, else the clock."""
    return clock.now(override or options(ctx).now)


def option_group(name: str, group: Callable[..., Any]) -> Callable[[F], F]:
    """Share a group of options between commands, declared once as `group`'s parameters.

    The decorated command's parameter `name` stands, on its command line and in its --help,
    for `group`'s parameters (in their place and order), and receives `group(**their values)`.
    """
    grouped = list(inspect.signature(group, eval_str=True).parameters.values())

    def share(command: F) -> F:
        own = inspect.signature(command, eval_str=True)
        params = [
            spliced.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for param in own.parameters.values()
            for spliced in (grouped if param.name == name else [param])
        ]

        @functools.wraps(command)
        def run(**values: Any) -> Any:
            options = {param.name: values.pop(param.name) for param in grouped}
            return command(**values, **{name: group(**options)})

        run.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {param.name: param.annotation for param in params}
        return cast(F, run)

    return share
