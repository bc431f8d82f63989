"""Tenant lifecycle: suspension cuts every token of the tenant off at its next request."""

from __future__ import annotations

from tms.db import AUTH_SIGNAL, Database, Transaction
from tms.errors import InvalidInput, NotFound
from tms.team.tenants import store as tenant_store
from tms.team.tokens.service import bump_auth_epoch

TENANT_STATUSES = ("ACTIVE", "SUSPENDED")


async def set_status(db: Database, tenant_id: str, status: str) -> None:
    if status not in TENANT_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(TENANT_STATUSES)}", field="status")
    async with db.transaction() as tx:
        tx.after_commit(lambda: bump_auth_epoch(db))
        await tx.signal(AUTH_SIGNAL)
        if not await tenant_store.set_tenant_status(tx, tenant_id, status):
            raise NotFound(f"unknown tenant {tenant_id}", field="tenant")


async def next_case_numbers(tx: Transaction, tenant_id: str, count: int) -> int:
    """Reserves ``count`` TC-<n> numbers from the tenant's counter, in the caller's transaction; returns
    the first. Numbers are never handed out twice."""
    return await tenant_store.next_case_numbers(tx, tenant_id, count)
