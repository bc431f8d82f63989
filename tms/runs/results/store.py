"""SQL of test_results (linked to a case) and unlinked_test_results (naming no case); tenant-filtered."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
from msgspec.structs import astuple

from tms.db import Database, Row, Transaction
from tms.db.paging import page_sql
from tms.runs.statuses import FAILING


class Current(msgspec.Struct, frozen=True, gc=False):
    """A run's stored result of one case, as a write of results needs it.

    Not a NamedTuple: the GC never untracks a tuple subclass, and the 20,000 of a big write alive at once
    made it run full collections of the whole heap mid-ingest (~50-100 ms each; issue 23's profile).
    """

    id: str
    status: str
    source: str


_currents = msgspec.json.Decoder(list[tuple[str, str, str, str]])


class LinkedRow(msgspec.Struct, gc=False):
    """A row of test_results (a result of a library case); the field order is the column order.

    Built by ``tms.runs.results.rows.linked_row``; a new column is a new field here (and there).
    """

    id: str
    tenant_id: str
    run_id: str
    test_case_id: str
    test_case_code: str
    title: str | None
    status: str
    comment: str | None
    bug_ticket_key: str | None
    bug_ticket_url: str | None
    duration_ms: int | None
    framework: str | None
    error_message: str | None
    error_stack: str | None
    executed_at: str | None
    created_at: str
    updated_at: str
    fingerprint: str | None  # FAILED/BROKEN only: tms.failures.fingerprints
    passed_on_retry: int     # 1: an earlier attempt failed, the last passed (flaky evidence)
    source: str              # "automated" | "manual" (migration 0027): who last set the outcome
    custom_fields: str       # JSON {key: value} of the project's result fields (migration 0039)
    location_file: str | None  # the test's source location, when the report gave it (issue 24)
    location_line: int | None


class UnlinkedRow(msgspec.Struct, gc=False):
    """A row of unlinked_test_results (an ingested result naming no case); field order = column order.

    Built by ``tms.runs.results.rows.unlinked_row``.
    """

    id: str
    tenant_id: str
    project_id: str
    run_id: str
    title: str | None
    status: str
    comment: str | None
    bug_ticket_key: str | None
    bug_ticket_url: str | None
    duration_ms: int | None
    framework: str | None
    error_message: str | None
    error_stack: str | None
    executed_at: str | None
    created_at: str
    updated_at: str
    fingerprint: str | None
    passed_on_retry: int
    source: str
    custom_fields: str
    location_file: str | None
    location_line: int | None


LINKED_COLUMNS: tuple[str, ...] = LinkedRow.__struct_fields__
UNLINKED_COLUMNS: tuple[str, ...] = UnlinkedRow.__struct_fields__


def _parameters(rows: Iterable[LinkedRow] | Iterable[UnlinkedRow]) -> Iterator[tuple[Any, ...]]:
    """The one place a named row becomes executemany's positional parameters (a C call per row)."""
    return map(astuple, rows)


# The last columns of both tables are what most reports leave empty (result fields' values, source
# location). A new batch none of whose rows fills them is inserted without them (their column defaults
# are the same values): three bound parameters a row fewer, ~60 ms of a 100k-result ingest on SQLite.
NO_VALUES = "{}"
_TAIL = ("custom_fields", "location_file", "location_line")
assert LINKED_COLUMNS[-len(_TAIL):] == _TAIL == UNLINKED_COLUMNS[-len(_TAIL):]
_EMPTY_TAIL = {(NO_VALUES, None, None)}
_tail_of = attrgetter(*_TAIL)
_head_of = itemgetter(slice(0, -len(_TAIL)))


def _tail_empty(rows: Iterable[LinkedRow] | Iterable[UnlinkedRow]) -> bool:
    """Whether no row fills a column of ``_TAIL`` (one C pass)."""
    return set(map(_tail_of, rows)) <= _EMPTY_TAIL


# Last write wins: every reported field is replaced; id and created_at stay those of the first write.
# case_version is stamped here, for every writer of results: the case's version at the time of the write
# (one primary-key lookup per row; the parameter of test_case_id is reused by its number).
_CASE_PARAM = f"?{LINKED_COLUMNS.index('test_case_id') + 1}"
_UPSERT_SET = ", ".join(
    f"{c} = excluded.{c}" for c in (*LINKED_COLUMNS, "case_version")
    if c not in ("id", "tenant_id", "run_id", "test_case_id", "created_at")
)
_UPSERT = (
    f"INSERT INTO test_results ({', '.join(LINKED_COLUMNS)}, case_version) "
    f"VALUES ({', '.join(f'?{i}' for i in range(1, len(LINKED_COLUMNS) + 1))}, "
    f"(SELECT version FROM test_cases WHERE id = {_CASE_PARAM})) "
    f"ON CONFLICT (run_id, test_case_id) DO UPDATE SET {_UPSERT_SET}"
)
_LIST_COLUMNS = (
    "id, test_case_id, test_case_code, title, status, comment, bug_ticket_key, bug_ticket_url, duration_ms, "
    "framework, error_message, error_stack, executed_at, created_at, updated_at, case_version, fingerprint, source, "
    "custom_fields, location_file AS file, location_line AS line"
)
_UNLINKED_LIST_COLUMNS = (
    _LIST_COLUMNS.replace("test_case_id, test_case_code", "NULL AS test_case_id, NULL AS test_case_code")
    .replace("case_version", "NULL AS case_version") + ", NULL AS assignee_id, NULL AS step_results"
)
_LIST_COLUMNS += ", assignee_id, step_results"


# PostgreSQL: the whole batch as one array per column, one statement (several times faster than a
# pipelined executemany of single-row upserts there)
_ARRAY_TYPES = [
    "bigint[]" if field.type in (int, int | None) else "text[]" for field in msgspec.structs.fields(LinkedRow)
]
_UPSERT_ARRAYS = (
    f"INSERT INTO test_results ({', '.join(LINKED_COLUMNS)}, case_version) "
    "SELECT u.*, c.version "
    f"FROM unnest({', '.join(f'CAST(? AS {kind})' for kind in _ARRAY_TYPES)}) AS u({', '.join(LINKED_COLUMNS)}) "
    "LEFT JOIN test_cases c ON c.id = u.test_case_id "
    f"ON CONFLICT (run_id, test_case_id) DO UPDATE SET {_UPSERT_SET}"
)


async def upsert_linked(tx: Transaction, rows: list[LinkedRow]) -> None:
    """The whole batch in one statement (one executemany on SQLite)."""
    if tx.dialect == "sqlite":
        await tx.executemany(_UPSERT, _parameters(rows))
    else:
        batch = _one_per_case(rows)
        if batch:
            await tx.execute(_UPSERT_ARRAYS, [list(column) for column in zip(*_parameters(batch), strict=True)])
    # a replaced result's old values went with the UPDATE trigger; the stored rows holding values now
    # (their ids are the stored ones, not the rows') get theirs
    valued = [row.test_case_id for row in rows if row.custom_fields != NO_VALUES]
    if valued:
        stored = await tx.fetch_all(
            "SELECT id, tenant_id, custom_fields FROM test_results WHERE run_id = ? "
            "AND test_case_id IN (SELECT value FROM json_each(?)) AND custom_fields <> '{}'",
            (rows[0].run_id, json.dumps(list(dict.fromkeys(valued)))))
        await _replace_values(tx, [(row["id"], row["tenant_id"], row["custom_fields"]) for row in stored])


async def insert_linked(tx: Transaction, rows: Iterable[LinkedRow], versions: Mapping[str, int]) -> None:
    """Results of a run created in this transaction: nothing to conflict with, so the backend's bulk
    path (COPY on PostgreSQL, where the upsert cost twice as much per row) with each case's version
    as read under the write lock (``versions``: case id -> version). A case reported twice keeps what
    upserting would have left."""
    kept = _one_per_case(rows)
    if _tail_empty(kept):
        await tx.insert_rows("test_results", (*LINKED_COLUMNS[:-len(_TAIL)], "case_version"),
                             ((*_head_of(astuple(row)), versions[row.test_case_id]) for row in kept))
        return
    await tx.insert_rows("test_results", (*LINKED_COLUMNS, "case_version"),
                         ((*astuple(row), versions[row.test_case_id]) for row in kept))
    await _add_values(tx, [(row.id, row.tenant_id, row.custom_fields) for row in kept
                           if row.custom_fields != NO_VALUES])


# ---- result_field_values (migration 0039): one row per value of a result's custom fields --------------

VALUES_IN_THREAD = 500  # results holding values from which their rows are made in a worker thread
_VALUE_COLUMNS = ("tenant_id", "field_key", "value_text", "value_number", "result_id")
_values_of = msgspec.json.Decoder(dict[str, Any])


def _value_rows(results: Iterable[tuple[str, str, str]]) -> Iterator[tuple[Any, ...]]:
    """(tenant_id, field_key, value_text, value_number, result_id) of every value of the results given
    as (id, tenant_id, custom_fields JSON), as the UPDATE trigger makes them: texts, dates, options and
    checkboxes ('true'/'false') as text, numbers as numbers, a multiselect one row per option."""
    for result_id, tenant_id, encoded in results:
        for key, value in _values_of.decode(encoded).items():
            if isinstance(value, bool):
                yield tenant_id, key, "true" if value else "false", None, result_id
            elif isinstance(value, int | float):
                yield tenant_id, key, None, float(value), result_id
            elif isinstance(value, str):
                yield tenant_id, key, value, None, result_id
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, str):
                        yield tenant_id, key, item, None, result_id


