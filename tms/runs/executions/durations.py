"""A duration as a tester types and reads it ("1m 30s") in the execution view; the API keeps ``duration_ms``.

Accepted (issue 24): units ``h``, ``m``/``min``, ``s``/``sec``, ``ms`` in any combination ("1h 5m",
"1m30s", "2.5s", "300ms"), clock forms ``m:ss`` and ``h:mm:ss``, and a bare number, read as seconds.
The text is at most ``MAX_TEXT`` characters, so the work is bounded.
"""

from __future__ import annotations

import re

MAX_TEXT = 40
MAX_MS = 2**63 - 1  # stored in a 64-bit integer
_UNIT_MS = {"h": 3_600_000, "m": 60_000, "min": 60_000, "s": 1_000, "sec": 1_000, "ms": 1}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|min|sec|h|m|s)", re.IGNORECASE)
_UNITS = re.compile(r"\s*(?:\d+(?:\.\d+)?\s*(?:ms|min|sec|h|m|s)\s*)+", re.IGNORECASE)
_CLOCK = re.compile(r"(?:(\d+):)?(\d+):(\d{1,2}(?:\.\d+)?)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def parse(text: str) -> int | None:
    """Milliseconds of ``text``; None for an empty text; ValueError for one that is not a duration."""
    raw = text.strip()
    if not raw:
        return None
    if len(raw) > MAX_TEXT:
        raise ValueError(raw)
    if _NUMBER.fullmatch(raw):
        ms = float(raw) * 1000
    elif clock := _CLOCK.fullmatch(raw):
        hours, minutes, seconds = clock.groups()
        ms = ((int(hours or 0) * 60 + int(minutes)) * 60 + float(seconds)) * 1000
    elif _UNITS.fullmatch(raw):
        ms = sum(float(n) * _UNIT_MS[unit.lower()] for n, unit in _PART.findall(raw))
    else:
        raise ValueError(raw)
    if ms > MAX_MS:
        raise ValueError(raw)
    return round(ms)


def words(ms: int | None) -> str:
    """"1h 2m 3s", "1m 30s", "2.5s", "0s": what ``parse`` reads back to the same milliseconds."""
    if ms is None:
        return ""
    hours, rest = divmod(int(ms), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    parts = [f"{hours}h"] if hours else []
    if minutes:
        parts.append(f"{minutes}m")
    if seconds or millis or not parts:
        parts.append(f"{seconds}.{millis:03d}".rstrip("0").rstrip(".") + "s" if millis else f"{seconds}s")
    return " ".join(parts)
