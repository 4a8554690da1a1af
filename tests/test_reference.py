"""docs/CLI.md is the command tree, the exit statuses and the environment variables as the code
has them; `memdir --help` groups the commands by task."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memdir.archive_format.environment import VARIABLES
from memdir.archive_format.errors import EXIT_MEANINGS, ExitStatus
from memdir.cli.panels import PANELS

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "CLI.md"


def test_the_cli_reference_is_generated_from_the_commands() -> None:
    from memdir.cli.reference import reference

    assert DOC.read_text(encoding="utf-8") == reference(), (
        "docs/CLI.md is out of date: run `make docs`"
    )


def test_every_command_and_option_is_in_the_reference() -> None:
    from memdir.cli.main import _command

    text = DOC.read_text(encoding="utf-8")

    def walk(path: str, command) -> None:
        assert f"`{path}`" in text, path
        for param in command.params:
            if param.param_type_name == "option" and not param.hidden:
                assert f"`{param.opts[0]}`" in text, (path, param.opts)
        for name, sub in getattr(command, "commands", {}).items():
            walk(f"{path} {name}", sub)

    root = _command()
    for name, command in root.commands.items():
        walk(f"memdir {name}", command)


def test_every_exit_status_is_documented() -> None:
    assert set(EXIT_MEANINGS) == set(ExitStatus)
    text = DOC.read_text(encoding="utf-8")
    for status in ExitStatus:
        assert f"| {int(status)} | `{status.name}` |" in text


def variables_read_by_the_code() -> set[str]:
    """Every `MEMDIR…` name the product's code writes as a string or a `$VARIABLE`."""
    found: set[str] = set()
    for folder in ("cli", "indexers", "archive_format", "memdir"):
        for path in (ROOT / folder).rglob("*.py"):
            found |= set(re.findall(r"[\"'$](MEMDIR(?:_[A-Z0-9_]+)?)\b", path.read_text("utf-8")))
    return found


def test_every_environment_variable_is_documented() -> None:
    from memdir.actor import HARNESS_MARKERS

    documented = {name for key in VARIABLES for name in re.findall(r"[A-Z][A-Z0-9_]+", key)}
    read = variables_read_by_the_code()
    assert {"MEMDIR", "MEMDIR_NOW", "MEMDIR_ACTOR", "MEMDIR_PASSPHRASE"} <= read  # it looks
    assert read - documented == set()
    assert {name for name, _ in HARNESS_MARKERS} <= documented
    text = DOC.read_text(encoding="utf-8")
    for key in VARIABLES:
        assert f"| `{key}` |" in text


def test_help_groups_the_commands_by_task(capsys: pytest.CaptureFixture[str]) -> None:
    from memdir.cli.main import _command, main

    listed = [name for names in PANELS.values() for name in names]
    assert sorted(listed) == sorted(set(listed)), "a command in two groups"
    assert sorted(listed) == sorted(_command().list_commands(None)), "a command in no group"
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    titles = [title for title in re.findall(r"─ (\w+) ─", out) if title != "Options"]
    assert titles == list(PANELS)
    assert "─ Commands ─" not in out  # no flat list left over
    # each command under its own task's heading
    sections = re.split(r"╭─ (\w+) ─+╮", out)
    under = dict(zip(sections[1::2], sections[2::2], strict=True))
    for panel, names in PANELS.items():
        for name in names:
            assert re.search(rf"^│ {name} ", under[panel], re.M), (panel, name)
