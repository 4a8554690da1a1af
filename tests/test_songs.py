"""`memdir song`: songs tied to memories and moods, found by mood (docs/CONTINUITY.md, "Songs"),
through the policy's `song list` rows."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from conftest import clean_env, configure, memdir_main

from memdir.actor import ASSISTANT, Actor
from memdir.archive_format import lifecycle
from memdir.archive_format.errors import BadInputError
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.visibility import Show, decide, exposure
from memdir.usecases import songs
from memdir.usecases.songs import MOOD_VALENCE, song_key

NOW = "2026-05-01T12:00:00Z"
NOW_DT = datetime(2026, 5, 1, 12, tzinfo=timezone.utc)


def _run(memdir: Memdir, *args: str, now: str | None = NOW, **env: str) -> str:
    done = memdir_main("--dir", str(memdir.root), *args, now=now, env=clean_env(**env))
    assert done.code == 0, done
    return done.out.strip()


def test_a_song_keeps_its_moods_and_ties_and_is_found_by_mood(hashed: Memdir) -> None:
    configure(hashed, affect={"annotator": "vader"})
    wedding = _run(hashed, "teach", "we danced at our wedding in Porto")
    funeral = _run(hashed, "teach", "grandpa's funeral was in March")
    sun = _run(hashed, "song", "add", "Here Comes the Sun", "--artist", "The Beatles",
               "--mood", "joy", "--mood", "anticipation", "--tie", wedding[:8])  # fmt: skip
    hurt = _run(hashed, "song", "add", "Hurt", "--artist", "Johnny Cash", "--mood", "sadness",
                "--tie", funeral, "--note", "played at the funeral")  # fmt: skip
    songs = {row["id"]: row for row in json.loads(_run(hashed, "song", "list", "--json"))}
    assert set(songs) == {sun, hurt}
    assert songs[sun]["text"] == "Song: “Here Comes the Sun” by The Beatles"
    assert songs[sun]["moods"] == ["anticipation", "joy"] and songs[sun]["ties"] == [wedding]
    # the moods place it: the mean of their valences (docs: MOOD_VALENCE)
    assert songs[sun]["valence"] == round(
        (MOOD_VALENCE["joy"] + MOOD_VALENCE["anticipation"]) / 2, 3
    )
    assert songs[hurt]["valence"] == MOOD_VALENCE["sadness"] and songs[hurt]["ties"] == [funeral]
    sad = json.loads(_run(hashed, "song", "list", "--mood", "sadness", "--json"))
    assert [row["id"] for row in sad] == [hurt]
    # a feeling ranks them by resonance with its affect
    felt = json.loads(_run(hashed, "song", "list", "--feeling",
                           "I feel so sad, lonely and miserable tonight", "--json"))  # fmt: skip
    assert [row["id"] for row in felt] == [hurt, sun]
    assert felt[0]["resonance"] > felt[1]["resonance"]
    happy = json.loads(_run(hashed, "song", "list", "--feeling",
                            "what a wonderful happy sunny day, I love it", "--json"))  # fmt: skip
    assert [row["id"] for row in happy] == [sun, hurt]
    # the song links show in the tied memory's neighbourhood
    links = json.loads(_run(hashed, "links", wedding, "--json"))
    assert sun in json.dumps(links)


def test_adding_the_same_song_again_replaces_it(hashed: Memdir) -> None:
    first = _run(hashed, "song", "add", "Hurt", "--artist", "Johnny Cash", "--mood", "sadness")
    again = _run(hashed, "song", "add", "hurt", "--artist", "johnny  cash", "--mood", "trust",
                 now="2026-05-02T12:00:00Z")  # fmt: skip
    assert song_key("Hurt", "Johnny Cash") == song_key("hurt", "johnny  cash")
    rows = json.loads(_run(hashed, "song", "list", "--json", now="2026-05-02T12:00:00Z"))
    assert [row["id"] for row in rows] == [again] and rows[0]["moods"] == ["trust"]
    shown = json.loads(_run(hashed, "show", first, "--json", now="2026-05-02T12:00:00Z"))
    assert shown["status"] == "superseded"


def test_the_assistants_song_is_an_inference(hashed: Memdir) -> None:
    # an assistant writes at the real time (no --now), and its song waits for the user
    done = memdir_main("--dir", str(hashed.root), "song", "add", "Vienna", "--artist",
                       "Billy Joel", "--mood", "trust", now=None,
                       env=clean_env(MEMDIR_ACTOR="assistant"))  # fmt: skip
    assert done.code == 0, done
    song = done.out.strip()
    shown = json.loads(_run(hashed, "show", song, "--json", now=None))
    assert shown["status"] == "provisional" and shown["source"] == "inference"
    done = memdir_main("--dir", str(hashed.root), "song", "add", "Vienna", "--artist", "B",
                       "--by", "ana", now=None, env=clean_env(MEMDIR_ACTOR="assistant"))  # fmt: skip
    assert done.code != 0 and "cannot" in done.err and "Traceback" not in done.err


def test_bad_songs_are_one_line_errors(hashed: Memdir) -> None:
    for args in (("song", "add", "X", "--artist", "Y", "--mood", "glee"),
                 ("song", "add", " ", "--artist", "Y"),
                 ("song", "add", "X", "--artist", "Y", "--tie", "m-ffffffff"),
                 ("song", "list", "--mood", "glee")):  # fmt: skip
        done = memdir_main("--dir", str(hashed.root), *args, now=NOW)
        assert done.code in (BadInputError.status, 4), (args, done)
        assert "Traceback" not in done.err and done.err.count("\n") <= 2, done.err


def test_song_list_follows_the_policy_rows(hashed: Memdir) -> None:
    """Each status and visibility of a song, listed as the `song list` row says."""
    user, assistant = Actor("user", "test"), Actor(ASSISTANT, "test")
    day = datetime(2026, 4, 1, 12, tzinfo=timezone.utc)

    def song(name: str, actor: Actor = user, at: datetime = day, **options: str) -> str:
        author = "assistant" if actor.assistant else "user"
        return songs.add(hashed, actor, at, f"qk{name}word", "Q", [], [], None, author,
                         **options).id  # fmt: skip

    ids = {
        "durable": song("durable"),
        "provisional": song("provisional", assistant, NOW_DT - timedelta(days=1)),
        "expired": song("expired", assistant, day),  # its 7-day TTL long gone at NOW
        "rejected": song("rejected", assistant, NOW_DT - timedelta(days=1)),
        "superseded": song("superseded"),
        "forgotten": song("forgotten"),
        "private": song("private", visibility="private"),
        "sealed": song("sealed", visibility="sealed"),
    }
    lifecycle.reject(hashed, ids["rejected"], "not mine", NOW_DT)
    # the same song again (case aside) replaces it
    current = songs.add(hashed, user, day + timedelta(days=1), "QKSUPERSEDEDWORD", "q", [], []).id
    lifecycle.forget(hashed, ids["forgotten"], NOW_DT)
    lifecycle.expire(hashed, NOW_DT)
    status = {name: name if name in ("provisional", "expired", "rejected", "superseded",
                                     "forgotten") else "durable" for name in ids}  # fmt: skip
    for out in (_run(hashed, "song", "list"), _run(hashed, "song", "list", "--json")):
        for name, memory in ids.items():
            visibility = name if name in ("private", "sealed") else "normal"
            shown = decide("song list", status[name], exposure(visibility, "public"))
            token = f"qk{name}word"
            if shown is Show.TEXT:
                assert token in out, name
            elif shown is Show.MASKED:
                assert token not in out and memory in out, name
            else:
                assert token not in out and memory not in out, name
    # the assistant's tool lists the normal live songs only
    listed = {row["id"] for row in songs.listed(hashed, NOW_DT, surface="song list (MCP)")}
    assert listed == {ids["durable"], ids["provisional"], current}
