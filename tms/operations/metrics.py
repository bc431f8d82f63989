"""Prometheus metrics of the service beyond requests (which Litestar's Prometheus middleware counts).

Counters live in prometheus_client's process-wide registry: each replica exposes its own, and
Prometheus sums them. Gauges that describe the database (the outbox backlog) are read at scrape
time by the /metrics handler, so they are the same whichever replica answers.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

INGESTED_RESULTS = Counter(
    "tms_ingested_results", "Results stored by POST /api/v1/ingest and POST /api/v1/runs/{id}/results."
)
DELIVERIES = Counter("tms_webhook_deliveries", "Webhook delivery attempts by outcome.", ["outcome"])
OUTBOX_BACKLOG = Gauge("tms_outbox_backlog", "Webhook deliveries waiting to be sent (read at scrape time).")
