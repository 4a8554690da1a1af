"""`memdir core`: the memories that define the person, within a token budget."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.cli import context
from memdir.cli.render import emit_json, note
from memdir.usecases.core import DEFAULT_BUDGET, core


def register(app: typer.Typer) -> None:
    @app.command("core")
    def core_command(
        ctx: typer.Context,
        budget: Annotated[
            int | None,
            typer.Option("--budget", min=1, help=f"Token budget (default {DEFAULT_BUDGET})."),
        ] = None,
        now: context.NowOpt = None,
        json_: context.JsonOpt = False,
    ) -> None:
        """The core: self notes, hard facts (keyed, pinned, FINANCIAL or MEDICATION teachings,
        kept at any age) and high-importance milestones, within a token budget.

        Example: memdir core --budget 300
        """
        found = core(context.open_memdir(ctx), context.now(ctx, now), budget)
        if json_:
            emit_json(found)
            return
        for entry in found["self"]:
            typer.echo(f"- {entry['field']}: {entry['value']}")
        for memory in found["memories"]:
            typer.echo(f"- {memory['text']} ({memory['id']}, {memory['why']})")
        more = f"; {found['left_out']} left out" if found["left_out"] else ""
        note(f"{found['tokens']} of {found['budget']} tokens{more}")
