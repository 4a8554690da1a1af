"""Every write from an agent's shell carries the assistant as its actor (issue 32, item 2):
link, people, self, journal write, --by and --now, run in-process through `cli.main.main`
with the environment an agent harness gives its shell."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import shelf_lines

from memdir.archive_format import lifecycle, people
from memdir.archive_format.memdir import Memdir

AGENT = {"CLAUDECODE": "1"}


def run(memdir: Memdir, monkeypatch: pytest.MonkeyPatch, *args: str, env: dict | None = None,
        capsys: pytest.CaptureFixture | None = None) -> int:  # fmt: skip
    """`memdir --dir MEMDIR ARGS` in-process, with `env` set (MEMDIR_NOW cleared: real time)."""
    from memdir.cli.main import main

    monkeypatch.delenv("MEMDIR_NOW", raising=False)
    for name in ("CLAUDECODE", "MEMDIR_ACTOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    return main(["--dir", str(memdir.root), *args])


def real_now() -> datetime:
    return datetime.now(timezone.utc)


def test_an_assistants_link_is_its_own_and_cannot_decide_the_users_facts(
    md: Memdir, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    now = real_now()
    old = lifecycle.teach(md, "My office is on the third floor", now - timedelta(days=2)).id
    new = lifecycle.teach(md, "My office is on the fifth floor", now - timedelta(days=1)).id
    for kind in ("superseded-by", "compatible"):
        assert run(md, monkeypatch, "link", old, new, "--type", kind, env=AGENT) == 8
        assert "cannot link" in capsys.readouterr().err
    assert run(md, monkeypatch, "link", old, new, "--type", "related", env=AGENT) == 0
    [event] = [line for line in shelf_lines(md) if line.get("op") == "link"]
    assert event["actor"] == "assistant"
    view = lifecycle.load_view(md, now)
    assert view.resolve(old).status == "durable"  # both still the user's word
    # the user's own supersede holds, and the assistant cannot undo it
    assert run(md, monkeypatch, "link", old, new, "--type", "superseded-by") == 0
    assert lifecycle.load_view(md, real_now()).resolve(old).status == "superseded"
    assert run(md, monkeypatch, "link", new, old, "--type", "compatible", env=AGENT) == 8
    assert lifecycle.load_view(md, real_now()).resolve(old).status == "superseded"


def test_even_a_crafted_assistant_link_line_decides_nothing(md: Memdir) -> None:
    """The library's link with actor 'assistant' (as MCP writes it): the fold ignores it."""
    now = real_now()
    old = lifecycle.teach(md, "I live in a flat", now - timedelta(days=2)).id
    new = lifecycle.teach(md, "I live in a house", now - timedelta(days=1)).id
    lifecycle.link(md, old, new, "superseded-by", now, actor="assistant")
    assert lifecycle.load_view(md, now).resolve(old).status == "durable"


def test_people_and_self_from_an_agents_shell_are_the_assistants(
    md: Memdir, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from memdir.cli.usecases.documents import wake

    assert run(md, monkeypatch, "people", "add", "Ana", "--set", "relation=sister") == 0
    assert run(md, monkeypatch, "people", "add", "Ana", "--set", "city=Lyon", env=AGENT) == 0
    assert run(md, monkeypatch, "people", "alias", "Ana", "Annie", env=AGENT) == 0
    assert run(md, monkeypatch, "self", "set", "tone=curt", env=AGENT) == 0
    fields = people.read_people(md)["Ana"]
    assert fields["relation"]["by"] == "user"
    assert fields["city"]["by"] == fields["aliases"]["by"] == "assistant"
    assert people.read_self(md)["tone"]["by"] == "assistant"
    document = wake(md, real_now())
    [line] = [row for row in document.markdown.splitlines() if row.startswith("- Ana")]
    assert "city: Lyon (set by assistant)" in line
    assert "relation: sister;" in line or line.endswith("relation: sister")
    assert "relation: sister (set by" not in line
    assert run(md, monkeypatch, "people", "forget", "Ana", env=AGENT) == 0
    assert any(
        line.get("op") == "drop" and line.get("by") == "assistant"
        for line in map(__import__("json").loads, people.notes_path(md).read_text().splitlines())
    )


@pytest.mark.parametrize(
    "args",
    [
        ("journal", "write", "--author", "user", "I decided to move to Lyon"),
        ("journal", "write", "--author", "User:Sam", "I decided to move to Lyon"),
        ("infer", "The user likes jazz", "--by", "user"),
        ("teach", "I like jazz", "--by", "Sam"),
    ],
    ids=["journal-write-user", "journal-write-named", "infer-by-user", "teach-by-name"],
)
def test_an_agents_shell_cannot_name_the_user_as_author(
    md: Memdir, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, args: tuple
) -> None:
    before = {path: path.read_bytes() for path in Path(md.root).rglob("*") if path.is_file()
              and ".memdir" not in path.parts}  # fmt: skip
    assert run(md, monkeypatch, *args, env=AGENT) == 8
    err = capsys.readouterr().err
    assert "cannot" in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2
    after = {path: path.read_bytes() for path in Path(md.root).rglob("*") if path.is_file()
             and ".memdir" not in path.parts}  # fmt: skip
    assert after == before


def test_an_assistants_journal_entry_is_the_assistants(
    md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir.archive_format import journal

    assert run(md, monkeypatch, "journal", "write", "We planned the garden", env=AGENT) == 0
    [entry] = journal.read_entries(md)
    assert entry.author == "assistant"


@pytest.mark.parametrize("route", ["option", "environment"])
def test_an_assistant_cannot_move_the_clock_back_into_the_quote_window(
    md: Memdir, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, route: str
) -> None:
    """A user turn of three days ago is out of the 24 h window; `--now` (or $MEMDIR_NOW) set
    to the day after it must not bring it back: the write is refused, nothing is stored."""
    from memdir.archive_format import journal
    from memdir.archive_format.clock import format_time
    from memdir.cli.usecases.journal import record_turns

    said = real_now() - timedelta(days=3)
    turn = journal.new_turn(said, "user", "s1", "I am allergic to penicillin")
    record_turns(md, [turn], said)
    pretend = format_time(said + timedelta(hours=1))
    args = ["teach", "I am allergic to penicillin"]
    if route == "option":
        code = run(md, monkeypatch, "--now", pretend, *args, env=AGENT)
    else:
        code = run(md, monkeypatch, *args, env={**AGENT, "MEMDIR_NOW": pretend})
    assert code == 8 and "cannot move the clock" in capsys.readouterr().err
    assert not [line for line in shelf_lines(md) if line.get("kind") == "memory"]
    # at the real time the quote is out of the window: an inference, not a teaching
    assert run(md, monkeypatch, *args, env=AGENT) == 0
    [line] = [line for line in shelf_lines(md) if line.get("kind") == "memory"]
    assert line["source"] == "inference"
    # the user's own shell still simulates time freely
    assert run(md, monkeypatch, "--now", pretend, "teach", "I like tea") == 0


def test_a_few_seconds_of_skew_are_not_a_moved_clock(
    md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service client pins its own time on a request; a fallback runs a moment later."""
    from memdir.archive_format.clock import format_time

    pinned = format_time(real_now() - timedelta(seconds=20))
    assert (
        run(md, monkeypatch, "infer", "The user likes jazz", env={**AGENT, "MEMDIR_NOW": pinned})
        == 0
    )
