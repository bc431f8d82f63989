"""The per-tenant monthly AI quota: successful generations counted per calendar month (UTC).

A generation counts from the moment its request is reserved (a 'pending' row, see
``tms.ai.service``) so that two concurrent requests cannot both take the last slot; a failed request
removes its row again. ``now`` is a parameter everywhere so that month boundaries can be tested.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from tms.ai import store as ai_store
from tms.config import Config
from tms.db import AI_QUOTA_SIGNAL, Database, Transaction


def current_month(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m")


def next_month_start(now: datetime | None = None) -> datetime:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


async def generations_this_month(
    db: Database | Transaction, tenant_id: str, month: str | None = None, *, now: datetime | None = None
) -> int:
    return await ai_store.generations_in_month(db, tenant_id, month or current_month(now))


class _MonthCounts:
    """This month's generation count per tenant, for /api/v1/me: a CI job polling /me costs no query.

    Generations are reserved and released only by tms.ai.service, which calls ``forget`` after each
    commit and signals ``AI_QUOTA_SIGNAL``: an entry is only trusted while the database's epoch for it
    is unchanged, so a reservation made by another replica shows at once; the TTL bounds rows written
    behind the service's back.
    """

    TTL_SECONDS = 5.0

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], tuple[int, float, int]] = {}

    async def get(self, db: Database, tenant_id: str, month: str) -> int:
        key = (tenant_id, month)
        entry = self._entries.get(key)
        epoch = db.epoch(AI_QUOTA_SIGNAL)
        if entry is not None and entry[1] > time.monotonic() and entry[2] == epoch:
            return entry[0]
        count = await generations_this_month(db, tenant_id, month)
        if len(self._entries) > 10_000:
            self._entries.clear()
        self._entries[key] = (count, time.monotonic() + self.TTL_SECONDS, epoch)
        return count

    def forget(self, tenant_id: str) -> None:
        for key in [key for key in self._entries if key[0] == tenant_id]:
            del self._entries[key]


month_counts = _MonthCounts()


def forget_counts(tenant_id: str) -> None:
    """Call after committing a change to the tenant's ai_generations rows."""
    month_counts.forget(tenant_id)


async def quota_exhausted(db: Database, config: Config, tenant_id: str, *, now: datetime | None = None) -> bool:
    """True when the tenant has used its monthly quota (a quota of 0 is always exhausted)."""
    quota = config.get("ai.monthly_quota")
    if now is not None:
        return await generations_this_month(db, tenant_id, now=now) >= quota
    return await month_counts.get(db, tenant_id, current_month()) >= quota


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
    return QuotaStatus(used=used, quota=config.get("ai.monthly_quota"), month=month,
                       resets_at=next_month_start(moment))
