"""Recall on small hand-made archives: provenance, filters, time, counterweights, verdicts."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import configure

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir, init
from memdir.cli.bench.locomo import load_samples, repair_evidence
from memdir.indexers.index import MemoryIndex
from memdir.indexers.recall import RecallOptions, Stage, recall


@pytest.fixture
def cli(cli_in_process):
    """What recall ranks and prints is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


T0 = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)


def fresh(tmp_path: Path) -> Memdir:
    memdir, _ = init(tmp_path / "memory", T0)
    return memdir


def run(memdir: Memdir, query: str, now: datetime, **options: object):
    index = MemoryIndex(memdir)
    index.update()
    try:
        return recall(index, query, now, RecallOptions(**options))  # type: ignore[arg-type]
    finally:
        index.close()


def ids(result) -> list[str]:
    return [candidate.id for candidate in result.results]


def test_provisional_ranks_below_equal_durable(tmp_path: Path) -> None:
    memdir = fresh(tmp_path)
    taught = lifecycle.teach(memdir, "Maria's favourite colour is green", T0).id
    guessed = lifecycle.infer(memdir, "Maria's favourite colour is green", T0).id
    lifecycle.teach(memdir, "The office is closed on public holidays", T0)
    result = run(memdir, "what is Maria's favourite colour?", T0 + timedelta(hours=1))
    scored = {
        row["id"]: row for row in next(s for s in result.stages if s.name == Stage.SCORE).rows
    }
    assert scored[guessed]["weight"] == pytest.approx(0.4)
    assert scored[taught]["weight"] == pytest.approx(1.0)
    assert scored[guessed]["score"] == pytest.approx(0.4 * scored[taught]["score"])
    # the two say the same thing: the result keeps the durable one and collapses the other
    assert ids(result)[0] == taught and guessed not in ids(result)


def test_rejected_forgotten_superseded_and_expired_never_returned(tmp_path: Path) -> None:
    memdir = fresh(tmp_path)
    rejected = lifecycle.infer(memdir, "Tom hates cycling to work", T0).id
    lifecycle.reject(memdir, rejected, "wrong", T0)
    forgotten = lifecycle.teach(memdir, "Tom's bicycle lock code is 4471", T0).id
    lifecycle.forget(memdir, forgotten, T0)
    old = lifecycle.teach(memdir, "Tom rides a red bicycle", T0, key="bike").id
    new = lifecycle.teach(memdir, "Tom rides a blue bicycle", T0 + timedelta(days=1), key="bike").id
    expired = lifecycle.infer(memdir, "Tom cycles every morning", T0, ttl=timedelta(days=2)).id
    result = run(memdir, "Tom bicycle cycling", T0 + timedelta(days=5))
    returned = ids(result)
    assert new in returned
    for gone in (rejected, forgotten, old, expired):
        assert gone not in returned
    with_expired = run(memdir, "Tom bicycle cycling", T0 + timedelta(days=5), include_expired=True)
    assert expired in ids(with_expired)


def test_time_expression_ranks_by_closeness_to_the_window(tmp_path: Path) -> None:
    """A time window ranks (the `when` component: 1 inside, falling to 0 at the window's length,
    at least a week, outside), it does not filter: chats tell of a day days later."""
    memdir = configure(fresh(tmp_path), embedder={"kind": "hashing"})

    def hike(where: str, day: datetime) -> str:
        return lifecycle.teach(memdir, f"We went hiking in the {where} with friends", day).id

    september = hike("Pyrenees", datetime(2026, 9, 10, tzinfo=timezone.utc))
    may = hike("Alps", datetime(2026, 5, 10, tzinfo=timezone.utc))
    lifecycle.teach(memdir, "The office is closed on public holidays", T0)
    now = datetime(2026, 10, 1, tzinfo=timezone.utc)
    plain = run(memdir, "where did we go hiking?", now, perfect=True)
    assert ids(plain)[:2] == [september, may]  # the newer one first, by id order at a tie
    assert all(c.components["when"] == 0.0 for c in plain.results)
    result = run(memdir, "where did we go hiking in May?", now, perfect=True)
    assert result.analysis.window is not None
    assert ids(result)[:2] == [may, september]  # ranked, not filtered
    when = {c.id: c.components["when"] for c in result.results}
    assert when[may] == 1.0 and when[september] == 0.0
    # a day told of two days later is still near the day the query names
    told = hike("Dolomites", datetime(2026, 6, 3, 12, tzinfo=timezone.utc))
    day = run(memdir, "where did we go hiking on 01.06.2026?", now, perfect=True)
    assert ids(day)[0] == told
    near = {c.id: c.components["when"] for c in day.results}
    assert near[told] == pytest.approx(1 - 1.5 / 7, abs=1e-6) and near[september] == 0.0


