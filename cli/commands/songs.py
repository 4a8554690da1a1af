"""`memdir song`: songs tied to memories and moods (memdir/usecases/songs.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.cli import context
from memdir.cli.render import emit_json, note
from memdir.usecases import provenance, songs
from memdir.words import counted

from ..parameters import VisibilityOpt

MoodOpt = Annotated[
    list[str] | None,
    typer.Option("--mood", help=f"A mood it carries (repeatable): {', '.join(songs.MOODS)}."),
]

song_app = typer.Typer(help="Songs tied to memories and moods.", no_args_is_help=True)


@song_app.command("add")
def add(
    ctx: typer.Context,
    title: Annotated[str, typer.Argument(help="The song's title.")],
    artist: Annotated[str, typer.Option("--artist", help="Who sings or wrote it.")],
    mood: MoodOpt = None,
    tie: Annotated[
        list[str] | None,
        typer.Option("--tie", help="A memory it is tied to: an id or unique prefix (repeatable)."),
    ] = None,
    note_: Annotated[str | None, typer.Option("--note", help="Why it matters.")] = None,
    valence: Annotated[
        float | None,
        typer.Option("--valence", min=-1, max=1, help="Valence, -1..1 (else the moods')."),
    ] = None,
    arousal: Annotated[
        float | None,
        typer.Option("--arousal", min=0, max=1, help="Arousal, 0..1 (else the moods')."),
    ] = None,
    visibility: VisibilityOpt = "normal",
    by: Annotated[
        str | None, typer.Option("--by", help="The user's name, if several people share it.")
    ] = None,
    now: context.NowOpt = None,
) -> None:
    """Keep a song, with the moods it carries and the memories it belongs with; adding the same
    title and artist again replaces it. Prints the id. From an assistant's shell it is stored as
    an inference, provisional until the user confirms it.

    Example: memdir song add "Here Comes the Sun" --artist "The Beatles" --mood joy --tie m-3f2a
    """
    from memdir.actor import refuse_user_claim

    memdir, moment, actor = context.writer(ctx, now)
    author = provenance.user(by) if not actor.assistant else "assistant"
    if by:
        refuse_user_claim(actor, provenance.user(by), "add a song")
    result = songs.add(memdir, actor, moment, title, artist, mood or [], tie or [], note_,
                       author, valence, arousal, visibility)  # fmt: skip
    if not result.added:
        note(f"already stored as {result.id}")
    elif actor.assistant:
        note(f"stored as an inference (from an assistant's shell: {actor.reason})")
    typer.echo(result.id)


@song_app.command("list")
def list_songs(
    ctx: typer.Context,
    mood: Annotated[
        str | None, typer.Option("--mood", help="Only songs carrying this mood.")
    ] = None,
    feeling: Annotated[
        str | None,
        typer.Option("--feeling", help="Rank by how each song resonates with this text's affect."),
    ] = None,
    now: context.NowOpt = None,
    json_: context.JsonOpt = False,
) -> None:
    """The songs (live ones), newest first; by mood, or by how they feel against a text.

    Example: memdir song list --feeling "a grey, lonely evening"
    """
    found = songs.listed(context.open_memdir(ctx), context.now(ctx, now), mood, feeling)
    if json_:
        emit_json(found)
        return
    for row in found:
        feel = f" resonance {row['resonance']:.2f}" if "resonance" in row else ""
        moods = f" [{', '.join(row['moods'])}]" if row["moods"] else ""
        status = "" if row["status"] == "durable" else f" ({row['status']})"
        ties = f" tied to {', '.join(row['ties'])}" if row["ties"] else ""
        typer.echo(f"{row['id']}  {row['text']}{moods}{status}{feel}{ties}")
    note(counted(len(found), "song"))


def register(app: typer.Typer) -> None:
    app.add_typer(song_app, name="song")
