"""Hardening (issue 19): no traceback for any input, nothing written outside the memdir, every
cache recoverable. A fuzz test through the read path, and one fault-injection test per item."""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from conftest import MEMDIR_BIN, T0_DT, Run, clean_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir.archive_format import journal, lifecycle, shelf
from memdir.archive_format.errors import ExitStatus, FormatError
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.validate import JOURNAL_KINDS, LINE_KINDS, line_is_valid, line_problems
from memdir.archive_format.verify import verify


@pytest.fixture
def cli(cli_in_process):
    """What the commands answer to bad input is the subject here, not processes: the CLI runs in
    this process (conftest.memdir_main)."""
    return cli_in_process


def one_line_error(done: Run, *needles: str) -> None:
    assert done.code not in (0, 1), done
    assert "Traceback" not in done.err and "internal error" not in done.err, done
    lines = done.err.rstrip("\n").splitlines()
    assert lines[0].startswith("memdir: error: "), done
    assert len(lines) <= 2, done
    for needle in needles:
        assert needle in done.err, (needle, done)


@pytest.fixture
def filled(hashed: Memdir) -> Memdir:
    """A memdir with a memory of every kind of line: teaching, inference, events, a recall, a
    tombstone, journal turns and a digest-free journal."""
    taught = lifecycle.teach(hashed, "I take my coffee black", T0_DT).id
    guess = lifecycle.infer(hashed, "The user likes jazz", T0_DT).id
    lifecycle.confirm(hashed, guess, T0_DT, evidence="yes")
    gone = lifecycle.teach(hashed, "a secret to forget", T0_DT).id
    lifecycle.forget(hashed, gone, T0_DT)
    lifecycle.record_recall(hashed, [taught], T0_DT, "user", "recall: coffee")
    journal.add_turns(hashed, [journal.new_turn(T0_DT, "user", "s1", "hello there")])
    return hashed


# --- 1. one validated read path ----------------------------------------------------------------
def _mutations() -> st.SearchStrategy[Any]:
    weird = st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
        st.text(max_size=5), st.lists(st.integers(), max_size=2), st.just({"a": {"b": 1}}),
        st.just("\ud800"), st.just("9999-12-31T23:59:59Z"), st.just("2026-02-30T00:00:00Z"),
    )  # fmt: skip
    return weird


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["memory", "event", "tombstone", "recall", "turn", "digest"]), st.data())
def test_the_fast_checker_agrees_with_the_explaining_validator(kind: str, data: Any) -> None:
    line = dict(VALID[kind])
    for _ in range(data.draw(st.integers(1, 3))):
        name = data.draw(st.sampled_from([*line, "meta", "links", "affect", "kind"]))
        if data.draw(st.booleans()):
            line[name] = data.draw(_mutations())
        else:
            line.pop(name, None)
    kinds = JOURNAL_KINDS if kind in JOURNAL_KINDS else LINE_KINDS
    assert line_is_valid(line, kinds) == (not line_problems(line, kinds))


VALID: dict[str, dict[str, Any]] = {
    "memory": {"kind": "memory", "id": "m-0123456789abcdef", "created": "2026-05-01T09:00:00Z",
               "text": "x", "source": "teaching", "author": "user", "store": "semantic",
               "importance": 5, "temporal": "persistent", "visibility": "normal",
               "links": [{"type": "supports", "to": "m-0123456789abcdef"}],
               "meta": {"confidence": 0.5}, "affect": {"valence": 0.1}},
    "event": {"kind": "event", "id": "e-0123456789abcdef", "at": "2026-05-01T09:00:00Z",
              "op": "confirm", "target": "m-0123456789abcdef", "actor": "user"},
    "tombstone": {"kind": "tombstone", "id": "m-0123456789abcdef",
                  "created": "2026-05-01T09:00:00Z", "forgotten": "2026-05-02T09:00:00Z"},
    "recall": {"kind": "recall", "id": "r-0123456789abcdef", "at": "2026-05-01T09:00:00Z",
               "memories": ["m-0123456789abcdef"], "actor": "user"},
    "turn": {"kind": "turn", "id": "t-0123456789abcdef", "at": "2026-05-01T09:00:00Z",
             "role": "user", "session": "s", "text": "hi", "visibility": "normal",
             "secrecy": "public", "channel": "cli"},
    "digest": {"kind": "digest", "id": "d-0123456789abcdef", "at": "2026-05-01T09:00:00Z",
               "turns": ["t-0123456789abcdef"]},
}  # fmt: skip


