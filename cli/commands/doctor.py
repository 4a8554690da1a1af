"""`memdir doctor`: check the install and the memdir, and say how to fix what is wrong."""

from __future__ import annotations

import textwrap

import typer

from memdir.archive_format.errors import ExitStatus

from .. import context
from ..layout import width
from ..render import emit_json

MARKS = {"ok": "ok     ", "note": "note   ", "problem": "PROBLEM"}


def register(app: typer.Typer) -> None:
    @app.command()
    def doctor(ctx: typer.Context, json_: context.JsonOpt = False) -> None:
        """Check the install (embedder weights, affect lexicons, the postgres extra) and, when
        there is one, the memdir (settings, index backend, lock, git rules, watch daemon,
        schedule); print the command that fixes each problem. Exits 1 if a check is a problem.

        Example: memdir doctor || memdir doctor --json
        """
        from memdir.archive_format.errors import NotAMemdirError
        from memdir.usecases.doctor import diagnose

        try:
            memdir = context.open_memdir(ctx, lenient=True)
        except NotAMemdirError as error:
            checks = diagnose(None, absent=error.message)
        else:
            checks = diagnose(memdir)
        problems = [check for check in checks if check.status == "problem"]
        if json_:
            emit_json({"healthy": not problems, "checks": [c.to_dict() for c in checks]})
        else:
            room = width()
            for check in checks:
                head = f"{MARKS[check.status]}  {check.name:<9} {check.detail}"
                lines = (
                    [head]
                    if room is None
                    else textwrap.wrap(
                        head,
                        room,
                        subsequent_indent=" " * 19,
                        break_long_words=False,
                        break_on_hyphens=False,
                    )
                )
                if check.fix and check.status != "ok":
                    # the fix stays one line, so it can be copied whole
                    lines.append(f"{'':<7}  {'':<9} fix: {check.fix}")
                for line in lines:
                    typer.echo(line)
            count = len(problems)
            typer.echo(f"{count} problem{'' if count == 1 else 's'}" if problems else "no problems")
        if problems:
            raise typer.Exit(int(ExitStatus.PROBLEMS))