async def _add_values(tx: Transaction, results: list[tuple[str, str, str]]) -> None:
    """Value rows of new results holding values (no trigger on INSERT: an ingest's rows without values
    cost nothing). One bulk statement; nothing at all when no result holds a value."""
    if not results:
        return
    # decoding thousands of results' values is CPU work: a worker thread, so the event loop serves others
    rows = (list(_value_rows(results)) if len(results) < VALUES_IN_THREAD
            else await asyncio.to_thread(lambda: list(_value_rows(results))))
    if rows:
        await tx.insert_rows("result_field_values", _VALUE_COLUMNS, rows)


async def _replace_values(tx: Transaction, results: list[tuple[str, str, str]]) -> None:
    if results:
        await tx.execute("DELETE FROM result_field_values WHERE result_id IN (SELECT value FROM json_each(?))",
                         (json.dumps([result_id for result_id, _, _ in results]),))
        await _add_values(tx, results)


def _one_per_case(rows: Iterable[LinkedRow]) -> list[LinkedRow]:
    """What upserting the rows one after the other would leave: per (run, case) the last row's fields
    with the first row's id and created_at (one statement may not touch a row twice in PostgreSQL)."""
    kept: dict[tuple[str, str], LinkedRow] = {}
    for row in rows:
        key = (row.run_id, row.test_case_id)
        first = kept.get(key)
        kept[key] = row if first is None else msgspec.structs.replace(row, id=first.id, created_at=first.created_at)
    return list(kept.values())