CHAT = (
    # (session, day counted from 1 May 2026, speaker, text)
    ("s1", 2, "Sam", "I finally booked the trip to Lisbon for the conference"),
    ("s1", 2, "Ana", "Nice! Are you taking the train or flying?"),
    ("s1", 2, "Sam", "Flying, the train takes two days from here"),
    ("s1", 2, "Ana", "Bring me some pastel de nata please"),
    ("s2", 20, "Ana", "My sister starts her nursing job next week"),
    ("s2", 20, "Sam", "She must be nervous, the hospital is huge"),
    ("s2", 20, "Ana", "She is, but she loved the night shifts during training"),
    ("s3", 40, "Sam", "The conference talk in Lisbon went really well"),
    ("s3", 40, "Ana", "Did anyone ask about the database migration?"),
    ("s3", 40, "Sam", "Yes, two people want the slides about the migration"),
)


def chat_memdir(tmp_path: Path, **recall_settings: object) -> Memdir:
    memdir = fresh(tmp_path)
    if recall_settings:
        memdir = configure(memdir, recall=recall_settings)
    for minute, (session, day, speaker, text) in enumerate(CHAT):
        when = datetime(2026, 5, 1, 18, minute, tzinfo=timezone.utc) + timedelta(days=day - 1)
        lifecycle.observe(memdir, f"{speaker}: {text}", when, f"chat:{speaker}", session=session)
    return memdir


@pytest.mark.parametrize(
    "query",
    [
        "how did Sam travel to Lisbon?",
        "what does Ana's sister do?",
        "slides about the migration",
        "what did Sam say about the Lisbon conference in May?",
    ],
)
def test_pool_scope_scores_a_small_archive_like_the_exact_scope(tmp_path: Path, query: str) -> None:
    """Large archives are scored from a pool (FAISS and Tantivy top-N, scored from the memory
    table); on an archive smaller than the pool that scores every memory, so the two scopes
    must agree on every score."""
    now = datetime(2026, 7, 1, tzinfo=timezone.utc)
    exact = run(chat_memdir(tmp_path / "exact"), query, now, k=5)
    pooled = run(chat_memdir(tmp_path / "pool", exact_below=0), query, now, k=5)
    notes = {s.name: " ".join(s.notes) for s in pooled.stages}
    assert "a pool of" in notes[Stage.POOL], notes
    assert "every memory" in " ".join(next(s for s in exact.stages if s.name == Stage.POOL).notes)
    texts = [(c.memory.text, round(c.score, 5)) for c in exact.results]
    assert [(c.memory.text, round(c.score, 5)) for c in pooled.results] == texts
    for mine, theirs in zip(exact.results, pooled.results, strict=True):
        assert mine.components == pytest.approx(theirs.components, abs=1e-5)


@pytest.mark.parametrize("exact_below", [20_000, 0])
def test_speaker_and_session_components(tmp_path: Path, exact_below: int) -> None:
    """Checked against the conversation itself, in both scopes: the speaker component is 1
    exactly for what the named person said; the session prior is highest for the session
    whose words the query shares."""
    memdir = chat_memdir(tmp_path, exact_below=exact_below)
    result = run(memdir, "what did Ana say about the nursing job at the hospital?",
                 datetime(2026, 7, 1, tzinfo=timezone.utc), k=10)  # fmt: skip
    assert result.analysis.speaker == "Ana"
    for candidate in result.results:
        said_by_ana = candidate.memory.line["author"] == "chat:Ana"
        assert candidate.components["speaker"] == (1.0 if said_by_ana else 0.0)
    by_session: dict[str, float] = {}
    for candidate in result.results:
        by_session[candidate.memory.line["session"]] = candidate.components["session"]
    assert by_session["s2"] == 1.0 and all(v < 1.0 for k, v in by_session.items() if k != "s2")


def test_a_reader_keeps_recalling_while_another_index_rebuilds(tmp_path: Path) -> None:
    """A long-lived reader (an MCP server) has the memory table mapped while another process
    forgets a memory and rebuilds, which renumbers the memories and compacts the vector store.
    Its next recall (without asking needs_update first) follows the new generation and answers
    like a fresh index."""
    memdir = chat_memdir(tmp_path, exact_below=0)
    now = datetime(2026, 7, 1, tzinfo=timezone.utc)
    query = "how did Sam travel to Lisbon?"
    first = lifecycle.observe(memdir, "Sam: a first line before everything", T0, "chat:Sam",
                              session="s0")  # fmt: skip
    reader = MemoryIndex(memdir)
    reader.update()
    assert recall(reader, query, now).results
    lifecycle.forget(memdir, first.id, now)
    writer = MemoryIndex(memdir)
    assert writer.update().rebuilt  # forgetting rewrites what the index had read
    writer.close()
    after = [(c.id, round(c.score, 5)) for c in recall(reader, query, now).results]
    fresh_index = MemoryIndex(memdir)
    assert after == [(c.id, round(c.score, 5)) for c in recall(fresh_index, query, now).results]
    fresh_index.close()
    reader.close()


