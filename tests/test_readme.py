"""The README's shell blocks run as pasted, on a scratch home: ids come from earlier commands,
never made up. Blocks that need the network or a git server are named here, with why."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from conftest import MEMDIR_BIN, clean_env

README = Path(__file__).resolve().parents[1] / "README.md"
RUN = {"A minute with memdir"}
NOT_RUN = {
    "memdir": "the two set-up commands: CI itself runs `make setup` and `make test`",
    "Install without make": "pipx and uv install from the network",
    "Two machines": "needs a git server (ssh://server/…)",
}


def shell_blocks() -> list[tuple[str, str]]:
    """Each ```sh block with the heading it sits under."""
    heading, blocks, block = "", [], None
    for line in README.read_text(encoding="utf-8").splitlines():
        if block is not None:
            if line.startswith("```"):
                blocks.append((heading, "\n".join(block)))
                block = None
            else:
                block.append(line)
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.strip() == "```sh":
            block = []
    return blocks


def test_every_shell_block_is_run_or_says_why_not() -> None:
    headings = [heading for heading, _ in shell_blocks()]
    assert headings, "no ```sh blocks found"
    for heading in headings:
        assert heading in RUN or heading in NOT_RUN, f"README block under {heading!r}"
    assert RUN <= set(headings)


def test_no_made_up_ids() -> None:
    for heading, block in shell_blocks():
        assert not re.search(r"\bm-[0-9a-f]{4,}", block), heading


def test_the_quick_start_runs_as_pasted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(
        HOME=str(home),
        PATH=f"{MEMDIR_BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig"),
        MEMDIR_NOW=None,
    )
    for heading, block in shell_blocks():
        if heading not in RUN:
            continue
        script = f"set -euo pipefail\n{block}\n"
        done = subprocess.run(
            ["bash", "-c", script], cwd=home, env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"{heading}:\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr
    memory = home / "memory"
    assert "GROUNDED" in done.stdout
    shown = subprocess.run(
        [str(MEMDIR_BIN), "--dir", str(memory), "list", "--status", "all", "--json"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    states = {item["status"] for item in json.loads(shown.stdout)}
    assert {"forgotten", "rejected", "durable"} <= states, states
