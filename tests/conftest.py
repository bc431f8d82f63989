"""Test harness: every test talks HTTP to a real `tms serve` process on a temporary data dir.

With ``TMS_TEST_DATABASE=postgres`` every server uses a PostgreSQL database of its own instead of
the SQLite file (``tests/postgres_cluster.py`` starts the cluster); tests that reach the database
directly use ``connect_db`` and ``run_admin``, which follow the same choice.

A session-wide server is shared; each test gets its own tenant (tenancy is the isolation), so
tests stay independent without paying a server start each. Tests that need special settings
start their own server with ``start_server(env=...)``.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import postgres_cluster

# fixtures kept beside the helpers they serve, for every test file: ``receiver``, ``receivers``
pytest_plugins = ["tests.webhook_receiver"]

ROOT = Path(__file__).resolve().parent.parent


def _cheap_password_hashes() -> None:
    """Users made by the tests themselves (``make_tenant``, ``run_admin``) get argon2 hashes of the
    lowest cost: at the library's cost each costs ~0.2 s of CPU, and some 2,000 tenants are made per
    database. Only this process is changed: a server signs in with such a hash, finds it weaker than
    its own parameters and renews it (``check_needs_rehash``), so the servers' cost stays the real one."""
    from argon2 import PasswordHasher

    from tms.team import accounts

    accounts._hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


_cheap_password_hashes()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _AdminLoop:
    """An event loop on a daemon thread of this test process, where a server's database can stay open
    between admin calls (``ServerProcess.run_admin``): opening it (connections, the migration check) for
    each of the ~2,000 tenants a half makes cost more than making the tenant."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, make: Callable[[], Any]) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="tms-test-admin", daemon=True).start()
        return asyncio.run_coroutine_threadsafe(make(), self._loop).result()


_admin_loop = _AdminLoop()


def _migrated_sqlite_file() -> Path:
    """A SQLite database migrated once per test process, copied into each new server's data dir (the
    server still checks its migrations at start); ``tests/test_schema_agreement.py`` migrates from empty."""
    global _migrated_file
    if _migrated_file is None:
        import tempfile

        from tms.db.sqlite import SqliteDatabase

        path = Path(tempfile.mkdtemp(prefix="tms-migrated-")) / "tms.db"

        async def migrate() -> None:
            db = SqliteDatabase(path, readers=1)
            await db.open()
            await db.close()  # the last connection to close folds the WAL into the file

        postgres_cluster.run_sync(migrate)  # a thread: a browser test's page may hold this one's loop
        _migrated_file = path
    return _migrated_file


_migrated_file: Path | None = None


# The session server's settings, shared by the in-process app (tests/inprocess.py): every test's browser
# and client signs in from 127.0.0.1, as the users behind one proxy do, so the failures some tests make on
# purpose must not make the others wait (the per-client limit itself is tested on a server of its own,
# tests/test_web_login.py); webhook retries come fast.
SESSION_SERVER_ENV = {"TMS_WEBHOOKS_BACKOFF_SECONDS": "0.2", "TMS_WEBHOOKS_TIMEOUT_SECONDS": "2",
                      "TMS_AUTH_LOGIN_FAILURES_PER_CLIENT": "100000"}


@dataclass
class ServerAddress:
    """Where a test server lives and the settings every one gets: a real `tms serve` (``ServerProcess``)
    and the in-process app (``tests/inprocess.py``) alike."""

    data_dir: Path
    env: dict[str, str]
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_path(self) -> Path:
        return self.data_dir / "tms.db"

    @property
    def database_url(self) -> str:
        """The PostgreSQL database of this server ("" on SQLite)."""
        return postgres_cluster.database_url_for(self.data_dir) if postgres_cluster.selected() else ""

    def settings_env(self) -> dict[str, str]:
        """The TMS_* settings of this server (its own ``env`` last, so it wins)."""
        return {
            "TMS_STORAGE_DATA_DIR": str(self.data_dir),
            "TMS_SERVER_HOST": "127.0.0.1",
            "TMS_SERVER_PORT": str(self.port),
            "TMS_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
            "TMS_STORAGE_DATABASE_URL": self.database_url,
            # required on PostgreSQL (replicas share no disk): the same on every test server
            **({"TMS_AUTH_SECRET_KEY": "test-secret-key-shared-by-replicas"} if postgres_cluster.selected() else {}),
            **self.env,
        }


@dataclass
class ServerProcess(ServerAddress):
    process: subprocess.Popen[str] | None = None
    log_path: Path = field(init=False)
    # the session server keeps its database open in this process for make_tenant (see _AdminLoop)
    keep_database_open: bool = False
    _admin_db: Any = None

    def __post_init__(self) -> None:
        self.log_path = self.data_dir.parent / f"server-{self.data_dir.name}.log"

    def seed_migrated(self) -> ServerProcess:
        """Starts this fresh data dir from an already migrated database instead of an empty one."""
        if not postgres_cluster.selected() and not self.db_path.exists():  # PostgreSQL: database_url_for
            self.data_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_migrated_sqlite_file(), self.db_path)
        return self

    def run_admin(self, action: Callable[[Any], Any]) -> Any:
        """``run_admin`` on this server's database; kept open between calls when ``keep_database_open``."""
        if not self.keep_database_open:
            return run_admin(self.db_path, action)

        async def run() -> Any:
            if self._admin_db is None:
                db = open_database(self.db_path)
                await db.open()
                self._admin_db = db
            return await action(self._admin_db)

        return _admin_loop.run(run)

    def _close_admin_database(self) -> None:
        if self._admin_db is not None:
            db, self._admin_db = self._admin_db, None
            _admin_loop.run(db.close)

    def start(self, timeout: float = 60) -> ServerProcess:  # a loaded 2-core CI machine is slow to start one
        if not self.port:
            self.port = free_port()
        env = {**os.environ, **self.settings_env()}
        env.pop("TMS_CONFIG", None)
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tms", "serve"], cwd=self.data_dir.parent, env=env,
            stdout=log, stderr=subprocess.STDOUT, text=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tms serve exited early:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"tms serve did not start:\n{self.log()}")

    def http_client(self, **options: Any) -> httpx.Client:
        """An httpx client for this server (``tests/inprocess.py``'s app answers the same call)."""
        return httpx.Client(base_url=self.url, **options)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def setup_token(self) -> str | None:
        match = re.search(r"/setup\?token=([A-Za-z0-9_-]+)", self.log())
        return match.group(1) if match else None

    def stop(self) -> None:
        self._close_admin_database()
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        """kill -9: no shutdown hooks run."""
        self._close_admin_database()
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def start_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def start(env: dict[str, str] | None = None, data_dir: Path | None = None) -> ServerProcess:
        server = ServerProcess(data_dir or tmp_path_factory.mktemp("data"), env or {})
        if data_dir is None:
            server.seed_migrated()
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(
        tmp_path_factory.mktemp("shared-data"),
        dict(SESSION_SERVER_ENV),
        keep_database_open=True,
    ).seed_migrated().start()
    yield srv
    srv.stop()


