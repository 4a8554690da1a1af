"""Query analysis: what a recall query says beyond its words.

- affect (valence, arousal, chord) and whether it is strongly negative;
- a time window from expressions such as "last week" or "in May 2023";
- names: acronyms and proper nouns, which embedders handle poorly;
- the people it names, out of those the memories were said by, and the supersede keys it names;
- two rewrites: a BM25 query without stop words, and a dense query with the named person
  replaced by "their"/removed (the person is matched by the speaker component instead, and
  left in the dense query the name only drags in everything that person ever said).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memdir.archive_format.clock import format_time

from .timewindow import TimeWindow, find_time_window

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
    where's which while who who's whom why why's will with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves ever also""".split()
)
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*")
_NOT_NAMES = STOP_WORDS | {"tell", "remind", "remember", "please", "yes", "ok"}
NEGATIVE_QUERY = -0.5


@dataclass
class QueryAnalysis:
    query: str
    affect: dict[str, Any]
    negative: bool
    window: TimeWindow | None
    names: list[str]  # acronyms and proper nouns
    speaker: str | None  # the one person the query names, if exactly one
    keys: list[str]  # supersede keys the query names
    bm25_query: str
    dense_query: str

    def to_dict(self) -> dict[str, Any]:
        window = None
        if self.window:
            window = {
                "start": format_time(self.window.start),
                "end": format_time(self.window.end),
                "phrase": self.window.phrase,
            }
        return {
            "query": self.query,
            "affect": self.affect,
            "strongly_negative": self.negative,
            "time_window": window,
            "names": self.names,
            "speaker": self.speaker,
            "keys": self.keys,
            "bm25_query": self.bm25_query,
            "dense_query": self.dense_query,
        }


def names_in(query: str) -> list[str]:
    """Acronyms (API, PTO) and capitalised words (Lisbon), possessives stripped."""
    found: list[str] = []
    for match in _WORD.finditer(query):
        bare = re.sub(r"['’]s$", "", match.group(0).strip("'’-"))
        if len(bare) < 2 or bare.lower() in _NOT_NAMES:
            continue
        if (bare.isupper() or bare[0].isupper()) and bare not in found:
            found.append(bare)
    return found


def bm25_terms(query: str) -> str:
    """The query's words without stop words (all of them when nothing else is left)."""
    tokens = _TOKEN.findall(query)
    kept = [token for token in tokens if token.lower() not in STOP_WORDS]
    return " ".join(kept or tokens)


def named_speakers(query: str, speakers: list[str]) -> list[str]:
    return [name for name in speakers if re.search(rf"\b{re.escape(name)}(?:['’]s)?\b", query)]


def without_speaker(query: str, name: str) -> str:
    """'What did Caroline's sister say to Caroline?' → 'What did their sister say to ?'"""
    text = re.sub(rf"\b{re.escape(name)}['’]s\b", "their", query)
    text = re.sub(rf"\b{re.escape(name)}\b", "", text)
    return " ".join(text.split()) or query


def analyse(
    query: str,
    now: datetime,
    annotator: Any,
    speakers: list[str],
    keys: list[str],
    zone: Any,
) -> QueryAnalysis:
    """Everything recall needs to know about the query before it looks anything up."""
    from ..affect import is_strongly_negative

    affect = annotator.annotate(query)
    named = named_speakers(query, speakers)
    speaker = named[0] if len(named) == 1 else None
    lowered = query.lower()
    words = {word.lower() for word in _WORD.findall(query)}
    return QueryAnalysis(
        query=query,
        affect=affect.to_dict(),
        negative=is_strongly_negative(affect, NEGATIVE_QUERY),
        window=find_time_window(query, now, zone),
        names=names_in(query),
        speaker=speaker,
        keys=[key for key in keys if key.lower() in words or key.lower() in lowered],
        bm25_query=bm25_terms(query),
        dense_query=without_speaker(query, speaker) if speaker else query,
    )
