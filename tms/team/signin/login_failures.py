"""Failed sign-ins per (client address, email): the SQL of login throttling."""

from __future__ import annotations

from tms.db import Database, Row


async def recent(db: Database, address: str, email: str, since: float) -> Row:
    """Failures since ``since`` from this address: for this email (``pair``, ``pair_first``) and
    for any email (``address``, ``address_first``). One indexed read."""
    row = await db.fetch_one(
        "SELECT COUNT(*) AS address, MIN(failed_at) AS address_first, "
        "SUM(email = ?) AS pair, MIN(CASE WHEN email = ? THEN failed_at END) AS pair_first "
        "FROM login_failures WHERE address = ? AND failed_at > ?",
        (email, email, address, since),
    )
    assert row is not None
    return row


async def record(db: Database, address: str, email: str, now: float, forget_before: float) -> None:
    """One more failure; this address's failures older than the window go at the same time."""
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM login_failures WHERE address = ? AND failed_at <= ?", (address, forget_before))
        await tx.execute(
            "INSERT INTO login_failures (address, email, failed_at) VALUES (?, ?, ?)", (address, email, now)
        )


async def forget_pair(db: Database, address: str, email: str) -> None:
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM login_failures WHERE address = ? AND email = ?", (address, email))


async def forget_email(db: Database, email: str) -> int:
    async with db.transaction() as tx:
        return await tx.execute("DELETE FROM login_failures WHERE email = ?", (email,))


async def forget_older_than(db: Database, before: float) -> int:
    async with db.transaction() as tx:
        return await tx.execute("DELETE FROM login_failures WHERE failed_at <= ?", (before,))


async def forget_address(db: Database, address: str) -> int:
    async with db.transaction() as tx:
        return await tx.execute("DELETE FROM login_failures WHERE address = ?", (address,))
