"""`memdir bench locomo`'s statistics: the paired bootstrap interval of a comparison's delta
(cli/bench/stats.py), per-chat figures, and `--compare` arms run on the same built index."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.cli.bench.stats import paired_delta, percentile_interval

recalls = st.lists(st.sampled_from([0.0, 0.25, 1 / 3, 0.5, 2 / 3, 1.0]), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_interval_holds_the_observed_delta(data: st.DataObject) -> None:
    """Whatever the questions, the observed mean difference lies inside its interval, and the
    interval lies inside the range of the per-question differences."""
    baseline = data.draw(recalls)
    variant = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=len(baseline),
                                 max_size=len(baseline)))  # fmt: skip
    delta = paired_delta(baseline, variant, resamples=400, seed=data.draw(st.integers(0, 99)))
    differences = [b - a for a, b in zip(baseline, variant, strict=True)]
    observed = math.fsum(differences) / len(differences)
    assert delta.delta == pytest.approx(observed)
    assert delta.low <= delta.delta <= delta.high
    assert min(differences) - 1e-9 <= delta.low and delta.high <= max(differences) + 1e-9
    assert delta.variant - delta.baseline == pytest.approx(delta.delta)


@settings(max_examples=30, deadline=None)
@given(recalls)
def test_identical_arms_give_a_zero_interval(values: list[float]) -> None:
    delta = paired_delta(values, list(values))
    assert (delta.delta, delta.low, delta.high) == (0.0, 0.0, 0.0)


@settings(max_examples=30, deadline=None)
@given(recalls, st.sampled_from([-0.5, -0.25, 0.25, 0.5]))
def test_a_constant_shift_is_known_exactly(values: list[float], shift: float) -> None:
    """Every question moved by the same amount: no resample can say otherwise."""
    delta = paired_delta(values, [v + shift for v in values])
    assert delta.delta == pytest.approx(shift)
    assert delta.low == pytest.approx(shift) and delta.high == pytest.approx(shift)


@settings(max_examples=30, deadline=None)
@given(recalls, recalls)
def test_swapping_the_arms_mirrors_the_interval(first: list[float], second: list[float]) -> None:
    n = min(len(first), len(second))
    forward = paired_delta(first[:n], second[:n], resamples=300, seed=7)
    backward = paired_delta(second[:n], first[:n], resamples=300, seed=7)
    assert backward.delta == pytest.approx(-forward.delta)
    assert backward.low == pytest.approx(-forward.high)
    assert backward.high == pytest.approx(-forward.low)


def test_the_interval_is_seeded_and_narrows_with_more_questions() -> None:
    rng = random.Random(3)
    baseline = [float(rng.random() < 0.5) for _ in range(800)]
    variant = [1.0 if rng.random() < 0.1 else a for a in baseline]  # some questions gained
    assert paired_delta(baseline, variant, seed=1) == paired_delta(baseline, variant, seed=1)
    few = paired_delta(baseline[:50], variant[:50])
    many = paired_delta(baseline, variant)
    assert many.high - many.low < few.high - few.low
    assert many.low > 0  # 800 questions, ~40 gained and none lost: clearly positive


def test_a_real_gain_and_a_coin_flip_are_told_apart() -> None:
    """A variant that only reshuffles which questions it gets right (as many won as lost) has
    an interval around 0; one that wins without losing lies above 0."""
    reshuffled = paired_delta([1.0, 0.0] * 100, [0.0, 1.0] * 100)
    assert reshuffled.delta == 0 and reshuffled.low < 0 < reshuffled.high
    gained = paired_delta([0.0] * 150 + [1.0] * 50, [0.0] * 130 + [1.0] * 70)
    assert gained.low > 0


def test_percentiles_by_nearest_rank() -> None:
    assert percentile_interval([float(i) for i in range(1, 101)], 0.90) == (6.0, 95.0)
    assert percentile_interval([2.0], 0.95) == (2.0, 2.0)
    with pytest.raises(ValueError):
        paired_delta([1.0], [1.0, 0.0])


def _two_chats(path: Path) -> Path:
    """A file of two chats with one question each whose evidence one component finds: the
    turn that shares the question's words."""

    def chat(sample_id: str, turns: list[str], question: str, evidence: str) -> dict:
        return {
            "sample_id": sample_id,
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann" if n % 2 else "Bo", "dia_id": f"D1:{n}", "text": text}
                    for n, text in enumerate(turns, start=1)
                ],
            },
            "qa": [{"question": question, "answer": "?", "evidence": [evidence], "category": 4}],
        }  # fmt: skip

    filler = [f"Nothing much happened on day {n}, we just talked" for n in range(12)]
    path.write_text(json.dumps([
        chat("one", [*filler, "I adopted a grey cat called Miso"], "Which cat is called Miso?",
             "D1:13"),
        chat("two", ["My bicycle got a flat tyre today", *filler], "What broke on the bicycle?",
             "D1:1"),
    ]))  # fmt: skip
    return path