async def insert_unlinked(tx: Transaction, rows: list[UnlinkedRow]) -> None:
    if _tail_empty(rows):
        await tx.insert_rows("unlinked_test_results", UNLINKED_COLUMNS[:-len(_TAIL)], map(_head_of, _parameters(rows)))
    else:
        await tx.insert_rows("unlinked_test_results", UNLINKED_COLUMNS, _parameters(rows))
        await _add_values(tx, [(row.id, row.tenant_id, row.custom_fields) for row in rows
                               if row.custom_fields != NO_VALUES])
    await shift_unlinked_counts(tx, Counter((row.tenant_id, row.project_id) for row in rows))


async def shift_unlinked_counts(tx: Transaction, by_project: Mapping[tuple[str, str], int], sign: int = 1) -> None:
    """Keeps ``project_counters.unlinked_results`` right: every writer or deleter of unlinked rows calls it."""
    await tx.executemany(
        "INSERT INTO project_counters (project_id, tenant_id, unlinked_results) VALUES (?, ?, ?) "
        "ON CONFLICT (project_id) DO UPDATE SET "
        "unlinked_results = project_counters.unlinked_results + excluded.unlinked_results",
        [(project_id, tenant_id, sign * count) for (tenant_id, project_id), count in by_project.items() if count],
    )


