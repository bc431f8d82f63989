"""The inbox's retention (tms.notifications.inbox.retention): read notifications older than
notifications.read_days and every one older than notifications.keep_days go, in bounded batches."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import ServerProcess, Tenant, connect_db, make_tenant_on, run_admin
from tests.team_helpers import Member, add_member, web_as
from tms.config import Config
from tms.ids import iso

POLICY = Config(values={"notifications.read_days": 90, "notifications.keep_days": 365, "smtp.host": ""})


def _notify(tenant: Tenant, member: Member, titles: list[str]) -> dict[str, str]:
    """One notification per title for ``member`` through the inbox's own writer; {title: id}."""
    from tms.notifications.inbox import service as inbox

    async def write(db: Any) -> None:
        for title in titles:
            async with db.transaction() as tx:
                await inbox.notify(tx, POLICY, tenant_id=tenant.id, user_id=member.id, kind="assignment",
                                   title=title, link="/runs", actor_id=None)

    run_admin(tenant.server.db_path, write)
    with connect_db(tenant.server.db_path) as conn:
        rows = conn.execute("SELECT title, id FROM notifications WHERE user_id = ?", (member.id,)).fetchall()
    return {title: note_id for title, note_id in rows}


def _age(tenant: Tenant, note_id: str, days: int, read: bool) -> None:
    """Moves a notification's creation into the past, as time would, and marks it read or not."""
    made = iso(datetime.now(UTC) - timedelta(days=days))
    with connect_db(tenant.server.db_path) as conn:
        conn.execute("UPDATE notifications SET created_at = ?, read_at = ? WHERE id = ?",
                     (made, made if read else None, note_id))
        conn.commit()


def _left(tenant: Tenant, member: Member) -> set[str]:
    with connect_db(tenant.server.db_path) as conn:
        return {row[0] for row in conn.execute("SELECT title FROM notifications WHERE user_id = ?", (member.id,))}


def _prune(tenant: Tenant, config: Config = POLICY) -> int:
    from tms.notifications.inbox import retention

    return run_admin(tenant.server.db_path, lambda db: retention.prune(db, config))  # type: ignore[no-any-return]


def test_read_ones_go_after_read_days_and_all_after_keep_days(tenant: Tenant, other_tenant: Tenant) -> None:
    tester, stranger = add_member(tenant, "tester"), add_member(other_tenant, "viewer")
    ages = {"fresh read": (10, True), "old read": (100, True), "old unread": (100, False),
            "ancient unread": (400, False), "ancient read": (400, True), "new": (0, False)}
    notes = _notify(tenant, tester, list(ages))
    for title, (days, read) in ages.items():
        if days:
            _age(tenant, notes[title], days, read)
    foreign = _notify(other_tenant, stranger, ["elsewhere ancient"])
    _age(other_tenant, foreign["elsewhere ancient"], 500, False)

    # 0 keeps them: nothing goes
    assert _prune(tenant, Config(values={"notifications.read_days": 0, "notifications.keep_days": 0})) == 0
    assert _left(tenant, tester) == set(ages)

    assert _prune(tenant) == 4  # old read, ancient unread, ancient read; and the other tenant's ancient one
    assert _left(tenant, tester) == {"fresh read", "old unread", "new"}
    assert _left(other_tenant, stranger) == set()
    # the inbox reads what is left, its unread count included
    inbox = web_as(tenant, tester.email, tester.password).get("/api/v1/notifications").json()
    assert {n["title"] for n in inbox["data"]} == {"fresh read", "old unread", "new"}
    assert inbox["unread"] == 2 and inbox["pagination"]["total"] == 3
    assert _prune(tenant) == 0  # nothing more to do


def test_a_pass_deletes_in_bounded_batches_and_the_next_pass_goes_on(tenant: Tenant,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tms.notifications.inbox import retention

    tester = add_member(tenant, "tester")
    notes = _notify(tenant, tester, [f"n{number}" for number in range(7)])
    for number, note_id in enumerate(notes.values()):
        _age(tenant, note_id, 400 + number, read=False)
    monkeypatch.setattr(retention, "BATCH", 2)
    monkeypatch.setattr(retention, "PASS_BATCHES", 3)
    assert _prune(tenant) == 6  # three batches of two, oldest first
    assert _left(tenant, tester) == {"n0"}
    assert _prune(tenant) == 1
    assert _left(tenant, tester) == set()


def test_the_servers_own_pass_runs_soon_after_start(start_server: Callable[..., ServerProcess]) -> None:
    """prune_daily (started by the app's lifespan) prunes once right after its first delay; on a server
    of its own, since the pass runs once per period per database."""
    import asyncio

    from tms.notifications.inbox import retention

    tenant = make_tenant_on(start_server())
    tester = add_member(tenant, "tester")
    notes = _notify(tenant, tester, ["old", "new"])
    _age(tenant, notes["old"], 400, read=False)

    async def one_pass(db: Any) -> None:
        task = asyncio.create_task(retention.prune_daily(db, POLICY, first_delay=0, period=3600))
        for _ in range(200):
            await asyncio.sleep(0.02)
            if not await db.fetch_value("SELECT COUNT(*) FROM notifications WHERE id = ?", (notes["old"],)):
                break
        task.cancel()

    run_admin(tenant.server.db_path, one_pass)
    assert _left(tenant, tester) == {"new"}
