"""`memdir export` / `memdir restore`: round trips, encryption, tampering, unsafe archives."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import T0, T0_DT, Run, clean_env, configure

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir, init
from memdir.archive_format.records import content_id, encode_line
from memdir.indexers.recall import RecallOptions
from memdir.usecases.archive import RestoreError, canonical_files, export, restore
from memdir.usecases.recall import recall
from memdir.usecases.sealing import Header, SealedReader, SealedWriter, SealError

PASS = "correct horse battery staple"
QUERIES = ("what tea does the user like?", "where does Anouk live", "bicycle")


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Memdir:
    """A memdir with every kind of canonical file, and a built index cache (tests only read it)."""
    md, _ = init(tmp_path_factory.mktemp("export") / "memory", T0_DT)
    md = configure(md, embedder={"kind": "hashing"})
    tea = lifecycle.teach(md, "I drink green tea every morning", T0_DT, key="tea").id
    lifecycle.teach(md, "My sister Anouk lives in Ghent", T0_DT)
    guess = lifecycle.infer(md, "The user rides a blue bicycle to work", T0_DT).id
    wrong = lifecycle.infer(md, "The user dislikes tea", T0_DT).id
    later = T0_DT + timedelta(hours=1)
    lifecycle.confirm(md, guess, later, evidence="yes, every day")
    lifecycle.reject(md, wrong, "contradicted by the user", later)
    lifecycle.link(md, guess, tea, "related", later)
    secret = lifecycle.teach(md, "my PIN is 4321", T0_DT).id
    lifecycle.forget(md, secret, later)
    turn = {"kind": "turn", "at": T0, "role": "user", "session": "s1", "text": "hello",
            "visibility": "normal", "secrecy": "public", "channel": "cli"}  # fmt: skip
    (md.journal_dir / "turns.jsonl").write_bytes(encode_line({"id": content_id("t", turn), **turn}))
    (md.documents_dir / "boot.md").write_text("# boot\n")
    (md.shelves_dir / ".memories.jsonl.123.tmp").write_text("half a rewrite")
    recall(md, "tea", later, RecallOptions(), record=True)  # builds .memdir/ and a recall line
    assert (md.cache_dir / "index").is_dir()
    return md


def canonical_bytes(root: Path) -> dict[str, bytes]:
    memdir = Memdir.open(root)
    return {str(path): (root / path).read_bytes() for path in canonical_files(memdir)}


def recalled(memdir: Memdir) -> list[list[tuple[str, float, str]]]:
    now = T0_DT + timedelta(days=1)
    found = []
    for query in QUERIES:
        result = recall(memdir, query, now, RecallOptions(), record=False)
        found.append([(c.id, round(c.score, 6), c.status) for c in result.results])
    return found


def test_round_trip_gives_the_same_files_a_clean_verify_and_the_same_recall(
    full: Memdir, tmp_path: Path
) -> None:
    out = tmp_path / "backup" / "memory.tar.gz"
    report = export(full, out)
    assert report.files == len(canonical_files(full)) and not report.encrypted
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert "memdir.yaml" in names and "shelves/memories.jsonl" in names
    assert "journal/turns.jsonl" in names and "documents/boot.md" in names
    assert not [name for name in names if ".memdir" in name or name.endswith(".tmp")]
    assert oct(out.stat().st_mode & 0o777) == "0o600"

    restored = restore(out, tmp_path / "restored")
    assert restored.verify.clean, restored.verify.problems
    assert canonical_bytes(restored.root) == canonical_bytes(full.root)
    assert not (restored.root / ".memdir").exists()
    assert recalled(Memdir.open(restored.root)) == recalled(full)


def test_encrypted_round_trip_through_the_cli(
    full: Memdir, tmp_path: Path, cli: Callable[..., Run]
) -> None:
    out = tmp_path / "memory.tar.gz.sealed"
    env = clean_env(MEMDIR_PASSPHRASE=PASS)
    done = cli("--dir", str(full.root), "export", "--out", str(out), "--encrypt", env=env)
    assert done.code == 0, done
    assert done.out.strip() == str(out)
    sealed = out.read_bytes()
    assert sealed.startswith(b"MEMDIR\x00X\x01")
    assert b"Anouk" not in sealed and b"shelves" not in sealed

    done = cli("restore", str(out), str(tmp_path / "back"), env=env)
    assert done.code == 0, done
    assert canonical_bytes(tmp_path / "back") == canonical_bytes(full.root)
    assert "0 problems" in done.err


def test_wrong_passphrase_is_one_clear_line_and_writes_nothing(
    full: Memdir, tmp_path: Path, cli: Callable[..., Run]
) -> None:
    out = tmp_path / "memory.sealed"
    export(full, out, PASS)
    before = sorted(os.listdir(tmp_path))
    done = cli("restore", str(out), str(tmp_path / "back"), env=clean_env(MEMDIR_PASSPHRASE="no"))
    assert done.code == 8
    assert done.err.splitlines()[0] == (
        "memdir: error: cannot decrypt the export: wrong passphrase, or the file was changed"
    )
    assert "Traceback" not in done.err
    assert sorted(os.listdir(tmp_path)) == before  # no target, no staging directory left

    done = cli("restore", str(out), str(tmp_path / "back"), env=clean_env())
    assert done.code == 8 and "MEMDIR_PASSPHRASE" in done.err  # no terminal, no variable


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def test_tampering_anywhere_is_detected_and_nothing_is_written(
    full: Memdir, tmp_path: Path
) -> None:
    out = tmp_path / "memory.sealed"
    export(full, out, PASS)
    good = out.read_bytes()
    header = len(Header.new().pack())
    variants = {
        "ciphertext": flip(good, header + 40),
        "tag": flip(good, len(good) - 1),
        "salt": flip(good, 22),
        "truncated": good[:-5],
        "extended": good + b"\x00" * 32,
    }
    for name, data in variants.items():
        tampered = tmp_path / f"{name}.sealed"
        tampered.write_bytes(data)
        with pytest.raises(SealError):
            restore(tampered, tmp_path / f"out-{name}", PASS)
        assert not (tmp_path / f"out-{name}").exists(), name
    assert [p.name for p in tmp_path.iterdir() if ".restore-" in p.name] == []


def test_chunks_cannot_be_dropped_reordered_or_cut_at_a_boundary() -> None:
    """With tiny chunks (the header carries the chunk size and the Argon2 cost)."""
    header = Header(time_cost=1, memory_kib=64, lanes=1, salt=b"s" * 16,
                    nonce_prefix=b"n" * 7, chunk=64)  # fmt: skip
    payload = bytes(range(256)) * 3  # 12 chunks of 64 bytes
    sink = io.BytesIO()
    writer = SealedWriter(sink, "pw", header)
    writer.write(payload)
    writer.close()
    data = sink.getvalue()
    size, head = 64 + 16, len(header.pack())
    chunks = [data[head + i : head + i + size] for i in range(0, len(data) - head, size)]
    assert len(chunks) == 12

    def read_all(blob: bytes) -> bytes:
        reader = SealedReader(io.BytesIO(blob), "pw")
        result = reader.read()
        reader.verify_to_end()
        return result

    assert read_all(data) == payload
    prefix = data[:head]
    for broken in (
        prefix + b"".join(chunks[:6]),  # cut at a chunk boundary
        prefix + b"".join(chunks[:3] + chunks[4:]),  # one dropped
        prefix + b"".join([chunks[1], chunks[0], *chunks[2:]]),  # two swapped
    ):
        with pytest.raises(SealError):
            read_all(broken)
    with pytest.raises(SealError, match="wrong passphrase"):
        SealedReader(io.BytesIO(data), "PW").read()


def evil_archive(path: Path, name: str, kind: bytes = tarfile.REGTYPE) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        config = tarfile.TarInfo("memdir.yaml")
        body = b'format: "1.0"\nid: x\ncreated: "2026-05-01T09:00:00Z"\n'
        config.size = len(body)
        tar.addfile(config, io.BytesIO(body))
        member = tarfile.TarInfo(name)
        member.type = kind
        if kind == tarfile.SYMTYPE:
            member.linkname = "/etc/passwd"
            tar.addfile(member)
        else:
            member.size = 4
            tar.addfile(member, io.BytesIO(b"evil"))
    return path


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("../escaped", tarfile.REGTYPE),
        ("shelves/../../escaped", tarfile.REGTYPE),
        ("/tmp/escaped-absolute", tarfile.REGTYPE),
        ("shelves/link.jsonl", tarfile.SYMTYPE),
        (".memdir/index/catalog.sqlite", tarfile.REGTYPE),
        ("bin/run.sh", tarfile.REGTYPE),
    ],
    ids=["dotdot", "nested-dotdot", "absolute", "symlink", "cache", "unknown"],
)
def test_unsafe_archives_are_refused_without_writing(
    tmp_path: Path, name: str, kind: bytes
) -> None:
    archive = evil_archive(tmp_path / "evil.tar.gz", name, kind)
    with pytest.raises(RestoreError, match="nothing was restored"):
        restore(archive, tmp_path / "target" / "memory")
    assert not (tmp_path / "target" / "memory").exists()
    assert not (tmp_path / "escaped").exists() and not Path("/tmp/escaped-absolute").exists()
    assert list((tmp_path / "target").iterdir()) == []


def test_restore_refuses_a_non_empty_target_and_a_non_export(full: Memdir, tmp_path: Path) -> None:
    out = tmp_path / "memory.tar.gz"
    export(full, out)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    with pytest.raises(Exception, match="not empty"):
        restore(out, occupied)
    assert os.listdir(occupied) == ["keep.txt"]
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"this is not gzip at all")
    with pytest.raises(RestoreError, match="damaged or not a memdir export"):
        restore(junk, tmp_path / "fresh")
    with pytest.raises(Exception, match="inside the memdir"):
        export(full, full.documents_dir / "self.tar.gz")
