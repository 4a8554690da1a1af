"""Small frictions a new user meets, each fixed and checked in a real process: readable
`show` and `index --status`, a "no results" line, budget verdicts, wake's "… N more" notes,
shell completion, and examples (crontab, systemd, launchd) that run on anyone's machine."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from conftest import MEMDIR_BIN, T0, T0_DT, clean_env, configure

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir, init


@pytest.fixture
def cli(cli_in_process):
    """What the commands do and print is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REPR = re.compile(r"\bNone\b|\bTrue\b|\bFalse\b|[{\[]'")


def in_dir(md: Memdir, *args: str) -> tuple[str, ...]:
    return ("--dir", str(md.root), *args)


def test_show_and_index_status_print_no_python_reprs(cli, hashed: Memdir) -> None:
    first = lifecycle.teach(hashed, "I take my coffee black", T0_DT, key="coffee").id
    guess = lifecycle.infer(
        hashed, "Sam likes mornings", T0_DT, meta={"intent": "plan", "confidence": 0.5}
    ).id
    lifecycle.link(hashed, guess, first, "related", T0_DT)
    shown = cli(*in_dir(hashed, "show", guess))
    assert shown.code == 0, shown
    assert not REPR.search(shown.out), shown.out
    assert f"links:      related → {first}" in shown.out
    assert "meta:       intent plan, confidence 0.5" in shown.out
    assert cli(*in_dir(hashed, "index")).code == 0
    status = cli(*in_dir(hashed, "index", "--status"))
    assert status.code == 0 and not REPR.search(status.out), status.out
    assert re.search(r"^vector_base: +\w+, 2 vectors$", status.out, re.M), status.out
    assert re.search(r"^up_to_date: +yes$", status.out, re.M), status.out


def test_no_results_is_said(cli, hashed: Memdir) -> None:
    lifecycle.teach(hashed, "I take my coffee black", T0_DT)
    done = cli(*in_dir(hashed, "search", "xylophone"))
    assert done.code == 0 and done.out == "" and "no results" in done.err, done
    empty = str(
        configure(init(hashed.root.parent / "empty", T0_DT)[0], embedder={"kind": "hashing"}).root
    )
    similar = cli("--dir", empty, "similar", "anything")
    assert similar.code == 0 and similar.out == "" and "no results" in similar.err, similar
    recall = cli("--dir", empty, "recall", "anything", "--no-record")
    assert recall.code == 0 and "NO_DATA" in recall.out and "no results" in recall.out, recall


def test_a_budget_too_small_is_over_budget_not_no_data(cli, hashed: Memdir) -> None:
    lifecycle.teach(hashed, "I take my coffee black", T0_DT, key="coffee")
    wide = cli(*in_dir(hashed, "recall", "coffee", "--no-record", "--json"))
    assert json.loads(wide.out)["verdict"] == "GROUNDED"
    done = cli(*in_dir(hashed, "recall", "coffee", "--no-record", "--budget", "1"))
    assert done.code == 0, done
    assert done.out.startswith("GROUNDED  0 memories"), done.out
    assert "… 1 more over the token budget (raise --budget)" in done.out
    data = json.loads(cli(*in_dir(hashed, "recall", "coffee", "--no-record", "--budget", "1",
                                  "--json")).out)  # fmt: skip
    assert (data["verdict"], data["results"], data["over_budget"]) == ("GROUNDED", [], 1)


def test_wake_says_what_its_budget_left_out(cli, hashed: Memdir) -> None:
    for n in range(6):
        lifecycle.teach(hashed, f"Sam's fact number {n} is worth remembering", T0_DT)
    lifecycle.infer(hashed, "Sam seems to like mornings", T0_DT)
    full = cli(*in_dir(hashed, "wake", "--budget", "2000"))
    assert "more sections" not in full.out
    for budget in ("40", "60", "100"):
        done = cli(*in_dir(hashed, "wake", "--budget", budget))
        assert done.code == 0, done
        assert re.search(r"… (\d+) more", done.out), (budget, done.out)
        tokens = int(done.err.split(" of ")[0].split()[-1])
        assert tokens <= int(budget)


