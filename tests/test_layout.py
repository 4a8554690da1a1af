"""Every view at 80 and 120 columns ($COLUMNS, the commands run in this process): lines fit, no
id or score is cut to an ellipsis, shortened ids are unique prefixes the commands accept; a real
process writing to a pipe without $COLUMNS gets whole lines, and with it honours it."""

from __future__ import annotations

import json
import re
import string

import pytest
from conftest import T0_DT, clean_env
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.memdir import Memdir
from memdir.cli.layout import Column, fit

LONG = (
    "Sam prefers written summaries after every planning meeting, ideally sent before lunch "
    "and with the decisions at the top, because long calls make him lose the thread"
)
ID = re.compile(r"\bm-[0-9a-f]+")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Memdir:
    from conftest import configure

    from memdir.archive_format.memdir import init

    root = tmp_path_factory.mktemp("layout") / "memory"
    memdir = configure(init(root, T0_DT)[0], embedder={"kind": "hashing"})
    texts = [LONG, "I take my coffee black", "Sam's meetings run long on Mondays", *(
        f"note {n}: meetings and coffee and summaries, item {n}" for n in range(12))]  # fmt: skip
    ids = [lifecycle.teach(memdir, text, T0_DT, type="FACT").id for text in texts]
    guess = lifecycle.infer(memdir, "Sam seems to like morning meetings " * 3, T0_DT).id
    lifecycle.link(memdir, ids[0], ids[1], "related", T0_DT)
    lifecycle.record_recall(memdir, [ids[0], guess], T0_DT, label="meetings")
    journal.add_turns(
        memdir,
        [journal.new_turn(at=T0_DT, role="user", session="s1", text=LONG, channel="cli")],
    )
    return memdir


@pytest.fixture
def cli(cli_in_process):
    """The width comes from $COLUMNS, which conftest.memdir_main sets for the call: the views
    are laid out in this process; the pipe tests (marked `process`) run the real script."""
    return cli_in_process


VIEWS = {
    "list": ("list",),
    "recall": ("recall", "meetings coffee summaries", "--no-record"),
    "explain": ("recall", "meetings coffee summaries", "--no-record", "--explain", "--window"),
    "search": ("search", "meetings"),
    "similar": ("similar", "meetings and summaries"),
    "annotate": ("annotate",),
    "ring": ("ring",),
    "log": ("log", "{first}"),
    "show": ("show", "{first}"),
    "index": ("index", "--status"),
    "journal": ("journal", "read"),
    "stats": ("stats",),
}


def run(cli, memdir: Memdir, args: tuple[str, ...], columns: str | None):
    first = lifecycle.teach(memdir, LONG, T0_DT, type="FACT").id  # already stored: its id
    argv = tuple(arg.format(first=first) for arg in args)
    return cli("--dir", str(memdir.root), *argv, env=clean_env(COLUMNS=columns))


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_views_fit_without_cutting_ids_or_scores(cli, filled: Memdir, view: str, columns: int):
    done = run(cli, filled, VIEWS[view], str(columns))
    assert done.code == 0, done
    assert done.out.strip(), done
    for line in done.out.splitlines():
        assert len(line) <= columns, (view, columns, line)
        assert not re.search(r"(m-[0-9a-f]*|\d\.\d*)…", line), line  # an id or score cut short
    all_ids = {state.id for state in lifecycle.load_view(filled, T0_DT)}
    shown = set(ID.findall(done.out))
    assert shown or view in ("index", "journal", "stats"), done.out
    for prefix in shown:
        matches = [memory_id for memory_id in all_ids if memory_id.startswith(prefix)]
        assert len(matches) == 1 and len(prefix) >= 10, (prefix, matches)


def test_a_shortened_id_is_accepted_by_the_commands(cli, filled: Memdir) -> None:
    narrow = run(cli, filled, ("list",), "80")
    prefixes = ID.findall(narrow.out)
    assert prefixes and all(len(prefix) < 18 for prefix in prefixes), narrow.out
    for prefix in prefixes[:3]:
        shown = cli("--dir", str(filled.root), "show", prefix, "--json")
        assert shown.code == 0 and json.loads(shown.out)["id"].startswith(prefix), shown


def test_text_wraps_in_its_column_at_80(cli, filled: Memdir) -> None:
    done = run(cli, filled, ("list",), "80")
    lines = done.out.splitlines()
    start = next(i for i, line in enumerate(lines) if "Sam prefers written" in line)
    column = lines[start].index("Sam prefers written")
    end = start + 1
    while end < len(lines) and not lines[end][:column].strip():
        end += 1
    assert end - start > 2, lines[start:end]  # wrapped over several lines, in one column
    assert " ".join(line[column:].strip() for line in lines[start:end]) == LONG


@pytest.mark.process
def test_a_pipe_without_columns_gets_whole_lines(cli, filled: Memdir) -> None:
    for args in (("list",), ("recall", "written summaries before lunch", "--no-record")):
        done = run(cli, filled, args, None)
        assert done.code == 0, done
        assert any(LONG in line for line in done.out.splitlines()), done.out
        assert all(len(m) == 18 for m in ID.findall(done.out))  # full ids, nothing shortened


@pytest.mark.process
def test_columns_are_honoured_in_a_pipe(cli, filled: Memdir) -> None:
    wide = run(cli, filled, ("list",), "200")
    narrow = run(cli, filled, ("list",), "60")
    assert max(map(len, narrow.out.splitlines())) <= 60
    assert max(map(len, wide.out.splitlines())) > 120


words = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=10)  # ≤ TEXT_FLOOR


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.from_regex(r"m-[0-9a-f]{16}", fullmatch=True),
            st.floats(0, 99).map(lambda x: f"{x:.3f}"),
            words,
            st.lists(words, max_size=30).map(" ".join),
        ),
        max_size=8,
    ),
    room=st.integers(40, 200),
)
def test_fit_keeps_every_cell_whole(rows: list[tuple[str, str, str, str]], room: int) -> None:
    columns = (
        Column("id", ident=True), Column("score", right=True), Column("tag", drop=1),
        Column("text", text=True),
    )  # fmt: skip
    laid = fit(columns, rows, room)
    body = "\n".join(laid.lines)
    for memory_id, score, tag, _ in rows:
        assert memory_id in body and score in body
        assert ("tag" in laid.dropped) or tag in body
    assert all(len(line) <= room for line in laid.lines)
    joined = " ".join(body.split())
    for _, _, _, text in rows:
        assert all(word in joined for word in text.split())