def test_valid_samples_are_valid() -> None:
    for kind, line in VALID.items():
        kinds = JOURNAL_KINDS if kind in JOURNAL_KINDS else LINE_KINDS
        assert line_is_valid(line, kinds) and not line_problems(line, kinds), kind


def _raw_mutation(data: Any, raw: bytes) -> bytes:
    """A line changed the way a hand edit, a bad merge or an attacker changes it."""
    choice = data.draw(st.integers(0, 5))
    if choice == 0:  # one field replaced by a value of another type
        line = json.loads(raw)
        line[data.draw(st.sampled_from(sorted(line)))] = data.draw(_mutations())
        return json.dumps(line).encode()
    if choice == 1:  # a field removed
        line = json.loads(raw)
        line.pop(data.draw(st.sampled_from(sorted(line))))
        return json.dumps(line).encode()
    if choice == 2:  # bytes cut off or flipped
        at = data.draw(st.integers(0, len(raw) - 1))
        return raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1 :]
    if choice == 3:  # deep nesting
        depth = data.draw(st.sampled_from([40, 5000]))
        return raw[:-1] + b',"meta":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
    if choice == 4:  # non-JSON numbers and escaped lone surrogates
        return raw.replace(b'"user"', data.draw(st.sampled_from([b"NaN", b'"\\udfff"', b"1e999"])))
    return raw[: data.draw(st.integers(1, len(raw)))]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_fuzzed_lines_never_break_a_reader(filled: Memdir, data: Any) -> None:
    """Every read command in-process, over a copy with one line of some file mutated: it answers
    (skipping that line), `verify` names the problem, and no file is rewritten."""
    from memdir.indexers.index import MemoryIndex
    from memdir.usecases.documents import gather

    root = Path(filled.root.parent / f"fuzz-{os.getpid()}")
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(filled.root, root)
    try:
        memdir = Memdir.open(root)
        files = [*memdir.shelves(), *journal.journal_files(memdir)]
        path = data.draw(st.sampled_from([p for p in files if p.stat().st_size]))
        lines = path.read_bytes().splitlines()
        number = data.draw(st.integers(0, len(lines) - 1))
        lines[number] = _raw_mutation(data, lines[number]).replace(b"\n", b" ")
        path.write_bytes(b"\n".join(lines) + b"\n")
        before = {p: p.read_bytes() for p in files}
        lifecycle.load_view(memdir, T0_DT)
        journal.read_journal(memdir)
        journal.read_journal(memdir, since=T0_DT)
        gather(memdir, T0_DT)
        verify(memdir)
        index = MemoryIndex(memdir)
        try:
            index.update()
            index.search("coffee")
        finally:
            index.close()
        assert {p: p.read_bytes() for p in files} == before
    finally:
        shutil.rmtree(root, ignore_errors=True)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_ODD_LINES = [b"", b" ", b"NaN", b'{"a":NaN}', b'{"a":"\\udfff"}', b'{"a":"\\u00e9"}', b' {"a":1}',
              b'{"a":1} ', b'{"a":1}{"b":2}', b'{"a":', b"}", b"[1]", b'{"a":1}\r', b'{"a":1e999}',
              b'{"a":"\xc3\xa9"}', b'{"a":"\xff"}', b'{"a":' * 40 + b"1" + b"}" * 40,
              b'{"a":[[[' + b"[" * 30 + b"]" * 33 + b"}", b'{"a":"1\t2"}', b'{"a":"' + b"9" * 5000 + b'"}',
              b'{"a":' + b"9" * 5000 + b"}"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.dictionaries(st.text(), _VALUES, max_size=4), st.booleans()).map(
                lambda made: json.dumps(made[0], ensure_ascii=made[1]).encode()
            ),
            st.sampled_from(_ODD_LINES),
            st.binary(max_size=20).map(lambda raw: raw.replace(b"\n", b"")),
        ),
        max_size=8,
    ),
    st.binary(max_size=6).map(lambda raw: raw.replace(b"\n", b"")),
)
def test_decoding_a_whole_shelf_at_once_gives_what_decode_line_gives(
    lines: list[bytes], tail: bytes
) -> None:
    """shelf.decoded_lines, which the id cache indexes whole shelves with, scans lines in place
    of decoding each: every line must come out as decode_line makes it, refused where it
    refuses, and a newline-less tail not at all."""

    def one(raw: bytes) -> Any:
        try:
            return shelf.decode_line(raw, "")
        except FormatError:
            return None

    blob = b"".join(line + b"\n" for line in lines) + tail
    assert list(shelf.decoded_lines(blob)) == [(len(line) + 1, one(line)) for line in lines]


