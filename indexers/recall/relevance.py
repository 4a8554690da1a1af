"""Relevance: the components recall blends (docs/RECALL.md).

For each memory i (speaker-prefixed text when it came from a conversation):
  semantic          cosine(q, v_i)
  bm25              BM25 of the memory's text
  context_semantic  cosine(q, normalise(2·v_i + Σ v_j)), j = same-session neighbours within ±2
  context_bm25      BM25 of the memory's text joined with those neighbours
  speaker           1 when the query names exactly one person and that person said it
  session           BM25 of the memory's whole session
  when              closeness to the query's time window: 1 inside, falling linearly to 0 at
                    the window's length (at least a week) outside; 0 without a window
  meta_bm25         BM25 of the memory's meta-memory fields (intent, rationale, evidence)
  pair_semantic     cosine(q, normalise(v_i + v_p)), p = the question the memory replies to
  pair_bm25         BM25 of the memory's text plus that of the question it replies to
The question a memory replies to (an adjacency pair, the conversational unit): the turn just
before it in its session, when another speaker said that one and it asks something, the
replier's own earlier messages walked over (within ±2). A memory that replies to none has its
own cosine and BM25 there; both are computed only for a profile that weighs one (`PAIRED`).
Each but speaker and when is min-max normalised over the scope. Then a memory that is mostly
questions (questions.py) has its text components (`TEXTUAL`) lowered by the profile's
`questions` weight: they are × (1 − questions). The scope is the whole archive while it is small
(`exact_below` memories, default 20,000: every memory is scored, from an in-process table), and
a candidate pool above that (the top of FAISS, of both Tantivy fields, lexical matches).
Scoring everything matters on small archives: normalising over a pool measured 4 points of
R@5 worse on the LoCoMo dev file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..memorytable import CONTEXT, name_code
from ..questions import MOSTLY
from .interface import RecallIndex, ScoringTable

if TYPE_CHECKING:
    import numpy as np

    from .query import QueryAnalysis

RELEVANCE = ("semantic", "bm25", "context_semantic", "context_bm25", "speaker", "session", "when",
             "meta_bm25", "pair_semantic", "pair_bm25")  # fmt: skip
PAIRED = ("pair_semantic", "pair_bm25")  # computed only for a profile that weighs one
TEXTUAL = ("semantic", "bm25", "context_semantic", "context_bm25", "pair_semantic", "pair_bm25")
CENTRE_WEIGHT = 2.0
BM25_DEPTH = 2000


def build_table(index: RecallIndex) -> ScoringTable:
    import numpy as np

    iids = np.asarray(index.catalog.searchable_iids(), dtype=np.int64)
    records = index.memory_table.get(iids)
    vectors, context = vectors_with_context(index, iids, records["near"])

    def pairing() -> tuple[np.ndarray, np.ndarray]:
        partners = adjacency_partners(index, iids, records)
        return partners, paired_vectors(index, vectors, partners)

    session_keys, session_of = np.unique(records["session"], return_inverse=True)
    row_of_iid = np.full(int(iids.max()) + 1 if len(iids) else 0, -1, dtype=np.int64)
    row_of_iid[iids] = np.arange(len(iids))
    return ScoringTable(
        iids=iids,
        created=records["created"].astype(np.int64),
        session_keys=session_keys,
        session_of=session_of.reshape(-1),
        speakers=records["speaker"].astype(np.int64),
        asks=records["asks"].astype(np.float32),
        vectors=vectors,
        context=context,
        row_of_iid=row_of_iid,
        pairing=pairing,
    )


def adjacency_partners(index: RecallIndex, iids: np.ndarray, records: np.ndarray) -> np.ndarray:
    """The question each memory replies to, as an iid (-1 for none): the last turn before it in
    its session by another speaker, past the memory's own earlier messages (at most CONTEXT
    back), when that turn asks something (`asks` > 0). Neighbours come in session order in
    `near`, the memory itself left out."""
    import numpy as np

    near = records["near"]
    partners = np.full(len(iids), -1, dtype=np.int64)
    valid = near >= 0
    if not valid.any():
        return partners
    known = np.unique(near[valid])
    theirs = index.memory_table.get(known)[np.searchsorted(known, np.where(valid, near, known[0]))]
    mine = records["created"][:, None]
    earlier = valid & (
        (theirs["created"] < mine) | ((theirs["created"] == mine) & (near < iids[:, None]))
    )
    before = earlier.sum(axis=1)  # the neighbours before it come first in `near`
    rows = np.arange(len(iids))
    # walk back over the memory's own consecutive messages (a reply split into several) to
    # the last turn by another speaker
    for back in range(1, min(CONTEXT, near.shape[1]) + 1):
        at = np.maximum(before - back, 0)
        other = (before >= back) & (theirs["speaker"][rows, at] != records["speaker"])
        found = other & (partners < 0) & (theirs["asks"][rows, at] > 0)
        partners[found] = near[rows, at][found]
        stop = other | (before < back)
        if stop.all():
            break
        before = np.where(stop, 0, before)  # a stopped memory looks no further
    return partners


def paired_vectors(index: RecallIndex, own: np.ndarray, partners: np.ndarray) -> np.ndarray:
    """normalise(v_i + v_p), p the question memory i replies to (its own vector when none)."""
    import numpy as np

    present = partners >= 0
    if not present.any():
        return own
    matrix, _ = index.vector_matrix(partners[present].tolist())
    mixed = own.astype(np.float32, copy=True)
    mixed[present] += matrix
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mixed / norms).astype(np.float32)


def paired_bm25(own: np.ndarray, partner_scores: np.ndarray, partners: np.ndarray) -> np.ndarray:
    """A memory's BM25 plus that of the question it replies to (`partner_scores` aligned with
    `partners`)."""
    import numpy as np

    return (own + np.where(partners >= 0, partner_scores, 0)).astype(np.float32)


def vectors_with_context(
    index: RecallIndex, iids: np.ndarray, near: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each memory's vector, and its context vector normalise(2·v_i + Σ v_j) over its
    same-session neighbours j (`near`: their iids, -1 pads); zeros for a missing vector."""
    import numpy as np

    others = np.setdiff1d(np.unique(near[near >= 0]), iids)
    known = np.concatenate([iids, others])
    matrix, _ = index.vector_matrix(known.tolist() + [-1])  # the last row stays zero
    order = np.argsort(known, kind="stable")
    position = np.full(near.shape, len(known), dtype=np.int64)
    present = near >= 0
    position[present] = order[np.searchsorted(known[order], near[present])]
    own = matrix[: len(iids)]
    mixed = own * CENTRE_WEIGHT
    for column in range(near.shape[1]):
        mixed += matrix[position[:, column]]
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return own, (mixed / norms).astype(np.float32)


