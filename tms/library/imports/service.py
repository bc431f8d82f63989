"""Import previews (issue 28): the file a user previewed waits in the database, not on one replica's
disk, so any replica can confirm a preview another one made, and a replica keeps no local state.

Bounded and expiring: a preview lives ``IMPORT_TTL_SECONDS``; a user keeps their newest
``MAX_PREVIEWS_PER_USER``, a tenant its newest ``MAX_PREVIEWS_PER_TENANT`` (older ones are dropped:
confirming them says "expired"), so a tenant holds at most 10 files of at most 20 MB
(``transfer.service.MAX_IMPORT_BYTES``). Each new preview removes every tenant's expired ones (one
indexed DELETE) in the transaction that stores it. A confirmation takes its preview with
``DELETE ... RETURNING``: single use, even across replicas.
"""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any

from tms.db import Database
from tms.ids import iso, now_iso, utc_now
from tms.library.imports import store as preview_store

IMPORT_TTL_SECONDS = 3600
MAX_PREVIEWS_PER_USER = 3
MAX_PREVIEWS_PER_TENANT = 10
_TOKEN_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def is_token(value: str) -> bool:
    """A token ``keep`` could have made (base64url, 32 characters): anything else is not looked up."""
    return len(value) == 32 and not set(value) - _TOKEN_CHARS


def _cutoff() -> str:
    return iso(utc_now() - timedelta(seconds=IMPORT_TTL_SECONDS))


async def keep(db: Database, tenant_id: str, user_id: str, data: bytes, meta: dict[str, Any]) -> str:
    """Stores the previewed file and its form; returns the token that confirms it."""
    token = secrets.token_urlsafe(24)
    async with db.transaction() as tx:
        await preview_store.delete_expired(tx, _cutoff())
        await preview_store.insert(tx, token, tenant_id, user_id, json.dumps(meta), data, now_iso())
        await preview_store.keep_newest(tx, tenant_id, user_id, MAX_PREVIEWS_PER_USER)
        await preview_store.keep_newest(tx, tenant_id, None, MAX_PREVIEWS_PER_TENANT)
    return token


async def take(db: Database, tenant_id: str, user_id: str, token: str) -> tuple[dict[str, Any], bytes] | None:
    """The user's own preview (form, file), removed as it is taken; None when missing or expired."""
    async with db.transaction() as tx:
        row = await preview_store.take(tx, tenant_id, user_id, token)
    if row is None or row["created_at"] < _cutoff():
        return None
    return json.loads(row["meta"]), bytes(row["content"])


async def waiting(db: Database, tenant_id: str) -> int:
    return await preview_store.count_for_tenant(db, tenant_id)