@pytest.mark.process
def test_shell_completion(cli) -> None:
    # typed in bash, as a user does: typer finds the shell among the command's parents
    script = subprocess.run(
        ["bash", "-c", f"{MEMDIR_BIN} --show-completion bash; exit $?"],
        capture_output=True, text=True, timeout=30, env=clean_env(SHELL="/bin/bash"),
    )  # fmt: skip
    assert script.returncode == 0 and "_memdir_completion" in script.stdout, script
    done = subprocess.run(
        [str(MEMDIR_BIN)], capture_output=True, text=True, timeout=30,
        env=clean_env(COMP_WORDS="memdir rec", COMP_CWORD="1", _MEMDIR_COMPLETE="complete_bash"),
    )  # fmt: skip
    assert done.stdout.split() == ["recall"], done
    bare = subprocess.run(  # the completion variable without what the shell's function sets
        [str(MEMDIR_BIN)], capture_output=True, text=True, timeout=30,
        env=clean_env(_MEMDIR_COMPLETE="complete_bash"),
    )  # fmt: skip
    assert bare.returncode == 2 and "internal error" not in bare.stderr, bare
    assert bare.stderr.startswith("memdir: error: ") and "hint:" in bare.stderr
    helped = cli("--help")
    assert "--install-completion" in helped.out


def scratch_home(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A home with ~/memory and memdir in ~/.local/bin, as pipx or uv would leave it."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".cache").mkdir()
    (home / ".local" / "bin" / "memdir").symlink_to(MEMDIR_BIN)
    init(home / "memory", T0_DT)
    env = clean_env(HOME=str(home), PATH="/usr/bin:/bin", MEMDIR_NOW=T0)
    return home, env


def test_the_crontab_example_is_portable_and_runs(tmp_path: Path) -> None:
    text = (EXAMPLES / "crontab").read_text()
    assert "/home/" not in text and "/Users/" not in text
    entries = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert entries, text
    home, env = scratch_home(tmp_path)
    for entry in entries:
        assert not re.match(r"^\w+=", entry), "cron does not expand variables in assignments"
        command = entry.split(None, 5)[5]  # after the five time fields
        done = subprocess.run(["/bin/sh", "-c", command], cwd="/", env=env, timeout=120)
        assert done.returncode == 0, command
    log = (home / ".cache" / "memdir-sleep.log").read_text()
    assert "Traceback" not in log
    assert (home / "memory" / "documents" / "wake.md").is_file()  # sleep ran on ~/memory


def wait_until_watching(process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while "waiting for changes" not in (log.read_text() if log.exists() else ""):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


@pytest.mark.parametrize("unit", ["memdir-watch.service", "memdir-watch.plist"])
def test_the_daemon_recipes_start_watch_on_the_home_memdir(tmp_path: Path, unit: str) -> None:
    text = (EXAMPLES / unit).read_text()
    assert "/home/" not in text and "/Users/" not in text
    home, env = scratch_home(tmp_path)
    if unit.endswith(".plist"):
        recipe = plistlib.loads(text.encode("utf-8"))
        argv = recipe["ProgramArguments"]
        assert recipe["Label"] and recipe["RunAtLoad"] is True
    else:
        (start,) = [line for line in text.splitlines() if line.startswith("ExecStart=")]
        argv = shlex.split(start.removeprefix("ExecStart=").replace("%h", str(home)))
        assert "[Install]" in text and "WantedBy=default.target" in text
    log = tmp_path / "daemon.err"
    with open(log, "wb") as stderr:
        process = subprocess.Popen(argv, env=env, cwd="/", stdout=subprocess.DEVNULL,
                                   stderr=stderr)  # fmt: skip
        try:
            wait_until_watching(process, log)
            assert str(home / "memory") in log.read_text()
        finally:
            process.terminate()
            process.wait(timeout=10)
    assert os.path.exists(home / "memory" / ".memdir")
