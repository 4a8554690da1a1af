"""`python benchmarks/killer.py ROOT N NOW`: `memdir sleep` on ROOT in this process, killed
with SIGKILL (as `kill -9` or the OOM killer would) just before its Nth canonical write — a
shelf append or an atomic rename; N = 0 never kills, and the run then prints how many writes
it made ("writes 13"). The attack campaign's crash kind (benchmarks/attack.py) runs it."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any


class Killer:
    """Counts the writes it wraps; the one numbered `point` kills the process before it runs."""

    def __init__(self, point: int) -> None:
        self.point, self.writes = point, 0

    def wrap(self, write: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.writes += 1
            if self.writes == self.point:
                os.kill(os.getpid(), signal.SIGKILL)
            return write(*args, **kwargs)

        return counted


def main(root: str, point: int, now: str) -> int:
    from memdir.archive_format import shelf

    killer = Killer(point)
    shelf.append, os.replace = killer.wrap(shelf.append), killer.wrap(os.replace)
    from memdir.cli.main import main as memdir

    status = memdir(["--dir", root, "--now", now, "sleep"])
    print("writes", killer.writes)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
