"""docs/CLI.md, generated from the command tree, the exit statuses and the environment variables,
so the reference cannot drift from the code: `python -m memdir.cli.reference > docs/CLI.md`
writes it, tests/test_reference.py fails when the file differs."""

from __future__ import annotations

import inspect
from typing import Any

from memdir.archive_format.environment import VARIABLES
from memdir.archive_format.errors import EXIT_MEANINGS, INTERRUPTED

from .panels import PANELS

# typer vendors its own click (typer._click), so commands and parameters are told apart by
# what they are, not by click's classes
Command = Any

HEADER = """# memdir command reference

Generated from the code by `python -m memdir.cli.reference > docs/CLI.md` (`make docs`);
tests/test_reference.py fails when this file and the commands differ. `memdir COMMAND --help`
shows the same text in the terminal.

Every command takes the global options before its name: `--dir PATH` (`-C`; else `$MEMDIR`,
else the nearest memdir upward), `--now ISO` (else `$MEMDIR_NOW`), `--debug` (tracebacks).
Counts are `--k N` (`-k`) everywhere, times `--now`, `--since`/`--until` or a duration such as
`7d`, and machine-readable output `--json`.
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _usage(path: str, command: Command) -> str:
    words = [path]
    for param in command.params:
        if param.param_type_name == "argument" and param.name:
            name = param.name.upper()
            name = f"{name}…" if param.nargs == -1 else name
            words.append(name if param.required else f"[{name}]")
    if hasattr(command, "commands"):
        words.append("COMMAND")
    if any(p.param_type_name == "option" and not p.hidden for p in command.params):
        words.append("[OPTIONS]")
    return " ".join(words)


def _default(option: Any) -> str:
    value: Any = option.default
    if option.is_flag or value is None or value == () or callable(value):
        return ""
    return f"`{value}`"


def _options(command: Command) -> list[str]:
    rows = []
    for param in command.params:
        if param.param_type_name != "option" or param.hidden:
            continue
        names = ", ".join(f"`{name}`" for name in [*param.opts, *param.secondary_opts])
        rows.append(f"| {names} | {_cell(param.help or '')} | {_default(param)} |")
    if not rows:
        return []
    return ["| option | meaning | default |", "|---|---|---|", *rows, ""]


def _command(path: str, command: Command, level: int) -> list[str]:
    lines = [f"{'#' * level} `{path}`", "", inspect.cleandoc(command.help or ""), ""]
    lines += ["```", _usage(path, command), "```", ""]
    lines += _options(command)
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            if not sub.hidden:
                lines += _command(f"{path} {name}", sub, level + 1)
    return lines


def exit_status_table() -> str:
    rows = ["| status | name | meaning |", "|---|---|---|"]
    rows += [f"| {int(s)} | `{s.name}` | {_cell(m)} |" for s, m in EXIT_MEANINGS.items()]
    rows.append(f"| {INTERRUPTED} | | interrupted (Ctrl-C) |")
    return "\n".join(rows) + "\n"


def environment_table() -> str:
    rows = ["| variable | what it does |", "|---|---|"]
    rows += [f"| `{name}` | {_cell(meaning)} |" for name, meaning in VARIABLES.items()]
    return "\n".join(rows) + "\n"


def reference() -> str:
    """The whole of docs/CLI.md."""
    from .main import COMMAND_MODULES, commands_of

    lines = [HEADER, "## Commands by task", ""]
    for panel, names in PANELS.items():
        lines.append(f"- **{panel}**: " + ", ".join(f"[`{n}`](#memdir-{n})" for n in names))
    lines.append("")
    for panel, names in PANELS.items():
        lines += [f"## {panel}", ""]
        for name in names:
            lines += _command(f"memdir {name}", commands_of(COMMAND_MODULES[name])[name], 3)
    lines += ["## Exit statuses", "",
              "A stable interface for scripts (`archive_format/errors.py`):", "",
              exit_status_table(),
              "## Environment variables", "", environment_table()]  # fmt: skip
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(reference())
