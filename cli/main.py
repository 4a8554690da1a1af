"""The `memdir` command: the typer root, global options and the one error boundary."""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import sys

import typer

from memdir import __version__
from memdir.archive_format.errors import INTERRUPTED, ExitStatus, MemdirError
from memdir.archive_format.paths import describe_os_error

from .commands import archive as archive_commands
from .commands import attachments as attachment_commands
from .commands import bench as bench_commands
from .commands import continuity as continuity_commands
from .commands import core as core_commands
from .commands import doctor as doctor_commands
from .commands import heal as heal_commands
from .commands import imports as imports_commands
from .commands import index as index_commands
from .commands import init as init_commands
from .commands import inspect as inspect_commands
from .commands import islands as islands_commands
from .commands import journal as journal_commands
from .commands import lifecycle as lifecycle_commands
from .commands import mcp as mcp_commands
from .commands import people as people_commands
from .commands import recall as recall_commands
from .commands import room as room_commands
from .commands import serve as serve_commands
from .commands import songs as songs_commands
from .commands import sync as sync_commands
from .commands import ui as ui_commands
from .commands import watch as watch_commands
from .context import Options
from .panels import group_commands

app = typer.Typer(
    name="memdir",
    help="Long-term memory for LLM assistants, kept as plain files you can read, grep and version.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"memdir {__version__}")
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
attachment_commands.register(app)
inspect_commands.register(app)
index_commands.register(app)
recall_commands.register(app)
journal_commands.register(app)
people_commands.register(app)
islands_commands.register(app)
continuity_commands.register(app)
core_commands.register(app)
room_commands.register(app)
heal_commands.register(app)
songs_commands.register(app)
bench_commands.register(app)
watch_commands.register(app)
serve_commands.register(app)
archive_commands.register(app)
mcp_commands.register(app)
ui_commands.register(app)
imports_commands.register(app)
sync_commands.register(app)
doctor_commands.register(app)
group_commands(app)


def _usage_errors() -> tuple[type[Exception], ...]:
    """Command-line errors (unknown command, bad option value, missing option).

    typer >= 0.2x vendors click, and its errors derive from typer.TyperException, not from
    click.ClickException; older typer raises click's own.
    """
    if hasattr(typer, "TyperException"):
        return (typer.TyperException,)
    import click

    return (click.ClickException,)


def _log_to_stderr() -> None:
    """memdir's own log lines go to stderr as 'memdir: …'; stdout is only for results."""
    logger = logging.getLogger("memdir")
    ours = [h for h in logger.handlers if getattr(h, "memdir_stderr", False)]
    if ours:
        # main() may run again in one process (the API, the service, tests): log to the stderr
        # of this run, not to the one the handler was made for (which may be closed by now)
        for handler in ours:
            if isinstance(handler, logging.StreamHandler):
                handler.stream = sys.stderr  # not setStream: it flushes the old, maybe closed, one
        return
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.memdir_stderr = True  # type: ignore[attr-defined]
        handler.setFormatter(logging.Formatter("memdir: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


@functools.cache
def _command() -> typer.core.TyperGroup:
    """The click command tree, built once per process (tens of ms; `memdir serve` runs many)."""
    return typer.main.get_command(app)  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every MemdirError becomes one line on stderr and its exit status."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    _log_to_stderr()
    asked = os.environ.get("_MEMDIR_COMPLETE", "")
    if asked == "complete_bash" and "COMP_WORDS" not in os.environ:
        sys.stderr.write(  # what the shell's completion function sets is missing
            f"memdir: error: _MEMDIR_COMPLETE={asked} without COMP_WORDS and COMP_CWORD\n"
            '  hint: let the shell run it: `eval "$(memdir --show-completion)"` in ~/.bashrc\n'
        )
        return int(ExitStatus.USAGE)
    command = _command()
    try:
        result = command.main(args=args, prog_name="memdir", standalone_mode=False)
    except MemdirError as error:
        if debug:
            raise
        sys.stderr.write(f"memdir: error: {error.message}\n")
        if error.hint:
            sys.stderr.write(f"  hint: {error.hint}\n")
        return int(error.status)
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        sys.stderr.write("memdir: aborted\n")
        return int(ExitStatus.FAILED)
    except _usage_errors() as error:
        if debug:
            raise
        show = getattr(error, "show", None)
        if show is not None:
            show()
        else:
            sys.stderr.write(f"memdir: error: {error}\n")
        return int(getattr(error, "exit_code", ExitStatus.USAGE))
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:
        return int(ExitStatus.OK)
    except OSError as error:
        if debug:
            raise
        sys.stderr.write(f"memdir: error: {describe_os_error(error)}\n")
        return int(ExitStatus.FAILED)
    except sqlite3.Error as error:  # a cache under .memdir/ (a full disk, a lock held too long)
        if debug:
            raise
        sys.stderr.write(
            f"memdir: error: a cache file under .memdir/ could not be used ({error})\n"
            "  hint: free some space if the disk is full; `memdir index --rebuild` rebuilds it\n"
        )
        return int(ExitStatus.FAILED)
    except Exception as error:  # a bug: still one line, the traceback only with --debug
        if debug:
            raise
        sys.stderr.write(
            f"memdir: error: internal error ({type(error).__name__}: {str(error)[:200]})\n"
            "  hint: nothing was lost; rerun with --debug and report the traceback\n"
        )
        return int(ExitStatus.FAILED)
    # click returns the code of a typer.Exit raised inside a command when not standalone
    return result if isinstance(result, int) else int(ExitStatus.OK)


def run() -> None:
    sys.exit(main())
