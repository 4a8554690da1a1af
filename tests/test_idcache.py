"""The id cache (.memdir/idcache.sqlite): derived, never trusted over the shelves.

Whatever happens to the cache (deleted, corrupt, stale, unwritable) or to the shelves behind its
back (lines appended by a merge, a rewrite by git or `forget`, an edit in place), a write never
lets a duplicate through, and every answer agrees with a fold over the shelves.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import T0_DT, clean_env, shelf_lines
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from memdir.archive_format import idcache, journal, lifecycle, shelf
from memdir.archive_format.clock import format_time
from memdir.archive_format.errors import AmbiguousIdError, MemdirError, NotFoundError
from memdir.archive_format.memdir import Memdir, init
from memdir.archive_format.records import Memory, encode_line, new_event, new_memory

HOUR = timedelta(hours=1)
ROOT = Path(__file__).resolve().parents[1]


def cache_path(memdir: Memdir) -> Path:
    return memdir.cache_dir / idcache.CACHE_NAME


def dump(cache: idcache.IdCache) -> dict[str, Any]:
    """The cache's content with file numbers replaced by file names, order-free."""
    names = dict(cache.db.execute("SELECT number, name FROM files").fetchall())
    files = sorted(cache.db.execute("SELECT name, inode, size, fingerprint FROM files"))
    tables: dict[str, Any] = {"files": files}
    for table in idcache.TABLES:
        columns = [row[1] for row in cache.db.execute(f"PRAGMA table_info({table})")]
        rows = cache.db.execute(f"SELECT * FROM {table}").fetchall()
        tables[table] = sorted(
            tuple(
                names[value] if name == "file" else value
                for name, value in zip(columns, row, strict=True)
            )
            for row in rows
        )
    return tables


def from_scratch(memdir: Memdir) -> idcache.IdCache:
    """A cache built in memory from the files alone."""
    scratch = idcache.IdCache(memdir, idcache._connect(":memory:"))
    scratch.sync()
    return scratch


def complete_lines(memdir: Memdir) -> list[dict[str, Any]]:
    """Every complete line of every shelf (a torn tail left out, as readers do)."""
    return [item.data for path in memdir.shelves() for item in shelf.read(path)]


def assert_agrees_with_the_shelves(memdir: Memdir, now: datetime) -> None:
    """The cache holds what a build from the files holds, and every lookup through it folds to
    the state the whole archive folds to."""
    cache = idcache.open_cache(memdir)
    assert dump(cache) == dump(from_scratch(memdir))
    full = lifecycle.load_view(memdir, now)
    on_shelves = {
        line["id"] for line in complete_lines(memdir) if line["kind"] in ("memory", "tombstone")
    }
    assert cache.present(on_shelves | {"m-0000000000000000"}) == on_shelves
    for state in full:
        assert lifecycle.lookup(memdir, state.id, now).to_dict() == state.to_dict()
        if state.memory is not None:
            assert state.id in cache.with_text(state.memory.text)


def memory(text: str, created: datetime = T0_DT, **fields: Any) -> Memory:
    values = {"source": "observation", "author": "assistant", "store": "episodic", **fields}
    return new_memory(created=format_time(created), text=text, **values)


def append_behind_the_back(path: Path, *memories: Memory) -> None:
    """What a `git merge` (union) or a sync tool does: lines arrive without memdir."""
    with open(path, "ab") as handle:
        handle.write(b"".join(encode_line(m.to_line()) for m in memories))


# --- the duplicate check survives whatever happens to the cache -------------------------------


def test_a_deleted_cache_never_lets_a_duplicate_through(md: Memdir) -> None:
    taught = lifecycle.teach(md, "I take my coffee black", T0_DT)
    imported = memory("an imported turn")
    assert lifecycle.add_memories(md, [imported]) == 1
    assert cache_path(md).is_file()
    shutil.rmtree(md.cache_dir)
    again = lifecycle.teach(md, "I take my coffee black", T0_DT + HOUR)
    assert again.id == taught.id and not again.added
    assert lifecycle.add_memories(md, [imported]) == 0
    assert len(shelf_lines(md)) == 2
    assert_agrees_with_the_shelves(md, T0_DT + HOUR)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "tables dropped"])
def test_a_corrupt_cache_is_rebuilt_and_lets_no_duplicate_through(
    cli, md: Memdir, damage: str
) -> None:
    taught = lifecycle.teach(md, "I live in Lisbon", T0_DT)
    for n in range(50):
        lifecycle.observe(md, f"filler memory {n}", T0_DT, author="assistant")
    path = cache_path(md)
    if damage == "garbage":
        path.write_bytes(os.urandom(path.stat().st_size))
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        db = sqlite3.connect(path)
        db.executescript("DROP TABLE records; DROP TABLE files;")
        db.close()
    done = cli("--dir", str(md.root), "teach", "I live in Lisbon")
    assert done.code == 0, done
    assert done.out.strip() == taught.id and "already stored" in done.err
    assert len(shelf_lines(md)) == 51
    again = lifecycle.teach(md, "I live in Lisbon", T0_DT + HOUR)
    assert again.id == taught.id and not again.added
    assert_agrees_with_the_shelves(md, T0_DT + HOUR)


def test_a_cache_that_cannot_be_kept_on_disk_is_built_in_memory(md: Memdir) -> None:
    taught = lifecycle.teach(md, "I live in Lisbon", T0_DT)
    shutil.rmtree(md.cache_dir)
    cache_path(md).mkdir(parents=True)  # no database can be opened there
    again = lifecycle.teach(md, "I live in Lisbon", T0_DT + HOUR)
    assert again.id == taught.id and not again.added
    assert lifecycle.add_memories(md, [memory("new"), memory("new")]) == 1
    assert lifecycle.lookup(md, taught.id[:6], T0_DT).id == taught.id
    assert len(shelf_lines(md)) == 2


def closed(memdir: Memdir) -> None:
    """What a restart of the machine does to the cache: no process holds it any more."""
    idcache._close(cache_path(memdir))


