"""A test case's versions: the stored snapshots read back as ``CaseVersion``, newest first."""

from __future__ import annotations

from typing import Any

import msgspec

from tms.db import Database, Row
from tms.errors import NotFound
from tms.http.paging import page_window
from tms.library.cases import versions as version_store
from tms.library.cases.models import Actor, CaseVersion, Pagination, Ticket, decode_shared_steps
from tms.library.cases.service import find_case_row

_tickets_decoder = msgspec.json.Decoder(list[Ticket])
_tags_decoder = msgspec.json.Decoder(list[str])
_fields_decoder = msgspec.json.Decoder(dict[str, Any])


def version_from_row(row: Row) -> CaseVersion:
    return CaseVersion(
        version=row["version"], code=row["code"], title=row["title"], bdd_content=row["bdd_content"],
        status=row["status"], priority=row["priority"], layer=row["layer"], is_e2e=bool(row["is_e2e"]),
        automation_status=row["automation_status"], tags=_tags_decoder.decode(row["tags"]),
        tickets=_tickets_decoder.decode(row["tickets"]), section_id=row["section_id"],
        project_id=row["project_id"],
        changed_by=Actor(type=row["actor_type"], id=row["actor_id"], name=row["actor_name"]),
        created_at=row["created_at"], custom_fields=_fields_decoder.decode(row.get("custom_fields") or "{}"),
        shared_steps=decode_shared_steps(row.get("shared_steps")),
    )


async def list_versions(
    db: Database, tenant_id: str, id_or_code: str, *, limit: int | None = None, offset: int | None = None
) -> tuple[list[CaseVersion], Pagination]:
    """The case's versions, newest first."""
    row = await find_case_row(db, tenant_id, id_or_code)
    if row is None:
        raise NotFound(f"test case {id_or_code} not found")
    limit, offset = page_window(limit, offset)
    rows, total = await version_store.list_versions(db, tenant_id, row["id"], limit, offset)
    return [version_from_row(r) for r in rows], Pagination(total=total, limit=limit, offset=offset)


async def get_version(db: Database, tenant_id: str, case_id: str, version: int) -> CaseVersion | None:
    row = await version_store.get_version(db, tenant_id, case_id, version)
    return None if row is None else version_from_row(row)
