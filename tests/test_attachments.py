"""Attachments (issue 30 item 7; docs/FORMAT.md section 10): files kept with a memory through
the CLI on a scratch memdir — content-addressed and stored once, size-limited, their text read
(PDF text, EXIF date and place, audio tags, plain text) and found by `search` and `recall`
through the real index; sealed ones git-ignored and never pushed, private ones shown as the
policy says; forget, export/restore and verify take them in."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest
from attachment_files import jpeg_with_exif, pdf_with_text, wav_with_tags
from clones import conflicts, git, hub_and_clones
from conftest import T0, clean_env, configure, memdir_main, shelf_lines, snapshot

from memdir.archive_format.memdir import Memdir

LATER = "2026-05-01T10:00:00Z"


def run(memdir: Memdir | Path, *args: str, code: int = 0, **kwargs):
    root = memdir.root if isinstance(memdir, Memdir) else memdir
    done = memdir_main("--dir", str(root), *args, **kwargs)
    assert done.code == code, str(done)
    assert "Traceback" not in done.err, str(done)
    return done


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / "files" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def content_files(memdir: Memdir, sealed: bool = False) -> list[Path]:
    place = memdir.root / "attachments" / ("sealed" if sealed else "")
    if not place.is_dir():
        return []
    return sorted(p for p in place.iterdir() if p.is_file() and not p.name.endswith(".json"))


def sidecars(memdir: Memdir, sealed: bool = False) -> list[dict]:
    place = memdir.root / "attachments" / ("sealed" if sealed else "")
    return [json.loads(p.read_text()) for p in sorted(place.glob("*.json"))]


def search_ids(memdir: Memdir, *args: str) -> list[str]:
    return [hit["id"] for hit in json.loads(run(memdir, "search", *args, "--json").out)]


def test_a_pdf_taught_with_a_memory_is_stored_by_its_hash_once_and_found_by_its_text(
    hashed: Memdir, tmp_path: Path
) -> None:
    data = pdf_with_text("the okapi invoice from Zanzibar")
    pdf = write(tmp_path, "Invoice March.pdf", data)
    memory = run(hashed, "teach", "the plumber's bill", "--attach", str(pdf)).out.strip()
    other = run(hashed, "teach", "the same bill again, filed", "--attach", str(pdf),
                "--attach", str(pdf)).out.strip()  # fmt: skip
    sha = hashlib.sha256(data).hexdigest()
    assert [p.name for p in content_files(hashed)] == [f"{sha}.pdf"]  # stored once
    assert (hashed.root / "attachments" / f"{sha}.pdf").read_bytes() == data
    (sidecar,) = sidecars(hashed)
    assert sidecar["id"] == f"a-{sha[:16]}" and sidecar["sha256"] == sha
    assert sidecar["bytes"] == len(data) and sidecar["media_type"] == "application/pdf"
    assert sidecar["name"] == "Invoice March.pdf"
    assert sidecar["extracted"]["method"] == "pypdf"
    assert "okapi invoice" in sidecar["extracted"]["text"]
    lines = {line["id"]: line for line in shelf_lines(hashed)}
    link = {"type": "attachment", "to": f"a-{sha[:16]}"}
    assert lines[memory]["links"] == [link] and lines[other]["links"] == [link]  # one link each

    # a word only the PDF holds finds the memory, in search and in recall
    assert set(search_ids(hashed, "okapi")) == {memory, other}
    recalled = json.loads(run(hashed, "recall", "okapi Zanzibar", "--no-record", "--json").out)
    assert {memory, other} <= {item["id"] for item in recalled["results"]}

    listed = json.loads(run(hashed, "attachments", memory[:10], "--json").out)
    (row,) = listed["attachments"]
    assert row["id"] == f"a-{sha[:16]}" and row["name"] == "Invoice March.pdf"
    assert row["metadata"] == {"pages": 1} and "okapi" in row["text"]
    shown = json.loads(run(hashed, "show", memory, "--json").out)
    assert shown["attachments"] == [{"id": row["id"], "name": "Invoice March.pdf",
                                     "media_type": "application/pdf", "bytes": len(data)}]  # fmt: skip
    assert "okapi" in run(hashed, "attachments", memory).out

    out = tmp_path / "copy.pdf"
    run(hashed, "attachment", "get", row["id"], "--out", str(out))
    assert out.read_bytes() == data
    run(hashed, "attachment", "get", row["id"], "--out", str(out), code=8)  # it exists now
    assert run(hashed, "verify").code == 0


def test_a_file_attached_later_is_a_link_event_the_index_picks_up(
    hashed: Memdir, tmp_path: Path
) -> None:
    memory = run(hashed, "teach", "our trip to the coast").out.strip()
    assert search_ids(hashed, "pelican") == []  # the index is built without it
    before = hashed.memory_shelf.read_bytes()
    notes = write(tmp_path, "diary.txt", b"we saw a pelican on the pier\n")
    attached = run(hashed, "attach", memory[:8], str(notes)).out.strip()
    assert attached.startswith("a-")
    assert hashed.memory_shelf.read_bytes() == before  # no line edited, none added there
    (event,) = [line for line in shelf_lines(hashed) if line.get("op") == "link"]
    assert (event["target"], event["to"], event["link_type"], event["actor"]) == (
        memory, attached, "attachment", "user")  # fmt: skip
    assert search_ids(hashed, "pelican") == [memory]  # the next update re-indexed the memory
    again = run(hashed, "attach", memory, str(notes))
    assert again.out.strip() == attached and "already has" in again.err
    assert len([line for line in shelf_lines(hashed) if line.get("op") == "link"]) == 1


def test_an_images_exif_date_and_place_and_audio_tags_are_read_and_searchable(
    hashed: Memdir, tmp_path: Path
) -> None:
    photo = write(tmp_path, "IMG_0042.JPG", jpeg_with_exif(
        "2023:07:14 10:22:01", (48, 51, 30.24), "N", (2, 17, 40.2), "E"))  # fmt: skip
    song = write(tmp_path, "track.wav", wav_with_tags("Quokka Serenade", "The Marsupials"))
    memory = run(hashed, "teach", "the evening in Paris", "--attach", str(photo),
                 "--attach", str(song)).out.strip()  # fmt: skip
    rows = json.loads(run(hashed, "attachments", memory, "--json").out)["attachments"]
    by_type = {row["media_type"]: row for row in rows}
    assert by_type["image/jpeg"]["metadata"]["date"] == "2023-07-14T10:22:01"
    assert by_type["image/jpeg"]["metadata"]["place"] == "48.85840, 2.29450"
    assert by_type["image/jpeg"]["extracted_by"] == "exifread"
    audio = by_type["audio/wav"]["metadata"]
    assert (audio["title"], audio["artist"], audio["duration_s"]) == (
        "Quokka Serenade", "The Marsupials", 1.0)  # fmt: skip
    assert search_ids(hashed, "Marsupials") == [memory]
    assert search_ids(hashed, "Serenade") == [memory]
    plain = run(hashed, "attachments", memory).out
    assert "48.85840, 2.29450" in plain and "Quokka Serenade" in plain


@pytest.mark.parametrize("command", ["teach", "attach"])
def test_a_file_over_the_size_limit_is_refused_and_nothing_is_written(
    hashed: Memdir, tmp_path: Path, command: str
) -> None:
    memdir = configure(hashed, attachments={"max_bytes": 1000})
    memory = run(memdir, "teach", "a small memory").out.strip()
    before = snapshot(memdir.root)
    big = write(tmp_path, "scan.pdf", b"%PDF-1.4\n" + b"x" * 2000)
    args = ("teach", "the big scan", "--attach") if command == "teach" else ("attach", memory)
    done = run(memdir, *args, str(big), code=8)
    assert "over the attachment limit of 1000 bytes" in done.err
    assert "attachments.max_bytes" in done.err and len(done.err.strip().splitlines()) == 2
    assert snapshot(memdir.root) == before
    assert content_files(memdir) == []


def test_a_missing_file_a_folder_or_an_unreadable_one_is_one_line_not_a_traceback(
    hashed: Memdir, tmp_path: Path
) -> None:
    memory = run(hashed, "teach", "a memory").out.strip()
    before = snapshot(hashed.root)
    missing = run(hashed, "attach", memory, str(tmp_path / "nope.pdf"), code=4)
    assert "no file" in missing.err
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert "is a directory" in run(hashed, "teach", "x", "--attach", str(folder), code=8).err
    unreadable = [Path("/proc/self/mem")] if Path("/proc/self/mem").exists() else []
    if os.geteuid() != 0:  # root reads a mode-000 file anyway
        locked = write(tmp_path, "locked.txt", b"secret")
        locked.chmod(0)
        unreadable.append(locked)
    for path in unreadable:
        assert "cannot read" in run(hashed, "attach", memory, str(path), code=8).err
    assert snapshot(hashed.root) == before


def test_a_library_missing_skips_the_reading_and_still_stores_the_file(
    hashed: Memdir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # `import pypdf` now fails
    pdf = write(tmp_path, "report.pdf", pdf_with_text("the narwhal report"))
    done = run(hashed, "teach", "the annual report", "--attach", str(pdf))
    assert "pypdf is not installed" in done.err and "stored" in done.err
    (sidecar,) = sidecars(hashed)
    assert "pypdf is not installed" in sidecar["skipped"] and "extracted" not in sidecar
    assert search_ids(hashed, "narwhal") == []
    assert search_ids(hashed, "report") == [done.out.strip()]
    monkeypatch.delitem(sys.modules, "pypdf")  # installed after all: attached again, it is read
    run(hashed, "attach", done.out.strip(), str(pdf))
    assert len(sidecars(hashed)) == 2
    run(hashed, "index", "--rebuild")
    assert search_ids(hashed, "narwhal") == [done.out.strip()]
    listed = json.loads(run(hashed, "attachments", done.out.strip(), "--json").out)
    assert listed["attachments"][0]["extracted_by"] == "pypdf"


def test_forget_removes_the_file_and_its_text_from_the_index_unless_another_memory_links_it(
    hashed: Memdir, tmp_path: Path
) -> None:
    shared = write(tmp_path, "shared.txt", b"the axolotl tank schedule\n")
    own = write(tmp_path, "own.txt", b"the capybara feeding notes\n")
    first = run(hashed, "teach", "zoo duties", "--attach", str(shared), "--attach", str(own))
    second = run(hashed, "teach", "tank duties", "--attach", str(shared))
    first_id, second_id = first.out.strip(), second.out.strip()
    assert search_ids(hashed, "capybara") == [first_id]
    assert len(content_files(hashed)) == 2
    run(hashed, "forget", first_id)
    names = [p.name for p in content_files(hashed)]
    assert names == [hashlib.sha256(shared.read_bytes()).hexdigest() + ".txt"]
    assert len(sidecars(hashed)) == 1
    assert search_ids(hashed, "capybara") == []
    assert search_ids(hashed, "axolotl") == [second_id]  # still linked by the other memory
    found = run(hashed, "recall", "capybara feeding", "--no-record", "--json").out
    assert first_id not in found
    assert run(hashed, "verify").code == 0
    run(hashed, "forget", second_id)
    assert content_files(hashed) == [] and sidecars(hashed) == []
    assert b"axolotl" not in b"".join(p.read_bytes() for p in hashed.root.rglob("*")
                                      if p.is_file() and ".git" not in p.parts)  # fmt: skip


def test_a_sealed_memorys_file_is_git_ignored_kept_out_of_search_and_never_pushed(
    tmp_path: Path,
) -> None:
    a, b = hub_and_clones(tmp_path)
    secret = write(tmp_path, "diagnosis.txt", b"the wombat diagnosis letter\n")
    plain = write(tmp_path, "menu.txt", b"the lemur cafe menu\n")
    sealed = memdir_main("--dir", str(a), "teach", "my results", "--visibility", "sealed",
                         "--attach", str(secret))  # fmt: skip
    assert sealed.code == 0, sealed
    memdir_main("--dir", str(a), "teach", "lunch place", "--attach", str(plain))
    stored = list((a / "attachments" / "sealed").iterdir())
    assert len(stored) == 2  # the file and its sidecar
    for path in stored:
        assert git(a, "check-ignore", "-q", str(path.relative_to(a)), check=False).returncode == 0
    assert memdir_main("--dir", str(a), "search", "wombat", "--json").out.strip() == "[]"
    listed = json.loads(memdir_main("--dir", str(a), "attachments", sealed.out.strip(),
                                    "--json").out)  # fmt: skip
    assert "wombat" not in json.dumps(listed) and listed["attachments"][0]["text"] == "[sealed]"
    got = memdir_main("--dir", str(a), "attachment", "get", listed["attachments"][0]["id"],
                      "--out", str(tmp_path / "out.txt"))  # fmt: skip
    assert got.code == 8 and "sealed" in got.err and not (tmp_path / "out.txt").exists()
    done = memdir_main("--dir", str(a), "sync", now=LATER)
    assert done.code == 0, done
    pushed = git(a, "ls-tree", "-r", "--name-only", "origin/main").stdout.split()
    assert not [name for name in pushed if name.startswith("attachments/sealed")]
    assert any(name.startswith("attachments/") and name.endswith(".txt") for name in pushed)
    assert memdir_main("--dir", str(b), "sync", now=LATER).code == 0
    assert not (b / "attachments" / "sealed").exists()
    assert b"wombat" not in b"".join(p.read_bytes() for p in b.rglob("*") if p.is_file())
    lunch = json.loads(memdir_main("--dir", str(b), "search", "lemur", "--json").out)
    assert len(lunch) == 1  # the other clone finds the normal one by its file's words
    assert memdir_main("--dir", str(b), "verify").code == 0


def test_two_clones_attaching_the_same_bytes_under_other_names_merge_without_conflict(
    tmp_path: Path,
) -> None:
    a, b = hub_and_clones(tmp_path)
    data = b"the tapir itinerary\n"
    for clone, name in ((a, "plan.txt"), (b, "itinerary.md")):
        path = write(tmp_path / clone.name, name, data)
        assert memdir_main("--dir", str(clone), "teach", f"trip from {name}",
                           "--attach", str(path)).code == 0  # fmt: skip
    for clone in (a, b, a):
        done = memdir_main("--dir", str(clone), "sync", now=LATER)
        assert done.code == 0, done
        assert conflicts(clone) == []
    for clone in (a, b):
        hits = json.loads(memdir_main("--dir", str(clone), "search", "tapir", "--json").out)
        assert len(hits) == 2
        assert memdir_main("--dir", str(clone), "verify").code == 0
    names = sorted(p.name for p in (a / "attachments").iterdir())
    assert len([n for n in names if n.count(".") == 1]) == 2  # plan.txt → .txt, itinerary.md → .md
    attributes = (a / ".gitattributes").read_text()
    assert "attachments/** binary" in attributes


def test_a_private_memorys_file_shows_only_where_private_text_does(
    hashed: Memdir, tmp_path: Path
) -> None:
    letter = write(tmp_path, "letter.txt", b"the pangolin letter from grandma\n")
    memory = run(hashed, "teach", "grandma's letter", "--visibility", "private",
                 "--attach", str(letter)).out.strip()  # fmt: skip
    assert search_ids(hashed, "pangolin") == []
    assert search_ids(hashed, "pangolin", "--include-private") == [memory]
    recalled = json.loads(run(hashed, "recall", "pangolin letter", "--no-record", "--json").out)
    assert memory not in [item["id"] for item in recalled["results"]]
    assert "pangolin" in run(hashed, "attachments", memory).out  # naming it is asking for it
    row = json.loads(run(hashed, "attachments", memory, "--json").out)["attachments"][0]
    out = tmp_path / "copy.txt"
    run(hashed, "attachment", "get", row["id"], "--out", str(out))
    assert out.read_bytes() == letter.read_bytes()


def test_export_and_restore_carry_the_files_and_the_restored_index_finds_them(
    hashed: Memdir, tmp_path: Path
) -> None:
    pdf = write(tmp_path, "lease.pdf", pdf_with_text("the gecko apartment lease"))
    secret = write(tmp_path, "key.txt", b"the iguana safe code\n")
    memory = run(hashed, "teach", "the lease", "--attach", str(pdf)).out.strip()
    run(hashed, "teach", "the safe", "--visibility", "sealed", "--attach", str(secret))
    out = tmp_path / "backup.tar.gz"
    run(hashed, "export", "--out", str(out))
    with tarfile.open(out) as archive:
        members = archive.getnames()
    assert len([m for m in members if m.startswith("attachments/") and m.endswith(".pdf")]) == 1
    assert len([m for m in members if m.startswith("attachments/sealed/")]) == 2  # export: all
    restored = tmp_path / "restored"
    done = memdir_main("restore", str(out), str(restored))
    assert done.code == 0, done
    assert sorted(p.name for p in (restored / "attachments").rglob("*")) == sorted(
        p.name for p in (hashed.root / "attachments").rglob("*")
    )
    hits = json.loads(memdir_main("--dir", str(restored), "search", "gecko", "--json").out)
    assert [hit["id"] for hit in hits] == [memory]


def test_verify_finds_a_tampered_file_and_a_missing_one(hashed: Memdir, tmp_path: Path) -> None:
    notes = write(tmp_path, "notes.txt", b"the dugong notes\n")
    memory = run(hashed, "teach", "notes", "--attach", str(notes)).out.strip()
    assert run(hashed, "verify").code == 0
    (stored,) = content_files(hashed)
    stored.write_bytes(b"the dugong notes, changed\n")
    found = run(hashed, "verify", code=1)
    assert "bytes do not match its name" in found.out + found.err
    stored.unlink()
    found = run(hashed, "verify", code=1)
    text = found.out + found.err
    assert f"{memory}: link to missing attachment a-" in text and "describes a file" in text


def test_the_assistant_attaches_as_it_links_and_cannot_make_a_teaching_by_attaching(
    hashed: Memdir, tmp_path: Path
) -> None:
    notes = write(tmp_path, "notes.txt", b"the ibis sighting\n")
    assistant = clean_env(MEMDIR_ACTOR="assistant")
    memory = run(hashed, "teach", "birds seen").out.strip()
    run(hashed, "attach", memory, str(notes), env=assistant, now=None)
    (event,) = [line for line in shelf_lines(hashed) if line.get("op") == "link"]
    assert event["actor"] == "assistant"
    guessed = run(hashed, "teach", "the user watches birds", "--attach", str(notes),
                  env=assistant, now=None).out.strip()  # fmt: skip
    line = next(line for line in shelf_lines(hashed) if line["id"] == guessed)
    assert line["source"] == "inference" and line["links"][0]["type"] == "attachment"


def test_the_python_api_attaches_and_lists_as_the_commands_do(
    hashed: Memdir, tmp_path: Path
) -> None:
    import memdir

    me = memdir.open(hashed.root, actor="user")
    written = me.teach("the garden plan", now=T0)
    plan = write(tmp_path, "plan.txt", b"the marmot burrow map\n")
    attached = me.attach(written.id, plan, now=T0)
    listed = me.attachments(written.id, now=T0)
    assert [row["id"] for row in listed["attachments"]] == [attached]
    assert listed["attachments"][0]["text"] == "the marmot burrow map"
    assert search_ids(hashed, "marmot") == [written.id]


@pytest.mark.parametrize("first", ["forgetter", "linker"])
def test_a_file_one_clone_forgot_stays_while_another_clones_memory_links_it(
    tmp_path: Path, first: str
) -> None:
    a, b = hub_and_clones(tmp_path)
    path = write(tmp_path, "map.txt", b"the okapi trail map\n")
    old = memdir_main("--dir", str(a), "teach", "the old trail", "--attach", str(path))
    for clone in (a, b):
        assert memdir_main("--dir", str(clone), "sync", now=LATER).code == 0
    assert memdir_main("--dir", str(b), "forget", old.out.strip()).code == 0  # b deletes it
    new = memdir_main("--dir", str(a), "teach", "the new trail", "--attach", str(path))
    order = (b, a, b, a) if first == "forgetter" else (a, b, a, b)
    for clone in order:
        done = memdir_main("--dir", str(clone), "sync", now="2026-05-01T11:00:00Z")
        assert done.code == 0, done
    for clone in (a, b):
        hits = json.loads(memdir_main("--dir", str(clone), "search", "okapi", "--json").out)
        assert [hit["id"] for hit in hits] == [new.out.strip()], clone
        checked = memdir_main("--dir", str(clone), "verify")
        assert checked.code == 0 and "missing attachment" not in checked.out + checked.err


def test_doctor_names_a_missing_reader_with_the_command_that_installs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memdir.archive_format.settings import Settings
    from memdir.usecases import doctor

    assert doctor.check_attach(Settings()).status == "ok"
    real = doctor._has
    monkeypatch.setattr(doctor, "_has", lambda module: module != "exifread" and real(module))
    found = doctor.check_attach(Settings())
    assert found.status == "note" and "exifread not installed" in found.detail
    assert found.fix is not None and "install" in found.fix and "exifread>=3" in found.fix


def test_the_text_kept_is_capped_and_links_to_attachments_are_checked(
    hashed: Memdir, tmp_path: Path
) -> None:
    long = write(tmp_path, "long.md", ("walrus " * 5000).encode())  # 35,000 characters
    memory = run(hashed, "teach", "a long note", "--attach", str(long)).out.strip()
    (sidecar,) = sidecars(hashed)
    assert sidecar["media_type"] == "text/markdown" and sidecar["extracted"]["truncated"] is True
    assert len(sidecar["extracted"]["text"]) == 20_000
    other = run(hashed, "teach", "another memory").out.strip()
    wrong_type = run(hashed, "link", other, sidecar["id"], "--type", "related", code=8)
    assert "--type attachment" in wrong_type.err
    run(hashed, "link", other, "a-0123456789abcdef", "--type", "attachment", code=4)
    run(hashed, "link", other, sidecar["id"], "--type", "attachment")  # a file it holds: fine
    assert set(search_ids(hashed, "walrus")) == {memory, other}


def test_verify_fix_removes_an_interrupted_attachment_write(hashed: Memdir, tmp_path: Path) -> None:
    notes = write(tmp_path, "notes.txt", b"the kiwi notes\n")
    run(hashed, "teach", "notes", "--attach", str(notes))
    temp = hashed.root / "attachments" / f".{'0' * 64}.txt.999999.abcd1234.tmp"
    temp.write_bytes(b"half a file")
    found = run(hashed, "verify")
    assert "temporary file of an interrupted write" in found.out + found.err
    run(hashed, "verify", "--fix")
    assert not temp.exists() and len(content_files(hashed)) == 1


def test_attaching_loads_no_heavy_module_and_a_reader_only_for_its_kind(
    md: Memdir, tmp_path: Path
) -> None:
    from test_cold_start import heavy_in, imported_modules

    notes = write(tmp_path, "notes.txt", b"the cold start notes\n")
    code, modules = imported_modules("--dir", str(md.root), "teach", "cold", "--attach",
                                     str(notes), cwd=md.root)  # fmt: skip
    assert code == 0 and "memdir.usecases.attachments" in modules
    assert heavy_in(modules) == []
    assert not {"pypdf", "exifread", "mutagen"} & {name.split(".")[0] for name in modules}
    pdf = write(tmp_path, "a.pdf", pdf_with_text("the cold pdf"))
    memory = json.loads(run(md, "list", "--json").out)[0]["id"]
    code, modules = imported_modules("--dir", str(md.root), "attach", memory, str(pdf),
                                     cwd=md.root)  # fmt: skip
    assert code == 0 and "pypdf" in modules and heavy_in(modules) == []
