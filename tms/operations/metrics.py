"""Prometheus metrics of the service beyond requests (which Litestar's Prometheus middleware counts).

Counters live in prometheus_client's process-wide registry: each replica exposes its own, and
Prometheus sums them. Gauges that describe the database (the outbox backlog) are read at scrape
time by the /metrics handler, so they are the same whichever replica answers.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from tms.attachments import collection as attachment_collection
from tms.db import Database

INGESTED_RESULTS = Counter(
    "tms_ingested_results", "Results stored by POST /api/v1/ingest and POST /api/v1/runs/{id}/results."
)
DELIVERIES = Counter("tms_webhook_deliveries", "Webhook delivery attempts by outcome.", ["outcome"])
OUTBOX_BACKLOG = Gauge("tms_outbox_backlog", "Webhook deliveries waiting to be sent (read at scrape time).")

ATTACHMENT_OBJECTS = Gauge(
    "tms_attachment_objects", "Stored attachment objects per tenant (identical files count once; read at scrape time).",
    ["tenant"],
)
ATTACHMENT_BYTES = Gauge(
    "tms_attachment_bytes", "Bytes of stored attachment objects per tenant (read at scrape time).", ["tenant"]
)


async def refresh_attachment_usage(db: Database) -> None:
    """Sets the per-tenant attachment gauges from the database (a deleted tenant's series disappear)."""
    usage = await attachment_collection.usage_by_tenant(db)
    ATTACHMENT_OBJECTS.clear()
    ATTACHMENT_BYTES.clear()
    for tenant_id, count, size in usage:
        ATTACHMENT_OBJECTS.labels(tenant=tenant_id).set(count)
        ATTACHMENT_BYTES.labels(tenant=tenant_id).set(size)
