"""The per-tenant monthly AI quota: successful generations counted per calendar month (UTC)."""

from __future__ import annotations

from datetime import UTC, datetime

from tms.config import Config
from tms.db import Database


def current_month(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m")


def next_month_start(now: datetime | None = None) -> datetime:
    moment = now or datetime.now(UTC)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


async def generations_this_month(db: Database, tenant_id: str, month: str | None = None) -> int:
    return int(
        await db.fetch_value(
            "SELECT COUNT(*) FROM ai_generations WHERE tenant_id = ? AND month = ?",
            (tenant_id, month or current_month()),
        )
    )


async def quota_exhausted(db: Database, config: Config, tenant_id: str) -> bool:
    """True when the tenant has used its monthly quota (a quota of 0 is always exhausted)."""
    quota = int(config.get("ai.monthly_quota"))
    return await generations_this_month(db, tenant_id) >= quota
