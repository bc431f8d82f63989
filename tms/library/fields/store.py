"""SQL of custom_fields (the definitions); every query filters on tenant_id.

The values live on the cases (test_cases.custom_fields, JSON) and, one row each, in case_field_values,
which triggers keep (migrations 0031, 0043); ``value_rows`` are the cases a `cf.<key>=` filter matches.
"""

from __future__ import annotations

from typing import Any

from tms.db import Database, Row, Transaction

COLUMNS = ("id, tenant_id, project_id, key, name, type, entity, options, required, default_value, position, "
           "retired_at, created_at, updated_at")
UPDATABLE = frozenset({"name", "options", "required", "default_value", "position", "retired_at", "updated_at"})


async def list_for_project(db: Database | Transaction, tenant_id: str, project_id: str,
                           entity: str | None = None) -> list[Row]:
    """A project's fields in their order (position, then name), retired ones included."""
    sql = f"SELECT {COLUMNS} FROM custom_fields WHERE tenant_id = ? AND project_id = ?"
    params: list[Any] = [tenant_id, project_id]
    if entity is not None:
        sql += " AND entity = ?"
        params.append(entity)
    return await db.fetch_all(sql + " ORDER BY position, name, created_at", params)


async def with_key(db: Database | Transaction, tenant_id: str, key: str, entity: str) -> list[Row]:
    """Every field of the tenant with this key (a filter without a project reads them all)."""
    return await db.fetch_all(
        f"SELECT {COLUMNS} FROM custom_fields WHERE tenant_id = ? AND key = ? AND entity = ?",
        (tenant_id, key, entity),
    )


async def get_field(db: Database | Transaction, tenant_id: str, field_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT {COLUMNS} FROM custom_fields WHERE tenant_id = ? AND id = ?",
                              (tenant_id, field_id))


async def key_taken(db: Database | Transaction, tenant_id: str, project_id: str, key: str) -> bool:
    row = await db.fetch_one("SELECT 1 AS one FROM custom_fields WHERE tenant_id = ? AND project_id = ? AND key = ?",
                             (tenant_id, project_id, key))
    return row is not None


async def next_position(db: Database | Transaction, tenant_id: str, project_id: str) -> int:
    value = await db.fetch_value(
        "SELECT coalesce(max(position) + 1, 0) FROM custom_fields WHERE tenant_id = ? AND project_id = ?",
        (tenant_id, project_id),
    )
    return int(value or 0)


async def count_for_project(db: Database | Transaction, tenant_id: str, project_id: str) -> int:
    """The project's fields, retired ones included (index custom_fields (tenant_id, project_id, key))."""
    value = await db.fetch_value("SELECT count(*) FROM custom_fields WHERE tenant_id = ? AND project_id = ?",
                                 (tenant_id, project_id))
    return int(value or 0)


async def insert_fields(tx: Transaction, rows: list[dict[str, Any]]) -> None:
    names = [c.strip() for c in COLUMNS.split(",")]
    await tx.executemany(
        f"INSERT INTO custom_fields ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        [[row[name] for name in names] for row in rows],
    )


async def update_field(tx: Transaction, tenant_id: str, field_id: str, changes: dict[str, Any]) -> None:
    unknown = set(changes) - UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    assignments = ", ".join(f"{column} = ?" for column in changes)
    await tx.execute(f"UPDATE custom_fields SET {assignments} WHERE tenant_id = ? AND id = ?",
                     (*changes.values(), tenant_id, field_id))


def value_rows(tenant_id: str, key: str, projects: list[str], texts: list[str],
               numbers: list[float]) -> tuple[str, list[Any]]:
    """``SELECT case_rowid``: the cases of these projects whose field ``key`` holds one of these values,
    each (project, value) one range of an index of case_field_values (migration 0043: text kinds in
    ``value_text``, numbers in ``value_number``). One value of one project is the range itself, in case
    order; more are a UNION (a multiselect case may hold several of the values: each case once)."""
    probe = ("SELECT case_rowid FROM case_field_values WHERE tenant_id = ? AND project_id = ? AND field_key = ? "
             "AND {} = ?")
    tests: list[str] = []
    params: list[Any] = []
    for column, values in (("value_text", texts), ("value_number", numbers)):
        for value in values:
            for project_id in projects:
                tests.append(probe.format(column))
                params += [tenant_id, project_id, key, value]
    if not tests:
        return "SELECT case_rowid FROM case_field_values WHERE 0 = 1", []
    return " UNION ".join(tests), params

