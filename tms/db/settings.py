"""Instance-wide values the service generates once and keeps (e.g. the CSRF signing secret)."""

from __future__ import annotations

from tms.db import Database, Transaction


async def get_or_create_setting(db: Database, key: str, make_value: str) -> str:
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO instance_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
            (key, make_value),
        )
        return str(await tx.fetch_value("SELECT value FROM instance_settings WHERE key = ?", (key,)))


async def claim_job_run(tx: Transaction, job: str, now: str, not_before: str) -> bool:
    """Records that ``job`` runs now unless some process already ran it at or after ``not_before``;
    True if this caller should run it (one claim per period, whichever replica asks first)."""
    key = f"job:{job}:last_run"
    last = await tx.fetch_value("SELECT value FROM instance_settings WHERE key = ?", (key,))
    if last is not None and str(last) >= not_before:
        return False
    await tx.execute(
        "INSERT INTO instance_settings (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, now),
    )
    return True


async def add_setup_token(db: Database, digest: str, at: str) -> None:
    """Remembers a first-run setup link (its SHA-256 only), so any replica can accept it."""
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO instance_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
            (f"setup_token:{digest}", at),
        )


async def setup_token_known(db: Database, digest: str) -> bool:
    return bool(await db.fetch_value("SELECT 1 FROM instance_settings WHERE key = ?", (f"setup_token:{digest}",)))
