"""`memdir people` and `memdir self` through the CLI (in the test process): the notes they write
(the same functions as the MCP tools), aliases resolved to speakers by recall, and wake's
People section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdir.archive_format import people
from memdir.archive_format.memdir import Memdir
from memdir.indexers.recall.query import note_aliases


@pytest.fixture
def cli(cli_in_process):
    """What the commands do and print is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


def test_people_and_self_from_the_command_line(cli, hashed: Memdir) -> None:
    root = str(hashed.root)
    minutes = iter(range(60))

    def ok(*args: str) -> str:
        # one minute apart: the notes' fold orders changes by time (then id)
        done = cli("--dir", root, *args, now=f"2026-05-01T09:{next(minutes):02d}:00Z")
        assert done.code == 0, done
        return done.out

    ok("people", "add", "Sam", "--alias", "user", "--set", "relation=me")
    ok("people", "add", "Ana", "--set", "relation=sister", "--set", "city=Lisbon")
    ok("people", "alias", "Sam", "Sammy", "Samuel")
    ok("people", "alias", "Sam", "Samuel", "--remove")
    listed = json.loads(ok("people", "list", "--json"))["people"]
    assert sorted(listed) == ["Ana", "Sam"]
    assert people.aliases_of(listed["Sam"]) == ["user", "Sammy"]
    assert listed["Ana"]["city"] == {"value": "Lisbon", "at": listed["Ana"]["city"]["at"],
                                     "by": "user"}  # fmt: skip
    assert "aliases:" in ok("people", "show", "Sam") and "Sammy" in ok("people", "list")
    ok("people", "forget", "Ana")
    assert list(people.read_people(hashed)) == ["Sam"]
    ok("self", "set", "name=Ada", "tone=warm, brief")
    ok("self", "set", "--remove", "tone")
    assert json.loads(ok("self", "show", "--json"))["fields"]["name"]["value"] == "Ada"
    assert "tone" not in people.read_self(hashed)
    for args, message in (
        (("people", "show", "Bob"), "no person named 'Bob'"),
        (("people", "alias", "Bob", "B"), "no person named 'Bob'"),
        (("people", "add", "Sam", "--set", "broken"), "is not FIELD=VALUE"),
        (("people", "alias", "Sam", "a,b"), "without commas"),
        (("self", "set"), "nothing to set"),
    ):
        done = cli("--dir", root, *args)
        assert done.code != 0 and message in done.err and "Traceback" not in done.err, done


def test_note_aliases_name_the_speaker_a_person_is() -> None:
    names = {"Sam": ["Sam", "user", "Sammy"], "Ana": ["Ana"], "Kim": ["Kim", "kim", "Jo"],
             "Two": ["Two", "user", "Ana"]}  # fmt: skip
    found = note_aliases(names, ["Ana", "kim", "user"])
    assert found["sam"] == "user" and found["sammy"] == "user"
    assert found["jo"] == "kim" and "ana" not in found  # Ana is a handle already
    assert "two" not in found  # two handles: not one speaker


def test_recall_resolves_a_name_from_the_people_notes_to_the_speaker(cli, hashed: Memdir) -> None:
    """The journal's speaker is `user`; the question says "Sam". Once the people notes say
    Sam is the user, the query names the speaker `user` and the speaker signal picks the
    user's own memory over Ana's similar one."""
    root = str(hashed.root)
    mine = cli("--dir", root, "teach", "I love hiking in the mountains").out.strip()
    anas = cli("--dir", root, "teach", "--by", "Ana", "I love hiking by the sea").out.strip()

    def analysed(query: str) -> tuple[dict, dict[str, dict]]:
        done = cli("--dir", root, "recall", query, "--json", "--explain", "--no-record")
        assert done.code == 0, done
        stages = {s["name"]: s for s in json.loads(done.out)["stages"]}
        scores = {row["id"]: row for row in stages["score"]["rows"]}
        return stages["query analysis"]["rows"][0], scores

    before, scored = analysed("what does Sam love doing?")
    assert before["speaker"] is None and scored[mine]["speaker"] == 0.0
    assert cli("--dir", root, "people", "add", "Sam", "--alias", "user").code == 0
    after, rescored = analysed("what does Sam love doing?")
    assert after["speaker"] == "user" and after["people"] == {"Sam": "user"}
    assert rescored[mine]["speaker"] == 1.0 and rescored[anas]["speaker"] == 0.0
    ana, scored = analysed("what does Ana love doing?")
    assert ana["speaker"] == "Ana" and scored[anas]["speaker"] == 1.0
    assert scored[mine]["speaker"] == 0.0


def test_wake_has_a_short_people_section_within_its_budget(cli, hashed: Memdir,
                                                            tmp_path: Path) -> None:  # fmt: skip
    root = str(hashed.root)
    for number in range(10):
        done = cli("--dir", root, "people", "add", f"Friend{number}", "--set",
                   f"note=met at the climbing gym in week {number}",
                   now=f"2026-05-01T08:{number:02d}:00Z")  # fmt: skip
        assert done.code == 0, done
    cli("--dir", root, "people", "add", "Sam", "--alias", "user", "--set", "relation=me")
    woken = json.loads(cli("--dir", root, "wake", "--json").out)
    section = woken["sections"]["people"]
    assert len(section["items"]) == 6 and section["omitted"] == 5
    assert (
        "## People" in woken["markdown"] and "- Sam (also user) — relation: me" in woken["markdown"]
    )
    assert "more: `memdir people list`" in woken["markdown"]
    for budget in (200, 80):
        tight = json.loads(cli("--dir", root, "wake", "--json", "--budget", str(budget)).out)
        assert tight["tokens"] <= budget
