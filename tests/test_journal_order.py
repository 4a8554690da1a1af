"""A transcript keeps its order: `journal add --jsonl` and the importers store turns so that the
journal (ordered by time, whole seconds, then content id) reads them back as given, and a
dream's summary follows them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memdir.archive_format import journal
from memdir.archive_format.memdir import Memdir

NOW = "2026-05-01T09:00:00Z"
# in this order the content ids do not sort: a store that gives them one second scrambles them
TRANSCRIPT = [
    ("user", "I planted tomatoes in the allotment today"),
    ("assistant", "Nice, which variety did you choose?"),
    ("user", "Gardener's Delight, six plants along the south fence"),
    ("assistant", "They like sun, so the south fence is a good spot."),
    ("user", "I also sowed basil between them"),
]


class Stdin(io.StringIO):
    """Text stdin with the byte buffer memdir reads transcripts from."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.buffer = io.BytesIO(text.encode("utf-8"))


def read_texts(memdir: Memdir) -> list[str]:
    return [turn.text for turn in journal.read_journal(memdir).turns]


def test_journal_add_jsonl_keeps_the_given_order(
    md: Memdir, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir.cli.main import main

    lines = "".join(json.dumps({"role": r, "text": t}) + "\n" for r, t in TRANSCRIPT)
    monkeypatch.setattr("sys.stdin", Stdin(lines))
    code = main(["--dir", str(md.root), "--now", NOW, "journal", "add", "--jsonl",
                 "--session", "garden"])  # fmt: skip
    assert code == 0, capsys.readouterr()
    assert read_texts(md) == [text for _, text in TRANSCRIPT]
    turns = journal.read_journal(md).turns
    assert turns[-1].at == NOW  # none in the future: the last one is now
    assert sorted(t.id for t in turns) != [t.id for t in turns]  # the ids alone would scramble
    # a dream's summary quotes them in that order
    capsys.readouterr()
    assert main(["--dir", str(md.root), "--now", "2026-05-01T12:00:00Z", "dream"]) == 0
    summary = capsys.readouterr().out
    quoted = [summary.index(text) for _, text in TRANSCRIPT if text in summary]
    assert len(quoted) >= 2 and quoted == sorted(quoted), summary


def test_given_times_are_kept(md: Memdir, monkeypatch: pytest.MonkeyPatch) -> None:
    from memdir.cli.main import main

    rows = [{"role": "user", "text": "the later one", "at": "2026-04-30T10:00:00Z"},
            {"role": "user", "text": "the earlier one", "at": "2026-04-30T08:00:00Z"}]  # fmt: skip
    monkeypatch.setattr("sys.stdin", Stdin("".join(json.dumps(r) + "\n" for r in rows)))
    assert main(["--dir", str(md.root), "--now", NOW, "journal", "add", "--jsonl",
                 "--session", "s"]) == 0  # fmt: skip
    assert read_texts(md) == ["the earlier one", "the later one"]  # by time, as given


def chatgpt_export(tmp_path: Path, stamps: list[float | None]) -> Path:
    """One ChatGPT conversation: the transcript as a chain of message nodes."""
    mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None}}
    parent = "root"
    for n, ((role, text), stamp) in enumerate(zip(TRANSCRIPT, stamps, strict=True)):
        node = f"n{n}"
        mapping[node] = {
            "id": node, "parent": parent, "children": [],
            "message": {"id": node, "author": {"role": role}, "create_time": stamp,
                        "content": {"content_type": "text", "parts": [text]}},
        }  # fmt: skip
        mapping[parent].setdefault("children", []).append(node)
        parent = node
    conversation = {"id": "c0000000-0000-4000-8000-0000000000aa", "title": "Garden",
                    "create_time": 1777626000.0, "mapping": mapping, "current_node": parent}  # fmt: skip
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conversation]))
    return path


@pytest.mark.parametrize(
    "stamps",
    [[None] * 5, [1777626000.2, 1777626000.5, None, 1777626000.9, None]],
    ids=["all-null", "same-second"],
)
def test_chatgpt_import_keeps_the_conversation_order(
    md: Memdir, tmp_path: Path, stamps: list[float | None], capsys: pytest.CaptureFixture[str]
) -> None:
    from memdir.cli.main import main

    path = chatgpt_export(tmp_path, stamps)
    code = main(["--dir", str(md.root), "--now", NOW, "import", str(path)])
    assert code == 0, capsys.readouterr()
    assert read_texts(md) == [text for _, text in TRANSCRIPT]
    # importing the same export again adds nothing
    assert main(["--dir", str(md.root), "--now", NOW, "import", str(path)]) == 0
    assert len(read_texts(md)) == len(TRANSCRIPT)
