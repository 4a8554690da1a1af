"""`memdir room`: the affective state of the conversation right now (CAMA's read_room)."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.cli import context
from memdir.cli.parameters import SessionOpt
from memdir.cli.render import emit_json, note
from memdir.usecases.room import DEFAULT_TURNS, room, sparkline
from memdir.words import counted


def register(app: typer.Typer) -> None:
    @app.command("room")
    def room_command(
        ctx: typer.Context,
        session: SessionOpt = None,
        turns: Annotated[
            int,
            typer.Option("--turns", min=1, help=f"The session's last N turns ({DEFAULT_TURNS})."),
        ] = DEFAULT_TURNS,
        now: context.NowOpt = None,
        json_: context.JsonOpt = False,
    ) -> None:
        """Read the room: each recent turn's valence, arousal and strongest emotion, the user's
        mood over them (mean, latest, trend, chord) and whether recall's counterweights would
        engage on the user's latest words. Private, sealed and secret turns are left out.

        Example: memdir room --session s1 --turns 10
        """
        found = room(context.open_memdir(ctx), context.now(ctx, now), session, turns)
        if json_:
            emit_json(found)
            return
        if not found["turns"]:
            note("no turns to read in the journal" + (f" for session {session}" if session else ""))
            return
        for row in found["turns"]:
            emotion = f" {row['emotion']}" if row["emotion"] else ""
            typer.echo(f"{row['at'][11:16]} {row['role']:<9} {sparkline([row['valence']])} "
                       f"{row['valence']:+.2f} a{row['arousal']:.2f}{emotion}  {row['text']}")  # fmt: skip
        mood = found["mood"]
        if not mood["user_turns"]:
            note(f"session {found['session']}: no user turns among the last {len(found['turns'])}")
            return
        chord = ", ".join(f"{e} {w:.0%}" for e, w in
                          sorted(mood["chord"].items(), key=lambda item: -item[1])[:3])  # fmt: skip
        typer.echo(
            f"session {found['session']}, {counted(mood['user_turns'], 'user turn')}: "
            f"{mood['sparkline']} mean {mood['valence']:+.2f}, latest "
            f"{mood['latest_valence']:+.2f}, {mood['trend']}, arousal {mood['arousal']:.2f}"
            + (f"; {chord}" if chord else "")
        )
        if mood["counterweights"]:
            typer.echo("the latest user turn is strongly negative: a recall on it engages the "
                       "counterweights")  # fmt: skip
