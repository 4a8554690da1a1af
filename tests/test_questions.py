"""Memories that are mostly questions: the share of their words in questions, and recall's
`questions` weight, which lowers their text components (docs/RECALL.md §2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from memdir.indexers.questions import MOSTLY, question_share


@pytest.fixture
def cli(cli_in_process):
    """What the commands do and print is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("What are your hobbies?", 1.0),
        ("Emi: How about you, Liza? Have you picked up any hobbies lately?", 1.0),
        ("I like hiking. Do you?", 2 / 5),
        ("really?!", 1.0),
        ("Sounds fun! What did you do? 😂", 4 / 6),  # the emoji counts for neither side
        ("The keys are in the blue vase.", 0.0),
        ("Is it in the shed", 0.0),  # no question mark: read as it is written
        ("", 0.0),
        ("😂 ?", 0.0),
        ("你去哪里了？", 1.0),
    ],
)
def test_question_share_counts_the_words_of_questions(text: str, share: float) -> None:
    assert question_share(text) == pytest.approx(share)


@given(st.text())
def test_question_share_is_a_share_of_any_text(text: str) -> None:
    assert 0.0 <= question_share(text) <= 1.0


@given(st.lists(st.from_regex(r"[A-Za-z][A-Za-z ]{0,20}", fullmatch=True), min_size=1))
def test_questions_only_or_statements_only(sentences: list[str]) -> None:
    assert question_share(" ".join(s + "?" for s in sentences)) == 1.0
    assert question_share(" ".join(s + "." for s in sentences)) == 0.0


def _teach_and_recall(cli, tmp_path: Path, questions: float | None, exact_below: int) -> dict:
    root = tmp_path / f"memory-{questions}-{exact_below}"
    assert cli("init", str(root)).code == 0
    config = yaml.safe_load((root / "memdir.yaml").read_text())
    settings = config.setdefault("settings", {})
    settings["embedder"] = {"kind": "hashing"}
    settings["recall"] = {"exact_below": exact_below}
    if questions is not None:
        settings["recall"]["profiles"] = {"default": {"questions": questions}}
    (root / "memdir.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for text in ("Do you remember where the spare house keys are?",
                 "The spare house keys are in the blue vase by the door",
                 "The garden needs watering on Sundays",
                 "Have you watered the garden this week?"):  # fmt: skip
        done = cli("--dir", str(root), "teach", text)
        assert done.code == 0, done
    done = cli("--dir", str(root), "recall", "where are the spare house keys?", "--json",
               "--explain")  # fmt: skip
    assert done.code == 0, done
    return json.loads(done.out)


def _by_text(data: dict) -> dict[str, dict]:
    return {row["text"]: row for row in data["results"]}


@pytest.mark.parametrize("exact_below", [20_000, 0])
def test_recall_lowers_the_text_components_of_questions(cli, tmp_path: Path,
                                                        exact_below: int) -> None:  # fmt: skip
    """With the default weight (0.4) a question's four text components are 0.6 of what they
    are with the weight at 0, the statements' are unchanged, --explain says so, and the answer
    ranks above the question that shares its words; in both scopes (every memory, a pool)."""
    plain = _by_text(_teach_and_recall(cli, tmp_path, 0.0, exact_below))
    data = _teach_and_recall(cli, tmp_path, None, exact_below)
    demoted = _by_text(data)
    question = "Do you remember where the spare house keys are?"
    answer = "The spare house keys are in the blue vase by the door"
    assert demoted[question]["raw"]["asks"] == 1.0 and demoted[answer]["raw"]["asks"] == 0.0
    for name in ("semantic", "bm25", "context_semantic", "context_bm25"):
        assert plain[question]["components"][name] > 0
        assert demoted[question]["components"][name] == pytest.approx(
            0.6 * plain[question]["components"][name], abs=2e-4
        )
        assert demoted[answer]["components"][name] == plain[answer]["components"][name]
    assert data["results"][0]["text"] == answer
    pool = next(stage for stage in data["stages"] if stage["name"] == "candidate pool")
    note = "questions: memories that are mostly questions keep × 0.60 of their four text components"
    assert f"{note} (weight questions 0.4)" in pool["notes"]
    assert question_share(question) >= MOSTLY
    root = tmp_path / f"memory-None-{exact_below}"
    shown = cli("--dir", str(root), "recall", "where are the spare house keys?", "--explain")
    assert shown.code == 0 and "mostly questions keep × 0.60" in shown.out, shown


def test_the_note_tells_nothing_of_hidden_memories_and_the_weight_is_checked(
    cli, tmp_path: Path
) -> None:
    """--explain's note is the same whether private questions exist or not (a count would
    tell of them); a `questions` weight outside 0–1 is a one-line error, not a traceback."""
    notes = []
    for private in (False, True):
        root = tmp_path / f"memory-{private}"
        assert cli("init", str(root)).code == 0
        config = yaml.safe_load((root / "memdir.yaml").read_text())
        config.setdefault("settings", {})["embedder"] = {"kind": "hashing"}
        (root / "memdir.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        assert cli("--dir", str(root), "teach", "The spare keys are in the blue vase").code == 0
        if private:
            for text in ("Where did I hide the spare keys?", "Do you know my PIN?"):
                done = cli("--dir", str(root), "teach", text, "--visibility", "private")
                assert done.code == 0, done
        done = cli("--dir", str(root), "recall", "spare keys", "--json", "--explain")
        assert done.code == 0, done
        stages = json.loads(done.out)["stages"]
        notes.append([n for n in stages[1]["notes"] if n.startswith("questions")])
    assert notes[0] == notes[1] and notes[0]
    config["settings"]["recall"] = {"profiles": {"default": {"questions": 1.5}}}
    (root / "memdir.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = cli("--dir", str(root), "recall", "spare keys")
    assert done.code != 0 and "not between 0 and 1" in done.err and "Traceback" not in done.err