def open_database(db_path: Path) -> Any:
    """The database of the server whose SQLite file would be ``db_path`` (not opened yet)."""
    if postgres_cluster.selected():
        from tms.db.postgres import PostgresDatabase

        return PostgresDatabase(postgres_cluster.database_url_for(db_path.parent), db_path.parent, pool_size=1)
    from tms.db.sqlite import SqliteDatabase

    return SqliteDatabase(db_path, readers=1)


def storage_env(data_dir: Path) -> dict[str, str]:
    """The environment that points a `tms` command at the data dir ``data_dir`` and its database."""
    url = postgres_cluster.database_url_for(data_dir) if postgres_cluster.selected() else ""
    return {"TMS_STORAGE_DATA_DIR": str(data_dir), "TMS_STORAGE_DATABASE_URL": url}


def connect_db(db_path: Path, timeout: float = 10) -> Any:
    """A plain connection to a server's database, for tests that read or poke rows directly:
    ``sqlite3.connect`` on SQLite, a look-alike on PostgreSQL (statements in SQLite spelling)."""
    if postgres_cluster.selected():
        return postgres_cluster.Connection(postgres_cluster.database_url_for(db_path.parent))
    return sqlite3.connect(db_path, timeout=timeout)


def run_admin(db_path: Path, action: Callable[[Any], Any]) -> Any:
    """Runs an admin service call on the database, as `tms admin` does (safe while serve runs)."""

    async def run() -> Any:
        db = open_database(db_path)
        await db.open()
        try:
            return await action(db)
        finally:
            await db.close()

    return postgres_cluster.run_sync(run)  # a thread: a browser test's page may hold this one's loop