def test_a_restart_of_the_machine_keeps_the_cache(md: Memdir) -> None:
    """The cache is consistent on disk whenever a commit returns (a write-ahead log), so after
    a restart the next write reads only what changed behind its back, not every line."""
    for n in range(200):
        lifecycle.teach(md, f"kept memory number {n}", T0_DT)
    idcache.open_cache(md)  # it has indexed every line (a write syncs before it appends)
    closed(md)
    pulled = memory("arrived while the machine was off", key="k", source="teaching",
                    author="user", store="semantic")  # fmt: skip
    written_anew_by_git(md.memory_shelf, pulled)
    cache = idcache.open_cache(md)
    assert cache.lines_read == 1  # the pulled line, not the 201 lines of the shelf
    again = lifecycle.teach(md, "arrived while the machine was off", T0_DT + HOUR, key="k")
    assert again.id == pulled.id and not again.added
    assert not lifecycle.teach(md, "kept memory number 7", T0_DT + HOUR).added
    assert_agrees_with_the_shelves(md, T0_DT + HOUR)
    # what makes that safe: a write-ahead log, fsynced before each checkpoint, not per commit
    assert cache.db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert cache.db.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL


def test_a_large_transaction_leaves_no_log_for_the_next_write(
    md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build or a rewrite that moved many rows is checkpointed at once, the log cut to
    nothing, so the next write does not pay for copying and cutting it."""
    monkeypatch.setattr(idcache, "LARGE", 50)
    lifecycle.teach(md, "the first", T0_DT)
    read = idcache.open_cache(md).lines_read
    wal = Path(f"{cache_path(md)}-wal")
    assert wal.stat().st_size > 0
    arrived = [memory(f"arrived behind the back {n}") for n in range(60)]
    append_behind_the_back(md.memory_shelf, *arrived)
    cache = idcache.open_cache(md)  # 60 rows in one transaction
    assert cache.lines_read - read == 60 and wal.stat().st_size == 0
    assert lifecycle.add_memories(md, arrived) == 0
    assert_agrees_with_the_shelves(md, T0_DT)


def test_a_crash_that_lost_the_last_commits_leaves_a_cache_that_is_caught_up(
    md: Memdir, tmp_path: Path
) -> None:
    """A crash of the machine may lose the commits since the last checkpoint, never tear the
    file: what is left is the cache as it was some writes ago, its files' rows with it. Here
    the loss is made by hand: the cache is put back as it was before later writes, an append
    by another tool and a forget (a rewrite the cache had followed)."""
    first = [lifecycle.teach(md, f"before the crash {n}", T0_DT) for n in range(20)]
    gone = lifecycle.infer(md, "forgotten after the copy", T0_DT).id
    earlier = tmp_path / "earlier.sqlite"
    target = sqlite3.connect(earlier)
    idcache.open_cache(md).db.backup(target)  # the cache as these commits left it
    target.close()
    later = lifecycle.teach(md, "taught after the copy", T0_DT + HOUR)
    merged = memory("appended by another tool")
    append_behind_the_back(md.memory_shelf, merged)
    lifecycle.forget(md, gone, T0_DT + HOUR)
    closed(md)
    for suffix in ("-wal", "-shm"):
        Path(f"{cache_path(md)}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(earlier, cache_path(md))  # the crash lost every commit since the copy
    again = lifecycle.teach(md, "taught after the copy", T0_DT + 2 * HOUR)
    assert again.id == later.id and not again.added
    assert lifecycle.add_memories(md, [merged, first[3]]) == 0  # not taken for new ones
    assert lifecycle.lookup(md, gone, T0_DT + 2 * HOUR).status == "forgotten"
    assert lifecycle.infer(md, "forgotten after the copy", T0_DT + 2 * HOUR).added
    assert_agrees_with_the_shelves(md, T0_DT + 2 * HOUR)


def test_a_process_killed_in_the_middle_of_a_sync_leaves_a_consistent_cache(md: Memdir) -> None:
    """A writer killed while its transaction indexes lines leaves the cache as the last commit
    left it; the next sync indexes those lines again, and nothing is lost or doubled."""
    lifecycle.teach(md, "before the kill", T0_DT)
    idcache.open_cache(md)  # it has indexed that line
    closed(md)
    arrived = [memory(f"arrived behind the back {n}") for n in range(200)]
    append_behind_the_back(md.memory_shelf, *arrived)
    child = (
        "import os, signal, sys\nfrom pathlib import Path\n"
        "from memdir.archive_format import idcache\n"
        "from memdir.archive_format.memdir import Memdir\n"
        "idcache.BATCH_LINES = 10  # rows reach the database before the kill\n"
        "row, seen = idcache._row, []\n"
        "def dying(*args):\n"
        "    seen.append(1)\n"
        "    if len(seen) == 150:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return row(*args)\n"
        "idcache._row = dying\n"
        "idcache.open_cache(Memdir.open(Path(sys.argv[1])))\n"
    )
    killed = subprocess.run([sys.executable, "-c", child, str(md.root)], env=clean_env(),
                            capture_output=True, check=False)  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    db = sqlite3.connect(cache_path(md))
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT COUNT(*) FROM records").fetchone() == (1,)  # the last commit's
    db.close()
    cache = idcache.open_cache(md)
    assert cache.lines_read == 200  # the lines the killed sync had not committed
    assert lifecycle.add_memories(md, arrived) == 0
    assert_agrees_with_the_shelves(md, T0_DT)


# --- the shelves change behind the cache's back -----------------------------------------------


def test_lines_appended_behind_the_caches_back_are_seen(md: Memdir) -> None:
    lifecycle.teach(md, "written by memdir", T0_DT)
    merged = memory(
        "arrived with a merge", key="city", source="teaching", author="user", store="semantic"
    )
    append_behind_the_back(md.memory_shelf, merged)
    assert lifecycle.add_memories(md, [merged]) == 0
    again = lifecycle.teach(md, "arrived with a merge", T0_DT + HOUR, key="city")
    assert again.id == merged.id and not again.added
    assert_agrees_with_the_shelves(md, T0_DT + HOUR)


def test_a_git_merge_of_two_clones_lets_no_duplicate_through(tmp_path: Path) -> None:
    """Two clones append different memories; the union merge rewrites the shelf (a new inode);
    neither side's memory can then be written twice."""
    env = clean_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
                    GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")  # fmt: skip

    def git(where: Path, *args: str) -> None:
        subprocess.run(["git", "-C", str(where), *args], env=env, check=True, capture_output=True)

    here, _ = init(tmp_path / "here", T0_DT)
    lifecycle.teach(here, "shared before the clone", T0_DT)
    git(here.root, "init", "-q", "-b", "main")
    git(here.root, "add", "memdir.yaml", ".gitattributes", ".gitignore", "shelves")
    git(here.root, "commit", "-q", "-m", "start")
    subprocess.run(["git", "clone", "-q", str(here.root), str(tmp_path / "there")], env=env,
                   check=True, capture_output=True)  # fmt: skip
    there = Memdir.open(tmp_path / "there")
    mine = lifecycle.teach(here, "written here", T0_DT + HOUR)
    theirs = lifecycle.teach(there, "written there", T0_DT + HOUR, key="where")
    git(here.root, "commit", "-q", "-am", "here")
    git(there.root, "commit", "-q", "-am", "there")
    git(here.root, "pull", "-q", "--no-rebase", "--no-edit", str(there.root), "main")
    texts = {line["text"] for line in shelf_lines(here)}
    assert texts == {"shared before the clone", "written here", "written there"}
    # git wrote a new file, which may well get the old one's inode number: the size, mtime and
    # fingerprint tell the cache it changed
    again = lifecycle.teach(here, "written there", T0_DT + 2 * HOUR, key="where")
    assert again.id == theirs.id and not again.added
    assert not lifecycle.teach(here, "written here", T0_DT + 2 * HOUR).added
    assert lifecycle.add_memories(here, [memory("written there")]) == 1  # other fields differ
    assert lifecycle.lookup(here, theirs.id[:8], T0_DT + 2 * HOUR).id == theirs.id
    assert mine.id in idcache.open_cache(here).present([mine.id, theirs.id])
    assert_agrees_with_the_shelves(here, T0_DT + 2 * HOUR)


def test_forget_compaction_keeps_the_cache_in_step(md: Memdir) -> None:
    kept = [lifecycle.teach(md, f"kept {n}", T0_DT).id for n in range(5)]
    gone = lifecycle.infer(md, "to be forgotten", T0_DT).id
    lifecycle.reject(md, gone, "it quoted a secret", T0_DT + HOUR)
    lifecycle.link(md, kept[0], gone, "related", T0_DT + HOUR)
    later = lifecycle.teach(md, "written after it", T0_DT + HOUR).id
    lifecycle.forget(md, gone[:9], T0_DT + 2 * HOUR)
    assert b"to be forgotten" not in md.memory_shelf.read_bytes()
    assert b"quoted a secret" not in md.event_shelf.read_bytes()
    assert_followed(md)  # the cache followed both rewrites: nothing to read again
    assert_agrees_with_the_shelves(md, T0_DT + 2 * HOUR)
    assert lifecycle.lookup(md, gone, T0_DT + 2 * HOUR).status == "forgotten"
    assert not lifecycle.teach(md, "written after it", T0_DT + 3 * HOUR).added
    assert lifecycle.lookup(md, later, T0_DT + 3 * HOUR).memory is not None
    # a forgotten memory's text is not live any more: writing it again is a new memory
    assert lifecycle.infer(md, "to be forgotten", T0_DT + 3 * HOUR).added


# --- rewrites by memdir itself are followed, not read again ------------------------------------


def assert_followed(memdir: Memdir) -> None:
    """Every file the cache has a row for is the file it indexed, or that file grown by lines
    appended since: the next sync reads those lines only. Read from the cache file itself, so
    nothing syncs it first."""
    path = cache_path(memdir)
    if not path.exists():
        return
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT name, inode, size, fingerprint FROM files").fetchall()
    finally:
        db.close()
    for name, inode, size, mark in rows:
        file = memdir.root / name
        if not file.exists():
            continue
        with open(file, "rb") as handle:
            stat = os.fstat(handle.fileno())
            assert (stat.st_ino, stat.st_size >= size) == (inode, True), f"{name} was replaced"
            assert idcache.fingerprint(handle, size) == mark, f"{name} changed where it indexed"


def test_the_first_write_after_a_forget_reads_no_shelf_again(md: Memdir) -> None:
    from memdir.usecases import forgetting

    for n in range(300):
        lifecycle.teach(md, f"kept memory number {n}", T0_DT)
    gone = lifecycle.infer(md, "to be forgotten", T0_DT).id
    lifecycle.reject(md, gone, "it quoted a secret", T0_DT + HOUR)  # the event is redacted too
    cache = idcache.open_cache(md)
    replaced = {path: path.stat().st_ino for path in md.shelves()}
    read = cache.lines_read
    forgetting.forget_memory(md, gone[:10], T0_DT + 2 * HOUR)  # the command's use case
    assert all(path.stat().st_ino != inode for path, inode in replaced.items())
    assert_followed(md)
    written = lifecycle.teach(md, "the first memory after the forget", T0_DT + 3 * HOUR)
    assert written.added
    assert idcache.open_cache(md) is cache
    # the forget event and the new memory: not the 300 lines of the rewritten shelves
    assert cache.lines_read - read <= 2, cache.lines_read - read
    assert_agrees_with_the_shelves(md, T0_DT + 3 * HOUR)


def _forget_a_memory(md: Memdir) -> None:
    from memdir.usecases import forgetting

    gone = lifecycle.infer(md, "a guess to forget", T0_DT).id
    lifecycle.reject(md, gone, "it quoted a secret", T0_DT + HOUR)
    lifecycle.link(md, lifecycle.teach(md, "linked to it", T0_DT).id, gone, "related", T0_DT)
    forgetting.forget_memory(md, gone, T0_DT + 2 * HOUR)


def _forget_a_turn(md: Memdir) -> None:
    from memdir.usecases import forgetting

    turns = [journal.new_turn(T0_DT, "user", "s", f"said {n}") for n in range(5)]
    journal.add_turns(md, turns)
    forgetting.forget_turns(md, [turns[2].id], None, T0_DT + HOUR)


def _merge_back_a_forgotten_memory(md: Memdir) -> None:
    """A clone that still had the memory's line sends it back; the next write re-applies the
    tombstone (tombstones.reapply)."""
    gone = memory("forgotten here, kept on another clone")
    lifecycle.add_memories(md, [gone])
    lifecycle.forget(md, gone.id, T0_DT + HOUR)
    append_behind_the_back(md.memory_shelf, gone)
    lifecycle.teach(md, "the next write", T0_DT + 2 * HOUR)
    assert b"kept on another clone" not in md.memory_shelf.read_bytes()


def _dedupe_a_merge(md: Memdir) -> None:
    from memdir.archive_format import tombstones

    twice = memory("sent by both clones")
    lifecycle.add_memories(md, [twice])
    append_behind_the_back(md.memory_shelf, twice)
    idcache.open_cache(md)  # the merge's line is seen (appended: read alone)
    with md.lock():
        assert tombstones.dedupe(md, md.memory_shelf) == 1


def _move_out_a_secret_turn(md: Memdir) -> None:
    from memdir.archive_format import secrets

    journal.add_turns(md, [journal.new_turn(T0_DT, "user", "s", "said in public")])
    secret = journal.new_turn(T0_DT, "user", "s", "a secret", secrecy="secret")
    with open(journal.turns_path(md), "ab") as handle:  # as a memdir of before the rule wrote it
        handle.write(encode_line(secret.to_line()))
    idcache.open_cache(md)
    with md.lock():
        assert secrets.move_out(md) == 1


def _escape_a_nul(md: Memdir) -> None:
    from memdir.usecases.sync_safety import escape_local_nul

    line = encode_line(memory("a NUL byte: \x00 here").to_line()).replace(b"\\u0000", b"\x00")
    assert b"\x00" in line
    with open(md.memory_shelf, "ab") as handle:
        handle.write(line)
    idcache.open_cache(md)
    with md.lock():
        assert escape_local_nul(md) == ["shelves/memories.jsonl"]


def _undo_an_import(md: Memdir) -> None:
    from memdir.archive_format import imports

    kept = journal.new_turn(T0_DT, "user", "s", "typed here")
    imported = [journal.new_turn(T0_DT, "user", "s", f"imported {n}",
                                 channel=imports.channel("chat.json")) for n in range(3)]  # fmt: skip
    journal.add_turns(md, [kept, *imported])
    with md.lock():
        imports.record(md, "chat.json", {"turns": 3})
    assert imports.remove_source(md, "chat.json") == 3


REWRITES = {
    "forget": _forget_a_memory,
    "journal forget": _forget_a_turn,
    "reapply after a merge": _merge_back_a_forgotten_memory,
    "dedupe after a merge": _dedupe_a_merge,
    "move a secret turn out": _move_out_a_secret_turn,
    "escape a NUL byte": _escape_a_nul,
    "import --undo": _undo_an_import,
}


@pytest.mark.parametrize("rewrite", REWRITES)
def test_every_rewrite_by_memdir_keeps_the_cache_current(md: Memdir, rewrite: str) -> None:
    for n in range(100):
        lifecycle.teach(md, f"already there {n}", T0_DT)
    journal.add_turns(md, [journal.new_turn(T0_DT, "user", "s", f"turn {n}") for n in range(100)])
    cache = idcache.open_cache(md)
    files = {
        path: (path.stat().st_ino, path.stat().st_mtime_ns) for path in cache.tracked().values()
    }
    read = cache.lines_read
    REWRITES[rewrite](md)
    # a file was written anew (its inode, or, where the file system hands the freed inode number
    # straight back, at least its time of change differs)
    assert any(path.exists() and (path.stat().st_ino, path.stat().st_mtime_ns) != before
               for path, before in files.items())  # fmt: skip
    assert_followed(md)
    assert idcache.open_cache(md) is cache
    # the few lines the operation appended, not the 100 of a file it rewrote, read again
    assert cache.lines_read - read < 20, cache.lines_read - read
    assert_agrees_with_the_shelves(md, T0_DT + 3 * HOUR)
    assert_journal_agrees(md, T0_DT + 3 * HOUR)


def written_anew_by_git(path: Path, *memories: Memory) -> None:
    """What a `git pull` or merge does to a shelf: a new file (a new inode) renamed over the
    old one, holding its bytes and then the lines the other clone appended."""
    data = path.read_bytes() + b"".join(encode_line(m.to_line()) for m in memories)
    fresh = path.with_name(path.name + ".pulled")
    fresh.write_bytes(data)
    os.replace(fresh, path)


def test_a_shelf_git_wrote_anew_with_lines_appended_is_caught_up_not_read_again(
    md: Memdir,
) -> None:
    for n in range(300):
        lifecycle.teach(md, f"kept memory number {n}", T0_DT)
    cache = idcache.open_cache(md)
    inode = md.memory_shelf.stat().st_ino
    pulled = [memory(f"pulled from the other clone {n}", key=f"k{n}", source="teaching",
                     author="user", store="semantic") for n in range(3)]  # fmt: skip
    written_anew_by_git(md.memory_shelf, *pulled)
    assert md.memory_shelf.stat().st_ino != inode
    read = cache.lines_read
    again = lifecycle.teach(md, "pulled from the other clone 1", T0_DT + HOUR, key="k1")
    assert again.id == pulled[1].id and not again.added  # the pulled line is seen
    assert cache.lines_read - read <= 3, cache.lines_read - read  # the 3 pulled, not 303
    assert_agrees_with_the_shelves(md, T0_DT + HOUR)
    # written anew with a changed prefix (a checkout of other history) is indexed again
    raw = md.memory_shelf.read_bytes()
    md.memory_shelf.unlink()
    md.memory_shelf.write_bytes(raw.replace(b"kept memory number 0", b"kept memory number X"))
    read = cache.lines_read
    lifecycle.teach(md, "after the checkout", T0_DT + 2 * HOUR)
    assert cache.lines_read - read >= 300
    assert_agrees_with_the_shelves(md, T0_DT + 2 * HOUR)


def test_a_shelf_edited_in_place_or_replaced_by_an_older_copy_is_indexed_again(
    md: Memdir,
) -> None:
    first = lifecycle.teach(md, "version one", T0_DT)
    raw = md.memory_shelf.read_bytes()
    lifecycle.teach(md, "added later", T0_DT)
    # the same size and inode, different bytes (an editor writing in place)
    with open(md.memory_shelf, "r+b") as handle:
        handle.write(raw.replace(b"version one", b"version two"))
    os.utime(md.memory_shelf, ns=(1, 1))
    edited = lifecycle.teach(md, "version two", T0_DT + HOUR)
    assert edited.id == first.id and not edited.added  # found by its text, under its old id
    # its id is still there: the original line, appended again, is a no-op
    original = Memory.from_line(json.loads(raw.splitlines()[0]))
    assert lifecycle.add_memories(md, [original]) == 0
    # an older copy (a checkout): 'added later' is gone and may be written again
    md.memory_shelf.write_bytes(raw)
    assert lifecycle.teach(md, "added later", T0_DT).added
    assert_agrees_with_the_shelves(md, T0_DT + HOUR)


def test_a_torn_last_line_is_not_indexed_until_it_is_complete(md: Memdir) -> None:
    torn = memory("half written")
    whole = encode_line(torn.to_line())
    with open(md.memory_shelf, "ab") as handle:
        handle.write(whole[:-10])
    assert idcache.open_cache(md).present([torn.id]) == set()
    assert lifecycle.add_memories(md, [torn]) == 1  # the torn tail went to the quarantine
    assert [q.read_bytes() for q in md.quarantine_dir.iterdir()] == [whole[:-10]]
    assert lifecycle.add_memories(md, [torn]) == 0
    assert_agrees_with_the_shelves(md, T0_DT)


def test_journal_turns_are_checked_through_the_cache(md: Memdir) -> None:
    turn = journal.new_turn(T0_DT, "user", "s1", "hello")
    assert journal.add_turns(md, [turn, turn]) == [(turn, True), (turn, False)]
    other = journal.new_turn(T0_DT, "user", "s1", "merged in")
    with open(journal.turns_path(md), "ab") as handle:
        handle.write(encode_line(other.to_line()))
    assert journal.add_turns(md, [other]) == [(other, False)]
    shutil.rmtree(md.cache_dir)
    assert journal.add_turns(md, [turn]) == [(turn, False)]
    assert len(journal.read_journal(md).turns) == 2


# --- lookups answer as the whole fold does ----------------------------------------------------


def test_an_ambiguous_prefix_lists_the_candidates(md: Memdir) -> None:
    ids = [lifecycle.observe(md, f"memory {n}", T0_DT, author="a").id for n in range(40)]
    shared = next(
        prefix for prefix in (i[:3] for i in ids) if sum(i.startswith(prefix) for i in ids) > 1
    )
    full = lifecycle.load_view(md, T0_DT)
    with pytest.raises(AmbiguousIdError) as expected:
        full.resolve(shared)
    with pytest.raises(AmbiguousIdError) as got:
        lifecycle.confirm(md, shared, T0_DT)
    assert str(got.value) == str(expected.value)
    for other in ids:
        if other.startswith(shared):
            assert other in str(got.value)
    with pytest.raises(NotFoundError):
        lifecycle.reject(md, "m-ffffffffffffffff0", "no such memory", T0_DT)
    bare = ids[0].removeprefix("m-")[:12]
    assert lifecycle.lookup(md, bare, T0_DT).id == ids[0]


def test_a_past_now_does_not_see_later_memories(md: Memdir) -> None:
    early = lifecycle.infer(md, "early guess", T0_DT).id
    late = lifecycle.infer(md, "late guess", T0_DT + 10 * HOUR).id
    with pytest.raises(NotFoundError):
        lifecycle.confirm(md, late, T0_DT + HOUR)
    assert lifecycle.confirm(md, early[:8], T0_DT + HOUR)[0] == early
    again = lifecycle.infer(md, "late guess", T0_DT + HOUR)  # not there yet at that time
    assert again.added and again.id != late


def test_a_key_is_decided_by_what_became_durable_last(md: Memdir) -> None:
    """Only the memories that could still be a key's newest durable one are read: an old
    inference confirmed late beats every later teaching, and a past `now` sees it otherwise."""
    versions = [lifecycle.teach(md, f"v{n}", T0_DT + n * HOUR, key="k").id for n in range(30)]
    guess = lifecycle.infer(md, "an early guess", T0_DT, key="k", ttl=timedelta(days=30)).id
    lifecycle.confirm(md, guess, T0_DT + 100 * HOUR)
    lifecycle.reject(md, versions[-1], "wrong", T0_DT + 31 * HOUR)
    for moment in (T0_DT + 50 * HOUR, T0_DT + 101 * HOUR, T0_DT + 10 * HOUR):
        full = lifecycle.load_view(md, moment)
        for memory_id in (versions[0], versions[10], versions[-2], versions[-1], guess):
            if memory_id in full.states:
                assert lifecycle.lookup(md, memory_id, moment).to_dict() == (
                    full.states[memory_id].to_dict()
                )
    assert lifecycle.lookup(md, versions[-2], T0_DT + 101 * HOUR).superseded_by == guess
    assert lifecycle.lookup(md, versions[-2], T0_DT + 50 * HOUR).status == "durable"
    assert len(lifecycle.view_of(md, [versions[0]], T0_DT + 101 * HOUR)) < 10


def test_the_briefing_view_holds_every_state_a_briefing_shows(md: Memdir) -> None:
    days = timedelta(days=1)
    now = T0_DT + 40 * days
    for n in range(30):
        lifecycle.teach(md, f"old teaching {n}", T0_DT + n * days)
        lifecycle.observe(md, f"old observation {n}", T0_DT + n * days, author="a")
    keyed = [lifecycle.teach(md, f"city v{n}", T0_DT + n * HOUR, key="city").id for n in range(40)]
    lifecycle.reject(md, keyed[-1], "moved back", now - days)  # v38 is the city again
    late_guess = lifecycle.infer(md, "city: a late guess", T0_DT, key="city").id
    lifecycle.confirm(md, late_guess, T0_DT + 20 * HOUR)  # durable long after it was written
    old_guess = lifecycle.infer(md, "an old guess", T0_DT + days).id
    lifecycle.confirm(md, old_guess, now - 2 * days)  # decided lately
    open_guess = lifecycle.infer(md, "an open guess", now - 2 * days, ttl=30 * days).id
    lifecycle.infer(md, "an expired guess", T0_DT + 2 * days, ttl=days)
    in_ring = lifecycle.teach(md, "pushed into the ring long ago", T0_DT).id
    lifecycle.record_recall(md, [in_ring], now - days)
    lifecycle.teach(md, "in the future", now + days)
    since = now - timedelta(days=14)
    recent = lifecycle.recent_view(md, now, since)
    full = lifecycle.load_view(md, now)
    shown = {
        state.id
        for state in full
        if state.created >= format_time(since)
        or any(event.at >= format_time(since) for event in state.events)
        or (state.memory is not None and state.memory.key and state.status == "durable")
        or state.status == "provisional"
        or state.id == in_ring
    }
    assert {keyed[38], old_guess, open_guess, in_ring} <= shown
    assert full.states[late_guess].superseded_by == keyed[38]
    assert len(shown) < len(full) / 3 and len(recent) < len(full) / 2  # the ring holds 30
    for memory_id in shown:
        assert recent.states[memory_id].to_dict() == full.states[memory_id].to_dict()


def test_boot_and_wake_are_what_the_whole_archive_and_journal_give(
    cli, md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The briefing view and the recent journal against the full fold and the full journal
    (put back in their place as the reference)."""
    days = timedelta(days=1)
    now = T0_DT + 40 * days
    for n in range(40):
        lifecycle.teach(md, f"teaching {n}", T0_DT + n * days, key="city" if n % 9 == 0 else None)
        lifecycle.observe(md, f"observation {n}", T0_DT + n * days + HOUR, author="a")
        lifecycle.infer(md, f"guess {n}", T0_DT + n * days, ttl=(n % 5 + 1) * days)
    lifecycle.confirm(md, lifecycle.infer(md, "old guess", T0_DT).id, now - days)
    lifecycle.record_recall(md, [lifecycle.teach(md, "long ago", T0_DT).id], now - days)
    turns = [
        journal.new_turn(
            T0_DT + n * days / 3,
            "user" if n % 2 else "assistant",
            f"s{n // 9}",
            f"turn {n} was a good day" if n % 4 else f"turn {n} was awful",
            secrecy="secret" if n == 99 else "public",
        )  # fmt: skip
        for n in range(100)
    ]
    journal.add_turns(md, turns)
    from memdir.usecases import documents

    def both(moment: datetime) -> tuple[str, str]:
        briefing = documents.gather(md, moment)
        return documents.boot_markdown(briefing), documents.wake(md, moment, 400, briefing).markdown

    moments = [now, now - 5 * days, T0_DT + 34 * days + 7 * HOUR, now + 30 * days]
    fast = [both(moment) for moment in moments]
    with monkeypatch.context() as patch:
        patch.setattr(documents, "recent_view", lambda memdir, moment, since:
                      lifecycle.load_view(memdir, moment))  # fmt: skip
        patch.setattr(journal, "read_recent", lambda memdir, moment, hours:
                      journal.read_journal(memdir, until=moment))  # fmt: skip
        reference = [both(moment) for moment in moments]
    assert fast == reference
    assert "teaching 36" in fast[0][0] and "guess 39" in fast[0][0]


def assert_journal_agrees(memdir: Memdir, now: datetime) -> None:
    """Windows read through the cache hold what the whole journal holds for them."""
    full = journal.read_journal(memdir, until=now)
    for hours in (1, 7, 100):
        since = now - timedelta(hours=hours)
        part = journal.read_journal(memdir, until=now, since=since)
        assert part.turns == [turn for turn in full.turns if turn.moment >= since]
        assert {d.id for d in part.digests} <= {d.id for d in full.digests}
    recent = journal.read_recent(memdir, now, 3)
    assert recent.turns[-1:] == full.turns[-1:]
    assert journal.raw_window(recent.turns, now, 6, 3) == journal.raw_window(full.turns, now, 6, 3)
    said = [turn for turn in full.turns if turn.role == "user" and turn.summarisable]
    if said:
        day = [turn for turn in full.turns if turn.moment >= said[-1].moment - 26 * HOUR]
        assert recent.turns[-len(day) :] == day


# --- the property: after any sequence of writes, the cache agrees with the fold ---------------

TEXTS = st.sampled_from(["coffee", "tea", "Lisbon", "Porto", "jazz", "piano"])


class CacheAgreesWithTheFold(RuleBasedStateMachine):
    """Writes, rewrites (forget, re-applied tombstones, dropped duplicates, forgotten turns),
    edits behind the cache's back and damage to the cache, in any order."""

    @initialize()
    def start(self) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="memdir-idcache-"))
        self.memdir, _ = init(self.scratch / "m", T0_DT)
        self.now = T0_DT
        self.ids: list[str] = []
        self.originals: dict[str, dict[str, Any]] = {}  # forgotten memories' lines
        self.turns: list[journal.Turn] = []
        self.replaced = False  # a file replaced, or the cache damaged, behind memdir's back

    def teardown(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def tick(self) -> datetime:
        self.now += timedelta(minutes=30)
        return self.now

    def pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(self.ids)) if self.ids else "m-0"

    @rule(text=TEXTS, key=st.sampled_from([None, "k1", "k2"]))
    def teach(self, text: str, key: str | None) -> None:
        self.ids.append(lifecycle.teach(self.memdir, text, self.tick(), key=key).id)

    @rule(text=TEXTS, key=st.sampled_from([None, "k1"]), hours=st.integers(1, 6))
    def infer(self, text: str, key: str | None, hours: int) -> None:
        written = lifecycle.infer(self.memdir, text, self.tick(), ttl=hours * HOUR, key=key)
        self.ids.append(written.id)

    @rule(data=st.data(), op=st.sampled_from(["confirm", "reject", "forget", "link"]))
    def decide(self, data: st.DataObject, op: str) -> None:
        given = self.pick(data)[: data.draw(st.integers(4, 18))]
        try:
            if op == "confirm":
                lifecycle.confirm(self.memdir, given, self.tick())
            elif op == "reject":
                lifecycle.reject(self.memdir, given, "wrong", self.tick())
            elif op == "forget":
                lines = {line["id"]: line for line in complete_lines(self.memdir)
                         if line["kind"] == "memory"}  # fmt: skip
                gone = lifecycle.forget(self.memdir, given, self.tick())
                if gone in lines:
                    self.originals[gone] = lines[gone]
            else:
                lifecycle.link(self.memdir, given, self.pick(data), "related", self.tick())
        except MemdirError:
            pass  # not found, ambiguous, not an inference…: the fold decided, as it would

    @rule()
    def expire(self) -> None:
        now = self.tick() + 3 * HOUR
        lifecycle.expire(self.memdir, now)
        swept = lifecycle.load_view(self.memdir, now)
        assert not [
            s.id
            for s in swept
            if s.status == "expired" and not any(e.op == "expire" for e in s.events)
        ]

    @rule(data=st.data())
    def add_again(self, data: st.DataObject) -> None:
        lines = [line for line in complete_lines(self.memdir) if line["kind"] == "memory"]
        if lines:
            line = data.draw(st.sampled_from(lines))
            assert lifecycle.add_memories(self.memdir, [Memory.from_line(line)]) == 0

    @rule(text=TEXTS, how=st.sampled_from(["append", "new file", "new file, line first"]))
    def merge_behind_the_back(self, text: str, how: str) -> None:
        """Lines from another clone: appended in place, or in a new file as git writes it
        (where a union merge may put the other side's lines first)."""
        merged = memory(f"{text} from elsewhere", self.tick(), key="k1", source="teaching",
                        author="user")  # fmt: skip
        for path in self.memdir.shelves():  # another clone's shelf had no torn tail
            shelf.quarantine_torn_tail(path, self.memdir.quarantine_dir)
        event = new_event(at=format_time(self.now), op="reject", target=self.ids[0]
                          if self.ids else merged.id, actor="user", reason="merged")  # fmt: skip
        if how != "append":
            self.replaced = True
            for path, line in ((self.memdir.memory_shelf, merged.to_line()),
                               (self.memdir.event_shelf, event.to_line())):  # fmt: skip
                old, new = path.read_bytes(), encode_line(line)
                temp = path.with_name("merge.tmp")
                temp.write_bytes(new + old if how.endswith("first") else old + new)
                os.replace(temp, path)
        else:
            append_behind_the_back(self.memdir.memory_shelf, merged)
            with open(self.memdir.event_shelf, "ab") as handle:
                handle.write(encode_line(event.to_line()))
        self.ids.append(merged.id)

    @rule(text=TEXTS, role=st.sampled_from(["user", "assistant"]), hours_ago=st.integers(0, 60),
          secret=st.booleans())  # fmt: skip
    def say(self, text: str, role: str, hours_ago: int, secret: bool) -> None:
        """A turn now, or an older one (an import)."""
        turn = journal.new_turn(self.tick() - hours_ago * HOUR, role, "s", text,
                                secrecy="secret" if secret else "public")  # fmt: skip
        assert journal.add_turns(self.memdir, [turn, turn])[1] == (turn, False)

    @rule(data=st.data())
    def merge_back_a_forgotten_memory(self, data: st.DataObject) -> None:
        """A clone that still had it sends a forgotten memory's line back: the next write
        takes the lock, which re-applies the tombstone (a rewrite)."""
        if self.originals:
            line = self.originals[data.draw(st.sampled_from(sorted(self.originals)))]
            append_behind_the_back(self.memdir.memory_shelf, Memory.from_line(line))
            lifecycle.teach(self.memdir, "written after the merge", self.tick())

    @rule(data=st.data())
    def merge_a_line_twice(self, data: st.DataObject) -> None:
        """Both clones appended the same line; sync drops the copy (a rewrite)."""
        from memdir.archive_format import tombstones

        for path in self.memdir.shelves():
            shelf.quarantine_torn_tail(path, self.memdir.quarantine_dir)
        shelves = [path for path in self.memdir.shelves() if path.stat().st_size]
        if shelves:
            path = data.draw(st.sampled_from(shelves))
            lines = path.read_bytes().splitlines(keepends=True)
            with open(path, "ab") as handle:
                handle.write(data.draw(st.sampled_from(lines)))
            with self.memdir.lock():
                tombstones.dedupe(self.memdir, path)

    @rule(text=TEXTS, forget=st.booleans(), data=st.data())
    def forget_a_turn(self, text: str, forget: bool, data: st.DataObject) -> None:
        """Turns written, then one forgotten (journal forget rewrites the journal file)."""
        turn = journal.new_turn(self.tick(), "user", "s", f"{text} {len(self.turns)}")
        journal.add_turns(self.memdir, [turn])
        self.turns.append(turn)
        if forget:
            chosen = data.draw(st.sampled_from(self.turns))
            with self.memdir.lock():
                journal.forget_turns(self.memdir, [chosen], self.tick())

    @rule()
    def tear_the_tail(self) -> None:
        with open(self.memdir.memory_shelf, "ab") as handle:
            handle.write(b'{"kind":"memory","id":"m-torn')

    @rule(how=st.sampled_from(["delete", "garbage", "drop rows"]))
    def damage_the_cache(self, how: str) -> None:
        self.replaced = True
        path = cache_path(self.memdir)
        if how == "delete":
            path.unlink(missing_ok=True)
        elif how == "garbage" and path.exists():
            path.write_bytes(b"not a database" * 100)
        elif how == "drop rows":
            # rows lost together with their file's mark, as a rolled-back commit leaves it
            db = idcache.open_cache(self.memdir).db
            for table in (*idcache.TABLES, "files"):
                db.execute(f"DELETE FROM {table}")

    @invariant()
    def agrees(self) -> None:
        if hasattr(self, "memdir"):
            if not self.replaced:  # memdir's own writes, rewrites included, were followed
                assert_followed(self.memdir)
            self.replaced = False
            assert_agrees_with_the_shelves(self.memdir, self.now)
            assert_journal_agrees(self.memdir, self.now)


