"""Instance-wide values the service generates once and keeps (e.g. the CSRF signing secret)."""

from __future__ import annotations

from tms.db import Database


async def get_or_create_setting(db: Database, key: str, make_value: str) -> str:
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO instance_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
            (key, make_value),
        )
        return str(await tx.fetch_value("SELECT value FROM instance_settings WHERE key = ?", (key,)))
