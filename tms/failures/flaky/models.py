"""Answer of /api/v1/flaky: tests whose outcome flipped over the last runs of a project."""

from __future__ import annotations

import msgspec

from tms.library.cases.models import Pagination


class FlakyTest(msgspec.Struct):
    test_case_code: str | None
    title: str | None
    flip_rate: float
    passes: int
    failures: int
    runs: int
    last_status: str
    quarantined: bool
    passed_on_retry: int  # runs in which it passed only on a retry (the reporter's attempts)


class FlakyList(msgspec.Struct):
    data: list[FlakyTest]
    pagination: Pagination
