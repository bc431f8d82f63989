"""Domain errors; the HTTP layer maps each to a problem-details status."""

from __future__ import annotations


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


class Conflict(DomainError):
    status_code = 409
    title = "Conflict"


class TooLarge(DomainError):
    status_code = 413
    title = "Payload Too Large"


class UnsupportedMediaType(DomainError):
    status_code = 415
    title = "Unsupported Media Type"
