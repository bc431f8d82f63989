"""The SQL of two-factor sign-in: TOTP enrolments, recovery codes, the tenant switch (migration 0028)."""

from __future__ import annotations

from tms.db import Database, Row, Transaction


async def get(db: Database | Transaction, user_id: str) -> Row | None:
    return await db.fetch_one(
        "SELECT user_id, tenant_id, seed_encrypted, created_at, confirmed_at, last_time_step "
        "FROM user_two_factor WHERE user_id = ?", (user_id,))


async def sign_in_state(db: Database, user_id: str, tenant_id: str) -> Row:
    """``enrolled`` (a confirmed TOTP) and ``required`` (the tenant's switch): one read per page."""
    row = await db.fetch_one(
        "SELECT EXISTS (SELECT 1 FROM user_two_factor WHERE user_id = ? AND confirmed_at IS NOT NULL) AS enrolled, "
        "COALESCE((SELECT required FROM tenant_two_factor WHERE tenant_id = ?), 0) AS required",
        (user_id, tenant_id))
    assert row is not None
    return row


async def put_pending(tx: Transaction, user_id: str, tenant_id: str, seed_encrypted: str, at: str) -> None:
    """A new, unconfirmed seed; replaces an earlier unconfirmed one (never a confirmed one)."""
    await tx.execute("DELETE FROM user_two_factor WHERE user_id = ? AND confirmed_at IS NULL", (user_id,))
    await tx.execute(
        "INSERT INTO user_two_factor (user_id, tenant_id, seed_encrypted, created_at) VALUES (?, ?, ?, ?)",
        (user_id, tenant_id, seed_encrypted, at))


async def confirm(tx: Transaction, user_id: str, at: str, time_step: int) -> int:
    return await tx.execute(
        "UPDATE user_two_factor SET confirmed_at = ?, last_time_step = ? WHERE user_id = ? AND confirmed_at IS NULL",
        (at, time_step, user_id))


async def use_time_step(tx: Transaction, user_id: str, time_step: int) -> int:
    """Records an accepted code's time step; 0 when that step or a later one was already used (a replay)."""
    return await tx.execute(
        "UPDATE user_two_factor SET last_time_step = ? WHERE user_id = ? AND confirmed_at IS NOT NULL "
        "AND (last_time_step IS NULL OR last_time_step < ?)", (time_step, user_id, time_step))


async def replace_recovery_codes(tx: Transaction, user_id: str, digests: list[bytes], at: str) -> None:
    await tx.execute("DELETE FROM two_factor_recovery_codes WHERE user_id = ?", (user_id,))
    await tx.executemany(
        "INSERT INTO two_factor_recovery_codes (user_id, code_sha256, created_at) VALUES (?, ?, ?)",
        [(user_id, digest, at) for digest in digests])


async def use_recovery_code(tx: Transaction, user_id: str, digest: bytes, at: str) -> int:
    return await tx.execute(
        "UPDATE two_factor_recovery_codes SET used_at = ? WHERE user_id = ? AND code_sha256 = ? AND used_at IS NULL",
        (at, user_id, digest))


async def recovery_codes_left(db: Database | Transaction, user_id: str) -> int:
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM two_factor_recovery_codes WHERE user_id = ? AND used_at IS NULL", (user_id,)))


async def remove(tx: Transaction, user_id: str) -> int:
    await tx.execute("DELETE FROM two_factor_recovery_codes WHERE user_id = ?", (user_id,))
    return await tx.execute("DELETE FROM user_two_factor WHERE user_id = ?", (user_id,))


async def required(db: Database | Transaction, tenant_id: str) -> bool:
    return bool(await db.fetch_value("SELECT required FROM tenant_two_factor WHERE tenant_id = ?", (tenant_id,)))


async def set_required(tx: Transaction, tenant_id: str, value: bool, at: str) -> None:
    await tx.execute(
        "INSERT INTO tenant_two_factor (tenant_id, required, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (tenant_id) DO UPDATE SET required = excluded.required, updated_at = excluded.updated_at",
        (tenant_id, 1 if value else 0, at))


async def members(db: Database, tenant_id: str) -> list[Row]:
    """Every member with their two-factor state, for the admin page."""
    return await db.fetch_all(
        "SELECT u.id, u.email, u.name, u.role, u.active, f.confirmed_at, "
        "(SELECT COUNT(*) FROM two_factor_recovery_codes c WHERE c.user_id = u.id AND c.used_at IS NULL) "
        "AS codes_left FROM users u LEFT JOIN user_two_factor f ON f.user_id = u.id AND f.confirmed_at IS NOT NULL "
        "WHERE u.tenant_id = ? ORDER BY u.created_at, u.id", (tenant_id,))
