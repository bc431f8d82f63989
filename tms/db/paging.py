"""Paged lists in creation order, shared by the stores of cases and runs."""

from __future__ import annotations

from typing import Any

from tms.db import Database, Dialect, Row


def equality_filters(tenant_id: str, **equals: str | None) -> tuple[list[str], list[Any]]:
    """``tenant_id = ?`` plus ``column = ?`` for every filter given (None means: not filtered)."""
    where, params = ["tenant_id = ?"], [tenant_id]
    for column, value in equals.items():
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    return where, params


async def page_in_creation_order(
    db: Database, table: str, columns: str, where: list[str], params: list[Any], limit: int, offset: int
) -> tuple[list[Row], int]:
    """One page in creation order, and the total matching ``where``.

    Each filter combination has an index whose entries are in rowid order, so the inner query walks
    only the index (no table rows, no sort) to skip ``offset`` entries; the outer one reads the page.
    ``table`` and ``columns`` come from the calling store, never from a request.
    """
    condition = " AND ".join(where)
    rows = await db.fetch_all(page_sql(db.dialect, table, columns, condition), (*params, limit, offset))
    total = await db.fetch_value(f"SELECT COUNT(*) FROM {table} WHERE {condition}", params)
    return rows, int(total)


def page_sql(dialect: Dialect, table: str, columns: str, condition: str) -> str:
    """A page in creation order: ``?`` placeholders for the condition's parameters, then limit and offset.

    SQLite: the inner query skips ``offset`` entries of an index that ends with the rowid (no table rows
    read for them), the outer one reads just the page by rowid. PostgreSQL walks the same index in
    rowid order and reads the page directly: the results tables have no index on rowid alone there.
    """
    if dialect == "postgres":
        return f"SELECT {columns} FROM {table} WHERE {condition} ORDER BY rowid LIMIT ? OFFSET ?"
    return (f"SELECT {columns} FROM {table} WHERE rowid IN "
            f"(SELECT rowid FROM {table} WHERE {condition} ORDER BY rowid LIMIT ? OFFSET ?) ORDER BY rowid")
