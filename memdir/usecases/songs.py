"""Songs (`memdir song`, CAMA's upsert_song): a song is a memory of type SONG — its title and
artist as the text, the moods it carries as the user's own affect (a Plutchik chord, with the
valence and arousal those moods place it at), `tied-to` links to the memories it belongs with —
and is found by mood: the songs whose chord holds an emotion, or the songs that feel most like
a piece of text (the affect resonance recall's affect component uses). No audio is kept.

The same song (title and artist, case aside) has one supersede key, so adding it again with
other moods or ties replaces the older one. The user's song is a teaching; the assistant's is
an inference, provisional until the user confirms it (docs/CONTINUITY.md, "Songs")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memdir.actor import Actor
from memdir.archive_format import lifecycle
from memdir.archive_format.errors import BadInputError
from memdir.archive_format.lifecycle import WriteResult, load_view
from memdir.archive_format.memdir import Memdir

SONG = "SONG"
TIED_TO = "tied-to"
# Where each Plutchik emotion sits on the valence axis (the circumplex, coarsely: Russell 1980;
# Plutchik's wheel puts joy, trust and anticipation opposite sadness, disgust and surprise,
# anger and fear); its arousal is indexers.affect.EMOTION_AROUSAL's.
MOOD_VALENCE = {"joy": 0.8, "trust": 0.5, "anticipation": 0.3, "surprise": 0.0,
                "sadness": -0.7, "fear": -0.6, "anger": -0.7, "disgust": -0.6}  # fmt: skip
MOODS = tuple(MOOD_VALENCE)


def song_key(title: str, artist: str) -> str:
    """The supersede key of a song: the same title and artist, case and spacing aside."""
    return "song:" + "/".join(" ".join(part.casefold().split()) for part in (artist, title))


def song_text(title: str, artist: str, note: str | None = None) -> str:
    return f"Song: “{title.strip()}” by {artist.strip()}" + (f" — {note.strip()}" if note else "")


def song_affect(moods: list[str], valence: float | None = None,
                arousal: float | None = None) -> dict[str, Any]:  # fmt: skip
    """The user's affect for a song: the moods as a chord, the valence and arousal they place
    it at (their means) unless given."""
    from memdir.indexers.affect import EMOTION_AROUSAL

    unknown = sorted(set(moods) - set(MOODS))
    if unknown:
        raise BadInputError(f"unknown mood {unknown[0]!r}", hint=f"moods are {', '.join(MOODS)}")
    affect: dict[str, Any] = {"annotator": "user"}
    if moods:
        affect["chord"] = {mood: 1.0 for mood in sorted(set(moods))}
    if valence is None and moods:
        valence = sum(MOOD_VALENCE[m] for m in moods) / len(moods)
    if arousal is None and moods:
        arousal = sum(EMOTION_AROUSAL[m] for m in moods) / len(moods)
    if valence is not None:
        affect["valence"] = round(valence, 3)
    if arousal is not None:
        affect["arousal"] = round(arousal, 3)
    return affect if len(affect) > 1 else {}


def add(memdir: Memdir, actor: Actor, now: datetime, title: str, artist: str,
        moods: list[str], ties: list[str], note: str | None = None, author: str = "user",
        valence: float | None = None, arousal: float | None = None,
        visibility: str = "normal") -> WriteResult:  # fmt: skip
    """Store (or replace) a song tied to `ties` (ids or unique prefixes of live memories)."""
    if not title.strip() or not artist.strip():
        raise BadInputError("a song needs a title and an artist", hint='e.g. memdir song add '
                            '"Here Comes the Sun" --artist "The Beatles"')  # fmt: skip
    view = load_view(memdir, now)
    links = []
    for given in ties:
        state = view.resolve(given)
        if state.memory is None or state.status in ("forgotten", "rejected"):
            raise BadInputError(f"{state.id} is {state.status}: a song cannot be tied to it",
                                hint="tie it to a live memory")  # fmt: skip
        links.append({"type": TIED_TO, "to": state.id})
    fields: dict[str, Any] = {"type": SONG, "key": song_key(title, artist), "links": links,
                              "affect": song_affect(moods, valence, arousal),
                              "visibility": visibility}  # fmt: skip
    text = song_text(title, artist, note)
    if actor.assistant:
        return lifecycle.infer(memdir, text, now, None, author, **fields)
    return lifecycle.teach(memdir, text, now, author, **fields)


def listed(memdir: Memdir, now: datetime, mood: str | None = None, feeling: str | None = None,
           surface: str = "song list") -> list[dict[str, Any]]:  # fmt: skip
    """The live songs `surface` may show: those whose chord holds `mood` when given; ranked by
    how they resonate with the affect of `feeling` when given (1 = feels the same), else the
    newest first."""
    from memdir.indexers.affect import PLUTCHIK, Affect, load_annotator, resonance

    if mood is not None and mood not in MOODS:
        raise BadInputError(f"unknown mood {mood!r}", hint=f"moods are {', '.join(MOODS)}")
    felt = None
    if feeling is not None:
        name = memdir.settings.affect.annotator
        if name == "none":
            raise BadInputError("affect annotation is switched off (affect.annotator: none)",
                                hint="name a --mood instead, or set affect.annotator")  # fmt: skip
        felt = load_annotator(name).annotate(feeling)
    rows = []
    for state in load_view(memdir, now):
        memory = state.memory
        if memory is None or memory.type != SONG or state.status not in ("durable", "provisional"):
            continue
        text = state.text_on(surface)
        if text is None:
            continue
        given = dict(memory.affect or {})
        chord = given.get("chord") or {}
        if mood is not None and not chord.get(mood):
            continue
        row: dict[str, Any] = {
            "id": state.id, "text": text, "status": state.status,
            "visibility": memory.visibility, "created": state.created,
            "moods": sorted(chord), "valence": given.get("valence"),
            "arousal": given.get("arousal"),
            "ties": [link["to"] for link in state.links if link.get("type") == TIED_TO],
        }  # fmt: skip
        if felt is not None:
            song = Affect(valence=float(given.get("valence") or 0.0),
                          arousal=float(given.get("arousal") or 0.0),
                          chord={e: float(chord.get(e, 0.0)) for e in PLUTCHIK},
                          annotator="user")  # fmt: skip
            row["resonance"] = round(resonance(felt, song), 4)
        rows.append(row)
    rows.sort(key=lambda row: row["created"], reverse=True)
    if felt is not None:
        rows.sort(key=lambda row: -row["resonance"])
    return rows
