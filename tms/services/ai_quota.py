"""The per-tenant monthly AI quota: successful generations counted per calendar month (UTC).

A generation counts from the moment its request is reserved (a 'pending' row, see
``tms.services.ai``) so that two concurrent requests cannot both take the last slot; a failed request
removes its row again. ``now`` is a parameter everywhere so that month boundaries can be tested.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from tms.config import Config
from tms.db import Database, Transaction


def current_month(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m")


def next_month_start(now: datetime | None = None) -> datetime:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


COUNT_SQL = "SELECT COUNT(*) FROM ai_generations WHERE tenant_id = ? AND month = ?"


async def generations_this_month(
    db: Database | Transaction, tenant_id: str, month: str | None = None, *, now: datetime | None = None
) -> int:
    return int(await db.fetch_value(COUNT_SQL, (tenant_id, month or current_month(now))))


async def quota_exhausted(db: Database, config: Config, tenant_id: str, *, now: datetime | None = None) -> bool:
    """True when the tenant has used its monthly quota (a quota of 0 is always exhausted)."""
    quota = int(config.get("ai.monthly_quota"))
    return await generations_this_month(db, tenant_id, now=now) >= quota


@dataclass(frozen=True)
class QuotaStatus:
    used: int
    quota: int
    month: str
    resets_at: datetime  # first instant of the next month, UTC

    @property
    def exhausted(self) -> bool:
        return self.used >= self.quota

    @property
    def remaining(self) -> int:
        return max(0, self.quota - self.used)


async def quota_status(db: Database, config: Config, tenant_id: str, *, now: datetime | None = None) -> QuotaStatus:
    moment = now or datetime.now(UTC)
    month = current_month(moment)
    used = await generations_this_month(db, tenant_id, month)
    return QuotaStatus(used=used, quota=int(config.get("ai.monthly_quota")), month=month,
                       resets_at=next_month_start(moment))