def minmax(values: np.ndarray) -> np.ndarray:
    import numpy as np

    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.ones_like(values) if high > 0 else np.zeros_like(values)
    return (values - low) / (high - low)


@dataclass
class Scored:
    """Raw and normalised relevance components of a scope, aligned with `iids`, and the share
    of each memory's words in questions."""

    iids: list[int]
    raw: dict[str, np.ndarray]
    normalised: dict[str, np.ndarray]
    exact: bool
    asks: np.ndarray

    def positions(self, wanted: set[int]) -> dict[int, int]:
        """Where these iids are in the scope (those outside it are left out)."""
        import numpy as np

        if not wanted:
            return {}
        found = np.nonzero(np.isin(np.asarray(self.iids, dtype=np.int64), list(wanted)))[0]
        return {self.iids[i]: int(i) for i in found}


def _speaker_matches(analysis: QueryAnalysis, speakers: np.ndarray) -> np.ndarray:
    import numpy as np

    if not analysis.speaker:
        return np.zeros(len(speakers), dtype=np.float32)
    return (speakers == name_code(analysis.speaker)).astype(np.float32)


def _closeness(analysis: QueryAnalysis, created: np.ndarray) -> np.ndarray:
    """1 inside the query's time window, falling linearly to 0 at its reach outside it; 0 for
    every memory when the query names no time."""
    import numpy as np

    window = analysis.window
    if window is None:
        return np.zeros(len(created), dtype=np.float32)
    start, end = window.start.timestamp(), window.end.timestamp()
    distance = np.maximum(start - created, 0) + np.maximum(created - end, 0)
    return np.clip(1 - distance / window.reach_seconds(), 0, 1).astype(np.float32)


def _finish(iids: list[int], raw: dict[str, np.ndarray], exact: bool, asks: np.ndarray) -> Scored:
    normalised = {name: minmax(values) for name, values in raw.items()}
    normalised["speaker"] = raw["speaker"]
    normalised["when"] = raw["when"]
    return Scored(iids, raw, normalised, exact, asks)


def demote_questions(scored: Scored, strength: float) -> None:
    """Lower the text components of the memories that are mostly questions: × (1 − strength).

    A question rarely holds its own answer, yet it shares the query's words and form; strength
    0.4 measured R@5 0.743 → 0.753 on the LoCoMo dev file, 0.593 → 0.604 on REALTALK's
    (docs/RECALL.md).
    """
    import numpy as np

    mostly = scored.asks >= MOSTLY
    if strength <= 0 or not mostly.any():
        return
    factor = np.where(mostly, np.float32(1 - strength), np.float32(1)).astype(np.float32)
    for name in TEXTUAL:
        scored.normalised[name] = scored.normalised[name] * factor


