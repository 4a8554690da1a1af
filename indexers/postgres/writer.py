"""One writer per memdir across hosts: a session-level `pg_advisory_lock` on the memdir's
schema, held by the index updater beside the local lock file (`.memdir/index.lock`).

The lock file keeps two writers on one host (or one filesystem whose flock works) apart; two
hosts that each hold a copy of the memdir, or a shared filesystem without working flock, share
only the database, so the updater also takes this lock. It lives on a connection of its own:
the data connection may be dropped and reopened in the middle of an update (database.py)
without losing the lock, and a writer that dies or loses its link releases it with its
session, so no stale lock outlives it. The lock connection carries an `application_name`
naming its host and process, so a refused writer can say who holds it.
"""

from __future__ import annotations

import hashlib
import os
import socket
from typing import Any

from memdir.archive_format.errors import LockedError, MemdirError

from .database import Database


def writer_key(schema: str) -> int:
    """The advisory lock's 64-bit key for one schema (positive, so pg_locks shows it as
    classid = key >> 32, objid = key & 0xffffffff)."""
    digest = hashlib.sha256(f"memdir index writer:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def holder_name() -> str:
    """How this process appears to others in pg_stat_activity."""
    return f"memdir index on {socket.gethostname()} pid {os.getpid()}"[:63]


class AdvisoryLock:
    """A re-entrant context manager holding the schema's writer lock (see the module doc).
    `timeout` seconds to wait for another holder, then LockedError."""

    def __init__(self, dsn: str, schema: str) -> None:
        self.db = Database(dsn, schema, application_name=holder_name())
        self.key = writer_key(schema)
        self.timeout = 0.0
        self._depth = 0

    def __call__(self, timeout: float) -> AdvisoryLock:
        self.timeout = timeout
        return self

    def __enter__(self) -> AdvisoryLock:
        if self._depth == 0:
            self._acquire()
        self._depth += 1
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._release()

    def _acquire(self) -> None:
        from psycopg import errors

        connection = self.db.connection  # IndexUnavailableError when the server is away
        if self.timeout <= 0:
            taken = self.db.one("SELECT pg_try_advisory_lock(%s)", (self.key,))[0]
            if not taken:
                raise self._refused()
            return
        wait = f"{max(1, int(self.timeout * 1000))}ms"
        self.db.execute("SELECT set_config('lock_timeout', %s, false)", (wait,))
        try:
            with self.db.guard():
                try:
                    connection.execute("SELECT pg_advisory_lock(%s)", (self.key,))
                except errors.LockNotAvailable:
                    raise self._refused() from None
        finally:
            if self.db.is_open():
                self.db.execute("SELECT set_config('lock_timeout', '0', false)")

    def _refused(self) -> LockedError:
        return LockedError(
            f"the index is being updated by {self._holder()}: the writer lock of schema "
            f"{self.db.schema} in the index database was not free within {self.timeout:g} s",
            hint="wait for the other `memdir index` (another host's) to finish, or raise "
            "$MEMDIR_INDEX_TIMEOUT (seconds)",
        )

    def _holder(self) -> str:
        """Who holds the lock, as far as pg_stat_activity tells this role."""
        found: Any = self.db.one(
            "SELECT a.application_name, host(a.client_addr), a.pid FROM pg_locks AS l"
            " JOIN pg_stat_activity AS a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
            " AND l.granted AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid"
            " AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database"
            " WHERE datname = current_database())",
            (self.key >> 32, self.key & 0xFFFFFFFF),
        )
        if found is None:
            return "another host"
        name, address, pid = found
        where = f" from {address}" if address else ""
        return f"{name or 'another client'} (server pid {pid}{where})"

    def _release(self) -> None:
        """Unlock; a lost connection has released it already (the session ended)."""
        if not self.db.is_open():
            self.db.close()
            return
        try:
            self.db.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        except MemdirError:
            self.db.close()

    def close(self) -> None:
        self.db.close()
