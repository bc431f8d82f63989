"""SQL of the automation-status moves of flaky detection; tenant-filtered."""

from __future__ import annotations

import json

from tms.db import Row, Transaction


async def flaky_cases(tx: Transaction, tenant_id: str, project_id: str) -> list[Row]:
    """The project's FLAKY cases (the partial index test_cases_flaky holds only these)."""
    return await tx.fetch_all(
        "SELECT id, code, automation_status FROM test_cases WHERE tenant_id = ? AND project_id = ? "
        "AND automation_status = 'FLAKY'",
        (tenant_id, project_id),
    )


async def cases_by_id(tx: Transaction, tenant_id: str, case_ids: list[str]) -> list[Row]:
    if not case_ids:
        return []
    return await tx.fetch_all(
        "SELECT id, code, automation_status FROM test_cases WHERE tenant_id = ? "
        "AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(case_ids)),
    )


async def set_status(tx: Transaction, tenant_id: str, case_ids: list[str], status: str, at: str) -> None:
    if case_ids:
        await tx.execute(
            # a move is a change of the case like any other: its version goes up (recorded by the caller)
            "UPDATE test_cases SET automation_status = ?, updated_at = ?, version = version + 1 WHERE tenant_id = ? "
            "AND id IN (SELECT value FROM json_each(?))",
            (status, at, tenant_id, json.dumps(case_ids)),
        )
