"""Web sessions in the SQLite file, as a Litestar ``Store``, so logins survive a restart."""

from __future__ import annotations

import time
from datetime import timedelta

from litestar.stores.base import Store

from tms.db import Database


def _seconds(expires_in: int | timedelta | None) -> float | None:
    if expires_in is None:
        return None
    return expires_in.total_seconds() if isinstance(expires_in, timedelta) else float(expires_in)


class SQLiteSessionStore(Store):
    def __init__(self, db: Database) -> None:
        self._db = db

    async def set(self, key: str, value: str | bytes, expires_in: int | timedelta | None = None) -> None:
        seconds = _seconds(expires_in)
        expires_at = None if seconds is None else time.time() + seconds
        data = value.encode() if isinstance(value, str) else value
        async with self._db.transaction() as tx:
            await tx.execute(
                "INSERT INTO web_sessions (key, value, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, data, expires_at),
            )

    async def get(self, key: str, renew_for: int | timedelta | None = None) -> bytes | None:
        row = await self._db.fetch_one("SELECT value, expires_at FROM web_sessions WHERE key = ?", (key,))
        if row is None:
            return None
        if row["expires_at"] is not None and row["expires_at"] <= time.time():
            await self.delete(key)
            return None
        seconds = _seconds(renew_for)
        if seconds is not None and row["expires_at"] is not None:
            async with self._db.transaction() as tx:
                await tx.execute(
                    "UPDATE web_sessions SET expires_at = ? WHERE key = ?", (time.time() + seconds, key)
                )
        return bytes(row["value"])

    async def get_entry(self, key: str) -> tuple[bytes, float | None] | None:
        """(value, expires_at) of a live session, or None: the session cookie's backend reads both."""
        row = await self._db.fetch_one("SELECT value, expires_at FROM web_sessions WHERE key = ?", (key,))
        if row is None or (row["expires_at"] is not None and row["expires_at"] <= time.time()):
            return None
        return bytes(row["value"]), row["expires_at"]

    async def delete(self, key: str) -> None:
        async with self._db.transaction() as tx:
            await tx.execute("DELETE FROM web_sessions WHERE key = ?", (key,))

    async def delete_all(self) -> None:
        async with self._db.transaction() as tx:
            await tx.execute("DELETE FROM web_sessions")

    async def exists(self, key: str) -> bool:
        row = await self._db.fetch_one("SELECT expires_at FROM web_sessions WHERE key = ?", (key,))
        return row is not None and (row["expires_at"] is None or row["expires_at"] > time.time())

    async def expires_in(self, key: str) -> int | None:
        row = await self._db.fetch_one("SELECT expires_at FROM web_sessions WHERE key = ?", (key,))
        if row is None or row["expires_at"] is None:
            return None
        return max(0, int(row["expires_at"] - time.time()))

    async def delete_expired(self) -> int:
        async with self._db.transaction() as tx:
            return await tx.execute("DELETE FROM web_sessions WHERE expires_at <= ?", (time.time(),))
