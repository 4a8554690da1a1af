"""The provenance lifecycle: statuses as a fold over events, at any `now`."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import T0, T0_DT, shelf_lines, snapshot

from memdir.archive_format import lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.errors import BadInputError, ExitStatus, LifecycleError
from memdir.archive_format.memdir import Memdir


@pytest.fixture
def cli(cli_in_process):
    """What the commands do and print is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


DAY = timedelta(days=1)


def at(offset: timedelta) -> str:
    return format_time(T0_DT + offset)


def status(memdir: Memdir, memory_id: str, offset: timedelta) -> str:
    return lifecycle.load_view(memdir, T0_DT + offset).resolve(memory_id).status


def events_of(memdir: Memdir, memory_id: str) -> list[dict]:
    return [line for line in shelf_lines(memdir) if line.get("target") == memory_id]


# --- the table through the library ------------------------------------------------------------


def test_inference_is_provisional_until_its_ttl_then_expired(md: Memdir) -> None:
    memory_id = lifecycle.infer(md, "The user likes mornings", T0_DT, ttl=3 * DAY).id
    assert status(md, memory_id, timedelta(0)) == "provisional"
    assert status(md, memory_id, 3 * DAY - timedelta(seconds=1)) == "provisional"
    assert status(md, memory_id, 3 * DAY) == "expired"
    assert status(md, memory_id, 30 * DAY) == "expired"
    line = shelf_lines(md)[0]
    assert line["expires"] == at(3 * DAY)
    assert events_of(md, memory_id) == [], "expiry by time needs no event"


def test_default_ttl_comes_from_memdir_yaml(md: Memdir) -> None:
    memory_id = lifecycle.infer(md, "guess", T0_DT).id
    assert status(md, memory_id, 7 * DAY - timedelta(seconds=1)) == "provisional"
    assert status(md, memory_id, 7 * DAY) == "expired"


def test_expired_inference_can_still_be_confirmed(md: Memdir) -> None:
    memory_id = lifecycle.infer(md, "The user prefers tea", T0_DT, ttl=DAY).id
    assert lifecycle.expire(md, T0_DT + 2 * DAY) == [memory_id]
    assert status(md, memory_id, 2 * DAY) == "expired"
    confirmed, event = lifecycle.confirm(md, memory_id, T0_DT + 5 * DAY, actor="user:ana")
    assert confirmed == memory_id and event is not None
    state = lifecycle.load_view(md, T0_DT + 5 * DAY).resolve(memory_id)
    assert state.status == "durable"
    assert state.durable_since == at(5 * DAY)
    # history is replayable: before the confirmation it was expired
    assert status(md, memory_id, 4 * DAY) == "expired"


def test_teachings_and_observations_are_durable_at_once(md: Memdir) -> None:
    taught = lifecycle.teach(md, "I take my coffee black", T0_DT).id
    seen = lifecycle.observe(md, "user: hello", T0_DT, author="import:chat").id
    assert status(md, taught, timedelta(0)) == "durable"
    assert status(md, seen, 365 * DAY) == "durable"


def test_assistant_cannot_teach_and_user_cannot_infer(md: Memdir) -> None:
    for author in ("assistant", "gpt-4", "import:chat", "users"):
        with pytest.raises(LifecycleError):
            lifecycle.teach(md, "trust me", T0_DT, author=author)
    with pytest.raises(BadInputError, match="author"):
        lifecycle.infer(md, "nobody wrote this", T0_DT, author="")
    with pytest.raises(LifecycleError):
        lifecycle.infer(md, "I said this myself", T0_DT, author="user")
    assert shelf_lines(md) == []


def test_an_unknown_or_derived_field_is_a_typed_error_and_writes_nothing(md: Memdir) -> None:
    for name in ("colour", "id", "created"):
        with pytest.raises(BadInputError, match=f"unknown memory field: '{name}'"):
            lifecycle.teach(md, "I take my coffee black", T0_DT, **{name: "x"})
    assert shelf_lines(md) == []


def test_only_the_user_confirms_and_only_inferences(md: Memdir) -> None:
    guess = lifecycle.infer(md, "guess", T0_DT).id
    taught = lifecycle.teach(md, "fact", T0_DT).id
    with pytest.raises(LifecycleError):
        lifecycle.confirm(md, guess, T0_DT, actor="assistant")
    with pytest.raises(LifecycleError):
        lifecycle.confirm(md, taught, T0_DT)
    assert status(md, guess, timedelta(0)) == "provisional"
    assert [line["kind"] for line in shelf_lines(md)] == ["memory", "memory"]


