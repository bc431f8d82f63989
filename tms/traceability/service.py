"""The traceability matrix: requirements (ticket keys in cases' ``tickets``), their cases, the cases'
latest result per environment, and a coverage state; as JSON, CSV and a page.

Two queries whatever the library's size: the page of requirements graded in one aggregate (store),
then the cases of that page. Titles and statuses are what the integrations' background refresh cached
(``tms.integrations.service.refresh_requirements``); reading the matrix never calls a tracker.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from tms.config import Config
from tms.db import Database
from tms.errors import InvalidInput
from tms.http.paging import MAX_LIMIT, check_choice, page_window
from tms.integrations import requirements
from tms.library.projects import service as projects
from tms.library.transfer.csvfile import neutralise
from tms.traceability import store
from tms.traceability.models import (
    COVERAGES,
    GAPS,
    SOURCES,
    CaseCoverage,
    Pagination,
    Requirement,
    Totals,
    Traceability,
)

CSV_COLUMNS = ("key", "source", "title", "status", "url", "coverage", "test_case_code", "test_case_title", "latest")
# a CSV holds every matching requirement, read a page at a time (memory: a few rows per requirement of a
# page); each page grades the project again, and SQLite joins a page to its cases without an index, so
# 500 (2,000 measured twice as slow on SQLite, a third faster on PostgreSQL)
_CSV_PAGE = 500


@dataclass(frozen=True, slots=True)
class Query:
    project_id: str
    source: str | None = None
    coverages: tuple[str, ...] = COVERAGES


def query(project_id: str | None, source: str | None, coverage: Sequence[str] | None, gaps: bool) -> Query:
    """The filters as given to the API or the page, checked (400 naming the parameter)."""
    if not project_id:
        raise InvalidInput("project_id is required", field="project_id")
    source = source.upper() if source else None
    check_choice(source, SOURCES, "source")
    chosen = tuple(coverage or ())
    for value in chosen:
        check_choice(value, COVERAGES, "coverage")
    if gaps:
        chosen = tuple(value for value in (chosen or COVERAGES) if value in GAPS)
    return Query(project_id, source, chosen or COVERAGES)


async def matrix(db: Database, tenant_id: str, q: Query, limit: int | None = None,
                 offset: int | None = None, *, maximum: int = MAX_LIMIT) -> Traceability:
    await projects.get_project(db, tenant_id, q.project_id)  # another tenant's (or no) project: 404
    limit, offset = page_window(limit, offset, maximum=maximum)
    rows = await store.requirements_page(db, tenant_id, q.project_id, q.source, list(q.coverages), limit, offset)
    if not rows and offset:  # past the end: the counts still describe the filter
        head = await store.requirements_page(db, tenant_id, q.project_id, q.source, list(q.coverages), 1, 0)
    else:
        head = rows
    totals = Totals(**{name: int(head[0][f"n_{name}"]) for name in COVERAGES}) if head else Totals()
    total = int(head[0]["total"]) if head else 0
    requirements: dict[tuple[str, str], Requirement] = {}
    by_code: dict[tuple[str, str, str], CaseCoverage] = {}
    for row in rows:  # a row per requirement, case and environment, in order
        key = (row["source"], row["issue_key"])
        req = requirements.get(key)
        if req is None:
            req = requirements[key] = Requirement(
                key=row["key"], source=row["source"], title=row["title"], status=row["status"], url=row["url"],
                cases=[], coverage=row["coverage"], fetched_at=row["fetched_at"], tracker_error=row["error"])
        if row["case_code"] is None:
            continue
        case = by_code.get((*key, row["case_code"]))  # a case naming the key twice repeats its rows
        if case is None:
            case = by_code[(*key, row["case_code"])] = CaseCoverage(code=row["case_code"], title=row["case_title"],
                                                                    latest={})
            req.cases.append(case)
        if row["environment"] is not None:
            case.latest[row["environment"]] = row["result_status"]
    data = list(requirements.values())
    return Traceability(data=data, pagination=Pagination(total=total, limit=limit, offset=offset), totals=totals)


def _csv_line(values: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow([neutralise(value) for value in values])
    return out.getvalue()


async def csv_text(db: Database, tenant_id: str, q: Query) -> str:
    """The whole matrix as CSV (UTF-8 with a BOM): one line per requirement and case (a requirement
    without cases: one line, its case columns empty). ``latest`` reads ``env=STATUS; env=STATUS``."""
    lines = ["\ufeff" + _csv_line(list(CSV_COLUMNS))]
    offset = 0
    while True:
        page = await matrix(db, tenant_id, q, _CSV_PAGE, offset, maximum=_CSV_PAGE)
        for req in page.data:
            head = [req.key, req.source, req.title or "", req.status or "", req.url or "", req.coverage]
            if not req.cases:
                lines.append(_csv_line([*head, "", "", ""]))
            for case in req.cases:
                latest = "; ".join(f"{env}={status}" for env, status in sorted(case.latest.items()))
                lines.append(_csv_line([*head, case.code, case.title, latest]))
        offset += _CSV_PAGE
        if offset >= page.pagination.total:
            return "".join(lines)


def refresh_soon(db: Database, config: Config, tenant_id: str) -> None:
    """Ask the integrations to read the tenant's requirements from the trackers now (in the background)."""
    requirements.refresh_soon(db, config, tenant_id)
