"""The task groups `memdir --help` lists the commands under, as git groups its commands.

One table, applied to the typer app once every command group has registered (cli/main.py), so
a command module needs no change to be placed; tests/test_help.py fails on a command left out.
The groups only label the help text: no module is imported to build them.
"""

from __future__ import annotations

import typer

# task → the top-level commands in it, in the order `memdir --help` shows them
PANELS: dict[str, tuple[str, ...]] = {
    "remember": ("init", "teach", "infer", "link", "attach", "import", "people", "self", "island"),
    "recall": (
        "recall",
        "context",
        "search",
        "similar",
        "show",
        "list",
        "log",
        "links",
        "attachments",
        "attachment",
        "ring",
        "decay",
        "stats",
    ),  # fmt: skip
    "review": ("review", "confirm", "reject", "forget"),
    "journal": (
        "journal",
        "dream",
        "sleep",
        "heal",
        "wake",
        "boot",
        "core",
        "room",
        "song",
        "expire",
    ),
    "maintain": ("doctor", "verify", "index", "distill", "annotate", "bench"),
    "share": ("sync", "export", "restore"),
    "serve": ("serve", "watch", "mcp", "ui"),
}


def panel_of(name: str) -> str | None:
    for panel, names in PANELS.items():
        if name in names:
            return panel
    return None


def group_commands(app: typer.Typer) -> None:
    """Give each registered command and command group its task panel, and list them in the
    order of PANELS (rich help shows the panels in the order their first command comes)."""
    order = {
        name: index for index, name in enumerate(n for names in PANELS.values() for n in names)
    }

    def name_of(info: typer.models.CommandInfo | typer.models.TyperInfo) -> str:
        if isinstance(info, typer.models.TyperInfo):
            return info.name or ""
        return info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")

    for command in app.registered_commands:
        command.rich_help_panel = panel_of(name_of(command))
    for group in app.registered_groups:
        group.rich_help_panel = panel_of(name_of(group))
    app.registered_commands.sort(key=lambda info: order.get(name_of(info), len(order)))
    app.registered_groups.sort(key=lambda info: order.get(name_of(info), len(order)))