async def cases_held(db: Database, tenant_id: str, run_id: str, case_ids: list[str]) -> set[str]:
    """Which of these cases the run already holds (the case picker greys them out; a page of cases)."""
    if not case_ids:
        return set()
    marks = ",".join("?" * len(case_ids))
    rows = await db.fetch_all(
        f"SELECT test_case_id FROM test_results WHERE run_id = ? AND tenant_id = ? AND test_case_id IN ({marks})",
        (run_id, tenant_id, *case_ids))
    return {row["test_case_id"] for row in rows}


async def current_for_cases(tx: Transaction, run_id: str, case_ids: list[str]) -> dict[str, Current]:
    """test_case_id -> (result id, status, source) of the run's existing rows for these cases.

    Fetched as one JSON array built by the database (see store.cases._resolve): no Python row per result.
    """
    if not case_ids:
        return {}
    packed = await tx.fetch_value(
        "SELECT json_group_array(json_array(test_case_id, id, status, source)) FROM test_results WHERE run_id = ? "
        "AND test_case_id IN (SELECT value FROM json_each(?))",
        (run_id, json.dumps(case_ids)),
    )
    return {case_id: Current(result_id, status, source)
            for case_id, result_id, status, source in _currents.decode(packed or "[]")}


# A run's rows, read off the run indexes alone. test_results' (run_id, test_case_id) index has no
# tenant_id, so the run is checked against the tenant once per query (a scalar subquery) instead of
# per row; unlinked_test_results' (run_id, tenant_id) index has it, and lists in rowid order.
_WHERE_RUN = {
    "test_results": "run_id = (SELECT id FROM test_runs WHERE id = ? AND tenant_id = ?)",
    "unlinked_test_results": "run_id = ? AND tenant_id = ?",
}


async def _page_of(db: Database, table: str, columns: str, run: tuple[str, str], status: str | None,
                   limit: int, offset: int) -> list[Row]:
    """One page of one table's rows of the run in stored (rowid) order, optionally of one status.

    The inner query skips ``offset`` entries of the run index (sorting rowids at most, never whole
    rows); the outer one reads just the page. ``table`` and ``columns`` are this module's constants.
    """
    where, params = _WHERE_RUN[table], [*run]
    if status is not None:
        where += " AND status = ?"
        params.append(status)
    return await db.fetch_all(page_sql(db.dialect, table, columns, where), (*params, limit, offset))


_FAILING_SQL = "status IN ({})".format(", ".join(f"'{s}'" for s in sorted(FAILING)))


async def page_failures_first(db: Database, tenant_id: str, run_id: str, *, limit: int, offset: int,
                              failing_total: int) -> list[Row]:
    """One page of the run's linked results, failed and blocked ones first (``failing_total`` of them),
    then the others, each part in stored order: what needs a look is on the first screen (issue 24).
    Two index walks, as with a status filter; nothing sorts the run's rows."""
    run, rows = (run_id, tenant_id), []
    where = _WHERE_RUN["test_results"]
    if offset < failing_total:
        rows = await db.fetch_all(page_sql(db.dialect, "test_results", _LIST_COLUMNS, f"{where} AND {_FAILING_SQL}"),
                                  (*run, limit, offset))
    if len(rows) < limit:
        rows += await db.fetch_all(
            page_sql(db.dialect, "test_results", _LIST_COLUMNS, f"{where} AND NOT {_FAILING_SQL}"),
            (*run, limit - len(rows), max(0, offset - failing_total)))
    return rows


async def count_for_run(db: Database, tenant_id: str, run_id: str) -> tuple[int, int]:
    """(linked, unlinked) rows of the run as stored now (the retention sweep may have removed some)."""
    row = await db.fetch_one(
        f"SELECT (SELECT COUNT(*) FROM test_results WHERE {_WHERE_RUN['test_results']}) AS linked, "
        f"(SELECT COUNT(*) FROM unlinked_test_results WHERE {_WHERE_RUN['unlinked_test_results']}) AS unlinked",
        (run_id, tenant_id, run_id, tenant_id),
    )
    assert row is not None
    return int(row["linked"]), int(row["unlinked"])


