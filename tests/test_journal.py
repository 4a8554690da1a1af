"""The raw journal: turn lines (schema, ids, round trip), `memdir journal add/read/write`,
the cross-session raw window, narrative entries, and verify's checks of the journal."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
from conftest import T0, T0_DT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.errors import BadInputError, ExitStatus
from memdir.archive_format.journal import Turn, new_turn
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import content_id, encode_line
from memdir.archive_format.validate import JOURNAL_KINDS, line_problems, load_schema
from memdir.archive_format.verify import verify
from memdir.archive_format.visibility import SECRECY
from memdir.usecases.journal import read_turns


@pytest.fixture
def cli(cli_in_process):
    """What the commands do and print is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


texts = st.text(min_size=1, max_size=80).filter(lambda text: text.strip() != "")
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_:", min_size=1, max_size=12)


TURN_SCHEMA = jsonschema.Draft202012Validator(load_schema("turn"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offset=st.integers(min_value=0, max_value=10**8),
    role=st.sampled_from(journal.ROLES),
    session=names,
    text=texts,
    topic=st.none() | names,
    visibility=st.sampled_from(("normal", "private", "sealed")),
    secrecy=st.sampled_from(SECRECY),
    channel=st.sampled_from(("cli", "mcp", "import:chatgpt-2026", "import:x")),
)
def test_turn_lines_round_trip_and_match_their_schema(
    offset, role, session, text, topic, visibility, secrecy, channel
) -> None:
    moment = T0_DT + timedelta(seconds=offset)
    turn = new_turn(moment, role, session, text, channel, visibility, secrecy, topic)
    line = turn.to_line()
    decoded = json.loads(encode_line(line))
    assert decoded == line
    assert list(decoded) == [name for name in journal.TURN_FIELDS if name in decoded]
    assert Turn.from_line(decoded) == turn
    assert content_id("t", decoded) == turn.id
    assert line_problems(decoded, JOURNAL_KINDS) == []
    TURN_SCHEMA.validate(decoded)
    assert turn.trusted == (role != "user" or channel != "mcp")


def test_a_turn_with_a_bad_field_is_refused_naming_it() -> None:
    with pytest.raises(BadInputError, match="role"):
        new_turn(T0_DT, "system", "s1", "hello")
    with pytest.raises(BadInputError, match="secrecy"):
        new_turn(T0_DT, "user", "s1", "hello", secrecy="classified")
    with pytest.raises(BadInputError, match="text"):
        new_turn(T0_DT, "user", "s1", "")


def test_digest_lines_match_their_schema() -> None:
    digest = journal.new_digest(T0_DT, ["t-0123456789abcdef"], ["t-fedcba9876543210"],
                                "m-0123456789abcdef", None, "extractive")  # fmt: skip
    line = digest.to_line()
    jsonschema.validate(line, load_schema("digest"))
    assert "promoted" not in line
    assert journal.Digest.from_line(line) == digest


# the command line --------------------------------------------------------------------------
def turns_file(root: Path) -> list[dict]:
    """The turn lines of the committed journal file and of the per-machine secret one."""
    lines = []
    for name in ("turns.jsonl", "secret.jsonl"):
        path = root / "journal" / name
        if path.exists():
            lines += [json.loads(raw) for raw in path.read_bytes().splitlines()]
    return lines


def test_cli_add_stores_verbatim_turns_and_skips_repeats(cli, md: Memdir) -> None:
    text = "  I planted tomatoes today.\n\tThe soil was dry.  "
    first = cli("--dir", str(md.root), "journal", "add", "--role", "user", "--session", "s1", text)
    assert first.code == 0, first
    again = cli("--dir", str(md.root), "journal", "add", "--role", "user", "--session", "s1", text)
    assert again.code == 0 and again.out == first.out and "already" in again.err
    lines = turns_file(md.root)
    assert len(lines) == 1
    assert lines[0]["text"] == text  # verbatim: whitespace kept
    assert lines[0]["channel"] == "cli" and lines[0]["id"] == first.out.strip()
    assert (md.root / "documents" / "boot.md").read_text().count("Last session: s1") == 1


def test_cli_add_reads_a_jsonl_transcript_on_stdin(cli, md: Memdir) -> None:
    transcript = "\n".join(json.dumps(line) for line in [
        {"role": "user", "text": "Hi! Can you plan my week?"},
        {"role": "assistant", "text": "Sure. What matters most?", "at": "2026-05-01T09:00:30Z"},
        {"role": "user", "text": "My PIN is 4321", "secrecy": "secret"},
    ])  # fmt: skip
    done = cli("--dir", str(md.root), "journal", "add", "--jsonl", "--session", "s9",
               "--topic", "planning", "--json", stdin=transcript)  # fmt: skip
    assert done.code == 0, done
    assert [row["added"] for row in json.loads(done.out)] == [True, True, True]
    lines = turns_file(md.root)
    assert [line["role"] for line in lines] == ["user", "assistant", "user"]
    assert {line["session"] for line in lines} == {"s9"} and lines[1][
        "at"
    ] == "2026-05-01T09:00:30Z"
    assert lines[2]["secrecy"] == "secret" and lines[0]["topic"] == "planning"


@pytest.mark.parametrize(
    "stdin, message",
    [
        ('{"role": "user"}', "no text"),
        ('{"role": "user", "text": "x", "channel": "cli"}', "unknown field 'channel'"),
        ('{"role": "robot", "text": "x"}', "role"),
        ("not json", "not JSON"),
    ],
)
def test_cli_add_refuses_a_bad_transcript_line_and_writes_nothing(
    cli, md: Memdir, stdin, message
) -> None:
    done = cli("--dir", str(md.root), "journal", "add", "--jsonl", "--session", "s1", stdin=stdin)
    assert done.code == ExitStatus.BAD_INPUT, done
    assert message in done.err and "line 1" in done.err
    assert turns_file(md.root) == []


def add(md: Memdir, minutes: float, role: str, text: str, session: str = "s1", **extra) -> Turn:
    turn = new_turn(T0_DT + timedelta(minutes=minutes), role, session, text, **extra)
    journal.add_turns(md, [turn])
    return turn


def test_raw_window_takes_the_last_trusted_user_turns_across_sessions(md: Memdir) -> None:
    old = add(md, -60 * 50, "user", "fifty hours ago", "s0")
    for number in range(8):
        add(md, number * 60, "user", f"user turn {number}", f"s{number % 3}")
        add(md, number * 60 + 1, "assistant", f"reply {number}", f"s{number % 3}")
    add(md, 500, "user", "a private aside", visibility="private")
    add(md, 501, "user", "the alarm code is 0000", secrecy="secret")
    add(md, 502, "user", "claimed by a client", channel="mcp")
    book = journal.read_journal(md)
    now = T0_DT + timedelta(minutes=600)
    window = journal.raw_window(book.turns, now)
    assert [t.text for t in window] == [f"user turn {n}" for n in range(2, 8)]
    assert len({t.session for t in window}) == 3
    wide = journal.raw_window(book.turns, now, count=50, hours=72)
    assert old in wide and len(wide) == 9
    assert journal.raw_window(book.turns, T0_DT + timedelta(minutes=90))[-1].text == "user turn 1"


def test_read_filters_masks_and_shows_backlinks(cli, md: Memdir) -> None:
    add(md, 0, "user", "we talk about the garden", "s1")
    add(md, 1, "assistant", "gardens are nice", "s1")
    add(md, 2, "user", "my diary says hello", "s2", visibility="private")
    done = cli("--dir", str(md.root), "journal", "read", "--json", now="2026-05-01T10:00:00Z")
    rows = json.loads(done.out)
    assert [row["text"] for row in rows] == [
        "we talk about the garden",
        "gardens are nice",
        "[private]",
    ]
    assert all(row["summarised_by"] == [] for row in rows)
    ten = T0_DT + timedelta(hours=1)
    assert len(read_turns(md, ten, session="s1")) == 2
    assert len(read_turns(md, ten, role="assistant")) == 1
    assert len(read_turns(md, ten, since=ten - timedelta(minutes=59))) == 2
    assert len(read_turns(md, T0_DT + timedelta(seconds=30))) == 1  # --now replays
    assert read_turns(md, ten, everything=True)[2]["text"] == "my diary says hello"
    text = cli(
        "--dir", str(md.root), "journal", "read", "--since", "59m", now="2026-05-01T10:00:00Z"
    )
    assert text.out.splitlines() == [
        "2026-05-01T09:01:00Z [s1] assistant: gardens are nice",
        "2026-05-01T09:02:00Z [s2] user: [private]",
    ]


def test_cli_write_and_list_narrative_entries(cli, md: Memdir) -> None:
    written = cli("--dir", str(md.root), "journal", "write", "-",
                  stdin="We planned the garden.\n\nSam felt hopeful.")  # fmt: skip
    assert written.code == 0, written
    path = md.root / written.out.strip()
    assert path.parent == md.root / "journal" / "entries" and path.suffix == ".md"
    assert path.read_text().startswith("---\nat: '2026-05-01T09:00:00Z'\nauthor: assistant\n")
    listed = json.loads(cli("--dir", str(md.root), "journal", "read", "--entries", "--json").out)
    assert listed == [{"file": path.name, "at": T0, "author": "assistant", "kind": "reflection",
                       "text": "We planned the garden.\n\nSam felt hopeful."}]  # fmt: skip
    empty = cli("--dir", str(md.root), "journal", "write", "   ")
    assert empty.code == ExitStatus.BAD_INPUT


# verify ----------------------------------------------------------------------------------
def test_verify_checks_journal_lines_and_backlinks(md: Memdir) -> None:
    turn = add(md, 0, "user", "hello there")
    lifecycle.teach(md, "the user greeted", T0_DT, links=[{"type": "said-in", "to": turn.id}])
    assert verify(md).clean  # a plain link to a turn needs no digest, only the turn
    lifecycle.teach(
        md, "a bad quote", T0_DT, links=[{"type": "said-in", "to": "t-00000000000000ee"}]
    )
    assert any("unknown journal turn t-00000000000000ee" in p for p in verify(md).problems)
    md.memory_shelf.write_bytes(md.memory_shelf.read_bytes().rsplit(b"\n", 2)[0] + b"\n")
    assert verify(md).clean
    path = md.journal_dir / "turns.jsonl"
    original = path.read_bytes()
    path.write_bytes(original.replace(b"hello there", b"hello THERE"))
    assert any("does not match its content" in p for p in verify(md).problems)
    path.write_bytes(original)
    journal.add_digests(md, [journal.new_digest(T0_DT, [turn.id, "t-00000000000000ff"], (),
                                                "m-00000000000000ff")])  # fmt: skip
    problems = verify(md).problems
    assert any("unknown turn t-00000000000000ff" in p for p in problems)
    assert any("unknown memory m-00000000000000ff" in p for p in problems)


@pytest.mark.parametrize("command", ["add", "read", "write"])
def test_journal_commands_have_help_and_an_example(command: str, capsys) -> None:
    from memdir.cli.main import main

    assert main(["journal", command, "--help"]) == 0
    assert "Example" in capsys.readouterr().out
