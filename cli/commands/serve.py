"""`memdir serve`: the resident service that answers recall, search, similar, context and wake."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from memdir.archive_format.errors import ExitStatus
from memdir.cli import context
from memdir.words import counted

from .watch import LogOpt, log_to_file

StatusOpt = Annotated[
    bool, typer.Option("--status", help="Say whether the service runs, and exit.")
]
NoWatchOpt = Annotated[
    bool, typer.Option("--no-watch", help="Do not keep the indexes fresh in between.")
]


def serve(
    ctx: typer.Context,
    status: StatusOpt = False,
    log: LogOpt = None,
    no_watch: NoWatchOpt = False,
    json_: context.JsonOpt = False,
) -> None:
    """Keep the models loaded and answer recall, search, similar, context and wake over a
    Unix socket (.memdir/serve.sock, this user only), so those commands start fast.

    Runs in the foreground until SIGTERM or Ctrl-C; one per memdir. While it runs, those
    commands (with stdout not a terminal) print its answers, identical to their own; when
    it is not running or slow to answer, they run in-process. It also keeps the indexes
    fresh, as `memdir watch` does (unless --no-watch, or a watch already runs).

    Example: memdir --dir ~/memory serve --log ~/memory/.memdir/serve.log &
    """
    from memdir.cli import serve as service

    memdir = context.open_memdir(ctx)
    if status:
        found = service.status(memdir)
        if json_:
            typer.echo(json.dumps({"running": found is not None, **(found or {})}, indent=2))
        elif found is None:
            typer.echo(f"not running for {memdir.root}")
        else:
            rss = found.get("rss_kib")
            memory = f", {rss / 1024:.0f} MiB resident" if isinstance(rss, int) else ""
            typer.echo(f"running for {found['root']}: pid {found['pid']}, "
                       f"socket {found['socket']}, {counted(found['requests'], 'request')} in "
                       f"{found['uptime_s']:.0f} s{memory}")  # fmt: skip
        raise typer.Exit(int(ExitStatus.OK if found else ExitStatus.PROBLEMS))
    if not no_watch:
        from memdir.archive_format.extras import require

        require("watch", "memdir serve (keeping the indexes fresh)",
                instead="serve without keeping them fresh: memdir serve --no-watch")  # fmt: skip
    if log is not None:
        log_to_file(log)
    service.serve(memdir, keep_fresh=not no_watch)


def register(app: typer.Typer) -> None:
    app.command()(serve)