CacheAgreesWithTheFold.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_the_cache_agrees_with_the_fold = CacheAgreesWithTheFold.TestCase


# --- writes read what they touch, not the archive ----------------------------------------------


def _lines_decoded_by_each_write(
    root: Path, size: int, monkeypatch: pytest.MonkeyPatch
) -> dict[str, int]:
    """How many shelf lines each write-path operation decodes on an archive of `size`
    memories whose caches are current (every line a write parses goes through
    shelf.decode_line or, in the cache's catch-up, shelf.decoded_lines)."""
    md, _ = init(root / f"archive-{size}", T0_DT)
    lifecycle.add_memories(md, (memory(f"archived memory {n}", T0_DT) for n in range(size)))
    now = T0_DT + HOUR
    guesses = [lifecycle.infer(md, f"a guess {n}", now).id for n in range(2)]
    lifecycle.teach(md, "a keyed fact", now, key="rent")
    idcache.open_cache(md).sync()
    decoded = {"count": 0}
    real, real_lines = shelf.decode_line, shelf.decoded_lines

    def counting(raw: bytes, where: str) -> dict[str, Any]:
        decoded["count"] += 1
        return real(raw, where)

    def counting_lines(blob: bytes) -> Iterator[tuple[int, Any]]:
        for line in real_lines(blob):
            decoded["count"] += 1
            yield line

    monkeypatch.setattr(shelf, "decode_line", counting)
    monkeypatch.setattr(shelf, "decoded_lines", counting_lines)
    operations = {
        "add_memories": lambda: lifecycle.add_memories(md, [memory("one new memory", now)]),
        "teach": lambda: lifecycle.teach(md, "a new teaching", now),
        "teach with a key": lambda: lifecycle.teach(md, "a new keyed fact", now, key="rent"),
        "confirm by prefix": lambda: lifecycle.confirm(md, guesses[0][:10], now),
        "reject by id": lambda: lifecycle.reject(md, guesses[1], "wrong", now),
        "link two prefixes": lambda: lifecycle.link(
            md, guesses[0][:10], guesses[1][:10], "related", now
        ),
        "journal turn": lambda: journal.add_turns(md, [journal.new_turn(now, "user", "s", "hi")]),
    }
    counts = {}
    for name, operation in operations.items():
        before = decoded["count"]
        operation()
        counts[name] = decoded["count"] - before
    monkeypatch.setattr(shelf, "decode_line", real)
    monkeypatch.setattr(shelf, "decoded_lines", real_lines)
    return counts


