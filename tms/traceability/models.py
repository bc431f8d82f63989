"""GET /api/v1/traceability: one row per requirement (a ticket key named in cases' ``tickets``)."""

from __future__ import annotations

from typing import Literal

import msgspec

Coverage = Literal["passed", "failed", "untested", "none"]
COVERAGES: tuple[str, ...] = ("passed", "failed", "untested", "none")
SOURCES: tuple[str, ...] = ("JIRA", "GITHUB", "GITLAB", "LINEAR", "OTHER")
FORMATS: tuple[str, ...] = ("json", "csv")
# "requirements with failing or no tests"
GAPS: tuple[str, ...] = ("failed", "untested", "none")


class CaseCoverage(msgspec.Struct):
    code: str
    title: str
    # environment -> the status of the case's result in the newest run of that environment
    latest: dict[str, str]


class Requirement(msgspec.Struct):
    key: str
    source: str
    title: str | None    # from the tracker (cached), null when no integration reads it
    status: str | None
    url: str | None
    cases: list[CaseCoverage]
    coverage: Coverage
    # when the tracker was last read for it, and what went wrong then (404, 401, …); null if never
    fetched_at: str | None = None
    tracker_error: str | None = None


class Pagination(msgspec.Struct):
    total: int
    limit: int
    offset: int


class Totals(msgspec.Struct):
    """Requirements by coverage over the whole filter (not just this page)."""

    passed: int = 0
    failed: int = 0
    untested: int = 0
    none: int = 0


class Traceability(msgspec.Struct):
    data: list[Requirement]
    pagination: Pagination
    totals: Totals
