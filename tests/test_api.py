"""The public Python API (memdir/api.py, docs/API.md): a surface over the same use cases as the
command line, so what it writes, reads and refuses is what `memdir` writes, reads and refuses."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import T0, clean_env, shelf_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memdir
from memdir.archive_format import visibility
from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir as Archive
from memdir.cli.main import main

HASHING = {"embedder": {"kind": "hashing"}}
T1 = "2026-05-01T10:00:00Z"
T2 = "2026-05-01T11:00:00Z"
REPO = Path(__file__).resolve().parent.parent


def same_lines(root: Path, shelf: str) -> list[dict[str, Any]]:
    """A shelf's lines without what differs by design between two writers of the same
    operation since format 1.1: each user-written memory and free-text event hashes a random
    nonce into its id, so ids are replaced by the text of the memory they name."""
    memories = [
        json.loads(line) for line in (root / "shelves" / "memories.jsonl").read_bytes().splitlines()
    ]
    names = {line["id"]: line.get("text", "") for line in memories}
    lines = [json.loads(line) for line in (root / "shelves" / shelf).read_bytes().splitlines()]
    return [{key: names.get(value, value) if isinstance(value, str) else value
             for key, value in line.items() if key not in ("id", "nonce")}
            for line in lines]  # fmt: skip


def cli(root: Path, *args: str, now: str = T1) -> int:
    """`memdir --dir ROOT --now NOW ARGS` in this process: its exit status."""
    return main(["--dir", str(root), "--now", now, *args])


def cli_json(root: Path, capsys: pytest.CaptureFixture[str], *args: str, now: str = T1) -> Any:
    capsys.readouterr()
    assert cli(root, *args, "--json", now=now) == 0
    return json.loads(capsys.readouterr().out)


def as_json(data: Any) -> Any:
    """What `--json` would print for `data` (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(data))


@pytest.fixture
def user(hashed: Archive) -> memdir.Memdir:
    return memdir.open(hashed.root, actor="user")


@pytest.fixture
def assistant(hashed: Archive) -> memdir.Memdir:
    return memdir.open(hashed.root, actor="assistant")


# the same lines as the command line ----------------------------------------------------------
def test_an_api_teaching_is_recalled_by_the_cli_with_the_same_id_and_fields(
    user: memdir.Memdir, capsys: pytest.CaptureFixture[str]
) -> None:
    taught = user.teach("I take my coffee black", type="FACT:preference", key="coffee", now=T0)
    assert (taught.done, taught.status, taught.stored_as) == (True, "durable", "teaching")
    shown = cli_json(user.root, capsys, "recall", "coffee", "--no-record")
    (hit,) = [row for row in shown["results"] if row["id"] == taught.id]
    assert (hit["source"], hit["status"], hit["type"]) == ("teaching", "durable", "FACT")
    (line,) = [line for line in shelf_lines(user.root) if line.get("id") == taught.id]
    assert (line["author"], line["key"], line["subtype"]) == ("user", "coffee", "preference")


def test_recall_result_serialises_to_the_cli_json(
    user: memdir.Memdir, capsys: pytest.CaptureFixture[str]
) -> None:
    user.teach("I take my coffee black", key="coffee", now=T0)
    user.teach("My sister lives by the sea", now=T0)
    user.infer("The user seems to like quiet mornings", now=T0)
    for explain in (False, True):
        extra = ("--explain",) if explain else ()
        shown = cli_json(user.root, capsys, "recall", "coffee mornings", "--no-record", *extra)
        result = user.recall("coffee mornings", record=False, now=T1)
        mine = as_json(result.to_dict(explain=explain))
        assert mine["results"], "the query finds something, so the comparison is not empty"
        shown.pop("milliseconds"), mine.pop("milliseconds")
        assert mine == shown


def test_context_and_journal_read_serialise_to_the_cli_json(
    user: memdir.Memdir, capsys: pytest.CaptureFixture[str]
) -> None:
    user.teach("I take my coffee black", key="coffee", now=T0)
    user.journal_add("What coffee do I like?", role="user", session="s1", now=T0)
    user.journal_add("Black, you said.", role="assistant", session="s1", now=T0)
    block = user.context("what coffee do I drink?", record=False, now=T1)
    assert block.verdict == "GROUNDED" and "coffee black" in block.markdown()
    shown = cli_json(user.root, capsys, "context", "what coffee do I drink?", "--no-record")
    assert as_json(block.to_dict()) == shown
    rows = user.journal_read(now=T1)
    assert [row["role"] for row in rows] == ["user", "assistant"]
    assert as_json(rows) == cli_json(user.root, capsys, "journal", "read")


