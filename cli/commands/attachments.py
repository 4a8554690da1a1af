"""Files kept with memories: `memdir attach`, `memdir attachments`, `memdir attachment get`
(memdir/usecases/attachments.py; `teach --attach` is in lifecycle.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memdir.cli import context
from memdir.cli.parameters import MemoryIdArg, OneMemory, group
from memdir.cli.render import emit_json, note, print_fields

AttachOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--attach",
        metavar="FILE",
        help="A file to keep with the memory: image, PDF, audio, text (repeatable); its text "
        "and metadata are read where a small offline library can, and indexed with it.",
    ),
]

attachment_app = typer.Typer(help="One attached file.", no_args_is_help=True)


def report_skipped(done: list[object]) -> None:
    """Say on stderr when a file was stored without its text or metadata being read."""
    for one in done:
        skipped = getattr(one, "skipped", None)
        if skipped:
            note(f"{getattr(one, 'name', '')}: stored; its contents were not read: {skipped}")


def register(app: typer.Typer) -> None:
    @app.command()
    def attach(
        ctx: typer.Context,
        memory_id: MemoryIdArg,
        files: Annotated[
            list[Path], typer.Argument(metavar="FILE...", help="The files to attach.")
        ],
        now: context.NowOpt = None,
    ) -> None:
        """Keep files with an existing memory: each is stored once under attachments/ (named
        by its SHA-256; a sealed memory's in the git-ignored attachments/sealed/), what can be
        read from it is indexed with the memory, and a link event records it. Prints each
        attachment id.

        Run by an assistant the link is recorded as the assistant's, like `memdir link`.

        Example: memdir attach m-3f9a ~/scans/receipt.pdf
        """
        from memdir.usecases import attachments

        memdir, moment, actor = context.writer(ctx, now)
        for path in files:
            result = attachments.attach(memdir, memory_id, path, moment, actor.name)
            report_skipped([result.attached])
            if not result.added:
                note(f"{result.memory} already has {path.name} ({result.attached.id})")
            typer.echo(result.attached.id)

    @app.command("attachments")
    @group("asked", OneMemory)
    def list_attachments(ctx: typer.Context, asked: OneMemory) -> None:
        """A memory's attached files, with what was read from each (text, date, place, title…).
        A sealed memory's are masked.

        Example: memdir attachments m-3f9a --json
        """
        from memdir.usecases import attachments

        memdir, moment = context.open_memdir(ctx), context.now(ctx, asked.now)
        found = attachments.listing(memdir, asked.memory_id, moment)
        if asked.json_:
            emit_json(found)
            return
        typer.echo(f"{found['id']}  {found['status']}: {found['text']}")
        if not found["attachments"]:
            note("no attachments")
        for row in found["attachments"]:
            typer.echo("")
            text = row.pop("text", None)
            print_fields(row)
            if text:
                shown = text if len(text) <= 600 else text[:600] + "…"
                typer.echo(f"text:  {' '.join(shown.split())}")

    app.add_typer(attachment_app, name="attachment")


@attachment_app.command("get")
def get(
    ctx: typer.Context,
    attachment_id: Annotated[
        str, typer.Argument(metavar="A-ID", help="The attachment (a-…, from `memdir attachments`).")
    ],
    out: Annotated[
        Path, typer.Option("--out", help="Where to write the file ('-' for standard output).")
    ],
    force: Annotated[bool, typer.Option("--force", help="Replace --out if it exists.")] = False,
    now: context.NowOpt = None,
) -> None:
    """Write an attached file where you name it (not a sealed memory's: it is shown nowhere).

    Example: memdir attachment get a-5d41402abc4b2a76 --out receipt.pdf
    """
    import sys

    from memdir.usecases import attachments

    stored = attachments.readable(context.open_memdir(ctx), attachment_id, context.now(ctx, now))
    if str(out) == "-":
        sys.stdout.buffer.write(stored.path.read_bytes())
        sys.stdout.buffer.flush()
        return
    attachments.write_copy(stored, out, force)
    note(f"wrote {stored.id} to {out}")
