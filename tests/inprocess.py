"""In-process app for API behaviour tests: the same ``create_app`` as ``tms serve``, driven through
Litestar's test transport (no socket, no subprocess), on SQLite or PostgreSQL like the servers
(``TMS_TEST_DATABASE``).

``InProcessServer`` answers like ``conftest.ServerProcess`` to ``Tenant`` and ``make_tenant_on``
(``url``, ``data_dir``, ``db_path``, ``run_admin``, ``http_client``), so a behaviour file moves
in-process by taking the ``app_server`` fixture (conftest) instead of ``server``. Requests cost ~1.8 ms of CPU
instead of ~2.4 ms (client + server process) and no process hop; the app runs its lifespan (background
jobs, the webhook dispatcher) on the test client's event loop thread, as a server does on its own.

Keep real servers (``server``, ``start_server``) for restarts, replicas, the CLI, crashes, the browser,
sign-in cost (this process hashes passwords cheaply, see conftest) and anything about the HTTP layer
itself (uvicorn's limits, the client's address, streaming).

``Scenario`` rows are the table form: (who, method, path, body) -> (status, check), one table per
domain, run by ``run_scenario`` against a tenant with a fixture of its own.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from litestar.testing import TestClient
from litestar.testing.transport import TestClientTransport

from tests.conftest import ServerAddress, ServerProcess, Tenant, free_port


class _LoopbackTransport(TestClientTransport[Any], httpx.BaseTransport):
    """Requests come from 127.0.0.1, as the tests' clients do to a real server (loopback-only routes
    such as /metrics treat them alike). httpx's base adds what ``with client:`` needs (a no-op close:
    every client shares this transport)."""

    def parse_request(self, request: httpx.Request) -> dict[str, Any]:
        scope = super().parse_request(request)
        scope["client"] = ("127.0.0.1", 50000)
        return scope


class _LogLines(logging.Handler):
    """The app's log lines (``tms.*`` from INFO, other loggers from WARNING, with tracebacks), as a server
    writes to its log."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclass
class InProcessServer(ServerAddress):
    _client: TestClient[Any] | None = None
    _transport: _LoopbackTransport | None = None
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _log: _LogLines = field(default_factory=_LogLines)

    @property
    def app(self) -> Any:
        assert self._client is not None, "not started"
        return self._client.app

    def start(self) -> InProcessServer:
        from litestar.exceptions import LitestarDeprecationWarning

        from tms.app import create_app
        from tms.config import load_config

        ServerProcess(self.data_dir, {}).seed_migrated()  # the same migrated start as the servers
        self.port = self.port or free_port()  # links name it; nothing listens there
        env = self.settings_env()
        sys.setswitchinterval(0.0005)  # as `tms serve` does: the app's database threads hand back sooner
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
        logging.getLogger("tms").setLevel(logging.INFO)  # as `tms serve` logs
        logging.getLogger().addHandler(self._log)  # the app's lines, and any library's warnings and errors
        self._stack.callback(logging.getLogger().removeHandler, self._log)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LitestarDeprecationWarning)
            # a first-run setup link, as `tms serve` makes one (offered while the database has no user)
            app = create_app(load_config(None, env).with_derived_base_url(), setup_token=secrets.token_urlsafe(24))
        self._client = self._stack.enter_context(TestClient(app, base_url="http://testserver.local"))
        self._transport = _LoopbackTransport(self._client, raise_server_exceptions=False)
        return self

    def stop(self) -> None:
        self._stack.close()
        self._client = None

    def setup_token(self) -> str | None:
        """The first-run setup link's token while it is offered (``tms serve`` prints it)."""
        return self.app.state.setup_token  # type: ignore[no-any-return]

    def log(self) -> str:
        """What the app logged while it ran (an app of another test running meanwhile logs here too)."""
        return "\n".join(self._log.lines)

    def http_client(self, **options: Any) -> httpx.Client:
        """An httpx client whose requests go straight into the app."""
        return httpx.Client(base_url=self.url, transport=self._transport, **options)

    def run_admin(self, action: Callable[[Any], Any]) -> Any:
        """``action(db)`` on the app's own database, on the app's event loop."""
        assert self._client is not None, "not started"
        return self._client.blocking_portal.call(action, self.app.state.db)


# --- scenario tables -------------------------------------------------------------------------------

Check = Callable[[httpx.Response], Any]


@dataclass(frozen=True)
class Scenario:
    """One row: ``who`` ("write"/"read" token, "web" signed-in session, "anonymous") sends ``method``
    ``path`` (``{name}`` filled from the fixture's ids) with a JSON ``body``; the answer is ``status``,
    and ``check(response)`` (when given) asserts on its body."""

    who: str
    method: str
    path: str
    body: Any = None
    status: int = 200
    check: Check | None = None

    @property
    def id(self) -> str:
        return f"{self.who}-{self.method}-{self.path}-{self.status}"[:80]


def client_for(tenant: Tenant, who: str) -> httpx.Client:
    if who == "web":
        return tenant.web()
    if who == "anonymous":
        return tenant.server.http_client(timeout=30)
    return tenant.client(who)


def run_scenario(tenant: Tenant, row: Scenario, ids: dict[str, str]) -> httpx.Response:
    with client_for(tenant, row.who) as client:
        kwargs: dict[str, Any] = {} if row.body is None else {"json": row.body}
        response = client.request(row.method, row.path.format(**ids), **kwargs)
    assert response.status_code == row.status, f"{row.id}: {response.status_code} {response.text[:500]}"
    if row.check is not None:
        row.check(response)
    return response
