"""Fan-out of a batch of events: which subscription is sent which event, and with which body.

A subscription in the ``standard`` format without filters (the common case) costs nothing here
beyond the join that finds it: its delivery posts the event's own body. Only when a batch reaches
a subscription with a chat format or filters are the events' bodies read and decoded, and only
then is the database asked what the events do not say (a failed result's run environment, the
project's name, a completed run's failed tests), each once per batch or once per completed run.

Filters (``tms.notifications.models.Filters``, docs/webhooks.md):

* ``environments`` (non-empty): ``test_run.completed`` and ``test_run_result.failed`` are sent
  only when their run's environment is listed; a run without environment never matches. Events
  that are not about a run (``bug.resolved``, ``retest.required``) are not filtered by it.
* ``only_failed_runs``: ``test_run.completed`` only for a run with a FAILED or BROKEN result.
* ``only_failures``: only news of failures: ``test_run_result.failed``, and ``test_run.completed``
  of a run with a FAILED or BROKEN result; other events are not sent.

A chat body is rendered at fan-out and stored on the delivery, so retries and redeliveries post
(and sign) the same bytes even if the run changes later.
"""

from __future__ import annotations

import json
from typing import Any

from tms.db import Row, Transaction
from tms.ids import new_ids, now_iso
from tms.notifications import chat, store

RUN_EVENTS = frozenset({"test_run.completed", "test_run_result.failed"})
_PLAIN_FILTERS = ("{}", "")


def _failures(data: dict[str, Any]) -> int:
    return int(data.get("failed") or 0) + int(data.get("broken") or 0)


def passes(filters: dict[str, Any], event: str, data: dict[str, Any], environment: str | None) -> bool:
    """Whether a subscription with ``filters`` is sent this event (``environment``: its run's, if any)."""
    environments = filters.get("environments") or []
    if environments and event in RUN_EVENTS and environment not in environments:
        return False
    failing_run = event == "test_run.completed" and _failures(data) > 0
    if filters.get("only_failures") and not (failing_run or event == "test_run_result.failed"):
        return False
    return not (filters.get("only_failed_runs") and event == "test_run.completed" and not failing_run)


def _plain(target: Row) -> bool:
    return target["format"] == "standard" and target["filters"] in _PLAIN_FILTERS


class _Events:
    """The decoded events of one batch and what the database adds to them, loaded on first need."""

    def __init__(self, tx: Transaction, base_url: str) -> None:
        self._tx = tx
        self._base_url = base_url
        self.data: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, Row] = {}
        self.projects: dict[str, Row] = {}
        self._failed: dict[str, list[chat.FailedTest]] = {}
        self._bodies: dict[tuple[str, str], bytes] = {}

    async def load(self, event_ids: list[str], need_names: bool) -> None:
        for event_id, body in (await store.event_bodies(self._tx, event_ids)).items():
            self.data[event_id] = json.loads(body).get("data") or {}
        run_ids = sorted({str(d["run_id"]) for d in self.data.values() if d.get("run_id")})
        self.runs = await store.runs_brief(self._tx, run_ids)
        if need_names:
            project_ids = sorted({str(d["project_id"]) for d in self.data.values() if d.get("project_id")})
            self.projects = await store.project_names(self._tx, project_ids)

    def environment(self, target: Row) -> str | None:
        data = self.data.get(target["event_id"], {})
        if "environment" in data:
            environment: str | None = data["environment"]
            return environment
        run = self.runs.get(str(data.get("run_id")))
        return run["environment"] if run is not None and run["tenant_id"] == target["tenant_id"] else None

    async def chat_body(self, target: Row) -> bytes:
        key = (target["event_id"], target["format"])
        if key not in self._bodies:
            tenant_id, event = target["tenant_id"], target["event"]
            data = self.data.get(target["event_id"], {})
            project = self.projects.get(str(data.get("project_id")))
            failed: list[chat.FailedTest] = []
            if event == "test_run.completed" and _failures(data):
                failed = await self._failed_tests(tenant_id, str(data.get("run_id")))
            context = chat.Context(
                base_url=self._base_url,
                project_name=project["name"] if project is not None and project["tenant_id"] == tenant_id else None,
                environment=self.environment(target),
                failed_tests=failed,
            )
            self._bodies[key] = chat.render(target["format"], event, data, context)
        return self._bodies[key]

    async def _failed_tests(self, tenant_id: str, run_id: str) -> list[chat.FailedTest]:
        if run_id not in self._failed:
            rows = await store.failed_tests(self._tx, tenant_id, run_id, chat.FAILED_LIST_MAX)
            self._failed[run_id] = chat.failed_tests_of(rows)
        return self._failed[run_id]


async def fan_out(tx: Transaction, event_ids: list[str], base_url: str) -> None:
    """One delivery per (event, active subscription to it that its filters let through)."""
    at = now_iso()
    targets = await store.fan_out_targets(tx, event_ids)
    shaped = [target for target in targets if not _plain(target)]
    events = _Events(tx, base_url)
    if shaped:
        await events.load(
            sorted({t["event_id"] for t in shaped}), need_names=any(t["format"] != "standard" for t in shaped)
        )
    filters_of: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for target in targets:
        body: bytes | None = None
        if not _plain(target):
            sub = target["subscription_id"]
            if sub not in filters_of:
                filters_of[sub] = json.loads(target["filters"] or "{}")
            data = events.data.get(target["event_id"], {})
            if not passes(filters_of[sub], target["event"], data, events.environment(target)):
                continue
            if target["format"] in chat.CHAT_FORMATS:
                body = await events.chat_body(target)
        rows.append({**target, "body": body})
    ids = new_ids(len(rows))
    await store.insert_deliveries(
        tx,
        [
            {"id": delivery_id, "tenant_id": row["tenant_id"], "subscription_id": row["subscription_id"],
             "event_id": row["event_id"], "event": row["event"], "next_attempt_at": at, "created_at": at,
             "body": row["body"]}
            for delivery_id, row in zip(ids, rows, strict=True)
        ],
    )
    await store.mark_fanned_out(tx, event_ids)