@dataclass
class Tenant:
    server: ServerProcess
    id: str
    name: str
    write_token: str
    read_token: str
    email: str
    password: str

    def client(self, scope: str = "write") -> httpx.Client:
        token = {"write": self.write_token, "read": self.read_token}[scope]
        return self.server.http_client(headers={"Authorization": f"Bearer {token}"}, timeout=30)

    @property
    def api(self) -> httpx.Client:
        """A client whose token has both read and write scopes."""
        return self.client("write")

    def create_project(self, name: str = "Project", **fields: Any) -> dict[str, Any]:
        response = self.api.post("/api/v1/projects", json={"name": name, **fields})
        assert response.status_code == 201, response.text
        return response.json()["data"]

    def web(self) -> httpx.Client:
        """A browser-like client signed in to the web UI, with the CSRF token in its headers."""
        client = self.server.http_client(timeout=30, follow_redirects=False)
        page = client.get("/login")
        token = client.cookies.get("csrftoken") or ""
        response = client.post(
            "/login", data={"email": self.email, "password": self.password, "_csrf_token": token}
        )
        assert response.status_code == 303, response.text
        client.headers["x-csrftoken"] = token
        assert page.status_code in (200, 303)
        return client


_counter = iter(range(1, 10**9))


def make_tenant_on(server: ServerProcess, name: str | None = None) -> Tenant:
    from tms.team import accounts
    from tms.team.tokens import service as tokens

    number = next(_counter)
    tenant_name = name or f"Tenant {number}"
    email = f"user{number}-{os.getpid()}-{time.time_ns()}@example.com"
    password = "correct horse battery"

    async def create(db: Any) -> Tenant:
        tenant_id = await accounts.create_tenant(db, tenant_name)
        await accounts.create_user(db, tenant_id, email, password)
        write = await tokens.create_token(db, tenant_id, "ci", "read,write")
        read = await tokens.create_token(db, tenant_id, "reporting", "read")
        return Tenant(server, tenant_id, tenant_name, write.token, read.token, email, password)

    return server.run_admin(create)  # type: ignore[no-any-return]


@pytest.fixture
def host(request: pytest.FixtureRequest) -> Any:
    """Where ``tenant``/``make_tenant`` live: the session server, or the in-process app
    (``tests/inprocess.py``) for a module that sets ``IN_PROCESS = True`` (API and web behaviour
    that needs no process of its own: ~4x less CPU per test)."""
    if getattr(request.module, "IN_PROCESS", False):
        return request.getfixturevalue("app_server")
    return request.getfixturevalue("server")


@pytest.fixture
def make_tenant(host: Any) -> Callable[..., Tenant]:
    return lambda name=None, on=None: make_tenant_on(on or host, name)


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One in-process app per test worker (``tests/inprocess.py``); tenancy keeps tests apart, as on
    ``server``."""
    from tests.inprocess import InProcessServer

    app = InProcessServer(tmp_path_factory.mktemp("inprocess-data"), dict(SESSION_SERVER_ENV)).start()
    yield app
    app.stop()


@pytest.fixture
def start_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Any]]:
    """``start_server`` in-process (``tests/inprocess.py``): an app of its own for a test that needs settings
    of its own (``env``, as ``start_server`` takes them), not a process."""
    from tests.inprocess import InProcessServer

    started: list[InProcessServer] = []

    def start(env: dict[str, str] | None = None) -> InProcessServer:
        app = InProcessServer(tmp_path_factory.mktemp("app-data"), env or {}).start()
        started.append(app)
        return app

    yield start
    for app in started:
        app.stop()


@pytest.fixture
def app_tenant(app_server: Any) -> Tenant:
    """A tenant of the in-process app."""
    return make_tenant_on(app_server)


@pytest.fixture
def tenant(make_tenant: Callable[..., Tenant]) -> Tenant:
    return make_tenant()


@pytest.fixture
def other_tenant(make_tenant: Callable[..., Tenant]) -> Tenant:
    return make_tenant()


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """Asserts an RFC 9457 problem-details answer with the given status; returns its body."""
    assert response.status_code == status, f"{response.status_code}: {response.text}"
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    body = response.json()
    assert body["status"] == status
    assert body["title"] and "detail" in body and "type" in body
    return body  # type: ignore[no-any-return]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only(reason): behaviour of the SQLite backend alone (file lock, online backup, "
        "PRAGMA limits); skipped when the suite runs on PostgreSQL",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not postgres_cluster.selected():
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "SQLite only")
            item.add_marker(pytest.mark.skip(reason=f"SQLite backend only: {reason}"))
