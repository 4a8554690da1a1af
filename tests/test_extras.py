"""Dependencies by need: `pip install memdir` teaches, recalls and sleeps; every optional feature
without its extra is one line naming the extra and its install command (exit status 10).

A subprocess cannot uninstall a package, so each test runs the real `memdir` script with a
`sitecustomize.py` on PYTHONPATH whose import hook makes the extra's modules unimportable, as
they are in an install without the extra.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import MEMDIR_BIN, T0_DT, Run, clean_env, configure, memdir_cli

from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.extras import EXTRAS
from memdir.archive_format.memdir import Memdir
from memdir.indexers.embedding import MiniLMEmbedder

REPO = Path(__file__).resolve().parent.parent
# What the extras bring, and what they pull in themselves (nrclex: TextBlob and NLTK)
EVERY_OPTIONAL = sorted(
    {module for extra in EXTRAS.values() for module in extra.modules} | {"textblob", "nltk"}
)

BLOCKER = '''
import sys

BLOCKED = frozenset({blocked!r})


class _Blocked:
    """Imports of BLOCKED (and their submodules) fail as in an install without them."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Blocked())
'''


def without(tmp_path: Path, modules: list[str] | tuple[str, ...]) -> dict[str, str]:
    """An environment whose Python processes cannot import `modules`."""
    hook = tmp_path / "blocked-imports"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(modules)))
    return clean_env(PYTHONPATH=str(hook))


def assert_names_the_extra(done: Run, extra: str) -> None:
    """Exit 10, an error line naming the extra and a hint with its install command; no
    traceback."""
    assert done.code == ExitStatus.NEEDS_EXTRA, done
    assert "Traceback" not in done.err and "ModuleNotFoundError" not in done.err, done
    lines = done.err.strip().splitlines()
    lines = lines[next(n for n, line in enumerate(lines) if line.startswith("memdir: error")) :]
    assert lines[0].startswith("memdir: error: ") and f"`{extra}` extra" in lines[0], done
    assert lines[1].startswith("  hint: ") and f"pip install 'memdir[{extra}]'" in lines[1], done
    assert len(lines) == 2, done
    for package in EXTRAS[extra].packages:  # the command for this very install
        assert package in lines[1], (package, done)


def test_the_extras_are_pyprojects(tmp_path: Path) -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    optional = project["optional-dependencies"]
    for name, extra in EXTRAS.items():
        assert optional[name] == list(extra.packages), name
    assert optional["all"] == [f"memdir[{','.join(EXTRAS)}]"]
    core = {
        re.split(r"[<>=\[ ]", requirement)[0].lower() for requirement in project["dependencies"]
    }
    for name, extra in EXTRAS.items():
        for package in extra.packages:
            assert re.split(r"[<>=\[ ]", package)[0].lower() not in core, (name, package)


def test_the_default_annotator_needs_no_research_only_lexicon() -> None:
    from memdir.archive_format.settings import Settings
    from memdir.indexers.affect import load_annotator

    assert Settings().affect.annotator == "vader" == load_annotator().name


def test_without_any_extra_memdir_still_teaches_recalls_and_sleeps(tmp_path: Path) -> None:
    env = without(tmp_path, EVERY_OPTIONAL)
    root = tmp_path / "memory"
    assert memdir_cli("init", str(root), env=env).code == 0
    for text in ("I take my coffee black", "Sam prefers morning meetings", "I hate being late!"):
        done = memdir_cli("--dir", str(root), "teach", text, env=env)
        assert done.code == 0, done
    done = memdir_cli("--dir", str(root), "recall", "how do I take my coffee?", "--json", env=env)
    assert done.code == 0, done
    assert "I take my coffee black" in done.out
    done = memdir_cli("--dir", str(root), "sleep", env=env, now="2026-05-02T03:00:00Z")
    assert done.code == 0, done
    done = memdir_cli(
        "--dir", str(root), "export", "--out", str(tmp_path / "plain.tar.gz"), env=env
    )
    assert done.code == 0, done
    done = memdir_cli("--dir", str(root), "doctor", "--json", env=env)
    assert '"extras"' in done.out and "memdir: error" not in done.err, done
    assert "Traceback" not in done.err


def test_without_any_extra_the_demo_runs_on_the_example(tmp_path: Path) -> None:
    """examples/demo.sh's recall --explain on a copy of examples/memdir (the README's first
    command), with no extra importable."""
    import shlex
    import shutil

    script = (REPO / "examples" / "demo.sh").read_text()
    now = re.search(r"MEMDIR_NOW=(\S+)", script)
    (recall,) = [line for line in script.splitlines() if line.startswith('run "$memdir" recall ')]
    assert now is not None
    memory = tmp_path / "memory"
    shutil.copytree(REPO / "examples" / "memdir", memory)
    env = {**without(tmp_path, EVERY_OPTIONAL), "MEMDIR": str(memory), "MEMDIR_NO_SERVICE": "1"}
    done = memdir_cli(*shlex.split(recall)[2:], "--no-record", env=env, now=now[1], timeout=300)
    assert done.code == 0 and "GROUNDED" in done.out, done


@pytest.mark.parametrize("command", [("mcp",), ("mcp", "--http", "0")], ids=["stdio", "http"])
def test_memdir_mcp_without_the_mcp_extra(tmp_path: Path, hashed: Memdir, command) -> None:
    done = memdir_cli("--dir", str(hashed.root), *command, env=without(tmp_path, ["mcp"]))
    assert_names_the_extra(done, "mcp")


def test_memdir_ui_without_the_ui_extra(tmp_path: Path, hashed: Memdir) -> None:
    done = memdir_cli("--dir", str(hashed.root), "ui", "--port", "0",
                      env=without(tmp_path, ["uvicorn"]))  # fmt: skip
    assert_names_the_extra(done, "ui")
    token = memdir_cli("--dir", str(hashed.root), "ui", "--show-token",
                       env=without(tmp_path, ["uvicorn"]))  # fmt: skip
    assert token.code == 0 and len(token.out.strip()) >= 32, token


def test_the_mcp_token_needs_no_mcp_extra(tmp_path: Path, hashed: Memdir) -> None:
    done = memdir_cli("--dir", str(hashed.root), "mcp", "--show-token",
                      env=without(tmp_path, ["mcp", "mcp_types"]))  # fmt: skip
    assert done.code == 0 and len(done.out.strip()) >= 32, done


def test_memdir_watch_without_the_watch_extra(tmp_path: Path, hashed: Memdir) -> None:
    done = memdir_cli("--dir", str(hashed.root), "watch", env=without(tmp_path, ["watchdog"]))
    assert_names_the_extra(done, "watch")


def test_memdir_serve_without_the_watch_extra_says_serve_no_watch(
    tmp_path: Path, hashed: Memdir
) -> None:
    done = memdir_cli("--dir", str(hashed.root), "serve", env=without(tmp_path, ["watchdog"]))
    assert_names_the_extra(done, "watch")
    assert "memdir serve --no-watch" in done.err


def test_an_encrypted_export_without_the_encrypt_extra(tmp_path: Path, hashed: Memdir) -> None:
    out = tmp_path / "backup.tar.gz"
    for blocked in (["cryptography"], ["argon2"]):
        # refused before the passphrase is asked for (standard input is empty here)
        done = memdir_cli("--dir", str(hashed.root), "export", "--out", str(out), "--encrypt",
                          env=without(tmp_path, blocked))  # fmt: skip
        assert_names_the_extra(done, "encrypt")
        assert not out.exists()


def test_restoring_an_encrypted_export_without_the_encrypt_extra(
    tmp_path: Path, hashed: Memdir
) -> None:
    from memdir.usecases.archive import export

    sealed = export(hashed, tmp_path / "sealed.tar.gz", "correct horse battery staple").path
    done = memdir_cli("restore", str(sealed), str(tmp_path / "restored"),
                      env=without(tmp_path, ["cryptography"]))  # fmt: skip
    assert_names_the_extra(done, "encrypt")
    assert not (tmp_path / "restored").exists()
    plain = export(hashed, tmp_path / "plain.tar.gz").path  # a plain export restores anyway
    done = memdir_cli("restore", str(plain), str(tmp_path / "plain"),
                      env=without(tmp_path, ["cryptography", "argon2"]))  # fmt: skip
    assert done.code == 0, done


def test_the_postgres_backend_without_the_postgres_extra(tmp_path: Path, hashed: Memdir) -> None:
    from memdir.archive_format import lifecycle

    lifecycle.teach(hashed, "I take my coffee black", T0_DT)
    md = configure(hashed, index={"backend": "postgres", "dsn": "host=127.0.0.1 dbname=memdir"})
    done = memdir_cli("--dir", str(md.root), "recall", "coffee", env=without(tmp_path, ["psycopg"]))
    assert_names_the_extra(done, "postgres")


def test_the_nrc_annotator_without_the_nrc_extra(tmp_path: Path, hashed: Memdir) -> None:
    from memdir.archive_format import lifecycle

    lifecycle.teach(hashed, "I was so happy at the wedding", T0_DT)
    md = configure(hashed, affect={"annotator": "vader+nrc"})
    done = memdir_cli("--dir", str(md.root), "recall", "wedding", env=without(tmp_path, ["nrclex"]))
    assert_names_the_extra(done, "nrc")
    assert "annotator: vader" in done.err  # the licence-clean way out
    done = memdir_cli("--dir", str(md.root), "doctor", "--json", env=without(tmp_path, ["nrclex"]))
    assert "the `nrc` extra" in done.out, done


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The hook the tests above rely on: the blocked module does not import in the script's
    Python, and the others do."""
    import subprocess

    probe = "import importlib.util as u, yaml; print(u.find_spec('yaml') is not None); import mcp"
    done = subprocess.run([str(MEMDIR_BIN.with_name("python")), "-c", probe], capture_output=True,
                          text=True, env=without(tmp_path, ["mcp"]), timeout=60)  # fmt: skip
    assert done.stdout.strip() == "True" and "No module named 'mcp'" in done.stderr
    assert sys.executable  # the same interpreter the memdir script runs


def test_without_the_bf16_extra_large_calls_embed_on_the_numpy_path(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """The `bf16` extra only speeds embedding up: without OpenVINO a call of many texts (an
    index build's) is embedded by the float32 numpy layers, bit for bit, and says nothing."""
    import subprocess

    import numpy as np

    texts = [f"Note {number}: the physician prescribed medication." for number in range(300)]
    out = tmp_path / "vectors.npy"
    code = (
        "import sys, numpy\n"
        "from memdir.indexers import bfloat16\n"
        "from memdir.indexers.embedding import MiniLMEmbedder\n"
        f"embedder = MiniLMEmbedder({str(minilm.model_dir)!r})\n"
        f"numpy.save({str(out)!r}, embedder.embed({texts!r}))\n"
        "assert bfloat16.compiled(embedder._model) is None and 'openvino' not in sys.modules\n"
    )
    done = subprocess.run([str(MEMDIR_BIN.with_name("python")), "-c", code], capture_output=True,
                          text=True, env=without(tmp_path, ["openvino"]), timeout=300)  # fmt: skip
    assert done.returncode == 0 and not done.stderr, done.stderr
    exact = MiniLMEmbedder(minilm.model_dir, exact=True).embed(texts)
    assert np.array_equal(np.load(out), exact)
