"""The lazily built command tree: the root's table of command modules matches what the modules
register, in the order of the eager tree, and a command loads only its own module."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer
import typer.main
from conftest import T0, clean_env

from memdir.archive_format.memdir import Memdir
from memdir.cli import main
from memdir.cli.panels import group_commands

COMMANDS_DIR = Path(main.__file__).parent / "commands"


def eager_tree() -> tuple[Any, dict[str, str]]:
    """Every command module registered on one app (as the root did before it was lazy): the
    click group and, for each top-level name, the module that defined it."""
    app = typer.Typer()
    owner: dict[str, str] = {}
    for path in sorted(COMMANDS_DIR.glob("*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"memdir.cli.commands.{path.stem}")
        before = {id(info) for info in [*app.registered_commands, *app.registered_groups]}
        module.register(app)
        for info in [*app.registered_commands, *app.registered_groups]:
            if id(info) not in before:
                name = info.name or (info.callback.__name__.replace("_", "-") if info.callback
                                     else "")  # fmt: skip
                owner[name] = path.stem
    group_commands(app)
    return typer.main.get_group(app), owner


def test_the_table_names_each_commands_module_in_the_eager_order() -> None:
    tree, owner = eager_tree()
    assert main.COMMAND_MODULES == owner
    root = typer.main.get_command(main.app)
    assert root.list_commands(None) == tree.list_commands(None)
    for name in tree.list_commands(None):
        built, eager = root.get_command(None, name), tree.get_command(None, name)
        assert built.rich_help_panel == eager.rich_help_panel, name
        assert built.get_short_help_str() == eager.get_short_help_str(), name


def test_a_command_loads_only_its_own_module(md: Memdir) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c",
         "import sys; sys.argv = ['memdir', '--dir', sys.argv[1], 'list'];"
         "from memdir.cli.main import main; raise SystemExit(main())", str(md.root)],
        capture_output=True, text=True, timeout=60, env=clean_env(MEMDIR_NOW=T0),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    commands = {
        name.rsplit(".", 1)[1] for name in loaded if name.startswith("memdir.cli.commands.")
    }
    assert "inspect" in commands and not commands & {"bench", "archive", "continuity", "mcp"}


def test_completion_lists_commands_of_modules_not_yet_loaded() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from memdir.cli.main import main; raise SystemExit(main([]))"],
        capture_output=True, text=True, timeout=60,
        env=clean_env(_MEMDIR_COMPLETE="complete_bash", COMP_WORDS="memdir re", COMP_CWORD="1"),
    )  # fmt: skip
    assert set(done.stdout.split()) == {"recall", "review", "reject", "restore"}


def test_the_generated_summaries_are_what_each_command_says() -> None:
    """cli/summaries.py is current: each listed command's first help paragraph (`make docs`
    writes it again after a command's help changed)."""
    import inspect

    from memdir.cli.summaries import SUMMARIES

    tree, _ = eager_tree()
    expected = {
        name: inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0]
        for name in tree.list_commands(None)
        if not (command := tree.get_command(None, name)).hidden
    }
    assert SUMMARIES == expected


def test_the_root_help_builds_no_command_and_reads_as_the_whole_tree_would() -> None:
    """`memdir --help` lists every command from the summaries without importing a command
    module, and prints what the eagerly built tree prints."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c",
         "from memdir.cli.main import main; raise SystemExit(main(['--help']))"],
        capture_output=True, text=True, timeout=60, env=clean_env(COLUMNS="100"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "memdir.cli.commands." not in done.stderr
    eager = typer.Typer(name="memdir", help=main.app.info.help, no_args_is_help=True,
                        context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
    eager.callback()(main.root)
    for module in dict.fromkeys(main.COMMAND_MODULES.values()):
        importlib.import_module(f"memdir.cli.commands.{module}").register(eager)
    group_commands(eager)
    from typer.testing import CliRunner

    printed = CliRunner().invoke(eager, ["--help"], env={"COLUMNS": "100"}, terminal_width=100)
    assert done.stdout.split() == printed.output.split()
