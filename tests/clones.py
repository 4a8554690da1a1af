"""Real git clones of one memdir in tmp_path, for the sync tests (no network: a bare hub or
peer remotes on disk)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from conftest import T0_DT

from memdir.archive_format.memdir import init

IDENTITY = {"user.name": "Test User", "user.email": "test@example.invalid"}


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} in {repo}: {done.stderr}")
    return done


def configure_git(repo: Path) -> None:
    for key, value in {**IDENTITY, "commit.gpgsign": "false"}.items():
        git(repo, "config", key, value)


def new_memdir_repo(root: Path, hashing: bool = True) -> Path:
    """A memdir (hashing embedder) in a fresh git repository on branch main, committed."""
    memdir, _ = init(root, T0_DT)
    if hashing:
        path = memdir.root / "memdir.yaml"
        config = yaml.safe_load(path.read_text())
        config["settings"]["embedder"] = {"kind": "hashing"}
        path.write_text(yaml.safe_dump(config, sort_keys=False))
    git(root, "init", "-q", "-b", "main")
    configure_git(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a new memdir")
    return root


def hub_and_clones(tmp_path: Path, names: tuple[str, ...] = ("a", "b")) -> list[Path]:
    """A bare hub with one memdir pushed to it, and clones of it."""
    first = new_memdir_repo(tmp_path / "origin")
    hub = tmp_path / "hub.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(hub)], check=True)
    git(first, "remote", "add", "origin", str(hub))
    git(first, "push", "-q", "origin", "main")
    clones = []
    for name in names:
        subprocess.run(["git", "clone", "-q", str(hub), str(tmp_path / name)], check=True)
        configure_git(tmp_path / name)
        clones.append(tmp_path / name)
    return clones


def conflicts(repo: Path) -> list[str]:
    return git(repo, "diff", "--name-only", "--diff-filter=U").stdout.split()