def test_pool_scope_ranks_by_the_time_window_and_keeps_to_now(tmp_path: Path) -> None:
    memdir = chat_memdir(tmp_path, exact_below=0)
    june = datetime(2026, 6, 30, tzinfo=timezone.utc)
    windowed = run(memdir, "what did Sam say about the Lisbon conference in May?", june, k=5)
    assert windowed.analysis.window is not None
    when = {c.memory.line["session"]: c.components["when"] for c in windowed.results}
    # s1 (2 May) is inside; s3 (the talk, 9 June) is 9 days past a 31-day window
    assert when["s1"] == 1.0 and when["s3"] == pytest.approx(1 - 9 / 31, abs=0.02)
    before_s3 = datetime(2026, 6, 1, tzinfo=timezone.utc)  # session s3 is on 9 June
    early = run(memdir, "the conference talk in Lisbon and the slides", before_s3, k=10)
    assert early.results and not any(c.memory.line["session"] == "s3" for c in early.results)


SAD_INTERVIEW = (
    "My job interview went terribly and I feel awful",
    "I failed the job interview, I am miserable and ashamed",
    "The job interview was a disaster, I cried all evening",
    "I hate how the job interview went, everything is hopeless",
    "Another rejection after the job interview, I feel worthless",
)
SAD_INTERVIEW_QUERY = "I feel terrible and hopeless about my awful job interview"


def teach_in_order(memdir: Memdir, texts: list[str]) -> None:
    """Teach each text, one minute after the one before, from T0."""
    for number, text in enumerate(texts):
        lifecycle.teach(memdir, text, T0 + timedelta(minutes=number))


def test_counterweights_change_affect_mix_only_for_negative_queries(tmp_path: Path) -> None:
    memdir = fresh(tmp_path)
    good = ["I prepared well for the job interview and learned a lot from it"]
    teach_in_order(memdir, [*SAD_INTERVIEW, *good])
    now = T0 + timedelta(days=1)
    on = run(memdir, SAD_INTERVIEW_QUERY, now, k=3)
    off = run(memdir, SAD_INTERVIEW_QUERY, now, k=3, counterweights=False)
    assert on.analysis.negative

    def non_negative(result) -> int:
        return sum(1 for c in result.results if float(c.affect.get("valence", 0)) >= 0)

    assert non_negative(on) > non_negative(off)
    neutral = "what happened at the job interview?"
    neutral_on = run(memdir, neutral, now, k=3)
    neutral_off = run(memdir, neutral, now, k=3, counterweights=False)
    assert not neutral_on.analysis.negative
    assert ids(neutral_on) == ids(neutral_off)


def test_counterweights_never_trade_relevance_for_mood(tmp_path: Path) -> None:
    """A cheerful memory about something else never replaces a relevant negative one."""
    memdir = fresh(tmp_path)
    unrelated = "I love the sunny tomatoes growing happily on my balcony"
    teach_in_order(memdir, [*SAD_INTERVIEW[:3], unrelated])
    later = T0 + timedelta(days=1)
    on = run(memdir, SAD_INTERVIEW_QUERY, later, k=3)
    assert on.analysis.negative
    assert unrelated not in [c.memory.text for c in on.results]
    assert ids(on) == ids(run(memdir, SAD_INTERVIEW_QUERY, later, k=3, counterweights=False))


def test_counterweights_draw_from_the_same_subject(tmp_path: Path) -> None:
    """A mood-heavy query is far in meaning from a calm memory of its subject: the subject
    (the words the query shares with its best result) lets it balance the results, while a
    cheerful memory about something else still never enters, and the best result stays."""
    memdir = fresh(tmp_path)
    calm = [
        "The interview panel said they liked my portfolio",
        "I got a friendly email from the interview recruiter",
    ]
    unrelated = "I love the sunny tomatoes growing happily on my balcony"
    teach_in_order(memdir, [*SAD_INTERVIEW, *calm, unrelated])
    later = T0 + timedelta(days=1)
    on = run(memdir, SAD_INTERVIEW_QUERY, later, k=5)
    off = run(memdir, SAD_INTERVIEW_QUERY, later, k=5, counterweights=False)
    texts = [c.memory.text for c in on.results]
    assert on.analysis.negative and unrelated not in texts
    assert on.results[0].id == off.results[0].id

    def negatives(result) -> int:
        return sum(1 for c in result.results if float(c.affect.get("valence", 0)) < 0)

    assert negatives(off) == 5 and negatives(on) == 5 - len(calm)  # both calm ones balance
    assert set(calm) <= set(texts)


def test_now_moves_recency_and_cutoffs(tmp_path: Path) -> None:
    memdir = fresh(tmp_path)
    mood = lifecycle.teach(memdir, "I feel anxious about the exam", T0, type="EMOTION").id
    lifecycle.teach(memdir, "The exam is on Friday in room 4", T0)
    soon = run(memdir, "exam", T0 + timedelta(hours=3))
    later = run(memdir, "exam", T0 + timedelta(hours=72))
    assert mood in ids(soon)
    assert mood not in ids(later)  # the emotion cut-off is 48 h
    recency_soon = {c.id: c.components["recency"] for c in soon.results}
    recency_later = {c.id: c.components["recency"] for c in later.results}
    common = set(recency_soon) & set(recency_later)
    assert common and all(recency_later[i] < recency_soon[i] for i in common)


