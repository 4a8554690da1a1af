"""`memdir island`: named groups of memories (archive_format/islands.py), made by whoever runs
the command (memdir/actor.py: the user, or the assistant from an agent's shell)."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.archive_format import islands
from memdir.archive_format.lifecycle import load_view
from memdir.archive_format.visibility import exposure, marker
from memdir.cli import context
from memdir.cli.render import emit_json, note
from memdir.usecases import islands as usecase
from memdir.words import counted

from ..layout import flat

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The island's name.")]
IdsArg = Annotated[
    list[str], typer.Argument(metavar="ID...", help="Memory ids or unique prefixes.")
]

island_app = typer.Typer(help="Islands: named groups of memories.", no_args_is_help=True)


@island_app.command("create")
def create(
    ctx: typer.Context,
    name: NameArg,
    about: Annotated[str | None, typer.Option("--about", help="What the island is about.")] = None,
    now: context.NowOpt = None,
    json_: context.JsonOpt = False,
) -> None:
    """Make an island (empty; `island add` puts memories in it).

    Example: memdir island create trips --about "the journeys we talked about"
    """
    memdir, moment, actor = context.writer(ctx, now)
    made = islands.create(memdir, name, about, moment, by=actor.name)
    if json_:
        emit_json({"name": made, "about": about, "by": actor.name})
        return
    note(f"island {made!r} created")


def _change(ctx: typer.Context, name: str, ids: list[str], op: str, now: str | None,
            json_: bool) -> None:  # fmt: skip
    memdir, moment, actor = context.writer(ctx, now)
    view = load_view(memdir, moment)
    changed = islands.change(memdir, name, ids, op, view, moment, by=actor.name)
    if json_:
        emit_json({"name": " ".join(name.split()), "added" if op == "add" else "removed": changed})
        return
    for memory_id in changed:
        typer.echo(memory_id)
    note(f"{counted(len(changed), 'memory')} {'added to' if op == 'add' else 'removed from'} {name!r}")  # fmt: skip


@island_app.command("add")
def add(ctx: typer.Context, name: NameArg, ids: IdsArg, now: context.NowOpt = None,
        json_: context.JsonOpt = False) -> None:  # fmt: skip
    """Put memories in an island.

    Example: memdir island add trips m-1a2b 3c4d
    """
    _change(ctx, name, ids, "add", now, json_)


@island_app.command("remove")
def remove(ctx: typer.Context, name: NameArg, ids: IdsArg, now: context.NowOpt = None,
           json_: context.JsonOpt = False) -> None:  # fmt: skip
    """Take memories out of an island (the memories stay).

    Example: memdir island remove trips m-1a2b
    """
    _change(ctx, name, ids, "remove", now, json_)


@island_app.command("delete")
def delete(ctx: typer.Context, name: NameArg, now: context.NowOpt = None,
           json_: context.JsonOpt = False) -> None:  # fmt: skip
    """Drop an island (its memories stay; the lines keep the history).

    Example: memdir island delete trips
    """
    memdir, moment, actor = context.writer(ctx, now)
    islands.drop(memdir, name, moment, by=actor.name)
    if json_:
        emit_json({"name": " ".join(name.split()), "dropped": True})
        return
    note(f"island {name!r} dropped")


@island_app.command("list")
def list_islands(ctx: typer.Context, now: context.NowOpt = None,
                 json_: context.JsonOpt = False) -> None:  # fmt: skip
    """Every island: its name, how many memories it holds, what it is about.

    Example: memdir island list --json
    """
    found = usecase.listed(context.open_memdir(ctx), context.now(ctx, now))
    if json_:
        emit_json({"islands": found})
        return
    for island in found:
        about = f"  {flat(island['about'])}" if island["about"] else ""
        typer.echo(f"{island['name']}  ({counted(island['members'], 'memory')}, {island['by']}){about}")  # fmt: skip
    note(counted(len(found), "island"))


@island_app.command("show")
def show(ctx: typer.Context, name: NameArg, now: context.NowOpt = None,
         json_: context.JsonOpt = False) -> None:  # fmt: skip
    """One island's members, with their status (private and sealed ones masked).

    Example: memdir island show trips
    """
    data = usecase.shown(context.open_memdir(ctx), name, context.now(ctx, now))
    if json_:
        emit_json(data)
        return
    typer.echo(data["name"] + (f": {data['about']}" if data["about"] else ""))
    for member in data["members"]:
        mark = marker(member["status"], exposure(member.get("visibility", "normal")))
        typer.echo(f"  {member['id']}  {flat(member['text'])}" + (f"  [{mark}]" if mark else ""))
    note(counted(len(data["members"]), "memory"))


def register(app: typer.Typer) -> None:
    app.add_typer(island_app, name="island")
