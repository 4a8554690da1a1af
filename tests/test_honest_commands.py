"""Exit codes that tell the truth: a stored memory is reported as stored even when a follow-up
step fails; identical events are appended once; verify flags duplicate ids and self-links."""

from __future__ import annotations

import json

import pytest
from conftest import T0, T0_DT, shelf_lines

from memdir.archive_format import lifecycle
from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import content_id, encode_line


@pytest.fixture
def cli(cli_in_process):
    """What the commands do and print is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


def in_dir(md: Memdir, *args: str) -> tuple[str, ...]:
    return ("--dir", str(md.root), *args)


def test_teach_with_a_broken_ring_exits_0_prints_the_id_and_warns(cli, md: Memdir) -> None:
    (md.state_dir / "ring.yaml").write_text("slots: [\n")
    done = cli(*in_dir(md, "teach", "hello"))
    assert done.code == 0, done
    memory_id = done.out.strip()
    assert memory_id.startswith("m-"), done
    assert "warning: the console ring skipped" in done.err and "ring.yaml" in done.err, done
    assert "Traceback" not in done.err
    # a script that retries gets the same id back, not a duplicate line
    again = cli(*in_dir(md, "teach", "hello"))
    assert again.code == 0 and again.out.strip() == memory_id, again
    memories = [line for line in shelf_lines(md) if line["kind"] == "memory"]
    assert [line["id"] for line in memories] == [memory_id]
    # the broken ring was left for the user to look at, not rewritten
    assert (md.state_dir / "ring.yaml").read_text() == "slots: [\n"


def test_confirm_with_a_broken_ring_still_confirms(cli, md: Memdir) -> None:
    guess = lifecycle.infer(md, "The user likes jazz", T0_DT).id
    (md.state_dir / "ring.yaml").write_text("slots: [\n")
    done = cli(*in_dir(md, "confirm", guess))
    assert done.code == 0 and done.out.strip() == guess, done
    assert "warning" in done.err
    shown = cli(*in_dir(md, "show", guess, "--json"))
    assert json.loads(shown.out)["status"] == "durable"


def test_journal_write_with_an_unrenderable_boot_still_stores_the_entry(cli, md: Memdir) -> None:
    (md.state_dir / "ring.yaml").write_text("slots: [\n")  # boot reads the ring
    done = cli(*in_dir(md, "journal", "write", "A good day of work."))
    assert done.code == 0, done
    assert "boot refresh skipped" in done.err, done


def test_the_same_link_in_the_same_second_is_appended_once(cli, md: Memdir) -> None:
    first = lifecycle.teach(md, "hello", T0_DT).id
    second = lifecycle.teach(md, "world", T0_DT).id
    runs = [cli(*in_dir(md, "link", first, second, "--type", "supports")) for _ in range(2)]
    assert all(run.code == 0 for run in runs), runs
    assert runs[0].out == runs[1].out
    links = [line for line in shelf_lines(md) if line["kind"] == "event"]
    assert len(links) == 1 and links[0]["id"] == runs[0].out.strip()
    # a link a second later is another event
    later = cli(
        *in_dir(md, "link", first, second, "--type", "supports"), now="2026-05-01T09:00:01Z"
    )
    assert later.code == 0 and later.out != runs[0].out
    assert len([line for line in shelf_lines(md) if line["kind"] == "event"]) == 2


def test_add_links_skips_links_already_on_the_shelf(md: Memdir) -> None:
    first = lifecycle.teach(md, "hello", T0_DT).id
    second = lifecycle.teach(md, "world", T0_DT).id
    for _ in range(2):
        lifecycle.add_links(md, [(first, second, "related")], T0_DT)
    assert len([line for line in shelf_lines(md) if line["kind"] == "event"]) == 1


def test_link_refuses_a_self_link(cli, md: Memdir) -> None:
    memory_id = lifecycle.teach(md, "hello", T0_DT).id
    done = cli(*in_dir(md, "link", memory_id, memory_id[:8]))
    assert done.code == ExitStatus.BAD_INPUT, done
    assert "cannot link to itself" in done.err and "Traceback" not in done.err
    assert not [line for line in shelf_lines(md) if line["kind"] == "event"]


def test_verify_reports_duplicate_ids_and_self_links(cli, md: Memdir) -> None:
    memory_id = lifecycle.teach(md, "hello", T0_DT).id
    line = md.memory_shelf.read_bytes()
    with open(md.memory_shelf, "ab") as handle:
        handle.write(line)  # the same line twice, as a union merge can leave it
    clean = cli(*in_dir(md, "verify"))
    assert clean.code == 0, clean  # identical copies count once: a warning, not a failure
    assert f"{memory_id} appears 2 times (memories.jsonl:1, memories.jsonl:2)" in clean.out
    self_link = {
        "kind": "event", "id": "", "at": T0, "op": "link", "target": memory_id, "actor": "user",
        "to": memory_id, "link_type": "related",
    }  # fmt: skip
    self_link["id"] = content_id("e", self_link)
    with open(md.event_shelf, "ab") as handle:
        handle.write(encode_line(self_link))
    broken = cli(*in_dir(md, "verify"))
    assert broken.code == ExitStatus.PROBLEMS, broken
    assert f"problem: events.jsonl:1: {memory_id} links to itself" in broken.out, broken
