"""Whether the server is answering HTTP requests, so webhook delivery can yield to them.

The dispatcher shares the event loop with the API. Draining a backlog to fast receivers keeps the
loop saturated, and every ``await`` of a request (each database call) then queues behind a round
of delivery callbacks: an ingest got several times slower while 4,000 deliveries drained. While
the server is busy the dispatcher starts attempts at a bounded rate (``busy_rate``), never zero,
so webhooks keep flowing under constant API traffic.

"Busy" lingers a little after the last request ends: a client sending requests back to back leaves
gaps of a millisecond, and a burst of attempts started in each gap would land on the next request.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Scope = dict[str, Any]
ASGIApp = Callable[..., Any]

LINGER_SECONDS = 0.1


class RequestGauge:
    def __init__(self) -> None:
        self.active = 0
        self._last_end = float("-inf")

    def busy(self) -> bool:
        """True while a request is in progress or one ended less than ``LINGER_SECONDS`` ago."""
        return self.active > 0 or time.monotonic() - self._last_end < LINGER_SECONDS

    def middleware(self, app: ASGIApp) -> ASGIApp:
        """ASGI middleware factory (Litestar ``middleware=[gauge.middleware]``) counting HTTP requests."""

        async def counted(scope: Scope, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            self.active += 1
            try:
                await app(scope, receive, send)
            finally:
                self.active -= 1
                self._last_end = time.monotonic()

        return counted
