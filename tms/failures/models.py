"""Answers of /api/v1/runs/{id}/failures (clusters) and /api/v1/runs/{id}/compare."""

from __future__ import annotations

import msgspec

from tms.failures.known_issues.models import KnownIssue


class ClusterResult(msgspec.Struct):
    id: str
    test_case_code: str | None
    title: str | None
    quarantined: bool


class Cluster(msgspec.Struct):
    fingerprint: str
    error_message: str | None
    count: int
    results: list[ClusterResult]
    first_seen_at: str | None
    new: bool
    known_issue: KnownIssue | None
    error_stack: str | None  # the representative result's stack (its first lines)
    first_run_id: str | None


class ClusterList(msgspec.Struct):
    data: list[Cluster]


class CompareItem(msgspec.Struct):
    test_case_code: str | None
    title: str | None
    status: str | None
    base_status: str | None


class Comparison(msgspec.Struct):
    base_run_id: str | None
    new_failures: list[CompareItem]
    fixed: list[CompareItem]
    still_failing: list[CompareItem]
    added: list[CompareItem]
    missing: list[CompareItem]


class ComparisonEnvelope(msgspec.Struct):
    data: Comparison
