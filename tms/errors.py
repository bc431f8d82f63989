"""Domain errors; the HTTP layer maps each to a problem-details status."""

from __future__ import annotations

import errno
import sqlite3


class DomainError(Exception):
    status_code = 400
    title = "Bad Request"

    def __init__(
        self, detail: str, *, field: str | None = None, errors: list[dict[str, str]] | None = None
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field
        # several named problems at once ({field, message} each); else the one ``field`` above
        self.errors = errors


class InvalidInput(DomainError):
    status_code = 400
    title = "Invalid input"


class NotFound(DomainError):
    status_code = 404
    title = "Not Found"


class Forbidden(DomainError):
    """The caller may see the thing but not do this to it (a comment of someone else: issue 26)."""

    status_code = 403
    title = "Forbidden"


class Conflict(DomainError):
    status_code = 409
    title = "Conflict"


class TooLarge(DomainError):
    status_code = 413
    title = "Payload Too Large"


class UnsupportedMediaType(DomainError):
    status_code = 415
    title = "Unsupported Media Type"


class InsufficientStorage(DomainError):
    """The disk (or the database's quota) is full: nothing was written; reads keep working."""

    status_code = 507
    title = "Insufficient Storage"


DISK_FULL_DETAIL = ("The server's disk is full, so nothing was stored. Reading still works; try the write "
                    "again once an administrator has freed space.")
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


# PostgreSQL's SQLSTATE disk_full (class 53, insufficient resources: "could not extend file …: No space
# left on device"); asyncpg raises it as asyncpg.exceptions.DiskFullError. Read by its code, not its
# class, so that this module needs no driver (and out_of_memory, 53200, stays a 500: not a disk).
POSTGRES_DISK_FULL = "53100"


def is_disk_full(exc: BaseException) -> bool:
    """A full disk on either backend, raised directly or as the cause of what was raised: SQLite's
    SQLITE_FULL ("database or disk is full"), a file write's ENOSPC/EDQUOT, or PostgreSQL's 53100."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlite3.Error) and getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        if isinstance(current, OSError) and current.errno in _DISK_FULL_ERRNOS:
            return True
        if getattr(current, "sqlstate", None) == POSTGRES_DISK_FULL:
            return True
        current = current.__cause__ or current.__context__
    return False


NUL = "\x00"
# what a NUL character (U+0000) in free text from test reports is stored as (tms.http.bodies)
NUL_REPLACEMENT = "\ufffd"
NUL_MESSAGE = "must not contain NUL characters (U+0000)"


def text_with_nul() -> InvalidInput:
    """The database's backstop (tms.db): PostgreSQL cannot store NUL in text, so neither backend takes it.

    The API, the forms and the search remove or name NUL before this; reaching it means some other
    input path let one through, which is still the client's 400, never a 500."""
    return InvalidInput(f"Text {NUL_MESSAGE}.")


def unreadable_json(exc: RecursionError | UnicodeDecodeError) -> str:
    """Why msgspec (or ``json``) could not read a JSON text at all, errors it raises besides
    ``DecodeError``: nested too deeply (a RecursionError), or not UTF-8."""
    if isinstance(exc, RecursionError):
        return "The JSON is nested too deeply."
    return f"The JSON is not valid UTF-8 (byte {exc.start})."


class StoreUnavailable(DomainError):
    """An outside store (the attachments' object store) did not answer, or refused: nothing was
    stored; try again later."""

    status_code = 503
    title = "Service Unavailable"
