"""Pagination of list endpoints (cases, runs): the contract's defaults, clamp and checks."""

from __future__ import annotations

from tms.errors import InvalidInput

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
# SQLite integers are 64-bit: a larger offset cannot even be bound (it was a 500); no table gets near it
MAX_OFFSET = 2**63 - 1


def page_window(
    limit: int | None, offset: int | None, *, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT
) -> tuple[int, int]:
    """(limit, offset) to use: defaults 100 and 0; a limit above 500 is clamped, not refused.
    (A run's results page by 500, up to 5,000: ``default`` and ``maximum``.)"""
    limit = default if limit is None else limit
    offset = 0 if offset is None else offset
    if limit < 1:
        raise InvalidInput("limit must be at least 1", field="limit")
    if limit > MAX_OFFSET:  # clamped below, but a number beyond the documented integer range is refused
        raise InvalidInput(f"limit must be at most {MAX_OFFSET}", field="limit")
    if offset < 0:
        raise InvalidInput("offset must not be negative", field="offset")
    if offset > MAX_OFFSET:
        raise InvalidInput(f"offset must be at most {MAX_OFFSET}", field="offset")
    return min(limit, maximum), offset


def page_offset(offset: int) -> int:
    """A web page's ``?offset=``: out-of-range values show the first or an empty page, never an error."""
    return min(max(0, offset), MAX_OFFSET)


def check_choice(value: str | None, allowed: tuple[str, ...], field: str) -> None:
    """A filter value that must be one of ``allowed`` (None = not filtered)."""
    if value is not None and value not in allowed:
        raise InvalidInput(f"{field} must be one of {', '.join(allowed)}", field=field)
