"""Operations endpoints: liveness, readiness and Prometheus metrics (no /api/v1 token needed).

/healthz says the process answers; /readyz that its database is reachable and fully migrated and its
attachment store (folder or bucket) answers, so a load balancer sends traffic only to replicas that
can serve it. /metrics is for a scraper on the same host, or any host that presents
``server.metrics_token``.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from typing import Any

from litestar import Request, get
from litestar.datastructures import CacheControlHeader
from litestar.exceptions import NotAuthorizedException
from litestar.handlers.base import BaseRouteHandler
from litestar.plugins.prometheus import PrometheusConfig
from litestar.response import Redirect, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from tms.attachments import service as attachment_service
from tms.errors import StoreUnavailable
from tms.operations import service as operations
from tms.operations.metrics import OUTBOX_BACKLOG, refresh_attachment_usage
from tms.state import Connection, DatabaseDep, app_state, config_of

log = logging.getLogger(__name__)

OPERATIONS_PATHS = ["/healthz", "/readyz", "/metrics", "/favicon.ico"]


@get("/favicon.ico", include_in_schema=False, sync_to_thread=False, cache_control=CacheControlHeader(max_age=86_400))
def favicon() -> Redirect:
    """Browsers ask for /favicon.ico on every page whatever the page links: the icon is the SVG."""
    return Redirect("/static/favicon.svg", status_code=301)


@get("/healthz", include_in_schema=False, sync_to_thread=False)
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@get("/readyz", include_in_schema=False)
async def readyz(request: Request[Any, Any, Any], db: DatabaseDep) -> Response[dict[str, str]]:
    try:
        applied = await operations.applied_migration_versions(db)
    except Exception as exc:  # any database failure means: not ready
        log.warning("readiness check failed: %s", exc)
        return Response({"status": "unavailable", "detail": "database unreachable"}, status_code=503)
    missing = [name for version, name, _ in db.migrations() if version not in applied]
    if missing:
        return Response({"status": "unavailable", "detail": f"migrations not applied: {', '.join(missing)}"},
                        status_code=503)
    try:  # attachments.store: the folder is writable, or the bucket answers a listing
        await attachment_service.check_store(app_state(request).attachment_store)
    except StoreUnavailable:
        return Response({"status": "unavailable", "detail": "attachment store unreachable"}, status_code=503)
    return Response({"status": "ok"}, status_code=200)


def _is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def metrics_guard(connection: Connection, _handler: BaseRouteHandler) -> None:
    """Loopback scrapers need nothing; anyone else presents ``server.metrics_token`` as a Bearer token."""
    if _is_loopback(connection.client.host if connection.client else None):
        return
    expected = str(config_of(connection).get("server.metrics_token"))
    scheme, _, presented = connection.headers.get("authorization", "").partition(" ")
    if expected and scheme.lower() == "bearer" and hmac.compare_digest(presented.strip(), expected):
        return
    raise NotAuthorizedException("Metrics are served to loopback, or with the server.metrics_token as a Bearer token.")


@get("/metrics", guards=[metrics_guard], include_in_schema=False)
async def metrics(request: Request[Any, Any, Any], db: DatabaseDep) -> Response[bytes]:
    OUTBOX_BACKLOG.set(await operations.pending_delivery_count(db))
    await refresh_attachment_usage(db)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


PROMETHEUS = PrometheusConfig(
    app_name="tms",
    prefix="tms",
    group_path=True,  # label by route template (/api/v1/runs/{run_id}), not by every id
    exclude=["^/static", *[f"^{path}$" for path in OPERATIONS_PATHS]],
    exclude_unhandled_paths=True,
)
