"""`memdir init`: create a memdir."""

from __future__ import annotations

from pathlib import Path

import typer

from memdir.archive_format.memdir import init, is_memdir, localize_settings

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

        In an existing memdir it adds what is missing, and moves the per-machine settings that
        memdir.yaml sets (dream.summariser, distill.command, index.backend, index.dsn,
        index.build_megabytes) into
        memdir.local.yaml, where they take effect (not from an agent's shell).

        Example: memdir init ~/memory && cd ~/memory && git init
        """
        chosen = context.options(ctx).dir
        root = (path or Path(chosen or ".")).expanduser()
        # only the user's own shell makes a program in memdir.yaml runnable here (an assistant's
        # init leaves them ignored, as they were)
        moved = (
            localize_settings(root) if is_memdir(root) and not context.actor(ctx).assistant else []
        )
        memdir, created = init(root, context.now(ctx))
        from memdir.usecases.githooks import install

        install(memdir.root)  # in a git repository: forgets survive a plain `git pull`
        if not created:
            note(f"{memdir.root} is already a memdir; added only what was missing")
        if moved:
            note(f"moved {', '.join(moved)} from memdir.yaml to memdir.local.yaml (per machine, "
                 "not in git): check them, they run here")  # fmt: skip
        typer.echo(str(memdir.root))