def test_a_malformed_line_is_skipped_named_and_failed_by_verify(filled: Memdir, cli) -> None:
    with open(filled.memory_shelf, "ab") as handle:
        handle.write(b'{"kind":"memory","id":"m-1","meta":' + b"[" * 5000 + b"]" * 5000 + b"}\n")
    before = filled.memory_shelf.read_bytes()
    for command in (("list",), ("stats",), ("wake",), ("search", "coffee"), ("index",)):
        done = cli("--dir", str(filled.root), *command)
        assert done.code == 0 and "Traceback" not in done.err, done
    listed = cli("--dir", str(filled.root), "list")
    assert "coffee" in listed.out and "memories.jsonl:4: nested more than" in listed.err
    checked = cli("--dir", str(filled.root), "verify")
    assert checked.code == ExitStatus.PROBLEMS and "memories.jsonl:4" in checked.out
    taught = cli("--dir", str(filled.root), "teach", "appended after the bad line")
    assert taught.code == 0, taught
    after = filled.memory_shelf.read_bytes()
    assert after.startswith(before) and b"appended after the bad line" in after[len(before) :]


def test_shelf_read_names_the_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s.jsonl"
    good = json.dumps(VALID["event"])
    path.write_text(f'{good}\n{{"kind":"event","at":5}}\n{good}\n')
    assert [item.number for item in shelf.read(path)] == [1, 3]
    assert f"{path}:2: " in caplog.text
    with pytest.raises(FormatError, match="nested more than"):
        shelf.parse(b'{"kind":' + b"[" * 40 + b"]" * 40 + b"}", "x", LINE_KINDS)


def test_a_wrong_setting_fails_verify_and_is_one_line_elsewhere(filled: Memdir, cli) -> None:
    config = filled.root / "memdir.yaml"
    config.write_text(config.read_text().replace("embedder:", "embedder: hashing\n  old:", 1))
    checked = cli("--dir", str(filled.root), "verify")
    assert checked.code == ExitStatus.PROBLEMS and "settings.embedder" in checked.out, checked
    one_line_error(cli("--dir", str(filled.root), "index"), "settings.embedder")


@pytest.mark.parametrize(
    "args, needle",
    [(("infer", "a", "--ttl", "99999999999d"), "longer than"),
     (("--now", "9999-12-31T23:59:59Z", "infer", "a"), "outside the years"),
     (("--now", "0001-01-01T00:00:00Z", "recall", "a"), "outside the years")],
    ids=["ttl", "now-late", "now-early"],
)  # fmt: skip
def test_overflowing_times_are_one_line(
    filled: Memdir, cli, args: tuple[str, ...], needle: str
) -> None:
    before = filled.memory_shelf.read_bytes()
    one_line_error(cli("--dir", str(filled.root), *args, now=None), needle)
    assert filled.memory_shelf.read_bytes() == before


# --- 2. caches heal -----------------------------------------------------------------------------
def _damage(path: Path, how: str) -> None:
    if how == "random":
        path.write_bytes(os.urandom(4096))
    elif how == "half":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        with sqlite3.connect(path) as db:
            db.execute("DROP TABLE memories")


@pytest.mark.parametrize("how", ["random", "half", "dropped-table"])
@pytest.mark.parametrize("name", ["index/catalog.sqlite", "idcache.sqlite"])
def test_a_damaged_cache_is_rebuilt_with_a_notice(filled: Memdir, cli, how: str, name: str) -> None:
    assert cli("--dir", str(filled.root), "index").code == 0
    _damage(
        filled.cache_dir / name,
        how if name.startswith("index") or how != "dropped-table" else "random",
    )
    for command in (
        ("recall", "coffee", "--no-record"),
        ("index", "--rebuild"),
        ("search", "coffee"),
    ):
        done = cli("--dir", str(filled.root), *command)
        assert done.code == 0 and "Traceback" not in done.err, done
        assert "coffee" in done.out or command[0] == "index", done
    assert cli("--dir", str(filled.root), "verify").code == 0


