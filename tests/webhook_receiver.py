"""A real webhook receiver for tests: an HTTP server on loopback in a thread.

It records every request (arrival time, headers, exact body) and answers from a script:
an int is a status code, ``"hang"`` never answers (until the receiver stops), ``"redirect"``
answers 302 with a Location. Without a script entry it answers ``default``.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Action = int | str
# serve_forever looks for shutdown() every poll_interval, 0.5 s by default: every stop of a loopback fake
# waited for it. The test servers here and in other files start with this instead.
POLL = {"poll_interval": 0.05}


@dataclass
class Received:
    at: float  # time.monotonic() when the request arrived
    path: str
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class Receiver:
    def __init__(self, default: Action = 200, script: list[Action] | None = None) -> None:
        self.default = default
        self.script: collections.deque[Action] = collections.deque(script or [])
        self.requests: list[Received] = []
        self._cond = threading.Condition()
        self._stopped = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._cond:
                    receiver.requests.append(
                        Received(time.monotonic(), self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    action = receiver.script.popleft() if receiver.script else receiver.default
                    receiver._cond.notify_all()
                if action == "hang":
                    receiver._stopped.wait(60)
                    self.close_connection = True
                    return
                if action == "redirect":
                    self.send_response(302)
                    self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                else:
                    self.send_response(int(action))
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs=POLL, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        """Blocks until ``count`` requests have arrived; returns them (a copy)."""
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.requests) >= count, timeout)
            assert ok, f"expected {count} requests, got {len(self.requests)}"
            return list(self.requests)

    def stop(self) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()


# Fixtures of every test file (tests/conftest.py loads this module as a plugin)
@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A receiver on loopback for one test, stopped after it."""
    rec = Receiver()
    yield rec
    rec.stop()


@pytest.fixture
def receivers() -> Iterator[Callable[..., Receiver]]:
    """Makes receivers (``Receiver``'s keyword arguments) for one test and stops them all after it."""
    started: list[Receiver] = []

    def make(**kwargs: Any) -> Receiver:
        rec = Receiver(**kwargs)
        started.append(rec)
        return rec

    yield make
    for rec in started:
        rec.stop()
