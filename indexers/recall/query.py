"""Query analysis: what a recall query says beyond its words.

- affect (valence, arousal, chord) and whether it is strongly negative;
- a time window from expressions such as "last week" or "in May 2023";
- names: acronyms and proper nouns, which embedders handle poorly;
- the people it names, out of those the memories were said by: by their handle (in any case
  when the query capitalises it: "Elise" names the speaker "elise") or by a name they are
  addressed by in their conversations ("Kate" names "Emi", indexers/names.py); and the
  supersede keys it names;
- two rewrites: a BM25 query without stop words (a person named by an alias is searched by
  their handle, which their speaker-prefixed memories carry), and a dense query with the named
  person replaced by "their"/removed (the person is matched by the speaker component instead,
  and left in the dense query the name only drags in everything that person ever said).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memdir.archive_format.clock import format_time

from ..text import QUERY_STOP_WORDS
from .timewindow import TimeWindow, find_time_window

_TOKEN = re.compile(r"[A-Za-z0-9]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*")
_NOT_NAMES = QUERY_STOP_WORDS | {"tell", "remind", "remember", "please", "yes", "ok"}
NEGATIVE_QUERY = -0.5


@dataclass
class QueryAnalysis:
    query: str
    affect: dict[str, Any]
    negative: bool
    window: TimeWindow | None
    names: list[str]  # acronyms and proper nouns
    speaker: str | None  # the one person the query names, if exactly one
    people: dict[str, str]  # each person the query names: the word it uses → the speaker
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
            "people": self.people,
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
    kept = [token for token in tokens if token.lower() not in QUERY_STOP_WORDS]
    return " ".join(kept or tokens)


def named_people(query: str, speakers: list[str], aliases: dict[str, str]) -> dict[str, str]:
    """{the word the query uses: the speaker it names}. A handle matches as written, or in any
    case where the query capitalises it (a handle may be lower-case, "elise"); an alias (by
    names.aliases, case-folded) only where the query capitalises it, as a name."""
    found: dict[str, str] = {}
    for name in speakers:
        pattern = rf"\b{re.escape(name)}(?=(?:['’`]s)?\b)"
        for match in re.finditer(pattern, query, re.IGNORECASE):
            if match.group(0) == name or match.group(0)[0].isupper():
                found.setdefault(match.group(0), name)
    for match in _WORD.finditer(query):
        word = re.sub(r"['’`]s$", "", match.group(0))
        speaker = aliases.get(word.casefold())
        if speaker and word[0].isupper() and word not in found:
            found[word] = speaker
    return found


def note_aliases(names_by_person: dict[str, list[str]], speakers: list[str]) -> dict[str, str]:
    """The people notes' names as aliases, case-folded → the speaker handle they denote: a
    person whose names (their name and aliases) include exactly one speaker handle is that
    speaker under each of their other names ("Sam" with alias `user` names the speaker `user`,
    so "what does Sam like?" gets the speaker signal)."""
    handles = {speaker.casefold(): speaker for speaker in speakers}
    found: dict[str, str] = {}
    for names in names_by_person.values():
        denoted = {handles[name.casefold()] for name in names if name.casefold() in handles}
        if len(denoted) != 1:
            continue
        speaker = denoted.pop()
        for name in names:
            if name.casefold() != speaker.casefold():
                found[name.casefold()] = speaker
    return found


def without_speaker(query: str, word: str) -> str:
    """'What did Caroline's sister say to Caroline?' → 'What did their sister say to ?'"""
    text = re.sub(rf"\b{re.escape(word)}['’`]s\b", "their", query)
    text = re.sub(rf"\b{re.escape(word)}\b", "", text)
    return " ".join(text.split()) or query


def with_handles(query: str, people: dict[str, str]) -> str:
    """Each person the query names by another word, named by their handle instead."""
    for word, speaker in people.items():
        if word != speaker:
            query = re.sub(rf"\b{re.escape(word)}\b", speaker, query)
    return query


def analyse(
    query: str,
    now: datetime,
    annotator: Any,
    speakers: list[str],
    keys: list[str],
    zone: Any,
    aliases: dict[str, str] | None = None,
) -> QueryAnalysis:
    """Everything recall needs to know about the query before it looks anything up."""
    from ..affect import is_strongly_negative

    affect = annotator.annotate(query)
    people = named_people(query, speakers, aliases or {})
    named = set(people.values())
    speaker = named.pop() if len(named) == 1 else None
    lowered = query.lower()
    words = {word.lower() for word in _WORD.findall(query)}
    return QueryAnalysis(
        query=query,
        affect=affect.to_dict(),
        negative=is_strongly_negative(affect, NEGATIVE_QUERY),
        window=find_time_window(query, now, zone),
        names=names_in(query),
        speaker=speaker,
        people=people,
        keys=[key for key in keys if key.lower() in words or key.lower() in lowered],
        bm25_query=bm25_terms(with_handles(query, people)),
        dense_query=_without_people(query, people) if speaker else query,
    )


def _without_people(query: str, people: dict[str, str]) -> str:
    for word in people:
        query = without_speaker(query, word)
    return query
