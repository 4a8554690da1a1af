"""`memdir init`: create a memdir."""

from __future__ import annotations

from pathlib import Path

import typer

from memdir.archive_format.memdir import init

from .. import context
from ..render import note


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init_command(
        ctx: typer.Context,
        path: Path | None = typer.Argument(
            None, help="Where to create it (default: the global --dir, else here)."
        ),
    ) -> None:
        """Create a memdir: memdir.yaml, shelves/, journal/, state/, documents/, git attributes.

        Example: memdir init ~/memory && cd ~/memory && git init
        """
        chosen = context.options(ctx).dir
        memdir, created = init(path or Path(chosen or "."), context.now(ctx))
        from memdir.cli.usecases.githooks import install

        install(memdir.root)  # in a git repository: forgets survive a plain `git pull`
        if not created:
            note(f"{memdir.root} is already a memdir; added only what was missing")
        typer.echo(str(memdir.root))
