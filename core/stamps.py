"""Timestamps and placeholder trajectory ids: how one step is recognised across sources. Pure."""

from __future__ import annotations

import re
from datetime import UTC, datetime

__all__ = ["PLACEHOLDER_PREFIX", "is_placeholder", "parse_time", "placeholder_trajectory", "time_key"]

PLACEHOLDER_PREFIX = "transcript:"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def placeholder_trajectory(cascade_id: str) -> str:
    """The trajectory id of a step read from agy's current transcript, which names none: the
    reconciler maps it to the real one once it has seen one."""
    return PLACEHOLDER_PREFIX + cascade_id


def is_placeholder(trajectory_id: str) -> bool:
    return trajectory_id.startswith(PLACEHOLDER_PREFIX)


def parse_time(text: str) -> datetime:
    """agy's RFC 3339 timestamps (nanosecond fractions, ``Z``); the epoch when absent or unreadable."""
    text = text.strip()
    if not text:
        return _EPOCH
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if "." in text:  # fromisoformat takes at most 6 fractional digits
        head, _, rest = text.partition(".")
        digits = "".join(c for c in rest if c.isdigit())
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits) :]}"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return _EPOCH
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


#: agy's own spelling, already in UTC: ``2026-08-02T04:49:08.449792278Z`` (a year from 1000 on)
_UTC = re.compile(r"[1-9]\d{3}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d+))?Z")


def time_key(text: str) -> str:
    """A timestamp as one canonical string (UTC, microseconds), so two sources' spellings of the same
    instant compare equal; the text itself when it is not a timestamp."""
    utc = _UTC.fullmatch(text)
    if utc is not None and not text.startswith("1970-01-01T00:00:00"):
        # agy's spelling (the hot path of every turn): cut to microseconds without a datetime round
        # trip; the date is still checked (a month 13 is no timestamp)
        try:
            datetime.fromisoformat(text[:19])
        except ValueError:
            return text.strip()
        return f"{text[:19]}.{(utc[1] or '')[:6].ljust(6, '0')}Z"
    parsed = parse_time(text)
    if parsed == _EPOCH:
        return text.strip()
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