def test_rejected_memory_is_kept_but_not_live(md: Memdir) -> None:
    memory_id = lifecycle.infer(md, "The user hates cats", T0_DT).id
    lifecycle.reject(md, memory_id, "I love cats", T0_DT + DAY)
    view = lifecycle.load_view(md, T0_DT + 2 * DAY)
    assert view.resolve(memory_id).status == "rejected"
    assert memory_id not in {state.id for state in view.live()}
    # still rejected after its TTL: expiry does not overwrite a rejection
    assert status(md, memory_id, 30 * DAY) == "rejected"
    assert any(line.get("text") == "The user hates cats" for line in shelf_lines(md))


def test_an_inference_key_does_not_supersede_until_confirmed(md: Memdir) -> None:
    taught = lifecycle.teach(md, "Coffee: black", T0_DT, key="coffee").id
    guess = lifecycle.infer(md, "Coffee: with milk now", T0_DT + DAY, key="coffee").id
    assert status(md, taught, 2 * DAY) == "durable"
    assert status(md, guess, 2 * DAY) == "provisional"
    lifecycle.confirm(md, guess, T0_DT + 3 * DAY)
    view = lifecycle.load_view(md, T0_DT + 3 * DAY)
    assert view.resolve(taught).status == "superseded"
    assert view.resolve(taught).superseded_by == guess
    assert view.resolve(guess).status == "durable"
    assert status(md, taught, 2 * DAY) == "durable", "replaying before the confirm"


def test_an_expired_inference_key_never_supersedes(md: Memdir) -> None:
    taught = lifecycle.teach(md, "Coffee: black", T0_DT, key="coffee").id
    lifecycle.infer(md, "Coffee: with milk", T0_DT + DAY, key="coffee", ttl=DAY)
    assert status(md, taught, 10 * DAY) == "durable"


def test_writing_the_same_memory_twice_is_a_no_op(md: Memdir) -> None:
    first = lifecycle.teach(md, "Same thing", T0_DT, key="k", importance=7)
    again = lifecycle.teach(md, "Same thing", T0_DT, key="k", importance=7)
    later = lifecycle.teach(md, "Same thing", T0_DT + DAY, key="k", importance=7)
    assert first.added and not again.added and not later.added
    assert first.id == again.id == later.id
    assert len(shelf_lines(md)) == 1
    different = lifecycle.teach(md, "Same thing", T0_DT, key="k", importance=8)
    assert different.added and different.id != first.id


def test_reimporting_the_same_records_adds_nothing(md: Memdir) -> None:
    from memdir.archive_format.records import new_memory

    batch = [
        new_memory(
            created=T0, text=f"turn {n}", source="observation", author="import:x", store="episodic"
        )
        for n in range(5)
    ]
    assert lifecycle.add_memories(md, batch) == 5
    before = snapshot(md.root)
    assert lifecycle.add_memories(md, batch) == 0
    assert snapshot(md.root) == before


# --- the same table through the command line --------------------------------------------------


@pytest.fixture
def home(cli, tmp_path: Path) -> Path:
    """A memdir created by `memdir init`; commands run from inside it."""
    root = tmp_path / "mem"
    done = cli("init", str(root))
    assert done.code == 0, done
    assert done.out.strip() == str(root.resolve())
    for name in ("shelves", "journal", "state", "documents", ".gitattributes", ".gitignore"):
        assert (root / name).exists(), name
    assert "merge=union" in (root / ".gitattributes").read_text()
    return root


def test_cli_init_creates_the_memdir_named_by_the_global_dir(cli, tmp_path: Path) -> None:
    root = tmp_path / "elsewhere"
    done = cli("--dir", str(root), "init", cwd=tmp_path)
    assert done.code == 0, done
    assert (root / "memdir.yaml").exists() and not (tmp_path / "memdir.yaml").exists()


def listed(cli, home: Path, *args: str, now: str = T0) -> list[dict]:
    done = cli("list", "--json", *args, cwd=home, now=now)
    assert done.code == 0, done
    return json.loads(done.out)