def test_no_data_on_empty_or_unrelated_archive(tmp_path: Path) -> None:
    memdir = fresh(tmp_path)
    assert run(memdir, "what is my sister's name?", T0).verdict == "NO_DATA"
    lifecycle.teach(memdir, "Quarterly tax forms are due in April", T0)
    result = run(memdir, "zebra xylophone quantum", T0)
    assert result.verdict in ("NO_DATA", "LOW_CONFIDENCE")
    grounded = run(memdir, "when are the quarterly tax forms due?", T0)
    assert grounded.verdict == "GROUNDED"


def test_hard_fact_is_the_current_value_of_a_named_key(tmp_path: Path) -> None:
    memdir = fresh(tmp_path)
    lifecycle.teach(memdir, "I drink green tea", T0, key="drink")
    current = lifecycle.teach(
        memdir, "I switched to espresso", T0 + timedelta(days=3), key="drink"
    ).id
    result = run(memdir, "what do I drink?", T0 + timedelta(days=4))
    assert ids(result)[0] == current
    assert "hard-fact" in result.results[0].channels


def test_budget_limits_tokens(tmp_path: Path) -> None:
    memdir = fresh(tmp_path)
    for number in range(6):
        lifecycle.teach(
            memdir, f"Garden note {number}: the tomatoes need water " + "and care " * 10, T0
        )
    result = run(memdir, "tomatoes garden", T0, budget=40)
    assert 0 < len(result.results) < 6
    assert sum(len(c.memory.text) // 4 for c in result.results) <= 40


def test_recall_cli_json_and_explain(tmp_path: Path, cli) -> None:
    root = tmp_path / "memory"
    assert cli("init", str(root)).code == 0
    taught = cli("--dir", str(root), "teach", "My sister Ana is a nurse in Lisbon").out.strip()
    done = cli("--dir", str(root), "recall", "who is a nurse?", "--json")
    assert done.code == 0, done
    data = json.loads(done.out)
    assert data["verdict"] in ("GROUNDED", "LOW_CONFIDENCE")
    first = data["results"][0]
    assert first["id"] == taught and {"id", "text", "score", "components"} <= set(first)
    explained = cli("--dir", str(root), "recall", "who is a nurse?", "--explain")
    assert explained.code == 0, explained
    for stage in (
        Stage.QUERY,
        Stage.POOL,
        Stage.FILTERS,
        Stage.SCORE,
        Stage.COUNTERWEIGHTS,
        Stage.VERDICT,
    ):
        assert stage.value in explained.out
    # the same memories recalled at the same second ($MEMDIR_NOW) by the same actor: one line
    # (one content id; FORMAT.md: a recall counts once per id, and is not appended twice)
    recalls = (root / "shelves" / "recalls.jsonl").read_text().splitlines()
    assert len(recalls) == 1 and json.loads(recalls[0])["memories"][0] == taught
    later = cli("--dir", str(root), "recall", "who is a nurse?", now="2026-05-01T09:00:01Z")
    assert later.code == 0, later
    assert len((root / "shelves" / "recalls.jsonl").read_text().splitlines()) == 2
    assert cli("--dir", str(root), "verify").code == 0


def test_bench_loader_repairs_malformed_evidence(tmp_path: Path) -> None:
    known = {"D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D11:26", "D30:5"}
    counts: dict[str, int] = {}
    raw = ["D8:6; D9:17", "D9:1 D4:4 D4:6", "D:11:26", "D30:05", "D", "D99:1", "D4:4"]
    assert repair_evidence(raw, known, counts) == [
        "D8:6",
        "D9:17",
        "D9:1",
        "D4:4",
        "D4:6",
        "D11:26",
        "D30:5",
    ]
    assert counts == {"repaired": 4, "dropped": 2}
    sample = {
        "sample_id": "s1",
        "conversation": {
            "speaker_a": "A", "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "A", "dia_id": "D1:1", "text": "I adopted a cat"},
                {"speaker": "B", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a grey cat"},
            ],
        },
        "qa": [{"question": "What pet?", "answer": "cat", "evidence": ["D1:1; D1:2", "D7:7"], "category": 1}],
    }  # fmt: skip
    path = tmp_path / "mini.json"
    path.write_text(json.dumps([sample]))
    loaded = load_samples(path)[0]
    assert loaded.questions[0].evidence == ["D1:1", "D1:2"]
    assert loaded.repairs == {"repaired": 1, "dropped": 1}
    assert loaded.turns[1].text == "B: Lovely! [image: a grey cat]"


def test_explain_and_json_show_the_stages_by_their_documented_names(tmp_path: Path) -> None:
    """The stage names are an interface (scripts read `--json`): written out here, and each is
    named in docs/RECALL.md."""
    memdir = fresh(tmp_path)
    lifecycle.teach(memdir, "The heron nests by the lake", T0)
    result = run(memdir, "heron", T0 + timedelta(hours=1))
    names = [stage["name"] for stage in result.to_dict(explain=True)["stages"]]
    assert names == ["query analysis", "candidate pool", "filters", "decay", "score", "activation",
                     "interference", "guaranteed slots",
                     "counterweights", "diversity", "budget"]  # fmt: skip
    assert "stages" not in result.to_dict(explain=False)
    doc = (Path(__file__).parent.parent / "docs" / "RECALL.md").read_text(encoding="utf-8")
    assert all(name in doc.lower() for name in names)


def _bench_file(path: Path, sample_id: str, question: str) -> Path:
    sample = {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat called Miso"},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "My bicycle got a flat tyre today"},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "The weather is lovely here"},
            ],
        },
        "qa": [
            {"question": question, "answer": "?", "evidence": ["D1:1"], "category": 1},
            {"question": "What broke on the bicycle?", "answer": "tyre", "evidence": ["D1:2"], "category": 4},
        ],
    }  # fmt: skip
    path.write_text(json.dumps([sample]))
    return path


