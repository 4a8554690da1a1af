"""Time: one UTC clock that tests and simulations can move with --now or MEMDIR_NOW."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone

from .errors import BadInputError

NOW_ENV = "MEMDIR_NOW"
FIRST_YEAR, LAST_YEAR = 1000, 8999  # as validate.py: a time plus any duration still fits
MAX_DURATION = timedelta(days=100 * 365)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_time(text: str, what: str = "time") -> datetime:
    """Parse an ISO-8601 date or date-time; a value without an offset is taken as UTC."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadInputError(
            f"{what} {text!r} is not an ISO-8601 date or date-time",
            hint="use e.g. 2026-05-01 or 2026-05-01T09:30:00Z",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        moment = moment.astimezone(timezone.utc)
    except OverflowError:
        moment = datetime.max.replace(tzinfo=timezone.utc)  # refused just below
    if not FIRST_YEAR <= moment.year <= LAST_YEAR:
        raise BadInputError(
            f"{what} {text!r} is outside the years {FIRST_YEAR}-{LAST_YEAR} memdir keeps",
            hint="use a date in that range, e.g. 2026-05-01",
        )
    return moment


def format_time(moment: datetime) -> str:
    """The canonical form written to files: UTC, whole seconds, 'Z' (so strings sort as times)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now(override: str | None = None) -> datetime:
    """The current time: an explicit override, else $MEMDIR_NOW, else the system clock."""
    if override:
        return parse_time(override, "--now")
    env = os.environ.get(NOW_ENV)
    if env:
        return parse_time(env, NOW_ENV)
    return datetime.now(timezone.utc)


def parse_duration(text: str) -> timedelta:
    """Parse '7d', '12h', '30m', '2w' or '90s'."""
    match = _DURATION.match(text)
    if not match:
        raise BadInputError(
            f"duration {text!r} is not understood",
            hint="use a number and a unit: 90s, 30m, 12h, 7d, 2w",
        )
    amount, unit = float(match.group(1)), match.group(2)
    seconds = amount * _UNIT_SECONDS[unit]
    if seconds > MAX_DURATION.total_seconds():
        raise BadInputError(
            f"duration {text!r} is longer than {MAX_DURATION.days // 365} years",
            hint="use a shorter duration, e.g. 7d or 52w",
        )
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """A short human form of a duration, e.g. '6d 23h' or '45m'."""
    seconds = int(abs(delta.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    sign = "-" if delta.total_seconds() < 0 else ""
    if days:
        return f"{sign}{days}d {hours}h"
    if hours:
        return f"{sign}{hours}h {minutes}m"
    return f"{sign}{minutes}m"


def parse_moment(value: str | None, now: datetime, what: str = "time") -> datetime | None:
    """A time option (--since, --until): an ISO date-time, or a duration back from now (2d,
    6h), the same on every command and in the library; None when not given."""
    if not value:
        return None
    given = value.strip()
    if given[-1:] in "smhdw" and given[:1].isdigit() and "-" not in given:
        return now - parse_duration(given)
    return parse_time(given, what)