def test_cli_inference_expires_is_swept_once_and_confirmed_later(cli, home: Path) -> None:
    made = cli("infer", "The user seems to prefer mornings", "--ttl", "3d", cwd=home)
    assert made.code == 0, made
    memory_id = made.out.strip()
    assert memory_id.startswith("m-") and "\n" not in memory_id, "the id alone on stdout"
    [item] = listed(cli, home)
    assert (item["id"], item["status"], item["source"]) == (memory_id, "provisional", "inference")
    assert {"id", "text", "source", "status", "created"} <= set(item)

    early = cli("expire", cwd=home, now=at(3 * DAY - timedelta(seconds=1)))
    assert early.code == 0 and early.out == ""
    assert (home / "shelves" / "events.jsonl").read_bytes() == b""

    later = at(4 * DAY)
    swept = cli("expire", cwd=home, now=later)
    assert swept.code == 0, swept
    assert swept.out.split() == [memory_id]
    events = (home / "shelves" / "events.jsonl").read_bytes()
    [event] = [json.loads(line) for line in events.splitlines()]
    assert (event["op"], event["target"], event["at"], event["actor"]) == (
        "expire",
        memory_id,
        later,
        "memdir",
    )
    again = cli("expire", "--json", cwd=home, now=at(5 * DAY))
    assert json.loads(again.out) == {"expired": []}
    assert (home / "shelves" / "events.jsonl").read_bytes() == events, "the sweep is idempotent"

    assert listed(cli, home, now=later) == [], "expired is not live"
    [item] = listed(cli, home, "--status", "expired", now=later)
    assert item["id"] == memory_id

    confirm_at = at(6 * DAY)
    confirmed = cli(
        "confirm",
        memory_id[:7],
        "--by",
        "ana",
        "--evidence",
        "yes, mornings",
        cwd=home,
        now=confirm_at,
    )
    assert confirmed.code == 0, confirmed
    assert confirmed.out.strip() == memory_id
    shown = json.loads(cli("show", memory_id, "--json", cwd=home, now=confirm_at).out)
    assert shown["status"] == "durable"
    assert shown["durable_since"] == confirm_at
    confirm_event = [e for e in shown["events"] if e["op"] == "confirm"]
    assert confirm_event == [
        {
            "kind": "event",
            "id": confirm_event[0]["id"],
            "at": confirm_at,
            "op": "confirm",
            "target": memory_id,
            "actor": "user:ana",
            "evidence": "yes, mornings",
            "nonce": confirm_event[0]["nonce"],  # free text: the id must not hash it alone
        }
    ]
    assert re.fullmatch(r"[0-9a-f]{32}", confirm_event[0]["nonce"])
    log = cli("log", memory_id, cwd=home, now=confirm_at)
    assert log.code == 0, log
    assert "now durable" in log.out
    for word in ("created", "expire", "confirm", "user:ana"):
        assert word in log.out, word
    assert cli("verify", cwd=home, now=confirm_at).code == 0


def test_cli_a_teaching_cannot_be_confirmed(cli, home: Path) -> None:
    memory_id = cli("teach", "I take my coffee black", cwd=home).out.strip()
    before = snapshot(home)
    done = cli("confirm", memory_id, cwd=home)
    assert done.code == ExitStatus.BAD_INPUT, done
    assert "not an inference" in done.err and "Traceback" not in done.err
    assert snapshot(home) == before


def test_cli_an_assistant_cannot_write_an_inference_as_the_user(cli, home: Path) -> None:
    done = cli("infer", "I am the user", "--by", "user", cwd=home)
    assert done.code == ExitStatus.BAD_INPUT, done
    assert (home / "shelves" / "memories.jsonl").read_bytes() == b""


def test_cli_reject_needs_a_reason_and_hides_the_memory(cli, home: Path) -> None:
    memory_id = cli("infer", "The user hates cats", cwd=home).out.strip()
    keep = cli("teach", "The user has a cat named Tom", cwd=home).out.strip()
    before = snapshot(home)
    missing = cli("reject", memory_id, cwd=home)
    assert missing.code == ExitStatus.USAGE and "--reason" in missing.err, missing
    blank = cli("reject", memory_id, "--reason", "  ", cwd=home)
    assert blank.code == ExitStatus.BAD_INPUT, blank
    assert snapshot(home) == before
    assert "Traceback" not in missing.err + blank.err

    done = cli("reject", memory_id, "--reason", "I love cats", cwd=home)
    assert done.code == 0 and done.out.strip() == memory_id, done
    assert [item["id"] for item in listed(cli, home)] == [keep]
    table = cli("list", cwd=home)
    assert memory_id not in table.out and keep in table.out
    assert [item["id"] for item in listed(cli, home, "--status", "rejected")] == [memory_id]
    assert {item["id"] for item in listed(cli, home, "--status", "all")} == {memory_id, keep}
    log = cli("log", memory_id, cwd=home)
    assert "now rejected" in log.out and "I love cats" in log.out


def test_cli_supersede_keeps_history(cli, home: Path) -> None:
    old = cli("teach", "Coffee: black", "--key", "coffee", cwd=home).out.strip()
    new = cli("teach", "Coffee: flat white", "--key", "coffee", cwd=home, now=at(DAY)).out.strip()
    assert old != new
    live = listed(cli, home, now=at(DAY))
    assert [item["id"] for item in live] == [new]
    [was] = listed(cli, home, "--status", "superseded", now=at(DAY))
    assert was["id"] == old and was["superseded_by"] == new and was["text"] == "Coffee: black"
    log = cli("log", old, cwd=home, now=at(DAY))
    assert "now superseded" in log.out and f"by {new}" in log.out
    assert listed(cli, home, now=at(DAY / 2))[0]["id"] == old, "--now before the newer one"
    assert len((home / "shelves" / "memories.jsonl").read_bytes().splitlines()) == 2