def test_a_write_reads_as_many_lines_on_a_large_archive_as_on_a_small_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The growth check of the archive benchmark, counted instead of timed: the lines a write
    decodes do not depend on the archive's size (timings are bench_archive's, in BENCHMARKS.md)."""
    small = _lines_decoded_by_each_write(tmp_path, 200, monkeypatch)
    large = _lines_decoded_by_each_write(tmp_path, 4000, monkeypatch)
    assert large == small
    assert all(count <= 10 for count in large.values()), large


# --- the benchmark ----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_archive_benchmark_runs_and_writes_do_not_grow(tmp_path: Path) -> None:
    # Two sizes, each measured: what this asserts does not depend on how large they are (the
    # benchmark's own runs go to 1,000,000), and building 20,000 took most of a minute.
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_archive", "--sizes", "1000,4000",
         "--runs", "3", "--workdir", str(tmp_path), "--result", str(tmp_path / "out.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures = json.loads((tmp_path / "out.json").read_text())["figures"]  # {row: {size: ms}}
    # every row measured at both sizes; that writes do not grow is counted, not timed
    # (test_a_write_reads_as_many_lines_on_a_large_archive_as_on_a_small_one)
    for name in ("add_memories, 1 new memory", "confirm by 8-character prefix"):
        assert set(figures[name]) == {"1,000", "4,000"}, figures[name]
        assert all(ms > 0 for ms in figures[name].values()), figures[name]


def test_the_first_index_of_a_clone_builds_the_id_cache_so_its_first_write_reads_no_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clone brings shelves and no `.memdir/`: its first `memdir index` (a rebuild, which
    reads every shelf) builds the id cache too, so the first write after it reads no line."""
    from memdir.cli.main import main

    source, _ = init(tmp_path / "source", T0_DT)
    for n in range(120):
        lifecycle.teach(source, f"cloned memory number {n}", T0_DT)
    clone = tmp_path / "clone"
    shutil.copytree(source.root, clone, ignore=shutil.ignore_patterns(".memdir"))
    md = Memdir.open(clone)
    assert not cache_path(md).exists()
    monkeypatch.setenv("MEMDIR_NOW", format_time(T0_DT))
    monkeypatch.setenv("MEMDIR_NO_SERVICE", "1")
    assert main(["--dir", str(clone), "index"]) == 0
    assert cache_path(md).exists()
    closed(md)  # the next write comes from another process
    assert idcache.open_cache(md).lines_read == 0
    assert not lifecycle.teach(md, "cloned memory number 7", T0_DT + HOUR).added
