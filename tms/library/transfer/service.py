"""Import and export of a project's cases: CSV both ways, and TestRail's XML export in.

An import is planned first (every row checked, each one a create, an update, unchanged or a
rejection with the row and field named) and then applied in ONE transaction: sections named by
path are created as needed, new cases inserted, changed ones updated with a new version, and one
audit entry records the counts. The preview (``dry_run``) is the same plan without the write, so
what it shows is what the import does (the plan is ``plan.py``, the write ``apply.py``, and this module
runs them). A file-level problem (wrong header, not UTF-8, an XML bomb, too large) is a 400/413 and
changes nothing.

Limits (issue 22): a file names at most ``MAX_SECTIONS`` sections (each parent counted once), nested at
most ``MAX_SECTION_DEPTH`` deep; a TestRail file nests elements at most ``MAX_XML_DEPTH`` deep. Past
them the file is a 400 naming the limit, found while parsing (linear), before any planning. Parsing
and planning run in worker threads (``asyncio.to_thread``), never on the event loop.

Exported cells that a spreadsheet would run as a formula (OWASP "CSV injection": a first character
``= + - @``, tab or CR) start with a single quote ``'``; so does a cell starting with ``'`` followed by
such a character or another ``'``. The import takes exactly that one quote off again (``restore``), so
an export imports back unchanged, a value that really starts with ``'=`` included.

NUL (U+0000) cannot be stored: in a CSV's free text (``bdd_content``) it becomes U+FFFD, in any other
column it rejects the row naming the column.

The CSV columns are the contract's: ``code, title, section, status, priority, layer, is_e2e,
automation_status, tags, tickets, bdd_content``, then a ``cf:<key>`` column per active custom field of
the project (issue 26); a CSV exported here imports back unchanged. TestRail's custom fields (the
children of ``<custom>`` that are not steps, a ``custom_`` prefix dropped) become the project's custom
fields, created as needed: a dropdown (``<value>``) a select with the values met as options, several
``<value>`` a multiselect, other text a text field (a textarea when it has several lines).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tms.db import Database, Transaction
from tms.errors import InvalidInput, NotFound, TooLarge
from tms.library.cases import store as case_store
from tms.library.fields import service as field_service
from tms.library.projects import store as project_store
from tms.library.transfer.apply import apply_plan
from tms.library.transfer.csvfile import FORMATS, MAX_IMPORT_BYTES, Parsed, parse_csv
from tms.library.transfer.plan import Plan, plan_import
from tms.library.transfer.testrail import parse_testrail


async def check_project(db: Database | Transaction, tenant_id: str, project_id: str | None) -> None:
    if not project_id:
        raise InvalidInput("project_id is required", field="project_id")
    if not await project_store.project_exists(db, tenant_id, project_id):
        raise NotFound(f"project {project_id} not found", field="project_id")


@dataclass(frozen=True)
class ImportResult:
    created: int
    updated: int
    unchanged: int
    rejected: int
    errors: list[tuple[int, str]]
    sections_created: int


def parse(data: bytes, fmt: str) -> Parsed:
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    if len(data) > MAX_IMPORT_BYTES:
        raise TooLarge(f"the file is {len(data)} bytes; an import takes at most {MAX_IMPORT_BYTES} bytes "
                       "(split it into several files)", field="file")
    return parse_csv(data) if fmt == "csv" else parse_testrail(data)


async def import_cases(
    db: Database, tenant_id: str, project_id: str | None, data: bytes, fmt: str, *, dry_run: bool = False
) -> ImportResult:
    """Imports a file into a project: all its good rows in one transaction, or (dry_run) nothing."""
    await check_project(db, tenant_id, project_id)
    assert project_id is not None
    parsed = await asyncio.to_thread(parse, data, fmt)
    checked: dict[str, str | None] = {}
    users = await field_service.tenant_users(db, tenant_id) if parsed.field_keys else None
    plan = await plan_import(db, tenant_id, project_id, parsed, checked, users)
    if dry_run:
        return _result(plan)
    # planned again under the write lock (the library may have changed meanwhile), but the slow part,
    # parsing the Gherkin texts, was done above without holding it
    async with db.transaction() as tx:
        plan = await plan_import(tx, tenant_id, project_id, parsed, checked, users, earlier=plan)
        await apply_plan(tx, tenant_id, project_id, plan, parsed)
    await case_store.refresh_statistics_after(db, plan.created + plan.updated)
    return _result(plan)


def _result(plan: Plan) -> ImportResult:
    return ImportResult(plan.created, plan.updated, plan.unchanged, plan.rejected, plan.errors,
                        len(plan.new_sections))
