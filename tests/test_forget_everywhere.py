"""Forget reaches every backend and every clone (docs/FORMAT.md section 5 and "Forget after a
merge"): the PostgreSQL index loses the text in the forget command itself, after a plain
`git pull` the next command, a read included, removes the text a merge brought back, and so
does the next write through the library, whichever writer it is."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from clones import git, hub_and_clones
from conftest import T0, T0_DT, configure
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.memdir import Memdir, init
from memdir.archive_format.tombstones import writing
from memdir.cli.bench.safety.leftovers import postgres_rows_holding
from memdir.cli.main import main

LATER = "2026-05-01T10:00:00Z"
SECRET_WORDS = "Quillborne"  # a word no other memory holds
TEXT = f"My safe word is {SECRET_WORDS} and nobody may know it"
OTHERS = ("I drink my coffee black", "The dog hides under the bed during storms")


def run(root: Path, *args: str, now: str = T0) -> int:
    os.environ["MEMDIR_NOW"] = now
    try:
        return main(["--dir", str(root), *args])
    finally:
        del os.environ["MEMDIR_NOW"]


def test_forget_removes_the_text_from_the_postgres_index(tmp_path: Path, postgres_dsn: str) -> None:
    from memdir.indexers.postgres import memdir_schema

    memdir, _ = init(tmp_path / "memory", T0_DT)
    memdir = configure(
        memdir, embedder={"kind": "hashing"}, index={"backend": "postgres", "dsn": postgres_dsn}
    )
    for text in OTHERS:
        lifecycle.teach(memdir, text, T0_DT)
    secret = lifecycle.teach(memdir, TEXT, T0_DT)
    assert run(memdir.root, "index") == 0
    schema = memdir_schema(memdir)
    assert postgres_rows_holding(postgres_dsn, schema, SECRET_WORDS), "the test must see it"
    assert run(memdir.root, "forget", secret.id) == 0
    # the forget itself removed it: no later command ran
    assert postgres_rows_holding(postgres_dsn, schema, SECRET_WORDS) == {}
    assert postgres_rows_holding(postgres_dsn, schema, "coffee"), "the rest stays indexed"


def test_forget_with_the_database_down_says_the_text_is_still_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memdir, _ = init(tmp_path / "memory", T0_DT)
    memdir = configure(
        memdir,
        embedder={"kind": "hashing"},
        index={"backend": "postgres", "dsn": f"host={tmp_path / 'nowhere'} connect_timeout=2"},
    )
    secret = lifecycle.teach(memdir, TEXT, T0_DT)
    capsys.readouterr()
    assert run(memdir.root, "forget", secret.id) != 0
    error = capsys.readouterr().err
    assert "index database still holds the text" in error and "memdir index" in error
    assert "Traceback" not in error
    assert SECRET_WORDS not in (memdir.root / "shelves" / "memories.jsonl").read_text()


def ok(root: Path, *args: str, now: str = T0) -> None:
    assert run(root, *args, now=now) == 0, args


def plain_pull(clone: Path) -> None:
    """`git pull` as a user types it: no memdir command runs (hooks run if installed)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("MEMDIR", "MEMDIR_NOW")}
    done = subprocess.run(
        ["git", "-C", str(clone), "pull", "-q", "--no-rebase", "--no-edit"],
        env=environment, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def held_everywhere(clone: Path) -> str:
    """Every file a reader of this clone may show: shelves, journal, state, documents."""
    found = []
    for folder in ("shelves", "journal", "state", "documents"):
        for path in sorted((clone / folder).rglob("*")):
            if path.is_file():
                found.append(path.read_text(encoding="utf-8", errors="replace"))
    return "".join(found)


def forgotten_on_b_and_brought_back_to_a(tmp_path: Path) -> tuple[Path, Path, str]:
    """A memory forgotten on b; a, which still quoted it (a reject's reason) and had it in its
    ring and wake document, then runs a plain `git pull` without memdir's hook."""
    a, b = hub_and_clones(tmp_path)
    taught = lifecycle.teach(init(a, T0_DT)[0], TEXT, T0_DT).id
    ok(a, "wake")
    ok(a, "sync")
    ok(b, "sync")
    ok(b, "forget", taught)
    ok(b, "sync")
    ok(a, "reject", taught, "--reason", f"not {SECRET_WORDS}", now=LATER)
    git(a, "commit", "-q", "-am", "a's reject")
    for clone in (a, b):
        hook = Path(git(clone, "rev-parse", "--absolute-git-dir").stdout.strip())
        (hook / "hooks" / "post-merge").unlink(missing_ok=True)
    plain_pull(a)
    assert SECRET_WORDS in held_everywhere(a), "the merge must bring the text back"
    return a, b, taught


@pytest.mark.parametrize("read", [("list",), ("wake",), ("show", "--json"), ("recall", "safe")])
def test_a_read_after_a_plain_pull_removes_the_forgotten_text_first(
    tmp_path: Path, read: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    a, _, taught = forgotten_on_b_and_brought_back_to_a(tmp_path)
    capsys.readouterr()
    arguments = [*read[:1], taught, *read[1:]] if read[0] == "show" else list(read)
    code = run(a, *arguments, now=LATER)
    out = capsys.readouterr().out
    assert SECRET_WORDS not in out
    if read[0] != "show":  # a forgotten id is not found by show: an error, not the text
        assert code == 0
    assert SECRET_WORDS not in held_everywhere(a)


def test_sync_installs_the_post_merge_hook_and_a_plain_pull_then_cleans_up(
    tmp_path: Path,
) -> None:
    a, b = hub_and_clones(tmp_path)
    taught = lifecycle.teach(init(a, T0_DT)[0], TEXT, T0_DT).id
    ok(a, "sync")
    hook = Path(git(a, "rev-parse", "--absolute-git-dir").stdout.strip()) / "hooks" / "post-merge"
    assert hook.is_file() and os.access(hook, os.X_OK)
    ok(b, "sync")
    ok(b, "forget", taught)
    ok(b, "sync")
    ok(a, "reject", taught, "--reason", f"not {SECRET_WORDS}", now=LATER)
    git(a, "commit", "-q", "-am", "a's reject")
    plain_pull(a)
    # the hook ran: the files are clean before any memdir command reads them, and committed
    assert SECRET_WORDS not in held_everywhere(a)
    assert git(a, "status", "--porcelain").stdout == ""


def test_a_sync_that_fast_forwards_does_not_wait_on_the_post_merge_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git runs post-merge for sync's own `merge --no-commit` when it fast-forwards; a hook's
    `memdir sync --local` then returns at once (sync does its work) instead of waiting for the
    lock the running sync holds and failing."""
    import sys

    monkeypatch.setenv("MEMDIR_LOCK_TIMEOUT", "1")
    a, b = hub_and_clones(tmp_path)
    lifecycle.teach(init(a, T0_DT)[0], TEXT, T0_DT)
    ok(a, "sync")
    ok(b, "sync")
    lifecycle.teach(Memdir.open(a), OTHERS[0], T0_DT)
    ok(a, "sync")
    marker = tmp_path / "hook-exit-codes"
    own = Path(git(b, "rev-parse", "--absolute-git-dir").stdout.strip()) / "hooks" / "post-merge"
    own.write_text(  # the user's own hook, as memdir's warning tells them to write it
        f"#!/bin/sh\n{sys.executable} -m memdir --dir {b} sync --local\necho $? >> {marker}\n"
    )
    own.chmod(0o755)
    ok(b, "sync")
    assert OTHERS[0] in (b / "shelves" / "memories.jsonl").read_text()  # it fast-forwarded
    assert marker.read_text().split() == ["0"]  # the hook ran once, and its sync --local passed


def test_forget_takes_the_twin_another_clone_wrote_of_the_same_teaching(tmp_path: Path) -> None:
    """Two clones that taught the same sentence hold two memories (each write its own nonce);
    after a merge, forgetting one must leave the text in neither (docs/FORMAT.md section 5)."""
    a, b = hub_and_clones(tmp_path)
    first = lifecycle.teach(Memdir.open(a), TEXT, T0_DT).id
    twin = lifecycle.teach(Memdir.open(b), TEXT, T0_DT).id  # before either synced
    assert twin != first
    ok(a, "sync")
    ok(b, "sync")
    ok(a, "sync")
    view = lifecycle.load_view(Memdir.open(a), T0_DT)
    assert {first, twin} <= set(view.states)
    ok(a, "forget", first)
    view = lifecycle.load_view(Memdir.open(a), T0_DT)
    assert view.states[first].status == view.states[twin].status == "forgotten"
    assert SECRET_WORDS not in held_everywhere(a)


def test_init_installs_the_hook_in_a_repository_and_keeps_a_users_own(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for repo in (ours, theirs):
        repo.mkdir()
        git(repo, "init", "-q")
    own = theirs / ".git" / "hooks" / "post-merge"
    own.write_text("#!/bin/sh\necho mine\n")
    ok(ours, "init", str(ours))
    ok(theirs, "init", str(theirs))
    installed = ours / ".git" / "hooks" / "post-merge"
    assert "sync --local" in installed.read_text() and os.access(installed, os.X_OK)
    assert own.read_text() == "#!/bin/sh\necho mine\n"
    outside = tmp_path / "plain"
    ok(outside, "init", str(outside))
    assert not (outside / ".git").exists()


def _guessed_id(prefix: str, line: dict[str, object]) -> str:
    from memdir.archive_format.records import content_id

    return content_id(prefix, line)


def test_nothing_a_forget_leaves_confirms_a_guessed_text(tmp_path: Path) -> None:
    """The attacker holds the memdir after the forget and guesses the text exactly: hashing the
    guess with every field the tombstone and the redacted event still show (and the defaults)
    must not reproduce their ids. Without the nonce (a 1.0 line) it does: the test can fail."""
    from memdir.archive_format.records import Memory, new_memory

    memdir, _ = init(tmp_path / "memory", T0_DT)
    guessed_text = "Sam lives at 12 Elm Street"
    taught = lifecycle.teach(memdir, guessed_text, T0_DT).id
    guess = lifecycle.infer(memdir, "Sam moved away", T0_DT).id
    reason = "no, Sam still lives at 12 Elm Street"
    ok(memdir.root, "reject", guess, "--reason", reason)
    for memory_id in (taught, guess):
        ok(memdir.root, "forget", memory_id)
    lines = [json.loads(raw) for raw in (memdir.root / "shelves" / "memories.jsonl").open()]
    events = [json.loads(raw) for raw in (memdir.root / "shelves" / "events.jsonl").open()]
    (stone,) = [line for line in lines if line["kind"] == "tombstone" and line["id"] == taught]
    rebuilt = Memory(stone["id"], stone["created"], guessed_text, "teaching", "user", "semantic")
    guessed_line = rebuilt.to_line()  # a guess knows no nonce
    assert _guessed_id("m", guessed_line) != stone["id"]
    (reject,) = [e for e in events if e["op"] == "reject"]
    assert reject["redacted"] and "reason" not in reject
    replayed = {k: v for k, v in reject.items() if k not in ("redacted", "nonce")}
    assert _guessed_id("e", {**replayed, "reason": reason}) != reject["id"]
    # the same guess against a line written without a nonce (format 1.0) is confirmed
    old = new_memory(created=stone["created"], text=guessed_text, source="teaching",
                               author="user", store="semantic")  # fmt: skip
    assert _guessed_id("m", guessed_line) == old.id


def merged_back(memdir: Memdir) -> str:
    """A memory forgotten here, whose line a merge then brings back: git writes the shelf anew
    (a new file, as a union merge does) with the memory's line in it again. Its id."""
    taught = lifecycle.teach(memdir, TEXT, T0_DT).id
    [line] = [raw for raw in memdir.memory_shelf.read_bytes().splitlines(keepends=True)
              if taught.encode() in raw and b'"kind":"memory"' in raw]  # fmt: skip
    lifecycle.forget(memdir, taught, T0_DT + timedelta(hours=1))
    assert SECRET_WORDS not in memdir.memory_shelf.read_text()
    merged = memdir.root / "merged.tmp"
    merged.write_bytes(memdir.memory_shelf.read_bytes() + line)
    os.replace(merged, memdir.memory_shelf)
    assert SECRET_WORDS in memdir.memory_shelf.read_text(), "the merge must bring it back"
    return taught


LATER_DT = T0_DT + timedelta(hours=2)
WRITERS: dict[str, Callable[[Memdir, str], object]] = {
    "teach": lambda md, _: lifecycle.teach(md, OTHERS[0], LATER_DT),
    "infer": lambda md, _: lifecycle.infer(md, OTHERS[1], LATER_DT, timedelta(days=7)),
    "journal add": lambda md, _: journal.add_turns(
        md, [journal.new_turn(LATER_DT, "user", "s", "hello again")]
    ),
    "recall record": lambda md, _: lifecycle.record_recall(
        md, [lifecycle.teach(md, OTHERS[0], T0_DT).id], LATER_DT, "user", "recall: coffee"
    ),
    "expire": lambda md, _: lifecycle.expire(md, LATER_DT),
}


@pytest.mark.parametrize("writer", WRITERS)
def test_the_next_write_removes_the_forgotten_text_a_merge_brought_back(
    md: Memdir, writer: str
) -> None:
    """Whoever takes the writer lock first for a write (`tombstones.writing`) re-applies the
    tombstones: no write lands beside the forgotten text, however the writer is called."""
    taught = merged_back(md)
    WRITERS[writer](md, taught)
    assert SECRET_WORDS not in md.memory_shelf.read_text()
    assert taught in md.memory_shelf.read_text(), "its tombstone stays"


def test_the_writer_lock_itself_is_only_a_lock(md: Memdir) -> None:
    """`Memdir.lock()` takes the lock and does nothing else; `writing` is where the tombstones
    are re-applied, once, by the outermost holder."""
    merged_back(md)
    with md.lock():
        pass
    assert SECRET_WORDS in md.memory_shelf.read_text()
    with writing(md) as outer:
        assert outer.outermost and SECRET_WORDS not in md.memory_shelf.read_text()
        with writing(md) as inner:
            assert not inner.outermost


def test_every_writer_takes_the_writer_lock_through_writing() -> None:
    """No module takes the memdir's writer lock but through `tombstones.writing` (so none can
    write without re-applying the tombstones first): `writing` is the one place it is taken."""
    import re

    repo = Path(__file__).parents[1]
    sources = {path.resolve() for folder in ("archive_format", "indexers", "cli", "memdir")
               for path in (repo / folder).rglob("*.py")}  # fmt: skip
    taking = sorted(
        f"{path.relative_to(repo.resolve())}: {line.strip()}"
        for path in sources
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.search(r"\b(memdir|md|archive)\.lock\(", line)
    )
    assert taking == ["archive_format/tombstones.py: with memdir.lock(timeout) as lock:"]


# --- the scan for forgotten ids --------------------------------------------------------------

_TOMBSTONE_LINE = re.compile(rb'^\{"kind":"tombstone","id":"([^"]+)"', re.MULTILINE)
_FORGET_EVENT = re.compile(rb'"op":"forget","target":"([^"]+)"')

_pieces = st.sampled_from([
    b'{"kind":"tombstone","id":"', b'"op":"forget","target":"', b'"', b"\n", b"m-0a1b", b"x",
    b'{"kind":"memory","id":"m-1"}', b" ", b"\xff",
])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_pieces, max_size=24).map(b"".join))
def test_the_scan_for_forgotten_ids_finds_what_the_line_patterns_name(blob: bytes) -> None:
    """tombstones._forgotten_in searches for fixed strings; it names exactly the ids that the
    patterns of a tombstone line (at a line's start) and of a forget event name, on any bytes —
    torn lines, empty ids and ids that run to the end included."""
    from memdir.archive_format.tombstones import _forgotten_in

    expected = {m.decode("ascii", "replace") for m in _TOMBSTONE_LINE.findall(blob)}
    expected |= {m.decode("ascii", "replace") for m in _FORGET_EVENT.findall(blob)}
    assert _forgotten_in(blob) == expected


