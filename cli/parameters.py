"""Parameters that several commands or MCP tools share, declared once."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer

from memdir.archive_format.clock import parse_moment as moment  # noqa: F401 (re-export)

from .context import JsonOpt, NowOpt

F = TypeVar("F", bound=Callable[..., Any])

# Options of more than one command module (--json and --now, which every command has, are in
# context.py; a module's own options stand at its top).
# the memory a command is about
MemoryIdArg = Annotated[
    str, typer.Argument(metavar="ID", help="The memory (an id prefix is enough).")
]


@dataclass(frozen=True)
class OneMemory:
    """The parameters of a command that shows one memory (show, log, decay, attachments):
    which, as JSON or not, as of when (`group`)."""

    memory_id: MemoryIdArg
    json_: JsonOpt = False
    now: NowOpt = None


SessionOpt = Annotated[str | None, typer.Option("--session", help="Conversation session id.")]
VisibilityOpt = Annotated[str, typer.Option("--visibility", help="normal | private | sealed.")]
TranscriptOpt = Annotated[
    str | None,
    typer.Option(
        "--transcript",
        metavar="PATH",
        help="A prompt hook: the agent harness's transcript (Claude Code's transcript_path); "
        "a user turn it holds is verified, else recorded unverified (memdir/harness.py).",
    ),
]
IncludeExpiredOpt = Annotated[
    bool,
    typer.Option("--include-expired", help="Also expired inferences (recall weighs them 0.2)."),
]
IncludePrivateOpt = Annotated[
    bool, typer.Option("--include-private", help="Also private memories.")
]


# The bearer token of a served surface (memdir mcp --http, memdir ui): print it, replace it.
ShowTokenOpt = Annotated[
    bool, typer.Option("--show-token", help="Print the bearer token and exit.")
]
RotateTokenOpt = Annotated[
    bool,
    typer.Option("--rotate-token", help="Replace the bearer token (the old one stops working)."),
]


def print_token(path: Path, rotate: bool) -> None:
    """--show-token and --rotate-token: the token kept in `path` (a new one with `rotate`, which
    stderr then names) on stdout."""
    from memdir.usecases.mcp_token import ensure_token_at

    from .render import note

    token, _ = ensure_token_at(path, rotate)
    if rotate:
        note(f"new bearer token in {path}")
    typer.echo(token)


# `--limit`, the old spelling of a count on `list`: still accepted, no longer shown
LimitAlias = Annotated[int | None, typer.Option("--limit", min=1, hidden=True)]


def group(name: str, declaration: Callable[..., Any]) -> Callable[[F], F]:
    """Share a group of parameters, declared once as the parameters of `declaration`.

    The decorated function's parameter `name` stands, in its signature (which typer reads for
    a command's options and --help, the MCP SDK for a tool's input schema), for the group's
    parameters in that place and order; it receives `declaration(**their values)`.
    """
    grouped = list(inspect.signature(declaration, eval_str=True).parameters.values())

    def share(function: F) -> F:
        own = inspect.signature(function, eval_str=True)
        params: list[inspect.Parameter] = []
        for param in own.parameters.values():
            if param.name == name:
                params += [member.replace(kind=param.kind) for member in grouped]
            else:
                params.append(param)
        signature = own.replace(parameters=params)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            given = signature.bind(*args, **kwargs)
            given.apply_defaults()
            values = dict(given.arguments)
            members = {param.name: values.pop(param.name) for param in grouped}
            return function(**values, **{name: declaration(**members)})

        call.__signature__ = signature  # type: ignore[attr-defined]
        call.__annotations__ = {
            **{param.name: param.annotation for param in params},
            "return": signature.return_annotation,
        }
        return cast(F, call)

    return share
