"""Requirements' titles and statuses read from the trackers (issue 27): cached, refreshed by a
periodic job and soon after a change, never on a page load."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import httpx

from tms.config import Config
from tms.db import Database, Row
from tms.ids import iso_days_ago, now_iso
from tms.integrations import outbound
from tms.integrations import store as integration_store
from tms.integrations.outbound import TrackerError
from tms.integrations.service import TrackerFailed, allow_private, outbound_ready, tracker_target, tracker_timeout

# --- requirements' titles and statuses, refreshed in the background --------------------------------

REFRESH_SECONDS = 600         # the periodic job's period
FRESH_SECONDS = 3_600         # an entry younger than this is not fetched again
REFRESH_BATCH = 200           # keys per integration per round: a big library is covered over a few rounds
REFRESH_CONCURRENCY = 4
_pending: set[asyncio.Task[int]] = set()

log = logging.getLogger(__name__)


def _handles(row: Mapping[str, Any], key: str, first_of_kind: bool) -> bool:
    """Whether this integration reads ``key``: GitHub/GitLab keys of its repository (or project), short
    '#12' keys and keys of other repositories when it is the tenant's first of its kind; Jira: the first."""
    if row["kind"] == "JIRA":
        return first_of_kind
    where = key.rpartition("#")[0].lower()
    own = (row["project_path"] or row["repository"] or "").lower() if row["kind"] == "GITLAB" else \
        (row["repository"] or "").lower()
    return (where and where == own) or first_of_kind


async def _refresh_one(db: Database, config: Config, row: Row, first_of_kind: bool,
                       http: httpx.AsyncClient) -> int:
    fresh_after = iso_days_ago(FRESH_SECONDS / 86_400)
    keys = [k for k in await integration_store.keys_to_refresh(db, row["tenant_id"], [row["kind"]], fresh_after,
                                                               REFRESH_BATCH)
            if _handles(row, k["key"], first_of_kind)]
    if not keys:
        return 0
    target = tracker_target(config, row)
    gate = asyncio.Semaphore(REFRESH_CONCURRENCY)
    refused: list[str] = []

    async def read(key: Row) -> tuple[str, str, str, str, str | None, str | None, str | None, str | None, str]:
        async with gate:
            title = status = url = error = None
            if refused:
                error = refused[0]
            else:
                try:
                    issue = await outbound.read_issue(http, target, key["key"], seconds=tracker_timeout(config))
                    title, status, url = issue.title, issue.status, issue.url
                except TrackerError as exc:
                    error = str(exc)[:500]
                    if exc.status in (401, 403):
                        refused.append(error)  # the rest of the round would be refused the same way
            return (row["tenant_id"], row["kind"], key["issue_key"], row["id"], title, status, url, error, now_iso())

    rows = await asyncio.gather(*(read(key) for key in keys))
    async with db.transaction() as tx:
        await integration_store.save_issues(tx, list(rows))
    return len(rows)


async def refresh_requirements(db: Database, config: Config, tenant_id: str | None = None) -> int:
    """One round of the refresh job: for each integration that can call its tracker, the requirement
    keys whose cached title and status are missing or older than an hour. Returns the keys read."""
    done = 0
    seen_kinds: set[tuple[str, str]] = set()
    async with outbound.client(allow_private=allow_private(config)) as http:
        for row in await integration_store.outbound_integrations(db):
            if tenant_id is not None and row["tenant_id"] != tenant_id:
                continue
            ready = {**row, "api_token_set": 1}
            if not outbound_ready(ready):
                continue
            first = (row["tenant_id"], row["kind"]) not in seen_kinds
            seen_kinds.add((row["tenant_id"], row["kind"]))
            try:
                done += await _refresh_one(db, config, row, first, http)
            except TrackerFailed as exc:
                log.warning("integration %s: requirements not refreshed: %s", row["id"], exc)
    return done


def refresh_soon(db: Database, config: Config, tenant_id: str) -> None:
    """Starts a refresh of the tenant's requirements in the background (the matrix's "Refresh" button);
    the page that asked does not wait for the trackers."""
    task = asyncio.create_task(refresh_requirements(db, config, tenant_id))
    _pending.add(task)
    task.add_done_callback(_finished)


def _finished(task: asyncio.Task[int]) -> None:
    _pending.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("tracker refresh failed", exc_info=task.exception())