def score_table(
    index: RecallIndex, table: ScoringTable, analysis: QueryAnalysis, query: np.ndarray,
    mask: np.ndarray, pairs: bool = True,
) -> Scored:  # fmt: skip
    """Every memory in the table (where `mask` holds) scored; normalised over those. Without
    `pairs` (a profile that does not weigh them) the pair components are left 0."""
    import numpy as np

    n = len(table)
    bm25 = {}
    for field in ("text", "context", "meta"):
        values = np.zeros(n, dtype=np.float32)
        # beyond the best BM25_DEPTH matches a score is too small to matter; they count as 0
        hits = index.fulltext.scores(analysis.bm25_query, min(n, BM25_DEPTH), field)
        rows = table.rows(list(hits))
        known = rows >= 0
        values[rows[known]] = np.asarray(list(hits.values()), dtype=np.float32)[known]
        bm25[field] = values
    by_session = index.sessions.scores(analysis.bm25_query, len(table.session_keys))
    session_values = np.asarray(
        [by_session.get(int(key), 0.0) for key in table.session_keys], dtype=np.float32
    )
    keep = np.nonzero(mask)[0]
    raw = {
        "semantic": (table.vectors @ query)[keep],  # multiply the whole table: no copies
        "bm25": bm25["text"][keep],
        "context_semantic": (table.context @ query)[keep],
        "context_bm25": bm25["context"][keep],
        "speaker": _speaker_matches(analysis, table.speakers[keep]),
        "session": session_values[table.session_of[keep]],
        "when": _closeness(analysis, table.created[keep]),
        "meta_bm25": bm25["meta"][keep],
    }
    if pairs:
        partners = table.partners[keep]
        rows = np.where(partners >= 0, table.rows(partners.tolist()), -1)
        partner_scores = np.where(rows >= 0, bm25["text"][np.maximum(rows, 0)], 0)
        raw["pair_semantic"] = (table.paired @ query)[keep]
        raw["pair_bm25"] = paired_bm25(raw["bm25"], partner_scores, partners)
    else:
        raw["pair_semantic"] = raw["pair_bm25"] = np.zeros(len(keep), dtype=np.float32)
    return _finish(table.iids[keep].tolist(), raw, exact=True, asks=table.asks[keep])


def score_pool(
    index: RecallIndex,
    iids: list[int],
    analysis: QueryAnalysis,
    query: np.ndarray,
    bm25: dict[str, dict[int, float]],
    between: tuple[int, int],
    pairs: bool = True,
) -> Scored:
    """Candidates from a pool, those created in [start, end) scored and normalised over the
    pool (large archives).

    `bm25` holds the BM25 scores of the best matches on each field ("text", "context",
    "meta"); a candidate below them counts 0 there. Without `pairs` the pair components are 0.
    """
    import numpy as np

    wanted = np.asarray(iids, dtype=np.int64)
    records = index.memory_table.get(wanted)
    inside = (records["created"] >= between[0]) & (records["created"] < between[1])
    wanted, records = wanted[inside], records[inside]
    own, mixed = vectors_with_context(index, wanted, records["near"])
    sessions = records["session"]
    codes = [int(code) for code in np.unique(sessions[sessions > 0])]
    by_session = index.sessions.scores(analysis.bm25_query, len(codes), within=codes)
    kept = wanted.tolist()
    raw = {
        "semantic": own @ query,
        "bm25": np.asarray([bm25["text"].get(i, 0.0) for i in kept], dtype=np.float32),
        "context_semantic": mixed @ query,
        "context_bm25": np.asarray([bm25["context"].get(i, 0.0) for i in kept], dtype=np.float32),
        "speaker": _speaker_matches(analysis, records["speaker"]),
        "session": np.asarray(
            [by_session.get(int(code), 0.0) for code in sessions], dtype=np.float32
        ),
        "when": _closeness(analysis, records["created"]),
        "meta_bm25": np.asarray([bm25["meta"].get(i, 0.0) for i in kept], dtype=np.float32),
    }
    if pairs:
        partners = adjacency_partners(index, wanted, records)
        partner_scores = np.asarray(
            [bm25["text"].get(int(p), 0.0) for p in partners], dtype=np.float32
        )
        raw["pair_semantic"] = paired_vectors(index, own, partners) @ query
        raw["pair_bm25"] = paired_bm25(raw["bm25"], partner_scores, partners)
    else:
        raw["pair_semantic"] = raw["pair_bm25"] = np.zeros(len(kept), dtype=np.float32)
    return _finish(kept, raw, exact=False, asks=records["asks"].astype(np.float32))
