"""`memdir mcp`: serve the memdir to MCP clients over stdio, or streamable HTTP with a token."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.archive_format import clock
from memdir.archive_format.errors import BadInputError
from memdir.cli import context
from memdir.cli.parameters import RotateTokenOpt, ShowTokenOpt, print_token
from memdir.cli.render import note

DEFAULT_HOST = "127.0.0.1"


def parse_address(text: str) -> tuple[str, int]:
    """'[HOST:]PORT' → (host, port); the host is loopback unless given ('[::1]:8080' too)."""
    host, colon, port = text.rpartition(":")
    host = host.strip("[]") if colon else DEFAULT_HOST
    if not port.isdigit() or not 0 < int(port) < 65536 or (colon and not host):
        raise BadInputError(
            f"{text!r} is not [HOST:]PORT", hint="e.g. --http 8765 or --http 127.0.0.1:8765"
        )
    return host, int(port)


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
        http: Annotated[
            str | None,
            typer.Option(
                "--http",
                metavar="[HOST:]PORT",
                help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST "
                "defaults to 127.0.0.1); clients must send the bearer token.",
            ),
        ] = None,
        show_token: ShowTokenOpt = False,
        rotate_token: RotateTokenOpt = False,
    ) -> None:
        """Serve this memdir over MCP to Claude Desktop, Claude Code, Codex, Cursor…: over
        stdio, or with --http over streamable HTTP on loopback with a bearer token (made on
        first use in .memdir/mcp-token, mode 0600; --show-token prints it, --rotate-token
        replaces it).

        Tools: teach, infer, confirm, reject, forget, link, recall, search, show, stats,
        journal_add, journal_read, ring, wake, boot, core, island_list, island_show,
        self_read/self_update, people_read/person_update. No shell or file tools. See
        docs/MCP.md for client registration.

        Example: claude mcp add memdir -- memdir --dir ~/memory mcp
        Example: memdir --dir ~/memory mcp --http 8765
        """
        from memdir.archive_format.extras import require
        from memdir.usecases.mcp_token import ensure_token, token_path

        memdir = context.open_memdir(ctx)
        if not (show_token or rotate_token) or http is not None:  # the token needs no SDK
            require("mcp", "memdir mcp")
        if show_token or rotate_token:
            print_token(token_path(memdir), rotate_token)
            if http is None:
                return
        window = (
            memdir.settings.mcp.quote_window
            if quote_window is None
            else clock.parse_duration(quote_window)
        )
        if http is None:
            from memdir.cli.mcp_server import serve

            serve(memdir, window)
            return
        host, port = parse_address(http)
        from memdir.cli.mcp_server import LOOPBACK, serve_http

        _, made = ensure_token(memdir)
        if made:
            note(f"made a bearer token in {token_path(memdir)} (memdir mcp --show-token)")
        if host not in LOOPBACK:
            note(f"serving on {host}, not loopback: anyone who can reach it needs only the token")
        serve_http(memdir, host, port, window)
