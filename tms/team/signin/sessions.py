"""Web sessions in the database, as a Litestar ``Store``, so logins survive a restart.

Besides the session's data each row names its user (``user_id``), so a password change, a reset, a
deactivation or a demotion ends every session of that user in its own transaction, and
``/account/sessions`` lists them with the device (user agent), address, creation and last-seen time.
``last_seen_at`` is written at most every ``LAST_SEEN_EVERY`` per session, never on every request.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import timedelta

from litestar.stores.base import Store

from tms.db import Database, Row, Transaction
from tms.ids import iso, now_iso, utc_now

LAST_SEEN_EVERY = timedelta(minutes=5)
_USER_AGENT_MAX = 300


@dataclass(frozen=True, slots=True)
class SessionEntry:
    value: bytes
    expires_at: float | None
    last_seen_at: str | None


@dataclass(frozen=True, slots=True)
class Client:
    """Where a request came from, as the sessions page shows it."""

    user_agent: str
    ip: str


def handle_of(key: str) -> str:
    """A session's public name on the sessions page: its key is the cookie value, never shown."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]


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

    async def get_entry(self, key: str) -> SessionEntry | None:
        """A live session's value, expiry and last-seen time, or None (the session cookie's backend)."""
        row = await self._db.fetch_one(
            "SELECT value, expires_at, last_seen_at FROM web_sessions WHERE key = ?", (key,))
        if row is None or (row["expires_at"] is not None and row["expires_at"] <= time.time()):
            return None
        return SessionEntry(bytes(row["value"]), row["expires_at"], row["last_seen_at"])

    async def insert(self, key: str, value: bytes, expires_in: int | timedelta | None, *, user_id: str | None,
                     client: Client) -> None:
        """A new session (a fresh id): who it belongs to and where it was opened."""
        seconds = _seconds(expires_in)
        now = now_iso()
        async with self._db.transaction() as tx:
            await tx.execute(
                "INSERT INTO web_sessions (key, value, expires_at, user_id, created_at, last_seen_at, user_agent, ip) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, value, None if seconds is None else time.time() + seconds, user_id, now, now,
                 client.user_agent[:_USER_AGENT_MAX], client.ip),
            )

    async def update(self, key: str, value: bytes, expires_in: int | timedelta | None) -> bool:
        """Rewrites a stored session; False when it no longer exists (it was ended meanwhile: a
        password change, a deactivation, "end this session"), so an ended session is never revived."""
        seconds = _seconds(expires_in)
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE web_sessions SET value = ?, expires_at = ? WHERE key = ?",
                (value, None if seconds is None else time.time() + seconds, key),
            )
        return bool(changed)

    async def touch(self, key: str, last_seen_at: str | None, client: Client) -> None:
        """Records that the session was used, when it was last recorded ``LAST_SEEN_EVERY`` ago or more."""
        if last_seen_at is not None and last_seen_at > iso(utc_now() - LAST_SEEN_EVERY):
            return
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE web_sessions SET last_seen_at = ?, user_agent = ?, ip = ? WHERE key = ?",
                (now_iso(), client.user_agent[:_USER_AGENT_MAX], client.ip, key),
            )

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


async def sessions_of(db: Database | Transaction, user_id: str) -> list[Row]:
    """The user's live sessions, most recently used first; ``handle`` names each, ``key`` stays inside."""
    rows = await db.fetch_all(
        "SELECT key, created_at, last_seen_at, user_agent, ip FROM web_sessions WHERE user_id = ? "
        "AND (expires_at IS NULL OR expires_at > ?) ORDER BY last_seen_at DESC, created_at DESC",
        (user_id, time.time()),
    )
    return [{**row, "handle": handle_of(row["key"])} for row in rows]


async def count_sessions(db: Database | Transaction, user_id: str) -> int:
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM web_sessions WHERE user_id = ? AND (expires_at IS NULL OR expires_at > ?)",
        (user_id, time.time())))


async def end_sessions(tx: Transaction, user_id: str, *, keep: str | None = None) -> int:
    """Ends every session of the user (but ``keep``, the key of the session asking); returns how many."""
    if keep is None:
        return await tx.execute("DELETE FROM web_sessions WHERE user_id = ?", (user_id,))
    return await tx.execute("DELETE FROM web_sessions WHERE user_id = ? AND key != ?", (user_id, keep))


async def end_session(tx: Transaction, user_id: str, key: str) -> int:
    return await tx.execute("DELETE FROM web_sessions WHERE user_id = ? AND key = ?", (user_id, key))
