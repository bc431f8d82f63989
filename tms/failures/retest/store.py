"""The retest flag on test cases and the bug links that set it (SQL only).

Lists of ids travel as one JSON array parameter (``json_each``): one statement whatever the count,
and no limit on the number of SQL variables.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from tms.db import Database, Row, Transaction

_CASE_COLUMNS = "c.id, c.code, c.project_id, c.needs_retest, c.retest_flagged_at"


async def cases_linked_to_bug(
    tx: Transaction | Database,
    tenant_id: str,
    keys: Iterable[str],
    short_keys: Iterable[str] = (),
    short_key_sources: Iterable[str] = (),
) -> list[Row]:
    """Cases of the tenant linked to a bug: the key is in the case's ``tickets`` or is the
    ``bug_ticket_key`` of one of its results.

    ``keys`` are full keys ('PROJ-1', 'owner/repo#12'), matched exactly against results (an index
    lookup per spelling given) and regardless of case against tickets (a scan of the JSON anyway).
    ``short_keys`` ('#12') match the same way, except that a ticket naming another tracker as its
    ``source`` is not this bug: '#12' of GitHub is not '#12' of GitLab.
    """
    full = json.dumps(sorted({key.lower() for key in keys}))
    short = json.dumps(sorted({key.lower() for key in short_keys}))
    sources = json.dumps(sorted(set(short_key_sources)))
    every = json.dumps(sorted(set(keys) | set(short_keys)))
    return await tx.fetch_all(
        f"SELECT {_CASE_COLUMNS} FROM test_cases c WHERE c.tenant_id = :tenant AND c.id IN ("
        # results: the partial index test_results_bug answers this with a few lookups
        " SELECT r.test_case_id FROM test_results r WHERE r.tenant_id = :tenant"
        "  AND r.bug_ticket_key IN (SELECT value FROM json_each(:every)))"
        " UNION "
        f"SELECT {_CASE_COLUMNS} FROM test_cases c, json_each(c.tickets) t WHERE c.tenant_id = :tenant"
        "  AND c.tickets != '[]' AND ("
        "   lower(json_extract(t.value, '$.key')) IN (SELECT value FROM json_each(:full))"
        "   OR (lower(json_extract(t.value, '$.key')) IN (SELECT value FROM json_each(:short))"
        "       AND coalesce(json_extract(t.value, '$.source'), 'OTHER') IN"
        "           (SELECT value FROM json_each(:sources))))"
        " ORDER BY code",
        {"tenant": tenant_id, "every": every, "full": full, "short": short, "sources": sources},
    )


async def flag_cases(
    tx: Transaction, tenant_id: str, case_ids: Iterable[str], reason: str, bug_key: str | None, at: str
) -> list[Row]:
    """Flags the cases not flagged yet; returns those (id, code, project_id) — the newly flagged.

    A case already waiting keeps its first reason and flagged_at: the retest it waits for is the same.
    """
    ids = json.dumps(sorted(set(case_ids)))
    newly = await tx.fetch_all(
        "SELECT id, code, project_id FROM test_cases WHERE tenant_id = ? AND needs_retest = 0 "
        "AND id IN (SELECT value FROM json_each(?)) ORDER BY code",
        (tenant_id, ids),
    )
    if newly:
        await tx.execute(
            "UPDATE test_cases SET needs_retest = 1, retest_reason = ?, retest_bug_key = ?, "
            "retest_flagged_at = ?, updated_at = ? WHERE tenant_id = ? AND needs_retest = 0 "
            "AND id IN (SELECT value FROM json_each(?))",
            (reason, bug_key, at, at, tenant_id, json.dumps([row["id"] for row in newly])),
        )
    return newly


async def flagged_among(tx: Transaction | Database, tenant_id: str, case_ids: Iterable[str]) -> list[Row]:
    """The flagged cases among ``case_ids``, with their flagged_at (usually none or a few)."""
    return await tx.fetch_all(
        "SELECT id, retest_flagged_at FROM test_cases WHERE tenant_id = ? AND needs_retest = 1 "
        "AND id IN (SELECT value FROM json_each(?))",
        (tenant_id, json.dumps(list(set(case_ids)))),
    )


async def flagged_in_tenant(tx: Transaction | Database, tenant_id: str) -> list[Row]:
    """Every flagged case of the tenant (id, retest_flagged_at): one range of the partial index."""
    return await tx.fetch_all(
        "SELECT id, retest_flagged_at FROM test_cases WHERE tenant_id = ? AND needs_retest = 1", (tenant_id,)
    )


async def clear_cases(tx: Transaction, tenant_id: str, case_ids: Iterable[str], at: str) -> int:
    """Clears the flag on those of ``case_ids`` that carry it; returns how many did."""
    return await tx.execute(
        "UPDATE test_cases SET needs_retest = 0, retest_reason = NULL, retest_bug_key = NULL, "
        "retest_flagged_at = NULL, updated_at = ? WHERE tenant_id = ? AND needs_retest = 1 "
        "AND id IN (SELECT value FROM json_each(?))",
        (at, tenant_id, json.dumps(sorted(set(case_ids)))),
    )


async def retest_queue(db: Database, tenant_id: str, project_id: str | None = None, limit: int = 500) -> list[Row]:
    """The cases waiting for a retest, oldest flag first (the partial index holds only these)."""
    columns = (
        "id, code, title, project_id, status, priority, automation_status, retest_reason, retest_bug_key, "
        "retest_flagged_at"
    )
    if project_id is None:
        return await db.fetch_all(
            f"SELECT {columns} FROM test_cases WHERE tenant_id = ? AND needs_retest = 1 "
            "ORDER BY retest_flagged_at, code LIMIT ?",
            (tenant_id, limit),
        )
    return await db.fetch_all(
        f"SELECT {columns} FROM test_cases WHERE tenant_id = ? AND project_id = ? AND needs_retest = 1 "
        "ORDER BY retest_flagged_at, code LIMIT ?",
        (tenant_id, project_id, limit),
    )


async def find_case(db: Database | Transaction, tenant_id: str, id_or_code: str) -> Row | None:
    """A case by cuid or code (the API accepts both wherever a path names a case)."""
    return await db.fetch_one(
        "SELECT id, code, project_id, needs_retest, retest_reason, retest_bug_key, retest_flagged_at "
        "FROM test_cases WHERE tenant_id = ? AND (id = ? OR code = ?)",
        (tenant_id, id_or_code, id_or_code),
    )


async def codes_of(tx: Transaction | Database, tenant_id: str, case_ids: Iterable[str]) -> list[str]:
    return [row["code"] for row in await tx.fetch_all(
        "SELECT code FROM test_cases WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY code",
        (tenant_id, json.dumps(sorted(set(case_ids)))))]
