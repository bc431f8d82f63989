"""SQL of ai_generations: quota reservations, stored drafts, and the once-only save claim."""

from __future__ import annotations

from tms.db import Database, Row, Transaction


async def generations_in_month(db: Database | Transaction, tenant_id: str, month: str) -> int:
    """Generations reserved or done this calendar month (``YYYY-MM``): what the quota counts."""
    return int(await db.fetch_value(
        "SELECT COUNT(*) FROM ai_generations WHERE tenant_id = ? AND month = ?", (tenant_id, month)))


async def insert_pending(tx: Transaction, *, generation_id: str, tenant_id: str, project_id: str | None,
                         user_id: str | None, month: str, model: str, requirement: str, options: str,
                         created_at: str) -> None:
    await tx.execute(
        "INSERT INTO ai_generations (id, tenant_id, project_id, user_id, month, model, drafts, created_at, status, "
        "requirement, options) VALUES (?, ?, ?, ?, ?, ?, 0, ?, 'pending', ?, ?)",
        (generation_id, tenant_id, project_id, user_id, month, model, created_at, requirement, options),
    )


async def mark_done(tx: Transaction, tenant_id: str, generation_id: str, drafts: int, drafts_json: str) -> None:
    await tx.execute(
        "UPDATE ai_generations SET status = 'done', drafts = ?, drafts_json = ? WHERE tenant_id = ? AND id = ?",
        (drafts, drafts_json, tenant_id, generation_id),
    )


async def delete_generation(tx: Transaction, tenant_id: str, generation_id: str) -> None:
    await tx.execute("DELETE FROM ai_generations WHERE tenant_id = ? AND id = ?", (tenant_id, generation_id))


async def get_generation(db: Database | Transaction, tenant_id: str, generation_id: str) -> Row | None:
    return await db.fetch_one(
        "SELECT g.*, p.name AS project_name FROM ai_generations g LEFT JOIN projects p ON p.id = g.project_id "
        "WHERE g.tenant_id = ? AND g.id = ?",
        (tenant_id, generation_id),
    )


async def recent_generations(db: Database, tenant_id: str, limit: int) -> list[Row]:
    return await db.fetch_all(
        "SELECT g.id, g.created_at, g.drafts, g.saved_at, g.requirement, p.name AS project_name "
        "FROM ai_generations g LEFT JOIN projects p ON p.id = g.project_id "
        "WHERE g.tenant_id = ? AND g.status = 'done' ORDER BY g.created_at DESC LIMIT ?",
        (tenant_id, limit),
    )


async def claim_save(tx: Transaction, tenant_id: str, generation_id: str, saved_at: str) -> bool:
    """Marks the generation saved unless it already is: the guard against saving its drafts twice."""
    changed = await tx.execute(
        "UPDATE ai_generations SET saved_at = ? WHERE tenant_id = ? AND id = ? AND status = 'done' "
        "AND saved_at IS NULL",
        (saved_at, tenant_id, generation_id),
    )
    return changed == 1


async def release_save(tx: Transaction, tenant_id: str, generation_id: str) -> None:
    await tx.execute(
        "UPDATE ai_generations SET saved_at = NULL WHERE tenant_id = ? AND id = ? AND saved_codes IS NULL",
        (tenant_id, generation_id),
    )


async def set_saved_codes(tx: Transaction, tenant_id: str, generation_id: str, codes_json: str) -> None:
    await tx.execute(
        "UPDATE ai_generations SET saved_codes = ? WHERE tenant_id = ? AND id = ?",
        (codes_json, tenant_id, generation_id),
    )