async def page_for_run(
    db: Database, tenant_id: str, run_id: str, *, limit: int, offset: int, linked_total: int,
    status: str | None = None, unlinked: bool | None = None,
) -> list[Row]:
    """One page of the run's results: linked ones first, then unlinked, each in the order they were
    stored. ``linked_total`` (from ``count_for_run``) says where the unlinked ones start; ``unlinked``
    True or False pages through that table alone (the web page shows them apart)."""
    run = (run_id, tenant_id)
    if unlinked is not None:
        table, columns = ("unlinked_test_results", _UNLINKED_LIST_COLUMNS) if unlinked else (
            "test_results", _LIST_COLUMNS)
        return await _page_of(db, table, columns, run, status, limit, offset)
    rows: list[Row] = []
    if offset < linked_total:
        rows = await _page_of(db, "test_results", _LIST_COLUMNS, run, status, limit, offset)
    if len(rows) < limit:
        rows += await _page_of(db, "unlinked_test_results", _UNLINKED_LIST_COLUMNS, run, status,
                               limit - len(rows), max(0, offset - linked_total))
    return rows


# GET /runs/{id}/results without a limit reads the run this many rows at a time
CHUNK_ROWS = 1_000


def _run_filter(table: str, tenant_id: str, run_id: str, status: str | None,
                assignee_id: str | None) -> tuple[str, list[Any]]:
    where, params = _WHERE_RUN[table], [run_id, tenant_id]
    if status is not None:
        where += " AND status = ?"
        params.append(status)
    if assignee_id is not None:
        where += " AND assignee_id = ?"
        params.append(assignee_id)
    return where, params


async def count_matching(db: Database, tenant_id: str, run_id: str, *, status: str | None = None,
                         assignee_id: str | None = None) -> int:
    """The rows ``chunks_for_run`` would list from offset 0."""
    total = 0
    for table in ("test_results",) if assignee_id is not None else ("test_results", "unlinked_test_results"):
        where, params = _run_filter(table, tenant_id, run_id, status, assignee_id)
        total += int(await db.fetch_value(f"SELECT COUNT(*) FROM {table} WHERE {where}", params))
    return total


async def chunks_for_run(
    db: Database, tenant_id: str, run_id: str, *, status: str | None = None, assignee_id: str | None = None,
    offset: int = 0, chunk: int = CHUNK_ROWS,
) -> AsyncIterator[list[Row]]:
    """Every row of the run (linked first, then unlinked, each in stored order) after the first
    ``offset``, ``chunk`` rows at a time: memory holds one chunk, whatever the size of the run.

    Keyset paging on rowid (``rowid > last``), so each chunk costs the same however deep it is; the
    inner query reads only the run index (PostgreSQL: ``test_results_run``/``native_results_run``,
    SQLite: the (run_id, test_case_id) and (run_id, tenant_id) indexes, which hold the rowid), the
    outer one the chunk's rows. Rows stored meanwhile after the last one read are included; an
    assignee lists linked results only (unlinked ones are never assigned).
    """
    tables = [("test_results", _LIST_COLUMNS)]
    if assignee_id is None:
        tables.append(("unlinked_test_results", _UNLINKED_LIST_COLUMNS))
    skip = offset
    for table, columns in tables:
        where, params = _run_filter(table, tenant_id, run_id, status, assignee_id)
        last: int | None = None
        if skip:
            held = int(await db.fetch_value(f"SELECT COUNT(*) FROM {table} WHERE {where}", params))
            if held <= skip:
                skip -= held
                continue
            keys = await db.fetch_all(f"SELECT rowid FROM {table} WHERE {where} ORDER BY rowid LIMIT 1 OFFSET ?",
                                      (*params, skip - 1))
            last, skip = int(keys[0]["rowid"]), 0
        while True:
            after, after_params = ("", ()) if last is None else (" AND rowid > ?", (last,))
            rows = await db.fetch_all(
                f"SELECT rowid AS chunk_key, {columns} FROM {table} WHERE rowid IN (SELECT rowid FROM {table} "
                f"WHERE {where}{after} ORDER BY rowid LIMIT ?) ORDER BY rowid", (*params, *after_params, chunk))
            if not rows:
                break
            last = int(rows[-1]["chunk_key"])
            for row in rows:
                del row["chunk_key"]
            yield rows
            if len(rows) < chunk:
                break