def test_bench_reports_each_file_pooled_and_per_question(tmp_path: Path, minilm) -> None:
    """`memdir bench locomo A B`: each file's figures, the pooled ones over every question, and
    one `--per-question` row per question with each evidence's rank and the components."""
    from memdir.cli.bench.locomo import run as bench

    first = _bench_file(tmp_path / "a.json", "a", "What pet did Ann adopt?")
    second = _bench_file(tmp_path / "b.json", "b", "Which cat is called Miso?")
    rows: list[dict] = []
    report = bench([first, second], per_question=rows)
    assert list(report["files"]) == [str(first), str(second)]
    assert [figures["overall"]["n"] for figures in report["files"].values()] == [2, 2]
    assert report["pooled"]["overall"]["n"] == 4
    assert report["pooled"]["categories"]["1"]["n"] == 2
    assert [(row["file"], row["question_number"]) for row in rows] == [
        ("a.json", 0), ("a.json", 1), ("b.json", 0), ("b.json", 1)
    ]  # fmt: skip
    row = rows[0]
    assert row["evidence_ranks"]["D1:1"] == row["results"].index("D1:1") + 1
    assert row["recall@10"] == 1.0
    best = row["candidates"][0]
    assert set(best["components"]) >= {"semantic", "bm25", "speaker", "session"}
    assert best["shown"] and best["evidence"] == (best["dia_id"] == "D1:1")


def test_bench_command_takes_several_files(tmp_path: Path, cli, minilm) -> None:
    first = _bench_file(tmp_path / "a.json", "a", "What pet did Ann adopt?")
    second = _bench_file(tmp_path / "b.json", "b", "Which cat is called Miso?")
    out = tmp_path / "questions.jsonl"
    # the files as given, relative: a table cell holds a short name whole wherever tmp_path is
    shown = cli("bench", "locomo", first.name, second.name, "--per-question", str(out),
                cwd=tmp_path)  # fmt: skip
    assert shown.code == 0, shown.err
    assert "pooled over 2 files" in shown.out and second.name in shown.out
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4 and lines[2]["question"] == "Which cat is called Miso?"


def test_bench_weight_overrides_change_the_profile_measured(tmp_path: Path, cli, minilm) -> None:
    """`--weight NAME=VALUE` changes the profile's weights in the scratch memdirs: with every
    relevance component and prior that these turns have set to 0, every candidate scores 0;
    the report names the overrides; a name recall does not weigh, or a value that is not a
    number, is one line of error."""
    path = _bench_file(tmp_path / "a.json", "a", "What pet did Ann adopt?")

    def measured(*extra: str) -> tuple[dict, list[dict]]:
        out = tmp_path / "questions.jsonl"
        done = cli("bench", "locomo", str(path), "--json", "--per-question", str(out), *extra)
        assert done.code == 0, done.err
        report = json.loads(done.out)["files"][str(path)]
        return report, [json.loads(line) for line in out.read_text().splitlines()]

    report, rows = measured()
    assert report["weights"] == {} and report["overall"]["recall@1"] == 1.0
    assert all(row["candidates"][0]["score"] > 0 for row in rows)
    silenced = ("semantic", "context_semantic", "bm25", "context_bm25", "session", "speaker",
                "importance", "degree")  # fmt: skip
    report, rows = measured(*(f"--weight={name}=0" for name in silenced))
    assert report["weights"] == dict.fromkeys(silenced, 0.0)
    assert all(c["score"] == 0 for row in rows for c in row["candidates"])
    for wrong, said in (("loudness=1", "not COMPONENT=NUMBER"), ("bm25", "not COMPONENT=NUMBER"),
                        ("bm25=lots", "is not a number")):  # fmt: skip
        done = cli("bench", "locomo", str(path), "--weight", wrong)
        assert done.code != 0 and said in done.err and "Traceback" not in done.err