# the files of a Tantivy segment: some are opened with the index, some by the first search
SEGMENT_FILES = ("term", "pos", "store", "idx", "fast", "fieldnorm")


@pytest.mark.parametrize("how", ["random", "empty", "delete"])
@pytest.mark.parametrize(
    "part", ["meta.json", ".managed.json", *(f"segment .{kind}" for kind in SEGMENT_FILES)]
)
def test_a_damaged_full_text_index_is_rebuilt(filled: Memdir, cli, part: str, how: str) -> None:
    """Both Tantivy indexes (memories and sessions): a meta file or a segment damaged, cut to
    nothing or deleted heals on the next command, with a notice and no traceback. (This
    memdir's sessions index holds no segment.)"""
    segment = part.startswith("segment")
    for folder in ("tantivy",) if segment else ("tantivy", "sessions"):
        assert cli("--dir", str(filled.root), "index").code == 0
        (directory,) = (filled.cache_dir / "index").glob(f"{folder}-*")
        path = sorted(directory.glob("*" + part[8:]))[0] if segment else directory / part
        if how == "delete":
            path.unlink()
        else:
            path.write_bytes(os.urandom(4096) if how == "random" else b"")
        for command in (("recall", "coffee", "--no-record"), ("search", "coffee")):
            done = cli("--dir", str(filled.root), *command)
            assert done.code == 0 and "Traceback" not in done.err, (folder, done)
            assert "coffee" in done.out, (folder, done)
    assert cli("--dir", str(filled.root), "verify").code == 0


def test_a_memory_table_pointing_past_the_vectors_is_rebuilt(filled: Memdir, cli) -> None:
    import numpy as np

    from memdir.indexers.memorytable import record_type

    assert cli("--dir", str(filled.root), "index").code == 0
    (table,) = (filled.cache_dir / "index").glob("memories-*.table")
    records = np.memmap(table, dtype=record_type(), mode="r+")
    records["row"][:] = 10**6  # every memory's vector row beyond the store's end
    records.flush()
    del records
    done = cli("--dir", str(filled.root), "recall", "coffee", "--no-record")
    assert done.code == 0 and "Traceback" not in done.err, done
    assert "coffee" in done.out and "damaged" in done.err, done