def test_cli_writing_the_same_memory_twice_prints_the_same_id(cli, home: Path) -> None:
    first = cli("teach", "Same thing", cwd=home)
    second = cli("teach", "Same thing", cwd=home, now=at(DAY))
    piped = cli("teach", "-", cwd=home, stdin="Same thing\n")
    assert first.out == second.out == piped.out
    assert "already stored" in second.err
    assert len((home / "shelves" / "memories.jsonl").read_bytes().splitlines()) == 1


def test_cli_forget_removes_every_byte_of_the_text(cli, home: Path) -> None:
    secret = "my PIN is 4711-zebra"
    keep = cli("teach", "The user lives in Lisbon", cwd=home).out.strip()
    memory_id = cli("teach", secret, cwd=home).out.strip()
    assert cli("link", keep, memory_id, "--type", "related", cwd=home).code == 0
    rejected = cli("reject", memory_id, "--reason", "4711-zebra was a joke", cwd=home, now=at(DAY))
    assert rejected.code == 0, rejected
    assert b"4711-zebra" in b"".join(snapshot(home).values())

    done = cli("forget", memory_id[:8], cwd=home, now=at(2 * DAY))
    assert done.code == 0, done
    assert done.out.strip() == memory_id
    assert "git" in done.err and "history" in done.err, "says git history still holds the text"
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"4711-zebra" not in data and b"zebra" not in data, path
    lines = shelf_lines(home)
    [stone] = [line for line in lines if line["kind"] == "tombstone"]
    assert stone == {"kind": "tombstone", "id": memory_id, "created": T0, "forgotten": at(2 * DAY)}
    reject_event = next(line for line in lines if line.get("op") == "reject")
    assert reject_event["redacted"] is True and "reason" not in reject_event
    assert any(line.get("op") == "forget" and line["target"] == memory_id for line in lines)

    shown = json.loads(cli("show", memory_id, "--json", cwd=home, now=at(2 * DAY)).out)
    assert (shown["status"], shown["text"]) == ("forgotten", None)
    assert [item["id"] for item in listed(cli, home, now=at(2 * DAY))] == [keep]
    checked = cli("verify", "--json", cwd=home, now=at(2 * DAY))
    assert checked.code == 0, checked
    assert json.loads(checked.out)["clean"] is True
    # forgetting twice changes nothing
    before = snapshot(home)
    assert cli("forget", memory_id, cwd=home, now=at(3 * DAY)).code == 0
    assert snapshot(home) == before


def test_cli_now_in_the_past_hides_later_memories(cli, home: Path) -> None:
    early = cli("teach", "written first", cwd=home).out.strip()
    late = cli("teach", "written a week later", cwd=home, now=at(7 * DAY)).out.strip()
    assert [i["id"] for i in listed(cli, home, now=at(DAY))] == [early]
    assert [i["id"] for i in listed(cli, home, now=at(8 * DAY))] == [late, early]
    flag = cli("--now", at(DAY), "list", "--json", cwd=home, now=None)
    assert [i["id"] for i in json.loads(flag.out)] == [early], "--now works without MEMDIR_NOW"
    hidden = cli("show", late, cwd=home, now=at(DAY))
    assert hidden.code == ExitStatus.NOT_FOUND, hidden
    stats = json.loads(cli("stats", "--json", cwd=home, now=at(DAY)).out)
    assert stats["memories"] == 1 and stats["status"] == {"durable": 1}


def test_a_wrongly_typed_text_is_skipped_not_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from memdir.archive_format.lifecycle import load_view
    from memdir.archive_format.memdir import init

    memdir, _ = init(tmp_path / "m", T0_DT)
    lifecycle.teach(memdir, "a fine memory", T0_DT)
    with memdir.memory_shelf.open("a", encoding="utf-8") as handle:
        handle.write('{"kind":"memory","id":"m-0000000000000000","created":"2026-05-01T09:00:00Z",'
                     '"text":5,"source":"teaching","author":"user","store":"semantic",'
                     '"importance":5,"temporal":"persistent","visibility":"normal"}\n')  # fmt: skip
    view = load_view(memdir, T0_DT)
    assert [state.memory.text for state in view if state.memory] == ["a fine memory"]
    assert "memories.jsonl:2: text: expected string, got int" in caplog.text


def test_nan_is_refused_at_the_write_boundary(tmp_path: Path) -> None:
    from memdir.archive_format.errors import BadInputError
    from memdir.archive_format.memdir import init

    memdir, _ = init(tmp_path / "m", T0_DT)
    with pytest.raises(BadInputError, match="finite"):
        lifecycle.teach(memdir, "nan affect", T0_DT, affect={"valence": float("nan")})
    assert memdir.memory_shelf.read_text() == ""
