"""`memdir ui`: the user's web page over this memdir, on loopback, behind a token."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.archive_format.errors import BadInputError
from memdir.cli import context
from memdir.cli.parameters import RotateTokenOpt, ShowTokenOpt, print_token
from memdir.cli.render import note


def register(app: typer.Typer) -> None:
    @app.command()
    def ui(
        ctx: typer.Context,
        port: Annotated[
            int, typer.Option("--port", min=0, max=65535, help="The port (0: any free one).")
        ] = 8766,
        host: Annotated[
            str, typer.Option("--host", help="The address to listen on (loopback by default).")
        ] = "127.0.0.1",
        open_: Annotated[
            bool, typer.Option("--open", help="Open the one-time link in the web browser.")
        ] = False,
        rate: Annotated[
            int, typer.Option("--rate", min=1, help="Requests a minute per client (then 429).")
        ] = 600,
        allow_host: Annotated[
            list[str] | None,
            typer.Option("--allow-host", help="A Host name a reverse proxy sends (repeatable)."),
        ] = None,
        allow_origin: Annotated[
            list[str] | None,
            typer.Option("--allow-origin", help="An Origin that may write, e.g. "
                         "https://memory.example (repeatable; the proxy's)."),
        ] = None,
        show_token: ShowTokenOpt = False,
        rotate_token: RotateTokenOpt = False,
    ) -> None:  # fmt: skip
        """A local web page over this memdir: review, recall explained, a memory, the
        timeline, links and health, with a JSON API under it (docs/HTTP.md).

        It acts as the user, like the terminal, and so refuses to start as the assistant
        (MEMDIR_ACTOR=assistant, an agent harness). Prints a one-time sign-in link; API
        clients send the bearer token from .memdir/ui-token (mode 0600).

        Example: memdir ui --open
        Example: memdir ui --port 0
        """
        import socket
        import sys

        from memdir.api import Memdir as Handle
        from memdir.archive_format.extras import require
        from memdir.cli.web import views
        from memdir.cli.web.server import App, Settings, ensure_token, serve, token_path

        handle = Handle(context.open_memdir(ctx), context.actor(ctx))
        views.refuse_assistant(handle)
        if not (show_token or rotate_token):  # the token needs no server
            require("ui", "memdir ui")
        if show_token or rotate_token:
            print_token(token_path(handle), rotate_token)
            return
        _, made = ensure_token(handle)
        if made:
            note(f"made a token in {token_path(handle)} (memdir ui --show-token)")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as error:
            sock.close()
            raise BadInputError(f"cannot listen on {host}:{port}: {error.strerror}",
                                hint="choose another --port (0: any free one)") from None  # fmt: skip
        sock.listen(64)
        bound = sock.getsockname()[1]
        hosts = tuple(allow_host or ())
        if host not in ("127.0.0.1", "::1", "localhost"):
            note(f"listening on {host}, not loopback: anyone who reaches it needs the token")
            hosts += (host,)
        settings = Settings(bound, rate, hosts, tuple(allow_origin or ()), context.options(ctx).now)
        app = App(handle, settings)
        shown = f"[{host}]" if ":" in host else host
        link = app.one_time_link(f"http://{shown}:{bound}")
        typer.echo(link)  # the one line on stdout: a script reads the link from it
        sys.stdout.flush()
        note(f"serving {handle.root} at http://{shown}:{bound}/ (Ctrl-C stops)")
        if open_:
            import webbrowser

            webbrowser.open(link)
        serve(app, sock)
