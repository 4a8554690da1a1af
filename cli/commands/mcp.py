"""`memdir mcp`: serve the memdir to MCP clients over stdio."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.archive_format import clock
from memdir.cli import context


def register(app: typer.Typer) -> None:
    @app.command()
    def mcp(
        ctx: typer.Context,
        quote_window: Annotated[
            str | None,
            typer.Option(
                "--quote-window",
                help="How recent a user turn must be for `teach` and `forget` to quote it "
                "(default: mcp.quote_window in memdir.yaml, else 24h).",
            ),
        ] = None,
    ) -> None:
        """Serve this memdir over MCP (stdio) to Claude Desktop, Claude Code, Codex, Cursor….

        Tools: teach, infer, confirm, reject, forget, link, recall, search, show, stats,
        journal_add, journal_read, ring, wake, boot, self_read/self_update, people_read/
        person_update. No shell or file tools. See docs/MCP.md for client registration.

        Example: claude mcp add memdir -- memdir --dir ~/memory mcp
        """
        from memdir.cli.mcp_server import serve

        memdir = context.open_memdir(ctx)
        if quote_window is None:
            serve(memdir, memdir.settings.mcp.quote_window)
        else:
            serve(memdir, clock.parse_duration(quote_window))
