"""The `memdir` command: the typer root, global options and the one error boundary."""

from __future__ import annotations

import functools
import io
import logging
import os
import sqlite3
import sys
from typing import Any

import typer
import typer.core
import typer.main

from memdir.archive_format.errors import INTERRUPTED, ExitStatus, MemdirError
from memdir.archive_format.paths import describe_os_error

from .context import Options
from .panels import group_commands, panel_of

# Every top-level command → the module under cli/commands/ whose register() defines it, in the
# order `memdir --help` lists them (tests/test_cli_tree.py checks this against the modules).
# The root imports a module only when one of its commands is invoked or listed: a cold
# `memdir recall` builds three commands instead of the whole tree (~60 ms).
COMMAND_MODULES: dict[str, str] = {
    "init": "init", "teach": "lifecycle", "infer": "lifecycle", "link": "lifecycle",
    "attach": "attachments", "import": "imports", "recall": "recall", "context": "recall",
    "search": "index", "similar": "index", "show": "inspect", "list": "inspect", "log": "inspect",
    "links": "inspect", "attachments": "attachments", "ring": "continuity", "decay": "continuity",
    "stats": "inspect", "review": "continuity", "confirm": "lifecycle", "reject": "lifecycle",
    "forget": "lifecycle", "dream": "continuity", "sleep": "continuity", "heal": "heal",
    "wake": "continuity", "boot": "continuity", "core": "core", "room": "room",
    "expire": "lifecycle", "doctor": "doctor", "verify": "inspect", "index": "index",
    "distill": "index", "annotate": "index", "sync": "sync", "export": "archive",
    "restore": "archive", "serve": "serve", "watch": "watch", "mcp": "mcp", "ui": "ui",
    "people": "people", "self": "people", "island": "islands", "attachment": "attachments",
    "journal": "journal", "song": "songs", "bench": "bench",
}  # fmt: skip


@functools.cache
def commands_of(module: str) -> dict[str, Any]:
    """The click commands that cli/commands/<module>.py registers, with their help panels."""
    name = f"{__package__}.commands.{module}"
    # __import__, not importlib.import_module: only the former is logged by -X importtime,
    # which tests/test_cold_start.py reads to keep heavy modules off the light commands
    __import__(name)
    registered = sys.modules[name]
    sub = typer.Typer()
    registered.register(sub)
    group_commands(sub)
    return dict(typer.main.get_group(sub).commands)


def listed(name: str) -> typer.core.TyperCommand | None:
    """A command as the root help lists it (name, panel, first help paragraph from the
    generated cli/summaries.py), not built: None for one the listing leaves out."""
    from .summaries import SUMMARIES

    if name not in SUMMARIES:
        return None
    return typer.core.TyperCommand(name=name, help=SUMMARIES[name], rich_help_panel=panel_of(name))


class LazyGroup(typer.core.TyperGroup):
    """The root group: lists COMMAND_MODULES and builds a command from its module on demand;
    its own help lists the commands without building any (~200 ms of typer's work)."""

    listing = False  # True while the root's help is written

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMAND_MODULES, *(name for name in self.commands if name not in COMMAND_MODULES)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            if self.listing:
                return listed(cmd_name)
            self.commands.update(commands_of(COMMAND_MODULES[cmd_name]))
        return self.commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


app = typer.Typer(
    name="memdir",
    cls=LazyGroup,
    help="Long-term memory for LLM assistants, kept as plain files you can read, grep and version.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from memdir import __version__  # importlib.metadata (~18 ms): only when asked

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
    except KeyboardInterrupt:
        return INTERRUPTED
    except Exception as error:
        if debug and not isinstance(error, (typer.Exit, typer.Abort, BrokenPipeError)):
            raise
        status, text = failure(error)
        sys.stderr.write(text)
        return status
    # click returns the code of a typer.Exit raised inside a command when not standalone
    return result if isinstance(result, int) else int(ExitStatus.OK)


def failure(error: Exception) -> tuple[int, str]:
    """The exit status and the lines on stderr a command ends with when it raises `error`: the
    one error boundary, main()'s and the service's (cli/serve.py). A MemdirError is its
    message, its hint and its status; a usage error click's message; anything else one line
    (a traceback only with --debug, which main() re-raises for)."""
    if isinstance(error, MemdirError):
        hint = f"  hint: {error.hint}\n" if error.hint else ""
        return int(error.status), f"memdir: error: {error.message}\n{hint}"
    if isinstance(error, typer.Exit):
        return int(error.exit_code), ""
    if isinstance(error, typer.Abort):
        return int(ExitStatus.FAILED), "memdir: aborted\n"
    if isinstance(error, _usage_errors()):
        show = getattr(error, "show", None)
        if show is None:
            return int(ExitStatus.USAGE), f"memdir: error: {error}\n"
        shown = io.StringIO()
        show(file=shown)
        return int(getattr(error, "exit_code", ExitStatus.USAGE)), shown.getvalue()
    if isinstance(error, BrokenPipeError):
        return int(ExitStatus.OK), ""
    if isinstance(error, OSError):
        return int(ExitStatus.FAILED), f"memdir: error: {describe_os_error(error)}\n"
    if isinstance(error, sqlite3.Error):  # a cache under .memdir/ (a full disk, a lock held long)
        return int(ExitStatus.FAILED), (
            f"memdir: error: a cache file under .memdir/ could not be used ({error})\n"
            "  hint: free some space if the disk is full; `memdir index --rebuild` rebuilds it\n"
        )
    return (
        int(ExitStatus.FAILED),
        (  # a bug: still one line
            f"memdir: error: internal error ({type(error).__name__}: {str(error)[:200]})\n"
            "  hint: nothing was lost; rerun with --debug and report the traceback\n"
        ),
    )


def run() -> None:
    sys.exit(main())
