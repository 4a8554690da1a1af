"""The `memdir` executable: a running `memdir serve` answers the read commands it serves
(cli/service.py); everything else, and those when no service answers, runs the full CLI."""

from __future__ import annotations

import sys


def run() -> None:
    from .service import forward

    status = forward(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    from .main import run as run_cli

    run_cli()
