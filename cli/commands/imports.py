"""`memdir import`: conversation exports into the raw journal, and `--undo`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memdir.archive_format.errors import BadInputError, LifecycleError
from memdir.cli import context
from memdir.cli.render import emit_json, note
from memdir.words import counted


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_command(
        ctx: typer.Context,
        file: Annotated[
            Path | None,
            typer.Argument(metavar="FILE", help="The export: conversations.json or a .jsonl."),
        ] = None,
        format_: Annotated[
            str | None,
            typer.Option("--format", "-f", help="chatgpt | claude | jsonl (default: detected)."),
        ] = None,
        undo: Annotated[
            str | None,
            typer.Option("--undo", metavar="SOURCE", help="Remove what that import added."),
        ] = None,
        list_: Annotated[bool, typer.Option("--list", help="List past imports.")] = False,
        skip_malformed: Annotated[
            bool,
            typer.Option(
                "--skip-malformed",
                help="Import the rest; skip malformed conversations (and bad JSONL lines).",
            ),
        ] = False,
        visibility: Annotated[
            str, typer.Option("--visibility", help="normal | private | sealed, for every turn.")
        ] = "normal",
        secrecy: Annotated[
            str, typer.Option("--secrecy", help="public | sensitive | secret, for every turn.")
        ] = "public",
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:
        """Import ChatGPT, Claude or JSONL conversations into the journal; prints the source id.

        Re-importing adds nothing; `--undo SOURCE` removes exactly what one import added. User
        turns are the user's (trusted); assistant text never becomes a teaching.

        The format (chatgpt, claude, jsonl) is detected from the content; --format overrides.

        Example: memdir import ~/Downloads/conversations.json
        """
        from memdir.archive_format.imports import read_manifest
        from memdir.usecases.imports import FORMATS, import_file
        from memdir.usecases.imports import undo as run_undo

        memdir, moment, actor = context.open_memdir(ctx), context.now(ctx, now), context.actor(ctx)
        if actor.assistant and not list_:  # imported user turns are trusted as the user's
            raise LifecycleError(
                f"an assistant cannot import conversations ({actor.reason}): imported user "
                "turns count as the user's own words",
                hint="ask the user to run `memdir import` themselves",
            )
        if list_:
            sources = read_manifest(memdir)
            if json_:
                emit_json(sources)
            for source, entry in [] if json_ else sources.items():
                typer.echo(f"{source}  {entry.get('at')}  {entry.get('format')}  "
                           f"{counted(entry.get('turns') or 0, 'turn')}  {entry.get('file')}")  # fmt: skip
            return
        if undo is not None:
            if file is not None:
                raise BadInputError("give either FILE or --undo SOURCE, not both")
            removed = run_undo(memdir, undo, moment)
            if json_:
                emit_json({"source": undo, "removed": removed})
                return
            typer.echo(undo)
            note(f"removed {counted(removed, 'turn')} of import {undo}")
            return
        if file is None:
            raise BadInputError("no FILE given", hint="memdir import FILE")
        if format_ is not None and format_ not in FORMATS:
            raise BadInputError(
                f"--format must be one of {', '.join(FORMATS)}"
                + (f", not {format_!r}" if format_ else ""),
                hint="chatgpt: conversations.json from ChatGPT; claude: from Claude; jsonl: "
                '{"role", "content", "timestamp", "session"} per line',
            )
        report = import_file(memdir, file, format_, moment, skip_malformed, visibility, secrecy)
        if json_:
            emit_json(report.to_dict())
            return
        typer.echo(report.source)
        for skipped in report.skipped:
            note(f"skipped {skipped}")
        note(
            f"{counted(report.conversations, 'conversation')}, {counted(report.turns, 'turn')}: {report.added} "
            f"added, {report.already} already present; undo with `memdir import --undo "
            f"{report.source}`"
        )