def test_bench_settings_and_sleep_switch_stages_without_code_edits(tmp_path: Path, cli) -> None:
    """`--settings FILE` gives each sample's memdir those settings (here the hashing embedder,
    a stage switched off), `--sleep` runs one sleep on each first; both are in the report, and a
    bad settings file is a one-line error."""
    first = _bench_file(tmp_path / "a.json", "a", "What pet did Ann adopt?")
    settings = tmp_path / "stage-off.yaml"
    settings.write_text("embedder: {kind: hashing}\nrecall: {activation: false}\n")
    done = cli("bench", "locomo", str(first), "--settings", str(settings), "--sleep", "--json")
    assert done.code == 0, done.err
    figures = json.loads(done.out)["files"][str(first)]
    assert figures["sleep"] is True and figures["overall"]["n"] == 2
    settings.write_text("recall: {activation: sometimes}\n")
    bad = cli("bench", "locomo", str(first), "--settings", str(settings))
    assert bad.code != 0 and "recall.activation" in bad.err and "Traceback" not in bad.err
    settings.write_text("- a list\n")
    worse = cli("bench", "locomo", str(first), "--settings", str(settings))
    assert worse.code != 0 and "holds no mapping of settings" in worse.err


def test_bench_postgres_puts_each_samples_index_on_the_server(
    tmp_path: Path, cli, postgres_dsn: str
) -> None:
    """`--postgres DSN` is where the samples' indexes live, set per machine (memdir.local.yaml):
    in memdir.yaml the setting would be ignored and the bench would measure the local index. A
    server that does not answer is the index database's one-line error; the one that does
    gives the local index's figures (the same hashing vectors and BM25 here)."""
    first = _bench_file(tmp_path / "a.json", "a", "What pet did Ann adopt?")
    settings = tmp_path / "hashing.yaml"
    settings.write_text("embedder: {kind: hashing}\n")
    common = ("bench", "locomo", str(first), "--settings", str(settings), "--json")
    nowhere = cli(*common, "--postgres", f"host={tmp_path / 'nowhere'} connect_timeout=2")
    assert nowhere.code == 9 and "index database is unavailable" in nowhere.err, nowhere.err
    on_server = cli(*common, "--postgres", postgres_dsn)
    assert on_server.code == 0 and "is ignored here" not in on_server.err, on_server.err
    local = cli(*common)
    assert json.loads(on_server.out)["files"][str(first)]["overall"] == pytest.approx(
        json.loads(local.out)["files"][str(first)]["overall"]
    )


def chat(memdir: Memdir, session: str, turns: list[tuple[str, str]], at: datetime) -> list[str]:
    """A conversation's turns as speaker-prefixed memories (as `memdir bench locomo` and chat
    imports store them); their ids."""
    from memdir.archive_format.clock import format_time
    from memdir.archive_format.records import new_memory

    memories = [
        new_memory(
            created=format_time(at + timedelta(minutes=n)), text=f"{speaker}: {text}",
            source="observation", author=f"chat:{speaker}", store="episodic", session=session,
        )
        for n, (speaker, text) in enumerate(turns)
    ]  # fmt: skip
    lifecycle.add_memories(memdir, memories)
    return [memory.id for memory in memories]


def test_people_named_by_alias_or_in_another_case(hashed: Memdir) -> None:
    """'Kate' is what elise calls Emi; 'Elise' names the lower-case handle 'elise'. Each is
    resolved to the speaker (the speaker component, BM25 by handle) and shown by --explain."""
    ids_ = chat(hashed, "s1", [
        ("elise", "Hey Kate! How was your day?"),
        ("Emi", "I am taking a pottery class tonight"),
        ("elise", "Thanks, Kate. A pottery class sounds fun, I took one last year"),
        ("Emi", "Do you still make pottery?"),
        ("elise", "Not anymore, Kate!"),
        ("elise", "I am learning to bake bread instead"),
    ], T0)  # fmt: skip
    now = T0 + timedelta(days=1)
    result = run(hashed, "What class is Kate taking?", now)
    assert result.analysis.speaker == "Emi" and result.analysis.people == {"Kate": "Emi"}
    assert "Emi" in result.analysis.bm25_query and "Kate" not in result.analysis.bm25_query
    assert ids(result)[0] == ids_[1]
    query = next(s for s in result.stages if s.name == Stage.QUERY).rows[0]
    assert query["people"] == {"Kate": "Emi"}
    baking = run(hashed, "What is Elise learning?", now)
    assert baking.analysis.speaker == "elise" and ids(baking)[0] == ids_[5]
    # a lower-case word is no name: "kate" alone names nobody
    assert run(hashed, "what class is kate taking", now).analysis.speaker is None