def test_a_full_disk_is_one_line_naming_the_file(filled: Memdir) -> None:
    """RLIMIT_FSIZE stands in for a full file system: a write past it fails with EFBIG."""
    size = filled.memory_shelf.stat().st_size
    before = filled.memory_shelf.read_bytes()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, size + 10))

    done = subprocess.run(
        [str(MEMDIR_BIN), "--dir", str(filled.root), "teach", "x" * 400],
        capture_output=True, text=True, env=clean_env(), preexec_fn=limit, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0 and "Traceback" not in done.stderr, done
    assert "memories.jsonl" in done.stderr and len(done.stderr.splitlines()) <= 2, done
    assert filled.memory_shelf.read_bytes() == before


# --- 3. nothing leaves the memdir ----------------------------------------------------------------
def test_a_symlinked_shelf_is_refused_and_the_outside_file_untouched(
    filled: Memdir, cli, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious\n")
    extra = filled.shelves_dir / "extra.jsonl"
    extra.symlink_to(outside)
    for command in (("teach", "x"), ("list",), ("verify",)):
        one_line_error(cli("--dir", str(filled.root), *command), "extra.jsonl", "symbolic link")
    assert outside.read_bytes() == b"precious\n"


def test_a_symlinked_lock_is_refused(filled: Memdir, cli, tmp_path: Path) -> None:
    outside = tmp_path / "victim"
    outside.write_bytes(b"keep me")
    (filled.cache_dir / "lock").unlink()
    (filled.cache_dir / "lock").symlink_to(outside)
    one_line_error(cli("--dir", str(filled.root), "teach", "x"), "lock", "symbolic link")
    assert outside.read_bytes() == b"keep me"


def test_a_link_to_a_path_like_id_is_refused(filled: Memdir, cli) -> None:
    taught = lifecycle.load_view(filled, T0_DT).live()[0].id
    before = filled.event_shelf.read_bytes()
    one_line_error(
        cli("--dir", str(filled.root), "link", taught, "t-../../etc/passwd"), "no journal turn"
    )
    one_line_error(
        cli("--dir", str(filled.root), "link", taught, "m-ffffffffffffffff"), "no memory"
    )
    assert filled.event_shelf.read_bytes() == before


def test_export_refuses_a_fifo_and_writes_stdout_for_dash(
    filled: Memdir, cli, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_line_error(
        cli("--dir", str(filled.root), "export", "--out", str(fifo)), "not a regular file"
    )
    assert fifo.is_fifo()
    done = subprocess.run([str(MEMDIR_BIN), "--dir", str(filled.root), "export", "--out", "-"],
                          capture_output=True, env=clean_env(), timeout=60)  # fmt: skip
    assert done.returncode == 0, done
    archive = tmp_path / "out.tar.gz"
    archive.write_bytes(done.stdout)
    restored = cli("restore", str(archive), str(tmp_path / "again"))
    assert restored.code == 0, restored
    assert (
        tmp_path / "again" / "shelves" / "memories.jsonl"
    ).read_bytes() == filled.memory_shelf.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "memory", "out.tar.gz", "pipe"]


# --- 4. integrity --------------------------------------------------------------------------------
def test_a_tampered_plain_export_restores_nothing(filled: Memdir, cli, tmp_path: Path) -> None:
    archive = tmp_path / "e.tar.gz"
    assert cli("--dir", str(filled.root), "export", "--out", str(archive)).code == 0
    # re-pack with one file altered and the manifest kept: only the digests can tell
    members: list[tuple[tarfile.TarInfo, bytes]] = []
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            body = tar.extractfile(member).read() if member.isfile() else b""  # type: ignore[union-attr]
            if member.name == "shelves/memories.jsonl":
                body = body.replace(b"black", b"white")
            members.append((member, body))
    assert members[-1][0].name == "MANIFEST.sha256"
    forged = tmp_path / "forged.tar.gz"
    with tarfile.open(forged, "w:gz") as tar:
        for member, body in members:
            tar.addfile(member, io.BytesIO(body))
    one_line_error(cli("restore", str(forged), str(tmp_path / "r")), "manifest")
    stripped = tmp_path / "stripped.tar.gz"  # what a damaged tar header silently does
    with tarfile.open(stripped, "w:gz") as tar:
        for member, body in members[:-1]:
            tar.addfile(member, io.BytesIO(body.replace(b"white", b"black")))
    one_line_error(cli("restore", str(stripped), str(tmp_path / "r")), "MANIFEST")
    stripped.unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.tar.gz", "forged.tar.gz", "memory"]
    flipped = bytearray(archive.read_bytes())
    flipped[len(flipped) // 2] ^= 0x40
    archive.write_bytes(bytes(flipped))
    done = cli("restore", str(archive), str(tmp_path / "r"))
    assert done.code not in (0, 1) and "Traceback" not in done.err, done
    assert not (tmp_path / "r").exists()


def test_an_export_header_demanding_huge_argon2_costs_is_refused_at_once() -> None:
    from memdir.usecases.sealing import Header, SealError

    header = Header.new()
    for field, value in (("time_cost", 16), ("memory_kib", 4 * 1024 * 1024)):
        from dataclasses import replace

        with pytest.raises(SealError, match="above memdir's maximum"):
            Header.unpack(replace(header, **{field: value}).pack())
    assert Header.unpack(header.pack()) == header


# --- 5. readers coordinate with compaction ------------------------------------------------------
def _index_against_forget(memdir: Memdir, rounds: int) -> None:
    ids = [lifecycle.teach(memdir, f"memory number {n} about tea", T0_DT).id for n in range(rounds)]
    script = (
        "import sys\nfrom pathlib import Path\nfrom memdir.archive_format.memdir import Memdir\n"
        "from memdir.indexers.index import MemoryIndex\n"
        f"for _ in range({rounds}):\n"
        f"    index = MemoryIndex(Memdir.open(Path(sys.argv[1]))); index.update(); index.close()\n"
    )
    indexer = subprocess.Popen([sys.executable, "-c", script, str(memdir.root)],
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    for memory_id in ids:
        lifecycle.forget(memdir, memory_id, T0_DT)
    _, err = indexer.communicate(timeout=600)
    assert indexer.returncode == 0 and "not valid JSON" not in err and "skipped" not in err, err


def test_index_and_forget_run_concurrently(hashed: Memdir) -> None:
    _index_against_forget(hashed, 12)


@pytest.mark.slow
def test_index_and_forget_run_concurrently_a_hundred_times(hashed: Memdir) -> None:
    _index_against_forget(hashed, 100)


# --- 6. leftovers --------------------------------------------------------------------------------
def test_verify_reports_leftovers_and_fix_removes_stale_temp_files(filled: Memdir, cli) -> None:
    dead = filled.shelves_dir / ".memories.jsonl.999999999.tmp"
    dead.write_bytes(b"half a line")
    live = filled.state_dir / f".ring.yaml.{os.getpid()}.abcdef12.tmp"
    live.write_bytes(b"being written")
    stray = filled.shelves_dir / "notes.txt"
    stray.write_text("mine")
    checked = cli("--dir", str(filled.root), "verify")
    assert ".memories.jsonl.999999999.tmp" in checked.out and "notes.txt" in checked.out, checked
    fixed = cli("--dir", str(filled.root), "verify", "--fix")
    assert fixed.code == 0, fixed
    assert not dead.exists() and live.exists() and stray.exists()


# --- 2b. a read-only memdir ----------------------------------------------------------------------
@pytest.fixture
def read_only(filled: Memdir, tmp_path: Path, cli) -> Any:
    """`filled`, indexed, bind-mounted read-only (needs root and mount; skipped otherwise:
    root ignores file modes, so chmod cannot stand in for it)."""
    assert cli("--dir", str(filled.root), "index").code == 0
    mounted = tmp_path / "ro"
    mounted.mkdir()
    binding = subprocess.run(
        ["mount", "--bind", str(filled.root), str(mounted)], capture_output=True
    )
    if binding.returncode != 0:
        pytest.skip("cannot bind-mount here")
    try:
        remount = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(mounted)], capture_output=True
        )
        if remount.returncode != 0:
            pytest.skip("cannot remount read-only here")
        yield mounted
    finally:
        subprocess.run(["umount", str(mounted)], capture_output=True)


@pytest.mark.process  # files a command in this process left open would keep the mount busy
def test_a_read_only_memdir_answers_or_says_why_in_one_line(read_only: Path, cli) -> None:
    for command in (("list",), ("similar", "coffee"), ("wake",), ("stats",), ("verify",),
                    ("search", "coffee"), ("recall", "coffee"), ("recall", "coffee", "--no-record")):  # fmt: skip
        done = cli("--dir", str(read_only), *command)
        assert done.code == 0 and "Traceback" not in done.err, done
    for command in (("similar", "coffee"), ("search", "coffee"), ("recall", "coffee")):
        assert "coffee" in cli("--dir", str(read_only), *command).out, command
    one_line_error(cli("--dir", str(read_only), "teach", "x"), "ead-only")


def test_an_escaped_lone_surrogate_in_an_id_is_skipped_by_every_reader(filled: Memdir) -> None:
    """A line that is JSON but not Unicode (`"\\ud800"` as an id or a target) is skipped by
    the id cache as by the shelf readers; SQLite never sees it (it cannot store it)."""
    from memdir.usecases.documents import gather

    root = filled.root.parent / "surrogate"
    shutil.copytree(filled.root, root)
    memdir = Memdir.open(root)
    for path in [*memdir.shelves(), *journal.journal_files(memdir)]:
        if path.stat().st_size:
            line = json.loads(path.read_bytes().splitlines()[0])
            line["id"] = line["target"] = "SURROGATE"
            raw = json.dumps(line).replace("SURROGATE", "\\ud800").encode()
            with path.open("ab") as handle:
                handle.write(raw + b"\n")
    lifecycle.load_view(memdir, T0_DT)
    journal.read_journal(memdir, since=T0_DT)
    gather(memdir, T0_DT)
    assert not verify(memdir).clean
