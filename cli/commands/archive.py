"""`memdir export` and `memdir restore`: the canonical files as one (optionally encrypted) file."""

from __future__ import annotations

import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from memdir.archive_format.errors import BadInputError, ExitStatus
from memdir.cli import context
from memdir.cli.render import emit_json, note
from memdir.words import counted

PASSPHRASE_ENV = "MEMDIR_PASSPHRASE"
# An encrypted export can be attacked offline, guess after guess: a new passphrase has at least
# this many characters (Argon2id slows each guess; it cannot save a one-letter passphrase).
MIN_PASSPHRASE = 12


def read_passphrase(confirm: bool) -> str:
    """$MEMDIR_PASSPHRASE, else a prompt on the terminal (twice when `confirm`: a new
    passphrase, which must have MIN_PASSPHRASE characters; restore takes any)."""
    given = os.environ.get(PASSPHRASE_ENV)
    if given is not None:
        if not given:
            raise BadInputError(f"${PASSPHRASE_ENV} is set but empty")
        return _long_enough(given, f"${PASSPHRASE_ENV}") if confirm else given
    if not sys.stdin.isatty():
        raise BadInputError(
            "a passphrase is needed and there is no terminal to ask for it",
            hint=f"set ${PASSPHRASE_ENV}",
        )
    import getpass

    first = getpass.getpass("passphrase: ")
    if not first:
        raise BadInputError("the passphrase is empty")
    if confirm:
        _long_enough(first, "the passphrase")
        if getpass.getpass("passphrase again: ") != first:
            raise BadInputError("the two passphrases differ; nothing was written")
    return first


def _long_enough(passphrase: str, what: str) -> str:
    if len(passphrase) < MIN_PASSPHRASE:
        raise BadInputError(
            f"{what} has {counted(len(passphrase), 'character')}; an encrypted export needs at "
            f"least {MIN_PASSPHRASE}; nothing was written",
            hint="a few unrelated words make a passphrase that is long and easy to type",
        )
    return passphrase


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return f"{count:.1f} GiB"


def register(app: typer.Typer) -> None:
    @app.command()
    def export(
        ctx: typer.Context,
        out: Annotated[
            Path,
            typer.Option("--out", "-o", help="The file to write (.tar.gz); `-` for stdout."),
        ],
        encrypt: Annotated[
            bool,
            typer.Option(
                "--encrypt",
                help=f"Encrypt (ChaCha20-Poly1305, key from a passphrase via Argon2id); the "
                f"passphrase (at least {MIN_PASSPHRASE} characters) is prompted for, or taken from "
                f"${PASSPHRASE_ENV}.",
            ),
        ] = False,
        json_: context.JsonOpt = False,
    ) -> None:
        """Pack the canonical files (not the .memdir/ cache) into one tar.gz, optionally encrypted.

        Example: memdir export --out ~/backup/memory.tar.gz --encrypt
        """
        from memdir.usecases.archive import export as run_export

        memdir = context.open_memdir(ctx, lenient=True)  # a backup must not depend on the settings
        to_stdout = str(out) == "-"
        if to_stdout and json_:
            raise BadInputError("--json and --out - both want standard output", hint="pick one")
        if encrypt:  # before asking for a passphrase that could not be used
            from memdir.archive_format.extras import require

            require("encrypt", "export --encrypt")
        passphrase = read_passphrase(confirm=True) if encrypt else None
        report = run_export(memdir, out, passphrase)
        if to_stdout:
            note(f"{report.files} files, {_size(report.bytes_out)} to standard output")
            return
        if json_:
            data = {**asdict(report), "path": str(report.path)}
            emit_json({**data, "seconds": round(report.seconds, 3)})
            return
        typer.echo(str(report.path))
        note(
            f"{report.files} files, {_size(report.bytes_in)} → {_size(report.bytes_out)}"
            f"{' encrypted' if report.encrypted else ''} in {report.seconds:.2f} s"
        )

    @app.command()
    def restore(
        archive: Annotated[Path, typer.Argument(metavar="FILE", help="An export file.")],
        directory: Annotated[
            Path, typer.Argument(metavar="DIR", help="Where to restore (new or empty).")
        ],
        json_: context.JsonOpt = False,
    ) -> None:
        """Unpack an export into a new directory and verify it (decrypting it when needed).

        Nothing is written when the passphrase is wrong or the file was tampered with.
        Exits 1 when the restored memdir has problems (listed, as `memdir verify` would).

        Example: memdir restore ~/backup/memory.tar.gz ~/memory-restored
        """
        from memdir.usecases.archive import needs_passphrase
        from memdir.usecases.archive import restore as run_restore

        sealed = needs_passphrase(archive)
        if sealed:
            from memdir.archive_format.extras import require

            require("encrypt", f"restoring the encrypted {archive}")
        passphrase = read_passphrase(confirm=False) if sealed else None
        report = run_restore(archive, directory, passphrase)
        if json_:
            emit_json({"path": str(report.root), "files": report.files,
                       "encrypted": report.encrypted, "clean": report.verify.clean,
                       "problems": report.verify.problems})  # fmt: skip
        else:
            typer.echo(str(report.root))
            for problem in report.verify.problems:
                note(f"problem: {problem}")
            note(
                f"restored {counted(report.files, 'file')}; verify: {counted(report.verify.lines, 'line')}, "
                f"{counted(len(report.verify.problems), 'problem')}"
            )
        if not report.verify.clean:
            raise typer.Exit(int(ExitStatus.PROBLEMS))
