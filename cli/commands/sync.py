"""`memdir sync`: merge this clone with its git remote."""

from __future__ import annotations

import os

import typer

from memdir.words import counted

from .. import context
from ..render import emit_json, note


def register(app: typer.Typer) -> None:
    @app.command()
    def sync(
        ctx: typer.Context,
        remote: str | None = typer.Option(
            None, "--remote", help="The git remote (else the upstream, else origin)."
        ),
        push: bool = typer.Option(
            True,
            "--push/--no-push",
            help="Push after merging. --no-push in a memdir without a remote only commits.",
        ),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Say what would happen; change nothing."
        ),
        local: bool = typer.Option(
            False, "--local", help="No pull, no push: commit, re-apply forgets (post-merge hook)."
        ),
        json_: context.JsonOpt = False,
    ) -> None:
        """Commit what memdir wrote, pull and union-merge the remote, re-apply forgets, push.

        Example: memdir sync --dry-run && memdir sync
        """
        from memdir.usecases.sync import sync as run_sync
        from memdir.usecases.sync_safety import SYNCING_ENV

        if local and os.environ.get(SYNCING_ENV):
            return  # a post-merge hook inside `memdir sync`: that sync does all of it
        memdir = context.open_memdir(ctx)
        report = run_sync(memdir, context.now(ctx), remote, push=push, dry_run=dry_run, local=local)
        if json_:
            emit_json(report.to_dict())
            return
        if report.remote:
            where = f"{report.remote}/{report.branch}" if report.branch else report.remote
        else:
            where = "no remote (--local)" if local else "no remote: committed here only"
        if dry_run:
            typer.echo(
                f"would commit {counted(len(report.to_commit), 'path')}, then merge with {where}"
            )
            for path in report.to_commit:
                typer.echo(f"  {path}")
            return
        typer.echo(
            f"synced with {where}: {counted(len(report.commits), 'commit')}, {report.merged} merged in, "
            f"{counted(len(report.compacted), 'forget')} re-applied, {counted(report.deduplicated, 'duplicate')} "
            f"dropped, {'pushed' if report.pushed else 'not pushed'}"
        )
        if report.compacted:
            note("forgotten text a merge brought back is gone again; git history still holds it")
