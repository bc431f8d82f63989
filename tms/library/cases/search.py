"""The library's lists and search (API and UI): the filters of a ``CaseQuery``, full-text words, one
page of cases or every matching id (for exports and bulk actions)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tms.db import Database, Row
from tms.errors import InvalidInput
from tms.http.paging import check_choice, page_window
from tms.library.cases import search_store
from tms.library.cases.models import (
    CASE_STATUSES,
    REVIEW_STATES,
    Case,
    Pagination,
)
from tms.library.cases.service import AUTOMATION_STATUSES, LAYERS, PRIORITIES, case_from_row
from tms.library.fields import service as field_service
from tms.library.fields import store as field_store
from tms.library.sections import store as section_store


@dataclass(frozen=True, slots=True)
class CaseQuery:
    """Filters of the library lists (API and UI). None = not filtered."""

    project_id: str | None = None
    status: str | None = None
    priority: str | None = None
    automation_status: str | None = None
    layer: str | None = None
    q: str | None = None
    tags: tuple[str, ...] = ()
    section_id: str | None = None  # "none": cases filed in no section
    include_subsections: bool = False
    needs_retest: bool | None = None
    review: str | None = None  # a review state (issue 26)
    reviewer_id: str | None = None
    sort: str = "created_at"
    descending: bool = False
    # `cf.<key>=value` filters: (key, (value, ...)); a case matches any of a key's values
    fields: tuple[tuple[str, tuple[str, ...]], ...] = ()


_WORD = re.compile(r"\w", re.UNICODE)


def search_words(q: str) -> list[str]:
    """The words of ``q`` a search looks for (all must match; the last one also as a prefix).

    Double quotes are dropped and words without a letter or digit ignored (at most 20 words), so the
    store can quote each one as an FTS5 phrase: nothing a user types is read as FTS5 syntax.
    """
    words = [w.replace('"', "") for w in q.split()]
    return [w for w in words if _WORD.search(w)][:20]


async def _search(db: Database, tenant_id: str, query: CaseQuery, limit: int, offset: int,
                  ids_only: bool = False) -> tuple[list[Row], int]:
    check_choice(query.status, CASE_STATUSES, "status")
    check_choice(query.priority, PRIORITIES, "priority")
    check_choice(query.automation_status, AUTOMATION_STATUSES, "automation_status")
    check_choice(query.layer, LAYERS, "layer")
    if query.sort not in search_store.SORTS:
        raise InvalidInput(f"sort must be one of {', '.join(search_store.SORTS)}", field="sort")
    words = None
    if query.q is not None and query.q.strip():
        words = search_words(query.q)
        if not words:
            return [], 0
    section_ids = section_range = None
    unfiled = False
    if query.section_id == "none":
        unfiled = True
    elif query.section_id is not None:
        section = await section_store.get_section(db, tenant_id, query.section_id)
        if section is None:
            return [], 0  # an unknown section (or another tenant's) simply matches nothing, like project_id
        if query.include_subsections:
            low, high = section_store.subtree_bounds(section["path"])
            section_range = (section["project_id"], low, high)
        else:
            section_ids = [section["id"]]
    conditions: list[tuple[str, list[Any]]] = []
    field_rows: list[tuple[str, list[Any]]] = []
    if query.fields:
        filters = await field_service.case_filters(db, tenant_id, query.project_id,
                                                   {key: list(values) for key, values in query.fields})
        field_rows = [field_store.value_rows(tenant_id, key, projects, texts, numbers)
                      for key, projects, texts, numbers in filters]
    check_choice(query.review, REVIEW_STATES, "review")
    if query.review is not None:
        conditions.append(("review_state = ?", [query.review]))
    if query.reviewer_id is not None:
        conditions.append(("reviewer_id = ?", [query.reviewer_id]))
    return await search_store.search_cases(
        db, tenant_id, conditions=conditions,
        equals={"project_id": query.project_id, "status": query.status, "priority": query.priority,
                "automation_status": query.automation_status, "layer": query.layer},
        words=words, tags=[t for t in query.tags if t] or None, section_ids=section_ids,
        section_range=section_range, unfiled=unfiled, needs_retest=query.needs_retest,
        sort=query.sort, descending=query.descending, limit=limit, offset=offset, ids_only=ids_only,
        field_rows=field_rows,
    )


async def list_cases(
    db: Database,
    tenant_id: str,
    *,
    project_id: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
    needs_retest: bool | None = None,
    query: CaseQuery | None = None,
) -> tuple[list[Case], Pagination]:
    """A page of the library (creation order unless ``query.sort`` says otherwise).

    An unknown project_id or section_id simply matches nothing.
    """
    limit, offset = page_window(limit, offset)
    if query is None:
        query = CaseQuery(project_id=project_id, status=status, needs_retest=needs_retest)
    rows, total = await _search(db, tenant_id, query, limit, offset)
    return [case_from_row(row) for row in rows], Pagination(total=total, limit=limit, offset=offset)


async def matching_ids(db: Database, tenant_id: str, query: CaseQuery) -> list[str]:
    """The ids of every case matching ``query`` (bulk actions on "all matching this filter")."""
    rows, _ = await _search(db, tenant_id, query, 0, 0, ids_only=True)
    return [row["id"] for row in rows]