def _recall_ids(cli, root: Path, query: str, k: int) -> tuple[str, list[str]]:
    done = cli("--dir", str(root), "recall", query, "--k", str(k), "--json")
    assert done.code == 0, done
    data = json.loads(done.out)
    return data["verdict"], [row["id"] for row in data["results"]]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_guaranteed_channel_never_evicts_the_answer_or_a_hard_fact(cli, tmp_path: Path,
                                                                   k: int) -> None:  # fmt: skip
    """The issue's case: with k ≤ 3 a milestone took the best hit's slot (NO_DATA at k = 1).
    Pinned and milestone memories now take only the room weak hits leave."""
    root = tmp_path / "memory"
    assert cli("init", str(root)).code == 0

    def teach(*args: str) -> str:
        done = cli("--dir", str(root), "teach", *args)
        assert done.code == 0, done
        return done.out.strip()

    medication = teach("I take 50 mg of sertraline every morning for my medication")
    pharmacy = teach("My pharmacy is Farmacia Central on Rua Augusta", "--key", "pharmacy")
    milestones = [
        teach("--temporal", "milestone", "We moved to Porto in 2019"),
        teach("--temporal", "milestone", "I graduated from university in 2015"),
    ]
    teach("The garden needs watering on Sundays")

    verdict, got = _recall_ids(cli, root, "what medication do I take", k)
    assert got[0] == medication and verdict == "GROUNDED"
    verdict, got = _recall_ids(cli, root, "which pharmacy do I use?", k)
    assert got[0] == pharmacy and verdict == "GROUNDED"
    if k == 3:  # the channel still works where hits are weak: the garden gives way
        assert any(m in got for m in milestones)


def test_spreading_activation_brings_linked_memories_along(cli, tmp_path: Path) -> None:
    """A memory linked to the best hit joins the ranking with its path, even when the
    shortlist left it out; a private linked memory never does."""
    root = tmp_path / "memory"
    assert cli("init", str(root)).code == 0

    def run(*args: str) -> str:
        done = cli("--dir", str(root), *args)
        assert done.code == 0, done
        return done.out.strip()

    plot = run("teach", "My allotment plot is number 12, by the north gate")
    seedlings = run("teach", "The tomato seedlings need repotting this week")
    secret = run("teach", "The shed padlock code is 4471", "--visibility", "private")
    for number in range(40):  # they fill the shortlist: the seedlings are not in it
        run("teach", f"The allotment committee meets on Monday number {number}")
    run("link", seedlings, plot, "--type", "resonates")
    run("link", secret, plot, "--type", "elaborates")

    def recalled(k: int) -> tuple[list[str], dict]:
        data = json.loads(run("recall", "where is my allotment plot?", "--k", str(k), "--json",
                              "--explain", "--no-record"))  # fmt: skip
        stages = {stage["name"]: stage for stage in data["stages"]}
        return [row["id"] for row in data["results"]], stages["activation"]

    ids, stage = recalled(10)  # a shortlist of 30: the seedlings are not in it
    assert ids[0] == plot and seedlings in ids and secret not in ids
    assert stage["rows"] == [{"id": seedlings, "activation": stage["rows"][0]["activation"],
                              "score": stage["rows"][0]["score"],
                              "via": [f"{plot} resonates"]}]  # fmt: skip
    assert 0 < stage["rows"][0]["activation"] <= 0.5 * 2  # half the seed's score, at most
    explained = run("recall", "where is my allotment plot?", "--explain", "--no-record")
    assert f"{plot} resonates" in explained


def test_a_reply_is_paired_with_the_question_it_answers(hashed: Memdir) -> None:
    """The adjacency pair (relevance.adjacency_partners): a turn's partner is the turn before it
    by another speaker when that one asks something, found across the turn's own earlier
    messages (a reply sent in two); a turn after a statement, or after its own speaker, has
    none. With pair_semantic weighted, the reply that names none of the question's words
    outranks the question and a turn that repeats them."""
    from memdir.indexers.recall.relevance import build_table

    ids_ = chat(hashed, "s1", [
        ("ann", "Which instrument did you learn as a child?"),  # 0 asks
        ("bo", "The cello, nine years of it"),  # 1 replies to 0
        ("bo", "and some piano later"),  # 2 replies to 0 too (a reply in two messages)
        ("ann", "I never learned one"),  # 3 after bo's statement: none
        ("ann", "My child will learn an instrument at school soon"),  # 4 after ann: none
        ("bo", "That will be great"),  # 5 after a statement: none
    ], T0)  # fmt: skip
    index = MemoryIndex(hashed)
    index.update()
    try:
        table = build_table(index)
        by_id = index.catalog.memories_by_id(ids_)
        iid = [by_id[i].iid for i in ids_]
        partner = dict(zip(table.iids.tolist(), table.partners.tolist(), strict=True))
        assert [partner[i] for i in iid] == [-1, iid[0], iid[0], -1, -1, -1]
    finally:
        index.close()
    query = "Which instrument did Bo learn as a child?"
    now = T0 + timedelta(days=1)
    plain = ids(run(hashed, query, now))
    assert plain.index(ids_[1]) > plain.index(ids_[4])  # the words win without the pair
    paired = configure(hashed, recall={"profiles": {"default": {"pair_semantic": 4}}})
    result = run(paired, query, now)
    ranked = ids(result)
    assert max(ranked.index(ids_[1]), ranked.index(ids_[2])) < min(
        ranked.index(ids_[4]), ranked.index(ids_[5])
    )
    reply = next(c for c in result.results if c.id == ids_[1])
    assert reply.components["pair_semantic"] > reply.components["semantic"]


