"""`memdir recall --explain`: the score table shows every weighted component at every width,
drops the zero-weight ones first, and adds up: score = (Σ weight × component) ÷ Σ relevance
weights × (1 − strength × (1 − decay)) × provenance weight (docs/RECALL.md)."""

from __future__ import annotations

import re

import pytest
from conftest import T0_DT

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir
from memdir.indexers.recall.options import PROFILES
from memdir.indexers.recall.relevance import RELEVANCE

HEADERS = {
    "sem": "semantic", "bm25": "bm25", "ctx·sem": "context_semantic", "ctx·bm25": "context_bm25",
    "spk": "speaker", "sess": "session", "when": "when", "meta": "meta_bm25", "aff": "affect",
    "deg": "degree", "rec": "recency", "imp": "importance", "kw": "keyword",
    "pair·sem": "pair_semantic", "pair·bm25": "pair_bm25",
}  # fmt: skip
DEFAULT = PROFILES["default"]
WEIGHTED = [h for h, name in HEADERS.items() if DEFAULT.get(name)]
UNWEIGHTED = [h for h, name in HEADERS.items() if not DEFAULT.get(name)]
SCALE = sum(DEFAULT.get(name, 0.0) for name in RELEVANCE)
STRENGTH = 0.1  # decay.strength's default (docs/FORMAT.md)


@pytest.fixture
def filled(hashed: Memdir) -> Memdir:
    for text in ("Sam prefers written summaries after meetings", "Sam drinks his coffee black",
                 "Meetings with Sam run long on Mondays", "Sam's sister Ana is a nurse"):  # fmt: skip
        lifecycle.teach(hashed, text, T0_DT, type="FACT")
    lifecycle.infer(hashed, "Sam seems to like morning meetings", T0_DT)
    return hashed


def explain(capsys, monkeypatch, memdir: Memdir, columns: int) -> str:
    from memdir.cli.main import main

    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setenv("MEMDIR_NOW", "2026-05-02T09:00:00Z")
    argv = ["--dir", str(memdir.root), "recall", "meetings with Sam last week", "--explain",
            "--no-record"]  # fmt: skip
    assert main(argv) == 0
    return capsys.readouterr().out


def score_section(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("── 4. score"))
    end = next(i for i, line in enumerate(lines) if line.startswith("── 5."))
    return lines[start + 1 : end]


def test_the_default_profile_weighs_when_most() -> None:
    assert (
        "when" in WEIGHTED
        and max(DEFAULT[n] for n in HEADERS.values() if n in DEFAULT) == (DEFAULT["when"])
    )
    assert {"aff", "rec"} <= set(UNWEIGHTED)


def test_a_wide_table_adds_up_to_the_score(capsys, monkeypatch, filled: Memdir) -> None:
    section = score_section(explain(capsys, monkeypatch, filled, 200))
    weights_line = next(line for line in section if line.startswith("weights: "))
    printed = dict(re.findall(r"([\w·]+) ([\d.]+)", weights_line.removeprefix("weights: ")))
    assert list(printed) == WEIGHTED
    assert {h: float(v) for h, v in printed.items()} == {h: DEFAULT[HEADERS[h]] for h in WEIGHTED}
    header = next(line for line in section if line.startswith("id "))
    names = header.split()
    assert names[:3] == ["id", "score", "×w"] and names[3 : 3 + len(WEIGHTED)] == WEIGHTED
    rows = [line.split() for line in section if re.match(r"m-[0-9a-f]+ ", line)]
    assert len(rows) >= 3
    for cells in rows:
        values = dict(zip(names, cells, strict=False))
        blend = sum(DEFAULT[HEADERS[h]] * float(values[h]) for h in WEIGHTED)
        factor = 1 - STRENGTH * (1 - float(values["decay"]))
        expected = blend / SCALE * factor * float(values["×w"])
        assert float(values["score"]) == pytest.approx(expected, abs=0.008), cells
    # the check line works the first row's sum with the numbers shown
    check = next(line for line in section if line.startswith("check #1: "))
    formula, _, result = check.removeprefix("check #1: ").rpartition(" = ")
    arithmetic = re.sub(r"\(decay [\d.]+\)|\(×w\)|\(hard fact\)", "", formula)
    arithmetic = arithmetic.replace("×", "*").replace("÷", "/")
    assert eval(arithmetic) == pytest.approx(float(result), abs=0.008)  # noqa: S307
    assert result == rows[0][1]


def test_at_80_columns_every_weighted_component_stays(capsys, monkeypatch, filled: Memdir):
    out = explain(capsys, monkeypatch, filled, 80)
    assert all(len(line) <= 80 for line in out.splitlines())
    section = score_section(out)
    body = "\n".join(section)
    ids = re.findall(r"^(m-[0-9a-f]+)\s", body, re.M)
    assert ids and all(len(memory_id) < 18 for memory_id in ids)  # shortened, as README says
    # one entry per shown memory for every weighted component, `when` among them
    for header in [*WEIGHTED, "decay"]:
        found = re.findall(rf"(?:^|\s){re.escape(header)}=\d\.\d\d", body)
        in_columns = re.search(rf"^id .*\s{re.escape(header)}\s", body, re.M)
        assert len(found) == len(ids) or in_columns, (header, body)
    # zero-weight components give way first: none of them is shown as a value
    for header in UNWEIGHTED:
        assert not re.search(rf"(?:^|\s){re.escape(header)}=", body), header
    assert "not shown at this width" not in body or all(
        h in UNWEIGHTED for h in re.findall(r"not shown at this width: ([^(]+)", body)[0]
        .replace(",", " ").split()
    )  # fmt: skip


def test_result_ids_shorten_at_80_columns(capsys, monkeypatch, filled: Memdir) -> None:
    from memdir.cli.main import main

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["--dir", str(filled.root), "recall", "meetings", "--no-record"]) == 0
    ids = re.findall(r"\bm-[0-9a-f]+\b", capsys.readouterr().out)
    assert ids and all(10 <= len(memory_id) < 18 for memory_id in ids)
