"""Who did what: every write records an audit entry in its own transaction.

The actor is the request's identity: the Bearer middleware and the web session guard set it once per
request (``acting_as``), so services record entries without every signature carrying an extra
parameter. Work that no request started (periodic sweeps, the tracker loop's timers) is the system.

A bulk write (ingest, a batch of results) records one entry with counts, not one per row, so the log
costs a request one INSERT whatever its size.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from tms.db import Database, Transaction
from tms.http.paging import page_window
from tms.ids import new_id, new_ids, now_iso
from tms.team.audit import store as audit_store

ACTOR_TYPES = ("user", "token", "system")


@dataclass(frozen=True, slots=True)
class Actor:
    type: str  # user | token | system
    id: str | None
    name: str


SYSTEM = Actor("system", None, "system")
_current_actor: contextvars.ContextVar[Actor] = contextvars.ContextVar("tms_actor", default=SYSTEM)


def acting_as(actor: Actor) -> None:
    """Sets who the current request acts as (called by the authentication layer, once per request)."""
    _current_actor.set(actor)


def current_actor() -> Actor:
    return _current_actor.get()


def changes_between(old: Mapping[str, Any], new: Mapping[str, Any], fields: Iterable[str]) -> dict[str, list[Any]]:
    """``{field: [old, new]}`` for each of ``fields`` whose value differs."""
    return {field: [old.get(field), new.get(field)] for field in fields if old.get(field) != new.get(field)}


@dataclass(frozen=True, slots=True)
class Entry:
    action: str  # <entity>.<verb>
    entity_type: str
    entity_id: str | None
    changes: Mapping[str, Any] | None = None


async def record(
    tx: Transaction,
    tenant_id: str,
    action: str,
    entity_type: str,
    entity_id: str | None,
    changes: Mapping[str, Any] | None = None,
) -> None:
    """Appends one entry for the current actor, inside the caller's transaction."""
    await record_many(tx, tenant_id, [Entry(action, entity_type, entity_id, changes)])


async def record_many(tx: Transaction, tenant_id: str, entries: list[Entry]) -> None:
    if not entries:
        return
    actor = current_actor()
    at = now_iso()
    ids = new_ids(len(entries)) if len(entries) > 1 else [new_id()]
    await audit_store.insert_entries(
        tx,
        [
            {
                "id": entry_id,
                "tenant_id": tenant_id,
                "actor_type": actor.type,
                "actor_id": actor.id,
                "actor_name": actor.name,
                "action": entry.action,
                "entity_type": entry.entity_type,
                "entity_id": entry.entity_id,
                "changes": None if entry.changes is None else msgspec.json.encode(entry.changes).decode(),
                "created_at": at,
            }
            for entry_id, entry in zip(ids, entries, strict=True)
        ],
    )


# Fields whose value is itself a list (token scopes, saved codes, attached files, …), not ``[old, new]``.
# In an update entry the same fields hold a pair of lists, which is told apart by its elements.
LIST_VALUED = frozenset({"scopes", "codes", "files", "events", "environments", "run_ids", "case_ids", "ids"})


@dataclass(frozen=True, slots=True)
class ChangeLine:
    """One field of ``changes`` as the audit page shows it: ``old → new`` or a plain value."""

    field: str
    value: str = ""
    old: str = ""
    new: str = ""
    is_pair: bool = False


def _is_pair(field: str, value: Any) -> bool:
    if not isinstance(value, list) or len(value) != 2:
        return False
    return field not in LIST_VALUED or all(item is None or isinstance(item, list) for item in value)


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(_shown(item) for item in value) if value else "(none)"
    if isinstance(value, dict):
        return msgspec.json.encode(value).decode()
    return str(value)


def change_lines(changes: Mapping[str, Any] | None, names: Mapping[str, str] | None = None) -> list[ChangeLine]:
    """``changes`` for reading: a pair ``[old, new]`` as old → new, a list as a list, never a list's
    first two items as old → new. An id found in ``names`` (members, projects, milestones the page knows)
    reads as its name, and its field without the ``_id`` (issue 24: no raw ids to read)."""
    lines = []
    known = names or {}

    def shown(value: Any) -> str:
        if isinstance(value, str) and value in known:
            return known[value]
        if isinstance(value, list) and known:
            return ", ".join(shown(item) for item in value) if value else "(none)"
        return _shown(value)

    for field, value in (changes or {}).items():
        label = field.removesuffix("_id").replace("_", " ") if known and field.endswith("_id") else field
        if _is_pair(field, value):
            lines.append(ChangeLine(label, old=shown(value[0]), new=shown(value[1]), is_pair=True))
        else:
            lines.append(ChangeLine(label, value=shown(value)))
    return lines


def entry_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The API shape of one stored entry."""
    return {
        "id": row["id"],
        "actor": {"type": row["actor_type"], "id": row["actor_id"], "name": row["actor_name"]},
        "action": row["action"],
        "entity_type": row["entity_type"],
        "entity_id": row["entity_id"],
        "changes": None if row["changes"] is None else msgspec.json.decode(row["changes"]),
        "created_at": row["created_at"],
    }


async def list_entries(
    db: Database,
    tenant_id: str,
    *,
    entity_type: str | None = None,
    entity_id: str | None = None,
    action: str | None = None,
    actor_id: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> tuple[list[dict[str, Any]], int, int, int]:
    """(entries newest first, total, limit, offset) — read only: nothing edits the log."""
    limit, offset = page_window(limit, offset)
    rows, total = await audit_store.list_entries(
        db, tenant_id, entity_type=entity_type or None, entity_id=entity_id or None, action=action or None,
        actor_id=actor_id or None, limit=limit, offset=offset)
    return [entry_from_row(row) for row in rows], total, limit, offset
