"""The bearer token of `memdir mcp --http`: `.memdir/mcp-token`, mode 0600, made on first use.

A client of the HTTP transport sends it as `Authorization: Bearer TOKEN`. Rotating writes a new
one in place (atomically); the running server reads the file on each request, so the old token
stops working at once, without a restart. The file lives in the derived cache (.memdir/, which
git ignores): it is a per-machine secret, not part of the memory.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

from memdir.archive_format.atomic import write_bytes
from memdir.archive_format.memdir import Memdir

TOKEN_NAME = "mcp-token"


def token_path(memdir: Memdir) -> Path:
    return memdir.cache_dir / TOKEN_NAME


def read_token(path: Path) -> str | None:
    try:
        token = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return token or None


def ensure_token(memdir: Memdir, rotate: bool = False) -> tuple[str, bool]:
    """The token (a new one when there is none or `rotate`), and whether it was just made."""
    return ensure_token_at(token_path(memdir), rotate)


def ensure_token_at(path: Path, rotate: bool = False) -> tuple[str, bool]:
    """The token kept in `path` (0600; made when there is none, or anew with `rotate`), and
    whether it was just made: the MCP transport's and the web page's, each in its own file."""
    token = None if rotate else read_token(path)
    if token is not None:
        return token, False
    token = secrets.token_urlsafe(32)
    write_bytes(path, [f"{token}\n".encode("ascii")], mode=0o600)
    return token, True


def authorised(header: str | None, path: Path) -> bool:
    """Whether an Authorization header carries the current token (compared in constant time)."""
    expected = read_token(path)
    if expected is None or not header:
        return False
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), expected.encode()
    )
