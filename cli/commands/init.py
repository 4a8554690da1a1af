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
        path: Path = typer.Argument(Path("."), help="Where to create it (default: here)."),
    ) -> None:
        """Create a memdir: memdir.yaml, shelves/, journal/, state/, documents/, git attributes.

        Example: memdir init ~/memory && cd ~/memory && git init
        """
        memdir, created = init(path, context.now(ctx))
        if not created:
            note(f"{memdir.root} is already a memdir; added only what was missing")
        typer.echo(str(memdir.root))