def _holds_line_or_quote(blob: bytes, memory_id: str) -> bool:
    """The rule, spelled out: the memory's line is there, or an event about it that carries a
    reason or evidence (what a redaction removes)."""
    needle = memory_id.encode("ascii", "replace")
    for line in blob.split(b"\n"):
        if b'{"kind":"memory","id":"' + needle + b'"' in line:
            return True
        if b'"target":"' + needle + b'"' in line and (
            b'"reason":' in line or b'"evidence":' in line
        ):
            return True
    return False


_line_pieces = st.sampled_from([
    b'{"kind":"memory","id":', b'"target":', b'"m-1"', b'"m-12"', b'"reason":', b'"evidence":',
    b",", b'"', b"m-1", b" ",
])  # fmt: skip
_lines = st.lists(st.lists(_line_pieces, max_size=6).map(b"".join), max_size=5).map(b"\n".join)


@settings(max_examples=500, deadline=None)
@given(_lines, st.sampled_from(["m-1", "m-12", "m-"]))
@example(b'{"to":"m-1"}\n{"kind":"memory","id":"m-1"}', "m-1")  # the second line that names it
@example(b'{"target":"m-1"}\n{"target":"m-1","reason":"r"}', "m-1")
def test_a_shelf_is_compacted_exactly_when_it_holds_the_forgotten_line_or_a_quote(
    blob: bytes, memory_id: str
) -> None:
    from memdir.archive_format.tombstones import _needs_compaction

    assert _needs_compaction(blob, memory_id) == _holds_line_or_quote(blob, memory_id)


