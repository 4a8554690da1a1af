"""Relevance: the six normalised components recall blends (docs/RECALL.md).

For each memory i (speaker-prefixed text when it came from a conversation):
  semantic          cosine(q, v_i)
  bm25              BM25 of the memory's text
  context_semantic  cosine(q, normalise(2·v_i + Σ v_j)), j = same-session neighbours within ±2
  context_bm25      BM25 of the memory's text joined with those neighbours
  speaker           1 when the query names exactly one person and that person said it
  session           BM25 of the memory's whole session
Each is min-max normalised over the scope. The scope is the whole archive while it is small
(`exact_below` memories, default 20,000: every memory is scored, from an in-process table), and
a candidate pool above that (the top of FAISS, of both Tantivy fields, lexical matches).
Scoring everything matters on small archives: normalising over a pool measured 4 points of
R@5 worse on the LoCoMo dev file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .catalog import MemoryRow, session_code, speaker_of

if TYPE_CHECKING:
    import numpy as np

    from .index import MemoryIndex
    from .query import QueryAnalysis

RELEVANCE = ("semantic", "bm25", "context_semantic", "context_bm25", "speaker", "session")
CONTEXT = 2
CENTRE_WEIGHT = 2.0
BM25_DEPTH = 2000


@dataclass
class ScoringTable:
    """Every searchable memory as arrays, built once per process and index state."""

    iids: np.ndarray
    created: np.ndarray  # epoch seconds
    session_codes: np.ndarray  # index into session_names, -1 without a session
    session_names: list[str]
    session_keys: list[int]  # session_code of each name, as in the sessions index
    speaker_codes: np.ndarray  # index into speaker_names, -1 when nobody in particular
    speaker_names: list[str]
    vectors: np.ndarray
    context: np.ndarray
    row_of_iid: np.ndarray  # iid → row, -1 when not in the table

    def __len__(self) -> int:
        return len(self.iids)

    def rows(self, iids: list[int]) -> np.ndarray:
        """Table rows of these iids (-1 for those not in it)."""
        import numpy as np

        found = np.asarray(iids, dtype=np.int64)
        inside = found < len(self.row_of_iid)
        rows = np.full(len(found), -1, dtype=np.int64)
        rows[inside] = self.row_of_iid[found[inside]]
        return rows


def _codes(values: list[str | None]) -> tuple[np.ndarray, list[str]]:
    import numpy as np

    names = sorted({value for value in values if value})
    code = {name: number for number, name in enumerate(names)}
    return np.asarray(
        [code.get(value, -1) if value else -1 for value in values], dtype=np.int32
    ), names


def build_table(index: MemoryIndex) -> ScoringTable:
    import numpy as np

    rows = list(
        index.catalog.db.execute(
            "SELECT iid, session, created, author"
            " FROM memories WHERE searchable = 1 ORDER BY session, created, iid"
        )
    )
    vectors, _ = index.vector_matrix([row[0] for row in rows])
    sessions = [row[1] for row in rows]
    session_codes, session_names = _codes(sessions)
    speaker_codes, speaker_names = _codes([speaker_of(str(row[3])) for row in rows])
    iids = np.asarray([row[0] for row in rows], dtype=np.int64)
    row_of_iid = np.full(int(iids.max()) + 1 if len(iids) else 0, -1, dtype=np.int64)
    row_of_iid[iids] = np.arange(len(iids))
    return ScoringTable(
        iids=iids,
        created=np.asarray([row[2] for row in rows], dtype=np.int64),
        session_codes=session_codes,
        session_names=session_names,
        session_keys=[session_code(name) for name in session_names],
        speaker_codes=speaker_codes,
        speaker_names=speaker_names,
        vectors=vectors,
        context=context_vectors(vectors, sessions),
        row_of_iid=row_of_iid,
    )


def context_vectors(vectors: np.ndarray, sessions: list[str | None]) -> np.ndarray:
    """normalise(2·v_i + Σ v_j) over same-session rows within ±CONTEXT (rows sorted by session
    and time); a memory without a session is its own context."""
    import numpy as np

    total = vectors * CENTRE_WEIGHT
    n = len(sessions)
    for offset in range(1, CONTEXT + 1):
        same = np.asarray([sessions[i] is not None and sessions[i] == sessions[i + offset]
                           for i in range(n - offset)], dtype=bool)  # fmt: skip
        if same.any():
            index = np.nonzero(same)[0]
            total[index] += vectors[index + offset]
            total[index + offset] += vectors[index]
    norms = np.linalg.norm(total, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (total / norms).astype(np.float32)


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
    """Raw and normalised relevance components of a scope, aligned with `iids`."""

    iids: list[int]
    raw: dict[str, np.ndarray]
    normalised: dict[str, np.ndarray]
    exact: bool

    def positions(self, wanted: set[int]) -> dict[int, int]:
        """Where these iids are in the scope (those outside it are left out)."""
        import numpy as np

        if not wanted:
            return {}
        found = np.nonzero(np.isin(np.asarray(self.iids, dtype=np.int64), list(wanted)))[0]
        return {self.iids[i]: int(i) for i in found}


def score_table(
    index: MemoryIndex, table: ScoringTable, analysis: QueryAnalysis, query: np.ndarray,
    mask: np.ndarray,
) -> Scored:  # fmt: skip
    """Every memory in the table (where `mask` holds) scored; normalised over those."""
    import numpy as np

    n = len(table)
    bm25 = {}
    for field in ("text", "context"):
        values = np.zeros(n, dtype=np.float32)
        # beyond the best BM25_DEPTH matches a score is too small to matter; they count as 0
        iids, scores = index.fulltext.score_lists(analysis.bm25_query, min(n, BM25_DEPTH), field)
        rows = table.rows(iids)
        known = rows >= 0
        values[rows[known]] = np.asarray(scores, dtype=np.float32)[known]
        bm25[field] = values
    by_session = index.sessions.scores(analysis.bm25_query, len(table.session_keys))
    session_values = np.asarray(
        [by_session.get(key, 0.0) for key in table.session_keys] + [0.0], dtype=np.float32
    )
    speaker = np.zeros(n, dtype=np.float32)
    if analysis.speaker in table.speaker_names:
        speaker[table.speaker_codes == table.speaker_names.index(analysis.speaker)] = 1.0
    keep = np.nonzero(mask)[0]
    raw = {
        "semantic": (table.vectors @ query)[keep],  # multiply the whole table: no copies
        "bm25": bm25["text"][keep],
        "context_semantic": (table.context @ query)[keep],
        "context_bm25": bm25["context"][keep],
        "speaker": speaker[keep],
        "session": session_values[table.session_codes[keep]],  # -1 picks the trailing 0
    }
    normalised = {name: minmax(values) for name, values in raw.items()}
    normalised["speaker"] = raw["speaker"]
    return Scored(table.iids[keep].tolist(), raw, normalised, exact=True)


def score_pool(
    index: MemoryIndex,
    memories: list[MemoryRow],
    analysis: QueryAnalysis,
    query: np.ndarray,
    text: dict[int, float],
    context: dict[int, float],
) -> Scored:
    """Candidates from a pool scored, and normalised over the pool (large archives).

    `text` and `context` are the BM25 scores of the best matches on each field; a candidate
    below them counts 0 there.
    """
    import numpy as np

    iids = [memory.iid for memory in memories]
    around = sorted({iid for memory in memories for iid in memory.neighbours} - set(iids))
    # a memory without a vector counts as 0; the last row is 0 for padding
    matrix, _ = index.vector_matrix(iids + around + [-1])
    own = matrix[: len(iids)]
    row_of = {iid: row for row, iid in enumerate(iids + around)}
    width = max((len(memory.neighbours) for memory in memories), default=0)
    near = np.full((len(iids), width), len(matrix) - 1, dtype=np.int64)
    for row, memory in enumerate(memories):
        near[row, : len(memory.neighbours)] = [row_of[iid] for iid in memory.neighbours]
    mixed = own * CENTRE_WEIGHT + matrix[near].sum(axis=1)
    norms = np.linalg.norm(mixed, axis=1)
    norms[norms == 0] = 1.0
    semantic = own @ query
    context_semantic = (mixed @ query) / norms
    names = sorted({memory.session for memory in memories if memory.session})
    sessions = index.sessions.scores(analysis.bm25_query, len(names), within=names)
    raw = {
        "semantic": np.asarray(semantic, dtype=np.float32),
        "bm25": np.asarray([text.get(i, 0.0) for i in iids], dtype=np.float32),
        "context_semantic": np.asarray(context_semantic, dtype=np.float32),
        "context_bm25": np.asarray([context.get(i, 0.0) for i in iids], dtype=np.float32),
        "speaker": np.asarray(
            [
                1.0 if analysis.speaker and speaker_of(m.author) == analysis.speaker else 0.0
                for m in memories
            ],
            dtype=np.float32,
        ),
        "session": np.asarray(
            [sessions.get(session_code(m.session), 0.0) if m.session else 0.0 for m in memories],
            dtype=np.float32,
        ),
    }
    normalised = {name: minmax(values) for name, values in raw.items()}
    normalised["speaker"] = raw["speaker"]
    return Scored(iids, raw, normalised, exact=False)
