"""`memdir people` and `memdir self`: the people and self notes from the command line, through
the same functions as the MCP tools person_update and self_update (archive_format/people.py),
marked as set by whoever runs the command (memdir/actor.py): the user, or the assistant from an
agent's shell."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from memdir.archive_format import people
from memdir.archive_format.errors import BadInputError, NotFoundError
from memdir.cli import context
from memdir.cli.render import emit_json, note

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The person's name.")]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="FIELD=VALUE (repeatable), e.g. relation=sister.")
]
AliasOpt = Annotated[
    list[str] | None,
    typer.Option("--alias", help="Another name they go by (repeatable); `user` for the user."),
]

people_app = typer.Typer(
    help="The people the user talks about: names, aliases, fields.", no_args_is_help=True
)
self_app = typer.Typer(help="The self notes: who the assistant is to this user.",
                       no_args_is_help=True)  # fmt: skip


def pairs(given: list[str] | None) -> dict[str, str]:
    """FIELD=VALUE arguments as a mapping (a one-line error for anything else)."""
    values: dict[str, str] = {}
    for item in given or []:
        field, sep, value = item.partition("=")
        if not sep or not field.strip():
            raise BadInputError(f"{item!r} is not FIELD=VALUE", hint="e.g. --set relation=sister")
        values[field.strip()] = value
    return values


def _known(memdir: Any, name: str) -> dict[str, Any]:
    everyone = people.read_people(memdir)
    if name not in everyone:
        raise NotFoundError(
            f"no person named {name!r}",
            hint=f"known: {', '.join(everyone) or 'none'}; `memdir people add NAME` adds one",
        )
    return everyone[name]


def _show(fields: dict[str, Any], json_: bool, name: str | None = None) -> None:
    """A person's fields (under their `name`) or the self notes' (no name), each with who set it
    and when; as JSON with `json_`."""
    if json_:
        emit_json({"name": name, "fields": fields} if name is not None else {"fields": fields})
        return
    if name is not None:
        typer.echo(name)
    indent = "  " if name is not None else ""
    for field, entry in fields.items():
        typer.echo(f"{indent}{field + ':':<14} {entry['value']}  ({entry['by']}, {entry['at']})")


@people_app.command("list")
def list_people(ctx: typer.Context, json_: context.JsonOpt = False) -> None:
    """Everyone in the people notes, with their aliases.

    Example: memdir people list --json
    """
    everyone = people.read_people(context.open_memdir(ctx))
    if json_:
        emit_json({"people": everyone})
        return
    for name, fields in everyone.items():
        aliases = people.aliases_of(fields)
        typer.echo(name + (f"  (also {', '.join(aliases)})" if aliases else ""))
    note(f"{len(everyone)} people")


@people_app.command("show")
def show_person(ctx: typer.Context, name: NameArg, json_: context.JsonOpt = False) -> None:
    """One person's fields, each with who set it and when.

    Example: memdir people show Ana
    """
    _show(_known(context.open_memdir(ctx), name), json_, name)


@people_app.command("add")
def add_person(ctx: typer.Context, name: NameArg, alias: AliasOpt = None, set_: SetOpt = None,
               now: context.NowOpt = None) -> None:  # fmt: skip
    """Add a person (or change one): fields with --set, other names with --alias.

    Example: memdir people add Sam --alias user --set relation=me
    """
    memdir, moment, actor = context.writer(ctx, now)
    people.update_person(memdir, name, pairs(set_), [], moment, by=actor.name)
    if alias:
        people.set_aliases(memdir, name, alias, [], moment, by=actor.name)
    note(f"{' '.join(name.split())} saved")


@people_app.command("alias")
def alias_person(
    ctx: typer.Context,
    name: NameArg,
    aliases: Annotated[list[str], typer.Argument(metavar="ALIAS...", help="Names to add.")],
    remove: Annotated[bool, typer.Option("--remove", help="Remove these aliases instead.")] = False,
    now: context.NowOpt = None,
) -> None:
    """Add (or --remove) names a person goes by; recall resolves them to that person.

    Example: memdir people alias Sam user Sammy
    """
    memdir, moment, actor = context.writer(ctx, now)
    _known(memdir, name)
    added, removed = ([], aliases) if remove else (aliases, [])
    fields = people.set_aliases(memdir, name, added, removed, moment, by=actor.name)
    note(f"{name}: {', '.join(people.aliases_of(fields)) or 'no aliases'}")


@people_app.command("forget")
def forget_person(ctx: typer.Context, name: NameArg, now: context.NowOpt = None) -> None:
    """Drop a person and all their fields from the notes (the notes keep the history).

    Example: memdir people forget "Old Neighbour"
    """
    memdir, moment, actor = context.writer(ctx, now)
    people.remove_person(memdir, name, moment, by=actor.name)
    note(f"{name} dropped from the people notes")


@self_app.command("show")
def show_self(ctx: typer.Context, json_: context.JsonOpt = False) -> None:
    """The self notes: each field with who set it and when.

    Example: memdir self show --json
    """
    fields = people.read_self(context.open_memdir(ctx))
    _show(fields, json_)
    if not fields and not json_:
        note("no self notes yet: `memdir self set name=Ada`")


@self_app.command("set")
def set_self(
    ctx: typer.Context,
    values: Annotated[
        list[str] | None, typer.Argument(metavar="FIELD=VALUE...", help="Fields to set.")
    ] = None,
    remove: Annotated[
        list[str] | None, typer.Option("--remove", help="A field to remove (repeatable).")
    ] = None,
    now: context.NowOpt = None,
) -> None:
    """Set (or --remove) fields of the self notes.

    Example: memdir self set name=Ada "tone=warm, brief"
    """
    given = pairs(values)
    if not given and not remove:
        raise BadInputError("nothing to set", hint='e.g. memdir self set "tone=warm, brief"')
    memdir, moment, actor = context.writer(ctx, now)
    people.update_self(memdir, given, remove or [], moment, by=actor.name)
    note("self notes saved")


def register(app: typer.Typer) -> None:
    app.add_typer(people_app, name="people")
    app.add_typer(self_app, name="self")
