"""`memdir watch`: a daemon that keeps the indexes fresh while others write."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from memdir.cli import context

# `--log`, of the daemons (watch, serve): the file log_to_file sends their log lines to
LogOpt = Annotated[
    Path | None, typer.Option("--log", help="Append log lines to this file instead of stderr.")
]


def log_to_file(path: Path) -> None:
    """Send memdir's log lines to `path` (appending, with timestamps) instead of stderr."""
    logger = logging.getLogger("memdir")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s memdir[%(process)d]: %(message)s"))
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)


def register(app: typer.Typer) -> None:
    @app.command()
    def watch(
        ctx: typer.Context,
        log: LogOpt = None,
        debounce: Annotated[
            float | None,
            typer.Option(
                "--debounce",
                min=0,
                help="Seconds of quiet before indexing a change (default: watch.debounce, 0.2).",
            ),
        ] = None,
        poll: Annotated[
            float | None,
            typer.Option(
                "--poll",
                min=0.01,
                help="Also check the shelves this often, in seconds (default: watch.poll, 10).",
            ),
        ] = None,
    ) -> None:
        """Keep the indexes fresh: reindex incrementally whenever shelves or the journal change.

        Runs in the foreground until SIGTERM or Ctrl-C; one per memdir. Logs go to stderr
        (or --log FILE), never stdout.

        Example: memdir --dir ~/memory watch --log ~/memory/.memdir/watch.log &
        """
        from memdir.archive_format.extras import require
        from memdir.usecases.watch import watch as run_watch

        memdir = context.open_memdir(ctx)
        require("watch", "memdir watch")
        if log is not None:
            log_to_file(log)
        settings = memdir.settings.watch
        if debounce is not None:
            settings = replace(
                settings, debounce=debounce, max_delay=max(settings.max_delay, debounce)
            )
        if poll is not None:
            settings = replace(settings, poll=poll)
        run_watch(memdir, settings)
