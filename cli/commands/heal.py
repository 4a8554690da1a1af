"""`memdir heal`: use feedback — which delivered memories the assistant's replies used."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.cli import context
from memdir.cli.render import emit_json, note
from memdir.usecases.dream import maintenance_lock
from memdir.usecases.healer import heal
from memdir.words import counted


def register(app: typer.Typer) -> None:
    @app.command("heal")
    def heal_command(
        ctx: typer.Context,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Measure and report; record nothing.")
        ] = False,
        now: context.NowOpt = None,
        json_: context.JsonOpt = False,
    ) -> None:
        """Use feedback: pair each assistant reply journalled since the last run with the
        per-prompt block delivered before it, and record which of its memories the reply used
        (each used one is rehearsed). `sleep` runs it too.

        Example: memdir heal --dry-run --json
        """
        memdir = context.open_memdir(ctx)
        with maintenance_lock(memdir):
            report = heal(memdir, context.now(ctx, now), dry_run)
        if json_:
            emit_json(report.to_dict())
            return
        for pair in report.pairs:
            used = ", ".join(pair["used"]) or "none"
            typer.echo(f"{pair['at']} {pair['turn']}: used {used} "
                       f"(of {len(pair['delivered'])} delivered)")  # fmt: skip
        note(f"{counted(report.replies, 'reply', 'replies')} looked at, "
             f"{report.paired} after a delivery: {report.used} of {report.delivered} delivered "
             "memories used" + (" (dry run: nothing recorded)" if dry_run else ""))  # fmt: skip