def test_compare_runs_each_arm_on_the_same_index_with_per_chat_deltas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`memdir bench locomo FILE --compare …`: every arm answers the same questions; an arm
    identical to the first has zero deltas with zero intervals, per file, category and chat;
    an arm whose every component weighs nothing ranks by id alone and cannot do better; the
    per-chat figures are there; a malformed spec is one line of error."""
    from memdir.cli.main import main

    path = _two_chats(tmp_path / "chats.json")
    settings_file = tmp_path / "hashing.yaml"
    settings_file.write_text("embedder: {kind: hashing}\n")  # fast, and no model needed
    silenced = ",".join(f"{name}=0" for name in (
        "semantic", "context_semantic", "bm25", "context_bm25", "session", "speaker",
        "importance", "degree", "meta_bm25", "when"))  # fmt: skip
    code = main(["bench", "locomo", str(path), "--settings", str(settings_file), "--json",
                 "--compare", "profile=default", "--compare", silenced,
                 "--resamples", "200"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    figures = report["files"][str(path)]
    assert set(figures["chats"]) == {"one", "two"}
    assert figures["chats"]["one"]["recall@10"] == 1.0  # the words match: BM25 finds it
    same, silent = figures["comparisons"]
    assert same["variant"]["profile"] == "default"
    for part in [same["overall"], *same["categories"].values(), *same["chats"].values()]:
        for metric in ("recall@5", "recall@10"):
            assert (part[metric]["delta"], part[metric]["low"], part[metric]["high"]) == (0, 0, 0)
    assert set(silent["chats"]) == {"one", "two"}
    overall = silent["overall"]["recall@5"]
    assert overall["n"] == 2 and overall["baseline"] == figures["overall"]["recall@5"]
    assert overall["delta"] <= 0 and overall["low"] <= overall["delta"] <= overall["high"]
    assert report["comparisons"][1]["overall"] == silent["overall"]  # one file: pooled = file

    for wrong, said in (("profile=a,profile=b", "at most one profile"),
                        ("loudness=1", "not COMPONENT=NUMBER"),
                        ("profile=nosuch", "unknown recall profile")):  # fmt: skip
        code = main(["bench", "locomo", str(path), "--settings", str(settings_file),
                     "--compare", wrong])  # fmt: skip
        _, err = capsys.readouterr()
        assert code != 0 and said in err and "Traceback" not in err


def test_compare_table_names_each_delta_and_its_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memdir.cli.main import main

    path = _two_chats(tmp_path / "chats.json")
    settings_file = tmp_path / "hashing.yaml"
    settings_file.write_text("embedder: {kind: hashing}\n")
    code = main(["bench", "locomo", str(path), "--settings", str(settings_file),
                 "--compare", "when=0", "--resamples", "100"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Δ R@5 [95 %]" in out and "chat one" in out and "+0.000 [+0.000, +0.000]" in out
    assert "per chat R@5 / R@10: one" in out


def test_two_runs_compare_by_question(tmp_path: Path) -> None:
    """benchmarks/compare_runs.py pairs two `--per-question` files by (file, sample, question
    number), whatever their line order; category 5 stays out; other questions are an error."""
    from benchmarks.compare_runs import compare, read_rows

    def rows(path: Path, hits: list[tuple[str, int, int, float]]) -> Path:
        path.write_text("".join(
            json.dumps({"file": "f.json", "sample": sample, "question_number": number,
                        "category": category, "recall@5": value, "recall@10": value}) + "\n"
            for sample, number, category, value in hits))  # fmt: skip
        return path

    base = rows(tmp_path / "a.jsonl", [("x", 0, 1, 0.0), ("x", 1, 5, 1.0), ("y", 0, 2, 1.0)])
    variant = rows(tmp_path / "b.jsonl", [("y", 0, 2, 1.0), ("x", 1, 5, 0.0), ("x", 0, 1, 1.0)])
    result = compare(read_rows(base), read_rows(variant), resamples=200)
    assert result["pooled"]["recall@5"]["n"] == 2 and result["pooled"]["recall@5"]["delta"] == 0.5
    assert result["f.json/x"]["recall@10"]["delta"] == 1.0
    assert result["f.json/y"]["recall@10"] == {"baseline": 1.0, "variant": 1.0, "delta": 0.0,
                                               "low": 0.0, "high": 0.0, "n": 1}  # fmt: skip
    other = rows(tmp_path / "c.jsonl", [("x", 0, 1, 1.0)])
    with pytest.raises(SystemExit, match="different questions"):
        compare(read_rows(base), read_rows(other))


def test_fusion_fit_learns_which_component_finds_the_evidence(tmp_path: Path) -> None:
    """benchmarks/fit_fusion.py on questions whose evidence is always the candidate with the
    best `bm25` and a mediocre `semantic`, below six decoys by the default's equal weights: the
    fitted blend ranks the evidence first, also in every held-out conversation, where the
    default leaves it out of the top 5."""
    from benchmarks.fit_fusion import FITTED, cross_validate, default_weights, fit, load, recalls

    rng = random.Random(5)
    lines = []
    for chat in ("a", "b", "c"):
        for number in range(20):
            candidates = [{"components": {"semantic": 0.5, "bm25": 0.9}, "evidence": True}]
            candidates += [{"components": {"semantic": rng.uniform(0.95, 1.0),
                                           "bm25": rng.uniform(0.5, 0.6)}, "evidence": False}
                           for _ in range(6)]  # decoys: above it by equal weights  # fmt: skip
            candidates += [{"components": {"semantic": rng.uniform(0.3, 0.55),
                                           "bm25": rng.uniform(0.0, 0.3)}, "evidence": False}
                           for _ in range(12)]  # fmt: skip
            rng.shuffle(candidates)
            lines.append({"file": "f.json", "sample": chat, "question_number": number,
                          "category": 1, "evidence": ["D1:1"], "candidates": candidates})  # fmt: skip
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    questions = load([path])
    default_at5, _ = recalls(questions, default_weights())
    weights = fit(questions, default_weights(), guard=0.0)
    fitted_at5, _ = recalls(questions, weights)
    assert fitted_at5.mean() == 1.0
    at1 = questions.features @ weights
    evidence_first = (at1.argmax(1) == questions.evidence.argmax(1)).mean()
    assert evidence_first == 1.0 and weights[FITTED.index("bm25")] > 0
    folds = cross_validate(questions)
    assert [fold["held_out"] for fold in folds] == ["f.json/a", "f.json/b", "f.json/c"]
    assert all(fold["fitted"][0] == 1.0 for fold in folds)
    assert default_at5.mean() == 0.0
