"""BENCHMARKS.md's current figures are generated (issue 28 item 5): the part between its
markers is what `python -m benchmarks.report` makes from the committed run records in
benchmarks/results/, and every record says where, when and on what code it was measured."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from benchmarks import report
from benchmarks.common import RESULTS

KEYS = {"benchmark", "command", "date", "commit", "dirty", "machine", "load", "parameters",
        "figures"}  # fmt: skip


def records() -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(RESULTS.glob("*.json"))}  # fmt: skip


def test_the_generated_part_is_what_the_committed_results_make() -> None:
    text = report.DOCUMENT.read_text(encoding="utf-8")
    assert report.rewritten(text, RESULTS) == text, "run `make benchmarks-md`"


def test_every_record_says_its_machine_date_commit_and_load() -> None:
    found = records()
    assert found, "no run records in benchmarks/results"
    for name, record in found.items():
        assert KEYS <= set(record), name
        assert record["benchmark"] == name, name
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", record["date"]), name
        assert re.fullmatch(r"[0-9a-f]{7,40}", record["commit"]), name
        assert record["machine"]["cores"] >= 1 and record["machine"]["cpu"], name
        assert len(record["load"]["start"]) == len(record["load"]["end"]) == 3, name
        assert record["figures"], name


def test_every_record_of_a_benchmark_is_shown() -> None:
    shown = {section.name for section in report.SECTIONS}
    variants = {"supersede_restates-before", "quote_guard-reading-only", "attack-only",
                "relink-labelled"}  # fmt: skip
    assert set(records()) - variants <= shown


def test_a_changed_record_changes_the_document(tmp_path: Path) -> None:
    """The check sees a figure that is not the document's: one value of one record changed."""
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    path = next(iter(sorted(results.glob("*.json"))))
    record = json.loads(path.read_text(encoding="utf-8"))
    row = next(iter(record["figures"]))
    value = record["figures"][row]
    record["figures"][row] = {**value, "changed": "yes"} if isinstance(value, dict) else "changed"
    path.write_text(json.dumps(record), encoding="utf-8")
    text = report.DOCUMENT.read_text(encoding="utf-8")
    assert report.rewritten(text, results) != text


def test_each_history_link_names_a_heading_of_the_history() -> None:
    text = report.DOCUMENT.read_text(encoding="utf-8")
    history = text[text.index("\n# History\n") :]
    headings = report.headings_of(history)
    for pointer in [*report.SECTIONS, *report.NOT_RERUN]:
        assert pointer.history in headings, pointer
    assert report.anchor("Writes at scale (`benchmarks/bench_archive.py`, issue 20)") == (
        "#writes-at-scale-benchmarksbench_archivepy-issue-20"
    )