def test_bench_delivery_takes_weights_and_refuses_unknown_ones(tmp_path: Path, cli) -> None:
    """`bench delivery --weight NAME=VALUE` lays weights over the default profile of the
    scratch memdirs (the report names them), refused as for `bench locomo` when recall does
    not weigh the name."""
    path = _bench_file(tmp_path / "a.json", "a", "What pet did Ann adopt?")
    done = cli("bench", "delivery", str(path), "--json", "--weight", "pair_semantic=1")
    assert done.code == 0, done.err
    assert json.loads(done.out)["weights"] == {"pair_semantic": 1.0}
    wrong = cli("bench", "delivery", str(path), "--weight", "loudness=1")
    assert wrong.code != 0 and "not COMPONENT=NUMBER" in wrong.err and "Traceback" not in wrong.err


def test_pool_scope_pairs_a_reply_like_the_exact_scope(tmp_path: Path) -> None:
    """With the pair components weighed, the pool scope (partners from the memory table, the
    question's BM25 from the pool's hits) scores them as the exact scope does."""
    pairs = {"profiles": {"default": {"pair_semantic": 1, "pair_bm25": 1}}}
    now = datetime(2026, 7, 1, tzinfo=timezone.utc)
    query = "is Sam taking the train to Lisbon?"
    exact = run(chat_memdir(tmp_path / "exact", **pairs), query, now, k=5)
    pooled = run(chat_memdir(tmp_path / "pool", exact_below=0, **pairs), query, now, k=5)
    assert [c.memory.text for c in pooled.results] == [c.memory.text for c in exact.results]
    for mine, theirs in zip(exact.results, pooled.results, strict=True):
        assert mine.components == pytest.approx(theirs.components, abs=1e-5)
    reply = next(c for c in exact.results if c.memory.text.startswith("Sam: Flying"))
    assert reply.components["pair_semantic"] != pytest.approx(reply.components["semantic"])


def test_the_cama_profile_min_max_normalises_its_components(tmp_path: Path) -> None:
    """CAMA scores each component min-max normalised over the candidates (docs/RECALL.md §4):
    the lowest 0, the highest 1, the value before kept as NAME_raw, and the score the blend of
    the normalised values — so --explain's sum still adds up."""
    memdir = configure(fresh(tmp_path), embedder={"kind": "hashing"})
    for n, text in enumerate(("The heron nests by the lake", "A heron flew over the lake",
                              "The lake froze in January", "Bread rises overnight")):  # fmt: skip
        lifecycle.teach(memdir, text, T0 - timedelta(days=10 * n))
    result = run(memdir, "heron by the lake", T0 + timedelta(hours=1), profile="cama", k=10)
    rows = next(s for s in result.stages if s.name == Stage.SCORE).rows
    assert len(rows) >= 3
    for name in ("semantic", "recency"):
        values = [row[name] for row in rows]
        assert min(values) == 0.0 and max(values) == 1.0, (name, values)
    weights = {"semantic": 0.45, "affect": 0.25, "degree": 0.15, "recency": 0.15}
    for row in rows:
        blended = sum(weight * row[name] for name, weight in weights.items()) / 0.45
        decay = 1 - 0.1 * (1 - row["decay"])
        assert row["score"] == pytest.approx(blended * decay * row["weight"], abs=1e-9)
    raw = {c.id: c.raw for c in result.results}
    assert all("semantic_raw" in values for values in raw.values())
    plain = run(memdir, "heron by the lake", T0 + timedelta(hours=1), profile="anima", k=10)
    assert not any("semantic_raw" in c.raw for c in plain.results)  # other profiles: as they were


def test_an_open_index_follows_links_added_after_its_last_recall(hashed: Memdir) -> None:
    """The map of links recall spreads along is kept between recalls (backends.neighbours):
    a link written afterwards is followed by the same open index's next recall, and one
    that a second memdir's index reads in between does not stand in for this one's."""
    now = T0 + timedelta(days=1)
    query = "where is my allotment plot?"
    plot = lifecycle.teach(hashed, "My allotment plot is number 12, by the north gate", T0).id
    seedlings = lifecycle.teach(hashed, "The tomato seedlings need repotting this week", T0).id
    for number in range(40):  # they fill the shortlist: the seedlings are not in it
        lifecycle.teach(hashed, f"The allotment committee meets on Monday number {number}", T0)
    other = configure(init(hashed.root.parent / "other", T0)[0], embedder={"kind": "hashing"})
    lifecycle.teach(other, "My allotment plot is number 7", T0)
    index, elsewhere = MemoryIndex(hashed), MemoryIndex(other)
    try:
        index.update()
        elsewhere.update()
        assert seedlings not in ids(recall(index, query, now, RecallOptions(k=10)))
        lifecycle.link(hashed, seedlings, plot, "resonates", T0)
        index.update()
        recall(elsewhere, query, now)
        found = recall(index, query, now, RecallOptions(k=10))
        assert ids(found)[0] == plot and seedlings in ids(found)
        assert next(c for c in found.results if c.id == seedlings).note == f"via {plot} resonates"
    finally:
        index.close()
        elsewhere.close()