async def filtered_for_run(db: Database, tenant_id: str, run_id: str, *, assignee_id: str | None,
                           status: str | None) -> list[Row]:
    """Every row of the run with this assignee and/or status: linked ones first, then unlinked (which
    are never assigned to anyone), each in the order they were stored."""
    where, params = "run_id = ? AND tenant_id = ?", [run_id, tenant_id]
    if status is not None:
        where += " AND status = ?"
        params.append(status)
    linked_where, linked_params = where, list(params)
    if assignee_id is not None:
        linked_where += " AND assignee_id = ?"
        linked_params.append(assignee_id)
    linked = await db.fetch_all(
        f"SELECT {_LIST_COLUMNS} FROM test_results WHERE {linked_where} ORDER BY rowid", linked_params)
    if assignee_id is not None:
        return linked
    unlinked = await db.fetch_all(
        f"SELECT {_UNLINKED_LIST_COLUMNS} FROM unlinked_test_results WHERE {where} ORDER BY rowid", params)
    return linked + unlinked


async def delete_unlinked_before(tx: Transaction, tenant_id: str, cutoff: str, batch: int) -> int:
    """Deletes up to ``batch`` unlinked rows of the tenant created at or before ``cutoff``."""
    key = "rowid" if tx.dialect == "sqlite" else "id"  # PostgreSQL has no index on this table's rowid
    rows = await tx.fetch_all(
        f"DELETE FROM unlinked_test_results WHERE {key} IN (SELECT {key} FROM unlinked_test_results "
        "WHERE tenant_id = ? AND created_at <= ? LIMIT ?) RETURNING project_id",
        (tenant_id, cutoff, batch),
    )
    await shift_unlinked_counts(tx, Counter((tenant_id, row["project_id"]) for row in rows), sign=-1)
    return len(rows)


async def unlinked_count(db: Database, tenant_id: str, project_id: str) -> int:
    """The project's unlinked results, from the counter kept at write time (never a count of rows)."""
    value = await db.fetch_value(
        "SELECT unlinked_results FROM project_counters WHERE project_id = ? AND tenant_id = ?", (project_id, tenant_id)
    )
    return int(value or 0)


async def tenants_with_unlinked_results(db: Database) -> list[str]:
    """Tenants that hold any unlinked result (read off the sweep index, one entry per tenant)."""
    rows = await db.fetch_all("SELECT DISTINCT tenant_id FROM unlinked_test_results")
    return [row["tenant_id"] for row in rows]


# placeholders get their case's version too, as every row of test_results (see _UPSERT)
_INSERT_PLACEHOLDER = (
    f"INSERT INTO test_results ({', '.join(LINKED_COLUMNS)}, case_version) "
    f"VALUES ({', '.join(f'?{i}' for i in range(1, len(LINKED_COLUMNS) + 1))}, "
    f"(SELECT version FROM test_cases WHERE id = {_CASE_PARAM})) "
    "ON CONFLICT (run_id, test_case_id) DO NOTHING"
)


async def insert_placeholders(tx: Transaction, run_id: str, rows: list[LinkedRow]) -> int:
    """UNKNOWN rows for cases added to run ``run_id``; a case the run already holds keeps its row (and
    result). Returns the number of rows inserted (counted first: PostgreSQL reports no per-row counts
    for a batch, and nothing else writes meanwhile)."""
    if not rows:
        return 0
    held = await tx.fetch_value(
        "SELECT COUNT(*) FROM test_results WHERE run_id = ? AND test_case_id IN (SELECT value FROM json_each(?))",
        (run_id, json.dumps([row.test_case_id for row in rows])),
    )
    await tx.executemany(_INSERT_PLACEHOLDER, _parameters(rows))
    return len(rows) - int(held)


async def delete_for_cases(tx: Transaction, tenant_id: str, run_id: str, case_ids: list[str]) -> list[Current]:
    """Deletes the run's rows of these cases; returns (id, status, source) of each deleted row."""
    if not case_ids:
        return []
    rows = await tx.fetch_all(
        "DELETE FROM test_results WHERE run_id = ? AND tenant_id = ? "
        "AND test_case_id IN (SELECT value FROM json_each(?)) RETURNING id, status, source",
        (run_id, tenant_id, json.dumps(case_ids)),
    )
    return [Current(row["id"], row["status"], row["source"]) for row in rows]