def _mapped_copy(blob: bytes, tmp: Path) -> Any:
    """`blob` as a read-only mapping of a file (b"" for no bytes), as reapply reads a shelf."""
    import mmap

    if not blob:
        return b""
    tmp.write_bytes(blob)
    with open(tmp, "rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


@settings(max_examples=300, deadline=None)
@given(_lines, st.sampled_from(["m-1", "m-12"]), st.data())
def test_the_scans_read_a_mapping_from_a_line_start_as_the_bytes_after_it(
    tmp_path_factory: Any, blob: bytes, memory_id: str, data: st.DataObject
) -> None:
    """reapply searches a changed shelf where it is mapped, from where its last check ended (a
    line's start): the same ids and the same verdict as on the bytes from there on."""
    from memdir.archive_format.tombstones import _forgotten_in, _needs_compaction

    blob = blob.replace(b'"m-1"', b'{"kind":"tombstone","id":"m-1"}\n', 1)
    starts = [0] + [at + 1 for at, byte in enumerate(blob) if byte == 0x0A]
    begin = data.draw(st.sampled_from(starts))
    mapped = _mapped_copy(blob, tmp_path_factory.mktemp("scan") / "shelf")
    try:
        assert _forgotten_in(mapped, begin) == _forgotten_in(blob[begin:])
        assert _needs_compaction(mapped, memory_id, begin) == _holds_line_or_quote(
            blob[begin:], memory_id
        )
    finally:
        if not isinstance(mapped, bytes):
            mapped.close()


def _shelf_lines() -> Any:
    """The lines a shelf may hold around a forgotten memory: its line (and copies a merge left),
    its tombstone, events about it with and without a reason, other memories' lines, and a
    malformed line that names it."""
    from memdir.archive_format.records import Tombstone, encode_line, new_event, new_memory

    gone = new_memory(created=T0, text="the quokka password", source="teaching", author="user",
                      store="semantic")  # fmt: skip
    other = new_memory(created=T0, text="the quokka lives on Rottnest", source="teaching",
                       author="user", store="semantic")  # fmt: skip
    said = new_event(at=T0, op="reject", target=gone.id, actor="user", reason="the password")
    plain = new_event(at=T0, op="confirm", target=gone.id, actor="user")
    about_other = new_event(at=T0, op="reject", target=other.id, actor="user", reason="no")
    stone = Tombstone(gone.id, T0, LATER)
    lines = [encode_line(record.to_line()) for record in (gone, other, said, plain, about_other,
                                                          stone)]  # fmt: skip
    return gone.id, lines + [b'{"kind":"memory","id":"' + gone.id.encode() + b'", torn\n']


def _compacted_by_the_rule(lines: list[bytes], memory_id: str, now: str) -> list[bytes]:
    """What forget's compaction leaves, line by line as docs/FORMAT.md says: the memory's first
    line becomes its tombstone (none when the shelf has one), later copies go, events about it
    lose their reason and evidence, every other line (a malformed one too) stays as it was."""
    from memdir.archive_format.records import Event, Tombstone, encode_line

    stone = b'{"kind":"tombstone","id":"' + memory_id.encode() + b'"'
    tombstoned = any(line.startswith(stone) for line in lines)
    kept = []
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            kept.append(line)
            continue
        if data.get("kind") == "memory" and data.get("id") == memory_id:
            if not tombstoned:
                kept.append(encode_line(Tombstone(memory_id, data["created"], now).to_line()))
                tombstoned = True
            continue
        if data.get("kind") == "event" and data.get("target") == memory_id and "reason" in data:
            event = Event.from_line(data)
            kept.append(encode_line(replace(event, reason=None, redacted=True).to_line()))
            continue
        kept.append(line)
    return kept


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_compaction_rewrites_exactly_the_lines_the_rule_names(
    tmp_path_factory: Any, data: st.DataObject
) -> None:
    """tombstones.compact reads as lines only those naming the id and writes the rest of the
    shelf from its mapping: the shelf it leaves is the rule applied line by line, a torn tail
    kept after it, and one with nothing to change is not written at all."""
    from memdir.archive_format import tombstones
    from memdir.archive_format.clock import parse_time

    memory_id, pieces = _shelf_lines()
    lines = data.draw(st.lists(st.sampled_from(pieces), max_size=12))
    tail = data.draw(st.sampled_from([b"", b'{"kind":"memory","id":"' + memory_id.encode()]))
    memdir, _ = init(tmp_path_factory.mktemp("compact") / "memory", T0_DT)
    memdir.memory_shelf.write_bytes(b"".join(lines) + tail)
    before = memdir.memory_shelf.stat().st_ino
    expected = b"".join(_compacted_by_the_rule(lines, memory_id, LATER)) + tail
    with memdir.lock():  # (not `writing`: its re-application would compact the shelf first)
        written = tombstones.compact(memdir, memdir.memory_shelf, [memory_id], parse_time(LATER))
    assert memdir.memory_shelf.read_bytes() == expected
    assert written == (expected != b"".join(lines) + tail)
    assert written == (memdir.memory_shelf.stat().st_ino != before)


# --- after git wrote the shelves: what the re-application reads -------------------------------


def _memory_line(memdir: Memdir, memory_id: str) -> bytes:
    [line] = [raw for raw in memdir.memory_shelf.read_bytes().splitlines(keepends=True)
              if memory_id.encode() in raw and b'"kind":"memory"' in raw]  # fmt: skip
    return line


def _git_wrote(memdir: Memdir, shelf_bytes: bytes, run: int) -> None:
    """What a merge or pull leaves: the memory shelf written anew (another file) with these
    bytes, and git's index written again."""
    written = memdir.root / "written-by-git.tmp"
    written.write_bytes(shelf_bytes)
    os.replace(written, memdir.memory_shelf)
    (memdir.root / "pulled.txt").write_text(f"pull {run}\n")
    subprocess.run(["git", "-C", str(memdir.root), "add", "pulled.txt"], check=True)


def _searches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Each search of a shelf for a forgotten id: the id, and where in the shelf it began."""
    from memdir.archive_format import tombstones

    seen: list[tuple[str, int]] = []
    search = tombstones._needs_compaction

    def watched(blob: Any, memory_id: str, begin: int = 0) -> bool:
        seen.append((memory_id, begin))
        return search(blob, memory_id, begin)

    monkeypatch.setattr(tombstones, "_needs_compaction", watched)
    return seen


def test_after_a_pull_that_kept_the_old_bytes_first_only_the_pulled_lines_are_searched(
    md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forget long ago costs a pull nothing at a million memories: when git wrote a shelf anew
    with the old bytes first (docs/FORMAT.md, "Forget after a merge"), the ids forgotten before
    are searched for in the pulled lines only — and found there when a clone that still had the
    memory's line brings it back."""
    from memdir.archive_format.tombstones import reapply

    subprocess.run(["git", "init", "-q", str(md.root)], check=True)
    forgotten = lifecycle.teach(md, TEXT, T0_DT).id
    line = _memory_line(md, forgotten)
    for text in OTHERS:
        lifecycle.teach(md, text, T0_DT)
    lifecycle.forget(md, forgotten, T0_DT + timedelta(hours=1))
    reapply(md)
    before = md.memory_shelf.read_bytes()
    pulled = encode_memory_line("pulled from the other clone")
    seen = _searches(monkeypatch)
    _git_wrote(md, before + pulled, 1)
    assert reapply(md) == []
    assert (forgotten, len(before)) in seen and (forgotten, 0) not in seen
    assert md.memory_shelf.read_bytes() == before + pulled, "nothing to compact: not rewritten"

    seen.clear()
    grown = md.memory_shelf.read_bytes()
    _git_wrote(md, grown + line, 2)  # the other clone still had the memory's line
    assert reapply(md) == [forgotten]
    assert (forgotten, len(grown)) in seen and (forgotten, 0) not in seen
    assert SECRET_WORDS not in md.memory_shelf.read_text()


@pytest.mark.parametrize("where", ["first line", "middle", "before the old end"])
def test_a_shelf_git_changed_before_its_old_end_is_searched_whole(md: Memdir, where: str) -> None:
    """When git's shelf does not begin with the bytes the re-application last saw (a union
    merge placed the other side's lines among ours), the whole shelf is searched again."""
    from memdir.archive_format.tombstones import reapply

    subprocess.run(["git", "init", "-q", str(md.root)], check=True)
    forgotten = lifecycle.teach(md, TEXT, T0_DT).id
    line = _memory_line(md, forgotten)
    for number in range(40):
        lifecycle.teach(md, f"{OTHERS[number % 2]}, note {number}", T0_DT)
    lifecycle.forget(md, forgotten, T0_DT + timedelta(hours=1))
    reapply(md)
    lines = md.memory_shelf.read_bytes().splitlines(keepends=True)
    at = {"first line": 0, "middle": len(lines) // 2, "before the old end": len(lines) - 1}
    lines.insert(at[where], line)
    _git_wrote(md, b"".join(lines) + encode_memory_line("pulled"), 1)
    assert reapply(md) == [forgotten]
    assert SECRET_WORDS not in md.memory_shelf.read_text()


def encode_memory_line(text: str) -> bytes:
    from memdir.archive_format.records import encode_line, new_memory

    memory = new_memory(created=T0, text=text, source="teaching", author="user", store="semantic")
    return encode_line(memory.to_line())