def test_journal_times_are_taken_as_the_command_takes_them(
    user: memdir.Memdir, capsys: pytest.CaptureFixture[str]
) -> None:
    from memdir.archive_format.clock import parse_time

    user.journal_add("an old turn", role="user", session="s1", at=parse_time(T0), now=T2)
    user.journal_add("a newer turn", role="user", session="s1", at=T1, now=T2)
    rows = user.journal_read(now=T2)
    assert [(row["at"], row["text"]) for row in rows] == [(T0, "an old turn"), (T1, "a newer turn")]
    recent = user.journal_read(since="90m", now=T2)
    assert [row["text"] for row in recent] == ["a newer turn"]
    assert as_json(recent) == cli_json(
        user.root, capsys, "journal", "read", "--since", "90m", now=T2
    )
    assert user.journal_read(since=T1, now=T2) == recent
    with pytest.raises(memdir.BadInputError):
        user.journal_add("when?", role="user", session="s1", at="yesterday-ish")


# any text a command line can carry ('-' alone means standard input there)
TEXTS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40).filter(lambda t: t != "-")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=TEXTS, key=st.none() | st.from_regex(r"[a-z]{1,8}", fullmatch=True),
       importance=st.integers(1, 10))  # fmt: skip
def test_teach_and_infer_write_the_lines_the_cli_writes(
    text: str, key: str | None, importance: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same teaching at the same time is the same line whichever surface wrote it (but for
    its nonce and so its id); a text the command line refuses, the API refuses alike."""
    with tempfile.TemporaryDirectory() as scratch:
        api = memdir.init(Path(scratch) / "api", actor="user", settings=HASHING, now=T0)
        by_cli = memdir.init(Path(scratch) / "cli", actor="user", settings=HASHING, now=T0)
        options = ["--importance", str(importance), *(["--key", key] if key else [])]
        for verb in ("teach", "infer"):
            status = cli(by_cli.root, verb, *options, "--", text)
            fields: dict[str, Any] = {"importance": importance, "key": key}
            try:
                if verb == "teach":
                    api.teach(text, now=T1, **fields)
                else:
                    api.infer(text, now=T1, **fields)
            except memdir.MemdirError as error:
                assert status == error.status
            else:
                assert status == 0
        capsys.readouterr()
        assert same_lines(api.root, "memories.jsonl") == same_lines(by_cli.root, "memories.jsonl")


def test_confirm_reject_link_forget_write_what_the_cli_writes(tmp_path: Path) -> None:
    api = memdir.init(tmp_path / "api", actor="user", settings=HASHING, now=T0)
    by_cli = memdir.init(tmp_path / "cli", actor="user", settings=HASHING, now=T0)
    guess = api.infer("The user likes hiking", now=T0).id
    wrong = api.infer("The user hates rain", now=T0).id
    kept = api.teach("I live near the river", now=T0).id
    for verb in (("infer", "The user likes hiking"), ("infer", "The user hates rain"),
                 ("teach", "I live near the river")):  # fmt: skip
        assert cli(by_cli.root, *verb, now=T0) == 0
    ids = {line["text"]: line["id"] for line in shelf_lines(by_cli.root) if "text" in line}
    cli_guess, cli_wrong = ids["The user likes hiking"], ids["The user hates rain"]
    cli_kept = ids["I live near the river"]
    assert api.confirm(guess, evidence="yes, I do", now=T1).done
    assert api.reject(wrong, reason="not true", now=T1).done
    assert api.link(guess, kept, link_type="supports", now=T1).id.startswith("e-")
    assert cli(by_cli.root, "confirm", cli_guess, "--evidence", "yes, I do") == 0
    assert cli(by_cli.root, "reject", cli_wrong, "--reason", "not true") == 0
    assert cli(by_cli.root, "link", cli_guess, cli_kept, "--type", "supports") == 0
    again = api.confirm(guess, now=T1)
    assert not again.done, "a second confirm adds nothing, as the command's note says"
    assert api.forget(kept, now=T2).id == kept
    assert cli(by_cli.root, "forget", cli_kept, now=T2) == 0
    for shelf in ("memories.jsonl", "events.jsonl"):
        assert same_lines(api.root, shelf) == same_lines(by_cli.root, shelf), shelf


# the actor -----------------------------------------------------------------------------------
def test_the_actor_must_be_named(hashed: Archive) -> None:
    with pytest.raises(TypeError):
        memdir.open(hashed.root)  # type: ignore[call-arg]
    with pytest.raises(memdir.BadInputError) as refused:
        memdir.open(hashed.root, actor="admin")
    assert refused.value.status == ExitStatus.BAD_INPUT


def test_an_assistant_cannot_teach_without_the_users_words(
    user: memdir.Memdir, assistant: memdir.Memdir, capsys: pytest.CaptureFixture[str]
) -> None:
    offered = assistant.teach("The user is allergic to peanuts", now=T0)
    assert (offered.stored_as, offered.status) == ("inference", "provisional")
    (line,) = [line for line in shelf_lines(user.root) if line.get("id") == offered.id]
    assert (line["source"], line["author"]) == ("inference", "assistant")
    shown = cli_json(user.root, capsys, "recall", "peanuts allergy", "--no-record", now=T1)
    assert [(row["id"], row["status"]) for row in shown["results"]] == [(offered.id, "provisional")]


def test_an_assistant_teaches_the_users_quoted_words(
    user: memdir.Memdir, assistant: memdir.Memdir
) -> None:
    turn = user.journal_add("I am allergic to peanuts.", role="user", session="s1", now=T0)
    taught = assistant.teach("I am allergic to peanuts", now=T1)
    assert (taught.stored_as, taught.status) == ("teaching", "durable")
    assert turn.id in (taught.evidence or "") and "via api" in (taught.evidence or "")
    # the assistant's own turn is never the user's word
    assistant.journal_add("You like sailing.", role="assistant", session="s1", now=T0)
    assert assistant.teach("You like sailing", now=T1).stored_as == "inference"


def test_the_environment_makes_a_user_handle_the_assistant(
    hashed: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    handle = memdir.open(hashed.root, actor="user")
    assert handle.actor.assistant and "CLAUDECODE" in handle.actor.reason
    assert handle.teach("The user likes jazz", now=T0).stored_as == "inference"
    monkeypatch.setenv(
        "MEMDIR_ACTOR", "user"
    )  # inside a harness: at most a prompt hook, as on the CLI
    hook = memdir.open(hashed.root, actor="user").actor
    assert hook.assistant and hook.hook
    assert memdir.open(hashed.root, actor="assistant").actor.assistant


# refusals: typed exceptions with the command line's exit codes --------------------------------
def _cli_as_assistant(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    with monkeypatch.context() as patched:
        patched.setenv("MEMDIR_ACTOR", "assistant")
        return cli(root, *args)


def test_refusals_are_the_clis_errors_with_its_exit_codes(
    user: memdir.Memdir,
    assistant: memdir.Memdir,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    guess = user.infer("The user likes hiking", now=T0).id
    durable = user.teach("I live near the river", now=T0).id
    turn = user.journal_add("hello", role="user", session="s1", now=T0).id
    root = user.root
    cases = [
        (lambda: assistant.confirm(guess, now=T1), ("confirm", guess)),
        (lambda: assistant.reject(durable, reason="no", now=T1), ("reject", durable, "--reason", "no")),
        (lambda: assistant.forget(durable, now=T1), ("forget", durable)),
        (lambda: assistant.forget(turn, now=T1), ("forget", turn)),
        (lambda: assistant.journal_add("hi", role="user", session="s1"),
         ("journal", "add", "--role", "user", "--session", "s1", "hi")),
        (lambda: assistant.import_file(tmp_path / "x.json"), ("import", str(tmp_path / "x.json"))),
    ]  # fmt: skip
    for call, args in cases:
        with pytest.raises(memdir.LifecycleError) as refused:
            call()
        assert refused.value.hint, args
        assert _cli_as_assistant(root, monkeypatch, *args) == refused.value.status, args
    for call, args in [
        (lambda: user.confirm("m-ffffffffffffffff", now=T1), ("confirm", "m-ffffffffffffffff")),
        (lambda: user.confirm(durable, now=T1), ("confirm", durable)),
        (lambda: user.recall("   "), ("recall", "   ")),
        (lambda: user.teach("x", importance=11), ("teach", "x", "--importance", "11")),
    ]:
        with pytest.raises(memdir.MemdirError) as failed:
            call()
        code = cli(root, *args)
        # typer checks --importance's range itself (a usage error, 2); the API's check is the
        # schema's, a BadInputError (8)
        expected = ExitStatus.USAGE if "--importance" in args else failed.value.status
        assert code == expected, args
    with pytest.raises(memdir.NotAMemdirError) as missing:
        memdir.open(tmp_path / "nowhere", actor="user")
    assert cli(tmp_path / "nowhere", "list") == missing.value.status == ExitStatus.NOT_A_MEMDIR
    with pytest.raises(memdir.BadInputError, match="unknown memory field"):
        user.teach("a memory", colour="blue")
    capsys.readouterr()
    memories = [line["id"] for line in shelf_lines(root) if line["kind"] == "memory"]
    assert memories == [guess, durable], "nothing refused was written"


def test_every_method_is_a_surface_of_the_policy() -> None:
    """Each public method names the command it is; that command has a row in the one policy
    (visibility.SURFACES or NO_RECORDS), so the API shows what that command shows."""
    methods = {name for name in vars(memdir.Memdir) if not name.startswith("_")} - {"root"}
    assert set(memdir.api.SURFACE_OF) == methods
    commands = {name for surface in visibility.SURFACES.values() for name in surface.cli}
    assert set(memdir.api.SURFACE_OF.values()) <= commands | set(visibility.NO_RECORDS)


def test_private_memories_stay_out_of_recall_unless_asked(user: memdir.Memdir) -> None:
    secret = user.teach("My bank PIN hint is the old house", visibility="private", now=T0).id
    found = user.recall("bank PIN hint", record=False, now=T1)
    assert secret not in [c.id for c in found.results]
    asked = user.recall("bank PIN hint", include_private=True, record=False, now=T1)
    assert secret in [c.id for c in asked.results]
    assert "bank PIN" not in user.context("bank PIN hint?", record=False, now=T1).markdown()


def test_sleep_wake_import_export_run_the_commands_use_cases(
    user: memdir.Memdir, tmp_path: Path
) -> None:
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text(
        json.dumps({"role": "user", "content": "I planted beans", "timestamp": T0,
                    "session": "c1"}) + "\n", encoding="utf-8")  # fmt: skip
    report = user.import_file(transcript, now=T1)
    assert (report.turns, report.added) == (1, 1)
    assert [row["channel"] for row in user.journal_read(now=T1)] == [f"import:{report.source}"]
    slept = user.sleep(now=T2)
    assert slept.to_dict()["now"] == T2 and (user.root / "documents" / "wake.md").is_file()
    woken = user.wake(budget=300, now=T2)
    assert woken.tokens <= 300 and woken.markdown.startswith("#")
    exported = user.export(tmp_path / "backup.tar.gz")
    assert exported.path.is_file() and exported.files > 0 and not exported.encrypted


def test_recall_journal_finds_a_detail_said_mid_conversation_through_the_actors_row(
    user: memdir.Memdir, assistant: memdir.Memdir
) -> None:
    user.journal_add("We spent the whole summer in Valencia with my cousins", role="user", session="s1",
                     now=T0)  # fmt: skip
    user.journal_add("Valencia again next year, but that stays between us", role="user", session="s1",
                     visibility="private", now=T0)  # fmt: skip
    found = user.recall("Valencia", record=False, now=T1)
    assert not any("Valencia" in c.text for c in found.results)  # no memory holds it
    mine = [turn["text"] for turn in user.recall_journal(found, include_private=True)["turns"]]
    assert sorted(mine) == sorted(
        ["We spent the whole summer in Valencia with my cousins",
         "Valencia again next year, but that stays between us"])  # fmt: skip
    theirs = assistant.recall_journal(assistant.recall("Valencia", record=False, now=T1),
                                      include_private=True)["turns"]  # fmt: skip
    assert [turn["text"] for turn in theirs] == [
        "We spent the whole summer in Valencia with my cousins"]  # fmt: skip


def test_recall_records_the_handles_actor(user: memdir.Memdir, assistant: memdir.Memdir) -> None:
    user.teach("I take my coffee black", now=T0)
    assistant.recall("coffee", now=T1)
    user.recall("coffee", now=T2)
    recalls = [line for line in shelf_lines(user.root) if line["kind"] == "recall"]
    assert [line["actor"] for line in recalls] == ["assistant", "user"]


# cheap to import ---------------------------------------------------------------------------
HEAVY = ("numpy", "faiss", "tantivy", "tokenizers", "mcp", "safetensors", "torch", "psycopg")
PROBE = """
import sys, memdir
before = set(sys.modules)
handle = memdir.open(sys.argv[1], actor="user")
handle.teach("cold start check")
handle.journal_add("hello", role="user", session="s1")
print(" ".join(sorted(name for name in set(sys.modules)
                      if name.split(".")[0] in sys.argv[2].split())))
"""


def test_import_memdir_and_writes_load_no_heavy_module(hashed: Archive) -> None:
    # only a fresh process shows what an import loads
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(hashed.root), " ".join(HEAVY)],
        capture_output=True, text=True, timeout=60, env=clean_env(MEMDIR_NOW=T0),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
    assert [line["text"] for line in shelf_lines(hashed.root)] == ["cold start check"]


# docs/API.md and the example ---------------------------------------------------------------
def python_blocks(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    blocks, inside, current = [], False, []  # type: ignore[var-annotated]
    for line in text.splitlines():
        if not inside and line.strip() == "```python":
            inside, current = True, []
        elif inside and line.strip() == "```":
            inside = False
            blocks.append("\n".join(current))
        elif inside:
            current.append(line)
    return blocks


def test_the_api_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/API.md's ```python blocks, in order, in one namespace, in a scratch directory."""
    blocks = python_blocks(REPO / "docs" / "API.md")
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMDIR_NOW", T0)
    namespace: dict[str, Any] = {"__name__": "api_docs"}
    for number, block in enumerate(blocks, start=1):
        try:
            exec(compile(block, f"docs/API.md block {number}", "exec"), namespace)
        except Exception as error:  # say which block failed
            raise AssertionError(
                f"docs/API.md block {number} failed: {error!r}\n{block}"
            ) from error


def test_the_readme_python_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (snippet,) = python_blocks(REPO / "README.md")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMDIR_NOW", T0)
    memdir.init(tmp_path / "memory", actor="user", settings=HASHING)
    exec(compile(snippet, "README.md", "exec"), {"__name__": "readme"})
    memories = [line for line in shelf_lines(tmp_path / "memory") if line["kind"] == "memory"]
    assert [line["key"] for line in memories] == ["coffee"]


def test_the_agent_loop_example_remembers_what_the_user_said(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "examples" / "agent-loop"))
    try:
        import agent_loop
    finally:
        sys.path.remove(str(REPO / "examples" / "agent-loop"))
    home = memdir.init(tmp_path / "memory", actor="user", settings=HASHING, now=T0).root
    replies = agent_loop.run(home, ["I keep bees on the roof.", "What do I keep on the roof?"],
                             session="s1")  # fmt: skip
    assert len(replies) == 2
    lines = [line for line in shelf_lines(home) if line["kind"] == "memory"]
    assert [(line["text"], line["source"]) for line in lines] == [
        ("I keep bees on the roof", "teaching")
    ], "only the user's own statement is taught, and as a teaching"
    assert "I keep bees on the roof" in lines[0]["meta"]["evidence"]
    turns = memdir.open(home, actor="user").journal_read()
    # (turns of one second are read in id order, so compare them as a multiset)
    assert sorted((turn["role"], turn["channel"]) for turn in turns) == [
        ("assistant", "api:assistant"), ("assistant", "api:assistant"),
        ("user", "api"), ("user", "api"),
    ]  # fmt: skip
    assert "bees" in replies[1], "the second prompt carried the memory to the model"


def test_the_agent_loop_example_runs_as_a_script(tmp_path: Path) -> None:
    """As a user runs it, in a fresh process (where the script's own folder comes first on the
    import path): one reply per line typed, until an empty line."""
    home = memdir.init(tmp_path / "memory", actor="user", settings=HASHING, now=T0).root
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "agent-loop" / "agent_loop.py"), str(home)],
        input="My cat is called Pixel.\nWhat is my cat called?\n\n",
        capture_output=True, text=True, timeout=120, env=clean_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(echo)") == 2
    assert "My cat is called Pixel (m-" in done.stdout, "the memory reached the second prompt"
