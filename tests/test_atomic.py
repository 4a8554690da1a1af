"""The one atomic-write helper: the old file survives every failure, and no temporary is left."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from conftest import T0_DT

from memdir.archive_format import atomic, lifecycle
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.state import read_yaml, write_yaml


class Interrupted(Exception):
    pass


def chunks_then_failure(count: int) -> Iterator[bytes]:
    for number in range(count):
        yield f"new line {number}\n".encode()
    raise Interrupted("the writer died midway")


def names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def test_a_write_that_fails_midway_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path,
) -> None:
    target = tmp_path / "memories.jsonl"
    target.write_bytes(b"old line 1\nold line 2\n")
    with pytest.raises(Interrupted):
        atomic.write_bytes(target, chunks_then_failure(1000))
    assert target.read_bytes() == b"old line 1\nold line 2\n"
    assert names(tmp_path) == ["memories.jsonl"]


def test_a_failure_inside_the_block_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "export.tar.gz"
    target.write_bytes(b"previous export")
    with pytest.raises(Interrupted), atomic.replacing(target, mode=0o600) as handle:
        handle.write(b"half of the new one")
        raise Interrupted("disk full")
    assert target.read_bytes() == b"previous export"
    assert names(tmp_path) == ["export.tar.gz"]


def test_a_failed_rename_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "ring.yaml"
    target.mkdir()  # os.replace cannot put a file over a directory
    with pytest.raises(OSError):
        atomic.write_text(target, "slots: []\n")
    assert target.is_dir() and names(tmp_path) == ["ring.yaml"]


def test_a_state_file_whose_yaml_cannot_be_written_keeps_its_old_content(tmp_path: Path) -> None:
    target = tmp_path / "state" / "self.yaml"
    write_yaml(target, {"fields": {"name": "Sam"}})
    with pytest.raises(yaml.YAMLError):  # cannot represent an object: fails before any byte
        write_yaml(target, {"fields": {"name": object()}})
    assert read_yaml(target) == {"fields": {"name": "Sam"}}
    assert names(target.parent) == ["self.yaml"]


def test_success_replaces_the_content_with_the_usual_permissions(tmp_path: Path) -> None:
    target = tmp_path / "documents" / "wake.md"  # the directory is created
    atomic.write_text(target, "# Wake\n")
    assert target.read_text(encoding="utf-8") == "# Wake\n"
    plain = tmp_path / "plain.md"
    plain.write_text("x")
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)
    atomic.write_text(target, "# Wake, again\n")
    assert target.read_text(encoding="utf-8") == "# Wake, again\n"
    assert names(target.parent) == ["wake.md"]


def test_an_explicit_mode_is_set(tmp_path: Path) -> None:
    target = tmp_path / "export.tar.gz"
    atomic.write_bytes(target, [b"secret"], mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_concurrent_writers_in_one_process_never_share_a_temporary(tmp_path: Path) -> None:
    target = tmp_path / "people.yaml"
    payloads = [f"writer {number}\n".encode() * 2000 for number in range(8)]
    failures: list[BaseException] = []

    def write(payload: bytes) -> None:
        try:
            atomic.write_bytes(target, [payload])
        except BaseException as error:  # a thread's exception would otherwise vanish
            failures.append(error)

    threads = [threading.Thread(target=write, args=(payload,)) for payload in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert target.read_bytes() in payloads  # one writer's content, whole
    assert names(tmp_path) == ["people.yaml"]


@pytest.fixture
def steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The fsyncs and renames (real ones, recorded) while state/ring.yaml is replaced."""
    target = tmp_path / "state" / "ring.yaml"
    target.parent.mkdir()
    seen: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        path = Path(os.readlink(f"/proc/self/fd/{descriptor}"))
        seen.append("fsync directory" if path == target.parent else f"fsync {path.name[:6]}")
        real_fsync(descriptor)

    def replace(source: object, destination: object) -> None:
        seen.append("rename")
        real_replace(source, destination)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return seen


def test_the_file_is_synced_before_the_rename_and_the_directory_after(
    tmp_path: Path, steps: list[str]
) -> None:
    """What makes the replacement survive a power cut: fsync(file), rename, fsync(directory)."""
    target = tmp_path / "state" / "ring.yaml"
    atomic.write_text(target, "ring: []\n")
    assert steps == ["fsync .ring.", "rename", "fsync directory"]
    assert target.read_text() == "ring: []\n"


def test_the_temporary_is_a_dot_file_beside_the_target(tmp_path: Path) -> None:
    """`export` and `watch` pass over dot files: a temporary must never look canonical."""
    target = tmp_path / "events.jsonl"
    with atomic.replacing(target) as handle:
        handle.write(b"{}\n")
        [temporary] = [name for name in names(tmp_path) if name != "events.jsonl"]
        assert temporary.startswith(".events.jsonl.") and temporary.endswith(".tmp")
        assert str(os.getpid()) in temporary
    assert names(tmp_path) == ["events.jsonl"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"durable": False}, ["rename"]),  # a cache under .memdir/
        ({"sync_directory": False}, ["fsync .ring.", "rename"]),  # a ring push
    ],
)
def test_a_cache_skips_every_fsync_and_a_ring_push_the_directorys(
    tmp_path: Path, steps: list[str], options: dict[str, bool], expected: list[str]
) -> None:
    target = tmp_path / "state" / "ring.yaml"
    atomic.write_text(target, "ring: []\n", **options)
    assert steps == expected
    assert target.read_text() == "ring: []\n" and names(target.parent) == ["ring.yaml"]


def test_a_ring_push_skips_the_directory_fsync_and_dropping_a_forgotten_entry_does_not(
    md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every recorded recall pushes into state/ring.yaml (its directory fsync is spared); the
    write that removes a forgotten memory's text from the ring is synced in full."""
    memory = lifecycle.teach(md, "the ring holds this for a while", T0_DT)
    synced: list[Path] = []
    real_fsync = os.fsync

    def fsync(descriptor: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{descriptor}")))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    lifecycle.record_recall(md, [memory.id], T0_DT + timedelta(hours=1))
    assert memory.id in (md.state_dir / "ring.yaml").read_text()
    assert md.state_dir not in synced and md.recall_shelf in synced
    lifecycle.forget(md, memory.id, T0_DT + timedelta(hours=2))
    assert memory.id not in (md.state_dir / "ring.yaml").read_text()
    assert md.state_dir in synced


def test_the_same_recall_retried_is_recorded_once(md: Memdir) -> None:
    """A command the service ran and its client ran again (the same clock: the same line)."""
    memory = lifecycle.teach(md, "a memory recalled twice in one second", T0_DT)
    at = T0_DT + timedelta(hours=1)
    first = lifecycle.record_recall(md, [memory.id], at)
    assert lifecycle.record_recall(md, [memory.id], at) == first
    later = lifecycle.record_recall(md, [memory.id], at + timedelta(seconds=1))
    lines = [line for line in md.recall_shelf.read_text().splitlines() if line]
    assert [json.loads(line)["id"] for line in lines] == [first, later]