# One result changed by hand (tms.runs.write_one.save_one): the columns a manual save may set
UPDATABLE = frozenset({"status", "comment", "bug_ticket_key", "bug_ticket_url", "assignee_id", "step_results",
                       "duration_ms", "executed_at", "updated_at", "updated_by", "fingerprint", "source",
                       "custom_fields"})
UNLINKED_UPDATABLE = UPDATABLE - {"assignee_id", "step_results", "updated_by"}


async def update_one(tx: Transaction, tenant_id: str, result_id: str, linked: bool, changes: Mapping[str, Any]) -> None:
    allowed = UPDATABLE if linked else UNLINKED_UPDATABLE
    if set(changes) - allowed:
        raise ValueError(f"not updatable: {sorted(set(changes) - allowed)}")
    table = "test_results" if linked else "unlinked_test_results"
    assignments = ", ".join(f"{column} = ?" for column in changes)
    await tx.execute(f"UPDATE {table} SET {assignments} WHERE id = ? AND tenant_id = ?",
                     (*changes.values(), result_id, tenant_id))


async def assign(tx: Transaction, tenant_id: str, run_id: str, result_ids: list[str], assignee_id: str | None,
                 at: str) -> int:
    """One UPDATE for the whole selection; ids not of this run are ignored. Returns the rows changed."""
    return await tx.execute(
        "UPDATE test_results SET assignee_id = ?, updated_at = ? WHERE run_id = ? AND tenant_id = ? "
        "AND id IN (SELECT value FROM json_each(?))",
        (assignee_id, at, run_id, tenant_id, json.dumps(result_ids)),
    )


async def delete_of_project(tx: Transaction, tenant_id: str, project_id: str) -> None:
    """Deletes every result of a project being deleted, by run (indexed), rather than through the
    cascade's per-run look-ups; its counters go with the project."""
    params = (tenant_id, project_id)
    await tx.execute(
        "DELETE FROM test_results WHERE run_id IN (SELECT id FROM test_runs WHERE tenant_id = ? AND project_id = ?)",
        params,
    )
    await tx.execute(
        "DELETE FROM unlinked_test_results WHERE run_id IN "
        "(SELECT id FROM test_runs WHERE tenant_id = ? AND project_id = ?)",
        params,
    )


async def delete_of_run(tx: Transaction, run_id: str, result_ids: list[str]) -> None:
    """Deletes these results of a run being removed whole (the retention sweep), linked and unlinked."""
    marks = ",".join("?" * len(result_ids))
    await tx.execute(f"DELETE FROM test_results WHERE run_id = ? AND id IN ({marks})", (run_id, *result_ids))
    gone = await tx.fetch_all(
        f"DELETE FROM unlinked_test_results WHERE run_id = ? AND id IN ({marks}) RETURNING tenant_id, project_id",
        (run_id, *result_ids),
    )
    await shift_unlinked_counts(tx, Counter((row["tenant_id"], row["project_id"]) for row in gone), sign=-1)


async def rerun_sources(db: Database | Transaction, tenant_id: str, run_id: str, statuses: list[str],
                        limit: int) -> list[Row]:
    """The cases (id, code, title) of the run's linked results with one of ``statuses``, with the result's
    assignee, in the run's order; cases deleted since are left out. At most ``limit`` rows."""
    return await db.fetch_all(
        "SELECT c.id, c.code, c.title, r.assignee_id FROM test_results r "
        "JOIN test_cases c ON c.id = r.test_case_id AND c.tenant_id = r.tenant_id "
        "WHERE r.run_id = ? AND r.tenant_id = ? AND r.status IN (SELECT value FROM json_each(?)) "
        "ORDER BY r.created_at, r.id LIMIT ?",
        (run_id, tenant_id, json.dumps(statuses), limit))



async def set_assignees(tx: Transaction, tenant_id: str, pairs: list[tuple[str, str]], at: str) -> None:
    """Each result's assignee by (result id, assignee id): one executemany of key look-ups. (An
    ``id IN (json_each)`` over rows inserted in the same transaction is planned on PostgreSQL with
    stale statistics as a nested loop: 2.4 s for 1,000 of 10,000 new rows, against ~0.1 s here.)"""
    await tx.executemany("UPDATE test_results SET assignee_id = ?, updated_at = ? WHERE id = ? AND tenant_id = ?",
                         [(assignee, at, result_id, tenant_id) for result_id, assignee in pairs])
