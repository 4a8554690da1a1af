"""The `memdir` command: the typer root, global options and the one error boundary."""

from __future__ import annotations

import logging
import sys

import typer

from archive_format.errors import ExitStatus, MemdirError

from .commands import init as init_commands
from .commands import inspect as inspect_commands
from .commands import lifecycle as lifecycle_commands
from .context import Options

VERSION = "0.1.0"

app = typer.Typer(
    name="memdir",
    help="Long-term memory for LLM assistants, kept as plain files you can read, grep and version.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"memdir {VERSION}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    dir: str | None = typer.Option(
        None, "--dir", "-C", help="The memdir to use (else $MEMDIR, else the nearest one upward)."
    ),
    now: str | None = typer.Option(
        None, "--now", help="Pretend it is this ISO date-time (also $MEMDIR_NOW)."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """Long-term memory for LLM assistants, kept as plain files."""
    ctx.obj = Options(dir=dir, now=now, debug=debug)


init_commands.register(app)
lifecycle_commands.register(app)
inspect_commands.register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every MemdirError becomes one line on stderr and its exit status."""
    import click

    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    logging.basicConfig(level=logging.INFO, format="memdir: %(message)s", stream=sys.stderr)
    command = typer.main.get_command(app)
    try:
        result = command.main(args=args, prog_name="memdir", standalone_mode=False)
    except MemdirError as error:
        if debug:
            raise
        sys.stderr.write(f"memdir: error: {error.message}\n")
        if error.hint:
            sys.stderr.write(f"  hint: {error.hint}\n")
        return int(error.status)
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except click.exceptions.Abort:
        sys.stderr.write("memdir: aborted\n")
        return int(ExitStatus.FAILED)
    except click.ClickException as error:
        error.show()
        return int(error.exit_code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return int(ExitStatus.OK)
    except OSError as error:
        if debug:
            raise
        sys.stderr.write(f"memdir: error: {error.strerror or error}: {error.filename or ''}\n")
        return int(ExitStatus.FAILED)
    # click returns the code of a typer.Exit raised inside a command when not standalone
    return result if isinstance(result, int) else int(ExitStatus.OK)


def run() -> None:
    sys.exit(main())
