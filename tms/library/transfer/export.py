"""A project's cases exported as CSV, batch by batch (memory stays flat whatever the library's size)."""


import csv
import io
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from tms.db import Database, Row
from tms.library.cases import search as case_search
from tms.library.cases import store as case_store
from tms.library.cases.models import Ticket
from tms.library.fields import service as field_service
from tms.library.fields import values as field_values
from tms.library.fields.models import CustomField
from tms.library.sections import store as section_store
from tms.library.sections.service import PATH_SEPARATOR
from tms.library.transfer.csvfile import COLUMNS, neutralise

EXPORT_BATCH = 1000
_tags_decoder = msgspec.json.Decoder(list[str])
_tickets_decoder = msgspec.json.Decoder(list[Ticket])

# ----------------------------------------------------------------------------------------------- export


def section_paths(rows: list[Row]) -> dict[str, str]:
    """{section id: "Parent / Child"} for every section of a project (rows ordered by ``path``, so a
    parent comes before its children): each path is its parent's plus one name, one pass."""
    out: dict[str, str] = {}
    for row in rows:
        parent = out.get(row["parent_id"]) if row["parent_id"] else None
        out[row["id"]] = f"{parent}{PATH_SEPARATOR}{row['name']}" if parent else row["name"]
    return out


def _csv_line(values: Iterable[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(list(values))
    return buffer.getvalue()


@dataclass(frozen=True)
class FieldColumns:
    """The `cf:<key>` columns of an export: the project's active case fields, users as e-mails."""

    fields: list[CustomField]
    emails: dict[str, str]


_fields_decoder = msgspec.json.Decoder(dict[str, Any])


def _csv_lines(rows: list[Row], paths: dict[str, str], columns: FieldColumns) -> bytes:
    """A batch of cases as CSV lines: one writer per batch, not one per row."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(_export_row(row, paths, columns) for row in rows)
    return buffer.getvalue().encode()


def _export_row(row: Row, paths: dict[str, str], columns: FieldColumns) -> list[str]:
    tags = _tags_decoder.decode(row["tags"])
    tickets = _tickets_decoder.decode(row["tickets"])
    values = _fields_decoder.decode(row["custom_fields"]) if columns.fields else {}
    return [neutralise(value) for value in (
        row["code"], row["title"], paths.get(row["section_id"] or "", ""), row["status"], row["priority"],
        row["layer"] or "", "true" if row["is_e2e"] else "false", row["automation_status"], ";".join(tags),
        ";".join(f"{t.source}:{t.key}" for t in tickets), row["bdd_content"],
        *(field_values.cell_of(field, values.get(field.key), columns.emails) for field in columns.fields),
    )]




async def export_csv(
    db: Database, tenant_id: str, project_id: str, query: case_search.CaseQuery | None = None
) -> AsyncIterator[bytes]:
    """The project's cases (or those matching ``query``) as CSV, produced batch by batch: memory stays
    the same whatever the size of the library. The caller checks the project first."""
    paths = section_paths(await section_store.list_for_project(db, tenant_id, project_id))
    fields = [f for f in (await field_service.fields_of(db, tenant_id, project_id)).values() if not f.retired]
    emails = {}
    if any(field.type == "user" for field in fields):
        emails = field_values.user_emails(await field_service.tenant_users(db, tenant_id))
    columns = FieldColumns(fields, emails)
    yield _csv_line([*COLUMNS, *(f"cf:{field.key}" for field in fields)]).encode()
    if query is not None:
        ids = await case_search.matching_ids(db, tenant_id, query)
        for start in range(0, len(ids), EXPORT_BATCH):
            rows = await case_store.rows_by_ids(db, tenant_id, ids[start : start + EXPORT_BATCH])
            yield _csv_lines(rows, paths, columns)
        return
    after = 0
    while True:
        rows = await case_store.iter_project_cases(db, tenant_id, project_id, after, EXPORT_BATCH)
        if not rows:
            return
        after = rows[-1]["_rowid"]
        yield _csv_lines(rows, paths, columns)
