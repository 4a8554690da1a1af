"""Bad input meets one error boundary: one line (plus a hint), a typed exit code, nothing lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import T0, T0_DT, Run, clean_env, configure, snapshot

from memdir.archive_format import lifecycle
from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir, init


@pytest.fixture
def cli(cli_in_process):
    """What the commands answer to bad input is the subject here, not processes: the CLI runs in
    this process (conftest.memdir_main)."""
    return cli_in_process


def assert_clean_error(done: Run, status: ExitStatus, *needles: str) -> str:
    """A one-line error (and at most one hint line) on stderr, nothing on stdout, no traceback."""
    assert done.code == status, done
    assert "Traceback" not in done.err, done
    lines = done.err.rstrip("\n").split("\n")
    assert lines[0].startswith("memdir: error: "), done
    assert len(lines) <= 2 and all(line.startswith("  hint: ") for line in lines[1:]), done
    assert done.out == "", done
    for needle in needles:
        assert needle in done.err, (needle, done)
    return lines[0]


def assert_degraded(done: Run, *needles: str) -> None:
    """A reader past a malformed line: success, a 'skipped FILE:LINE' warning, no traceback."""
    assert done.code == 0, done
    assert "Traceback" not in done.err, done
    warnings = [line for line in done.err.splitlines() if line.startswith("memdir: skipped ")]
    assert warnings, done
    for needle in needles:
        assert any(needle in line for line in warnings), (needle, done)


@pytest.fixture
def filled(md: Memdir) -> tuple[Memdir, str]:
    """A memdir with a teaching, an inference and a confirm event."""
    taught = lifecycle.teach(md, "The user lives in Lisbon", T0_DT).id
    guess = lifecycle.infer(md, "The user likes jazz", T0_DT).id
    lifecycle.confirm(md, guess, T0_DT, evidence="yes")
    return md, taught


def in_dir(md: Memdir, *args: str) -> tuple[str, ...]:
    return ("--dir", str(md.root), *args)


@pytest.mark.parametrize(
    "command",
    [("list",), ("stats",)],
    ids=["list", "stats"],
)
def test_malformed_json_line(cli, filled: tuple[Memdir, str], command: tuple[str, ...]) -> None:
    """Readers degrade: the line is skipped with a warning naming it, the rest is answered,
    nothing is rewritten, and `verify` fails on it."""
    md, taught = filled
    with open(md.memory_shelf, "ab") as handle:
        handle.write(b'{"kind":"memory","id": oops}\n')
    before = snapshot(md.root)
    done = cli(*in_dir(md, *command))
    assert_degraded(done, "memories.jsonl:3", "not valid JSON")
    assert taught[:8] in done.out or command == ("stats",)
    shown = cli(*in_dir(md, "show", taught))
    assert shown.code == 0 and "Lisbon" in shown.out, shown
    assert snapshot(md.root) == before
    checked = cli(*in_dir(md, "verify"))
    assert checked.code == ExitStatus.PROBLEMS and "memories.jsonl:3" in checked.out


def test_a_malformed_line_is_kept_when_a_new_memory_is_appended(
    cli, filled: tuple[Memdir, str]
) -> None:
    """Appending reads no line (append-only): the broken line stays as it was, nothing is lost;
    the duplicate check reads the id cache, not the broken line, so a stored memory is found."""
    md, taught = filled
    with open(md.memory_shelf, "ab") as handle:
        handle.write(b'{"kind":"memory","id": oops}\n')
    before = md.memory_shelf.read_bytes()
    stored = cli(*in_dir(md, "teach", "The user lives in Lisbon"))
    assert stored.code == 0, stored
    assert stored.out.strip() == taught and "already stored" in stored.err
    assert md.memory_shelf.read_bytes() == before
    done = cli(*in_dir(md, "teach", "something new"))
    assert done.code == 0, done
    after = md.memory_shelf.read_bytes()
    assert after.startswith(before)
    assert json.loads(after[len(before) :])["text"] == "something new"
    checked = cli(*in_dir(md, "verify"))
    assert checked.code == ExitStatus.PROBLEMS and "memories.jsonl:3" in checked.out


@pytest.mark.parametrize(
    "bad_line, message",
    [
        (b'["a list"]', "JSON object"),
        (b'{"kind":"memory","id":"m-0000000000000000","text":"no other fields"}', "missing field"),
        (b'{"kind":"memory","id":"m-0000000000000000","created":"2026-01-01T00:00:00Z","text":"x",'
         b'"source":"teaching","author":"user","store":"semantic","importance":"high",'
         b'"temporal":"persistent","visibility":"normal"}', "importance"),
        (b'{"kind":"memory","id":"m-0000000000000000","created":"last tuesday","text":"x",'
         b'"source":"teaching","author":"user","store":"semantic","importance":5,'
         b'"temporal":"persistent","visibility":"normal"}', "created"),
        (b'{"kind":"event","id":"e-0000000000000000","at":5,"op":"confirm",'
         b'"target":"m-0000000000000000","actor":"user"}', "at"),
    ],
    ids=["not-an-object", "missing-fields", "wrong-type", "bad-time", "event-wrong-type"],
)  # fmt: skip
def test_schema_breaking_line(
    cli, filled: tuple[Memdir, str], bad_line: bytes, message: str
) -> None:
    md, _ = filled
    shelf = md.event_shelf if b'"event"' in bad_line else md.memory_shelf
    with open(shelf, "ab") as handle:
        handle.write(bad_line + b"\n")
    before = snapshot(md.root)
    done = cli(*in_dir(md, "list"))
    assert_degraded(done, f"{shelf.name}:", message)
    assert "Lisbon" in done.out and "jazz" in done.out
    assert snapshot(md.root) == before
    checked = cli(*in_dir(md, "verify"))
    assert checked.code == ExitStatus.PROBLEMS and f"{shelf.name}:" in checked.out


def test_invalid_yaml_in_memdir_yaml(cli, filled: tuple[Memdir, str]) -> None:
    md, _ = filled
    config = md.root / "memdir.yaml"
    config.write_text(config.read_text() + "settings: [unclosed\n  - : :\n")
    before = snapshot(md.root)
    for command in (("list",), ("teach", "new")):
        done = cli(*in_dir(md, *command))
        assert_clean_error(done, ExitStatus.BAD_FORMAT, "memdir.yaml", "invalid YAML")
    assert snapshot(md.root) == before


def test_unknown_major_format_version(cli, filled: tuple[Memdir, str]) -> None:
    md, _ = filled
    config = md.root / "memdir.yaml"
    text = config.read_text()
    assert "format: '1.1'" in text
    config.write_text(text.replace("format: '1.1'", "format: '2.0'"))
    before = snapshot(md.root)
    for command in (("list",), ("teach", "new")):
        done = cli(*in_dir(md, *command))
        assert_clean_error(done, ExitStatus.BAD_FORMAT, "2.0", "not supported")
    assert snapshot(md.root) == before
    config.write_text(text.replace("format: '1.0'", "format: '1.7'"))  # a newer minor is read
    assert cli(*in_dir(md, "list")).code == 0


def test_non_utf8_bytes_in_a_shelf(cli, filled: tuple[Memdir, str]) -> None:
    md, _ = filled
    with open(md.memory_shelf, "ab") as handle:
        handle.write(b'{"kind":"memory","text":"caf\xe9"}\n')
    before = snapshot(md.root)
    for command in (("list",), ("stats",)):
        assert_degraded(cli(*in_dir(md, *command)), "memories.jsonl:3", "not UTF-8")
    assert snapshot(md.root) == before
    checked = cli(*in_dir(md, "verify"))
    assert checked.code == ExitStatus.PROBLEMS and "not UTF-8" in checked.out


def test_non_utf8_bytes_on_stdin_and_in_arguments(cli, filled: tuple[Memdir, str]) -> None:
    md, taught = filled
    before = snapshot(md.root)
    piped = cli(*in_dir(md, "teach", "-"), stdin=b"caf\xe9 au lait\n")
    assert_clean_error(piped, ExitStatus.BAD_INPUT, "standard input is not UTF-8")
    # argv bytes that are not UTF-8 reach Python as lone surrogates
    argued = cli(*in_dir(md, "teach", "caf\udce9 au lait"))
    assert_clean_error(argued, ExitStatus.BAD_INPUT, "not valid UTF-8")
    reason = cli(*in_dir(md, "reject", taught, "--reason", "caf\udce9"))
    assert_clean_error(reason, ExitStatus.BAD_INPUT, "reason is not valid UTF-8")
    assert snapshot(md.root) == before


def test_unknown_id(cli, filled: tuple[Memdir, str]) -> None:
    md, _ = filled
    before = snapshot(md.root)
    for command in (
        ("show", "m-ffffffffffffffff"),
        ("log", "zzz"),
        ("forget", "nope"),
    ):
        assert_clean_error(cli(*in_dir(md, *command)), ExitStatus.NOT_FOUND, "no memory with id")
    assert snapshot(md.root) == before


def test_ambiguous_prefix_lists_the_candidates(cli, md: Memdir) -> None:
    ids = [lifecycle.teach(md, f"memory {n}", T0_DT).id for n in range(17)]
    by_digit: dict[str, list[str]] = {}
    for memory_id in ids:
        by_digit.setdefault(memory_id[2], []).append(memory_id)
    digit, clash = next((d, group) for d, group in sorted(by_digit.items()) if len(group) > 1)
    before = snapshot(md.root)
    for command in (("show", f"m-{digit}"), ("forget", digit)):  # with and without 'm-'
        done = cli(*in_dir(md, *command))
        line = assert_clean_error(done, ExitStatus.AMBIGUOUS, "more characters")
        for candidate in clash:
            assert candidate in line
        for other in set(ids) - set(clash):
            assert other not in line
    assert snapshot(md.root) == before
    unique = clash[0][:12]
    shown = cli(*in_dir(md, "show", unique, "--json"))
    assert shown.code == 0 and json.loads(shown.out)["id"] == clash[0]


def test_bad_now(cli, filled: tuple[Memdir, str]) -> None:
    md, _ = filled
    before = snapshot(md.root)
    assert_clean_error(
        cli(*in_dir(md, "--now", "yesterday-ish", "list"), now=None), ExitStatus.BAD_INPUT, "--now"
    )
    assert_clean_error(
        cli(*in_dir(md, "teach", "x"), now="2026-13-45"), ExitStatus.BAD_INPUT, "MEMDIR_NOW"
    )
    assert_clean_error(cli(*in_dir(md, "list", "--since", "soon")), ExitStatus.BAD_INPUT, "--since")
    assert snapshot(md.root) == before


@pytest.mark.parametrize(
    ("settings", "command", "status", "needle"),
    [
        (
            {"embedder": {"kind": "word2vec"}},
            ("similar", "Lisbon"),
            ExitStatus.BAD_FORMAT,
            "settings.embedder.kind must be one of auto, minilm, hashing, http",
        ),
        ({"embedder": {"kind": "http"}}, ("similar", "Lisbon"), ExitStatus.BAD_INPUT, "MEMDIR_EMBED_URL"),
        (
            {"embedder": {"kind": "hashing"}, "affect": {"annotator": "tarot"}},
            ("index",),
            ExitStatus.BAD_FORMAT,
            "settings.affect.annotator must be one of vader+nrc, vader, none",
        ),
        (
            {"embedder": {"kind": "hashing"}},
            ("recall", "Lisbon", "--profile", "nope"),
            ExitStatus.BAD_INPUT,
            "unknown recall profile",
        ),
    ],
    ids=["embedder-kind", "http-embedder-unset", "annotator", "recall-profile"],
)  # fmt: skip
def test_index_settings_mistakes_are_one_line_errors(
    cli, filled: tuple[Memdir, str], settings: dict, command: tuple[str, ...], status: ExitStatus,
    needle: str,
) -> None:  # fmt: skip
    """The index's own mistakes (indexers raise BadInputError) and wrong settings (refused when
    memdir.yaml is read) reach the error boundary as one line: no blanket `except ValueError`
    is needed, so none can hide a bug."""
    md, _ = filled
    assert cli(*in_dir(configure(md, embedder={"kind": "hashing"}), "index")).code == 0
    config_path = md.root / "memdir.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["settings"].update(settings)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    before = sorted(md.memory_shelf.parent.iterdir())
    done = cli(*in_dir(md, *command), env=clean_env(MEMDIR_EMBED_URL=None))
    assert_clean_error(done, status, needle)
    assert sorted(md.memory_shelf.parent.iterdir()) == before


@pytest.mark.parametrize("ttl", ["3x", "0d", "-1d"])
def test_bad_ttl(cli, md: Memdir, ttl: str) -> None:
    done = cli(*in_dir(md, "infer", "a guess", f"--ttl={ttl}"))
    assert_clean_error(done, ExitStatus.BAD_INPUT)
    assert md.memory_shelf.read_bytes() == b""


def test_not_a_memdir_says_how_to_create_one(cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cli("list", cwd=empty)
    assert_clean_error(done, ExitStatus.NOT_A_MEMDIR, "memdir init")
    done = cli("--dir", str(empty), "teach", "x")
    assert_clean_error(done, ExitStatus.NOT_A_MEMDIR, f"memdir init {empty}")
    done = cli("list", cwd=empty, env=clean_env(MEMDIR=str(empty)))
    assert_clean_error(done, ExitStatus.NOT_A_MEMDIR, "$MEMDIR", "memdir init")
    assert list(empty.iterdir()) == [], "nothing was created"


@pytest.mark.parametrize(
    "args",
    [
        ("bogus-command",),
        ("teach",),
        ("teach", "x", "--importance", "99"),
        ("list", "--limit", "0"),
    ],
    ids=["unknown-command", "missing-argument", "out-of-range", "bad-limit"],
)
def test_usage_errors_exit_2_without_a_traceback(cli, md: Memdir, args: tuple[str, ...]) -> None:
    done = cli(*in_dir(md, *args))
    assert done.code == ExitStatus.USAGE, done
    assert "Traceback" not in done.err and "Error" in done.err
    assert md.memory_shelf.read_bytes() == b""


@pytest.mark.process  # the traceback is what the interpreter prints for an uncaught error
def test_debug_shows_the_traceback(cli, filled: tuple[Memdir, str]) -> None:
    md, _ = filled
    plain = cli(*in_dir(md, "show", "zzz"))
    debug = cli(*in_dir(md, "--debug", "show", "zzz"))
    assert "Traceback" not in plain.err
    assert debug.code != 0
    assert "Traceback" in debug.err and "NotFoundError" in debug.err


def test_verify_flags_a_hand_edited_line(cli, filled: tuple[Memdir, str]) -> None:
    md, taught = filled
    assert cli(*in_dir(md, "verify")).code == 0
    raw = md.memory_shelf.read_bytes()
    assert raw.count(b"Lisbon") == 1
    md.memory_shelf.write_bytes(raw.replace(b"Lisbon", b"Porto"))
    done = cli(*in_dir(md, "verify"))
    assert done.code == ExitStatus.PROBLEMS, done
    problems = [line for line in done.out.splitlines() if line.startswith("problem:")]
    assert len(problems) == 1
    assert "memories.jsonl:1" in problems[0] and taught in problems[0] and "edited" in problems[0]
    report = json.loads(cli(*in_dir(md, "verify", "--json")).out)
    assert report["clean"] is False and len(report["problems"]) == 1


def test_verify_flags_a_hand_edited_event(cli, filled: tuple[Memdir, str]) -> None:
    md, _ = filled
    raw = md.event_shelf.read_bytes()
    md.event_shelf.write_bytes(raw.replace(b'"evidence":"yes"', b'"evidence":"no"'))
    done = cli(*in_dir(md, "verify"))
    assert done.code == ExitStatus.PROBLEMS and "events.jsonl:1" in done.out, done


def test_verify_flags_a_teaching_written_by_the_assistant(cli, md: Memdir) -> None:
    from memdir.archive_format.records import encode_line, new_memory

    forged = new_memory(
        created=T0, text="forged", source="teaching", author="assistant", store="semantic"
    )
    md.memory_shelf.write_bytes(encode_line(forged.to_line()))
    done = cli(*in_dir(md, "verify"))
    assert done.code == ExitStatus.PROBLEMS and "only the user teaches" in done.out, done


def _root_of(done: Run) -> str:
    assert done.code == 0, done
    return json.loads(done.out)["memdir"]


def test_discovery_order(cli, tmp_path: Path) -> None:
    explicit, from_env, outer = (init(tmp_path / name, T0_DT)[0].root for name in ("a", "b", "c"))
    inner = init(outer / "projects" / "inner", T0_DT)[0].root
    deep = inner / "x" / "y"
    deep.mkdir(parents=True)
    (outer / "plain" / "dir").mkdir(parents=True)
    env = clean_env(MEMDIR=str(from_env))
    assert _root_of(cli("--dir", str(explicit), "stats", "--json", cwd=deep, env=env)) == str(
        explicit
    )
    assert _root_of(cli("stats", "--json", cwd=deep, env=env)) == str(from_env)
    assert _root_of(cli("stats", "--json", cwd=deep)) == str(inner), "nearest parent wins"
    assert _root_of(cli("stats", "--json", cwd=outer / "plain" / "dir")) == str(outer)
    written = cli("teach", "found by walking up", cwd=deep)
    assert written.code == 0, written
    assert b"found by walking up" in (inner / "shelves" / "memories.jsonl").read_bytes()
    assert (outer / "shelves" / "memories.jsonl").read_bytes() == b""


def test_errors_never_touch_other_files(cli, filled: tuple[Memdir, str]) -> None:
    """A failing write command leaves the memdir exactly as it was (lock file aside)."""
    md, taught = filled
    before = snapshot(md.root)
    for args in (
        ("confirm", taught),
        ("reject", taught, "--reason", ""),
        ("teach", "   "),
        ("teach", "x", "--type", "9-not-a-type"),
        ("teach", "x", "--temporal", "forever"),
        ("infer", "x", "--by", ""),
    ):
        done = cli(*in_dir(md, *args))
        assert_clean_error(done, ExitStatus.BAD_INPUT)
    assert snapshot(md.root) == before


@pytest.mark.parametrize(
    "edit",
    [{"importance": "high"}, {"importance": float("inf")}, {"text": ["a"]}, {"links": "m-abc"}],
    ids=["importance-text", "importance-inf", "text-list", "links-string"],
)
def test_a_hand_edited_memory_line_is_skipped_by_the_index_with_a_warning(
    cli, hashed: Memdir, edit: dict
) -> None:
    kept = lifecycle.teach(hashed, "The heron nests by the lake", T0_DT).id
    line = {**json.loads(hashed.memory_shelf.read_text().splitlines()[0]), **edit}
    line["id"] = "m-00000000000000ff"
    with hashed.memory_shelf.open("a", encoding="utf-8") as shelf:
        shelf.write(json.dumps(line) + "\n")
    for command in (("recall", "heron", "--no-record"), ("search", "heron"), ("index",)):
        done = cli(*in_dir(hashed, *command))
        assert done.code == 0 and "Traceback" not in done.err, done
    done = cli(*in_dir(hashed, "recall", "heron lake", "--no-record", "--json"))
    assert [r["id"] for r in json.loads(done.out)["results"]] == [kept]
    rebuilt = cli(*in_dir(hashed, "index", "--rebuild"))
    assert "skipped " in rebuilt.err and "memories.jsonl:2: " in rebuilt.err, rebuilt
    assert cli(*in_dir(hashed, "verify")).code == 1
