"""A throwaway PostgreSQL cluster for the tests (and benches): Debian's PostgreSQL 15, no Docker.

``TMS_TEST_DATABASE=postgres`` runs the suite against it: each test worker starts one cluster in a
temporary directory (``initdb`` + ``pg_ctl``, durability off: it is thrown away), and every
``tms serve`` data dir gets a database of its own, so servers stay as independent as on SQLite.
PostgreSQL refuses to run as root, so as root the cluster runs as the ``postgres`` user that the
Debian package creates.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

BIN_DIRS = [Path("/usr/lib/postgresql/15/bin"), Path("/usr/lib/postgresql/16/bin"), Path("/usr/lib/postgresql/17/bin")]


def selected() -> bool:
    """Whether this test run uses PostgreSQL (``TMS_TEST_DATABASE=postgres``)."""
    return os.environ.get("TMS_TEST_DATABASE", "sqlite") == "postgres"


def binary(name: str) -> str:
    for directory in BIN_DIRS:
        if (directory / name).exists():
            return str(directory / name)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} not found: run `make test` (it installs postgresql-15) "
                           "or apt-get install postgresql-15")
    return found


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Runs a coroutine to completion on a loop of its own thread (callers may be inside a loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tms-pg-"))
        self.port = _free_port()
        self._as_postgres = os.geteuid() == 0
        self._databases: set[str] = set()
        self._template: str | None = None

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_postgres else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, text=True, cwd=self.directory)

    def start(self) -> Cluster:
        if self._as_postgres:
            shutil.chown(self.directory, "postgres")
        data = self.directory / "data"
        self._run(binary("initdb"), "-D", str(data), "-A", "trust", "-U", "tms", "-E", "UTF8", "--no-sync",
                  "--no-instructions")
        options = (f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300 "
                   "-c shared_buffers=128MB")
        self._run(binary("pg_ctl"), "-D", str(data), "-o", options, "-l", str(self.directory / "log"), "-w", "start")
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        data = self.directory / "data"
        if data.exists():
            with contextlib.suppress(subprocess.CalledProcessError):
                self._run(binary("pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://tms@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, template: str | None = None) -> str:
        """Creates database ``name`` unless it exists (empty, or a copy of database ``template``);
        returns its URL."""
        import asyncpg

        copy = f' TEMPLATE "{template}"' if template else ""

        async def create() -> None:
            conn = await asyncpg.connect(self.url())
            try:
                if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
                    await conn.execute(f'CREATE DATABASE "{name}"{copy}')
            finally:
                await conn.close()

        if name not in self._databases:
            run_sync(create)
            self._databases.add(name)
        return self.url(name)


    def migrated_template(self) -> str:
        """A database migrated once per cluster, that each server's database is copied from: a copy
        (``CREATE DATABASE ... TEMPLATE``) takes ~0.3 s where migrating an empty database took 2-3 s of
        the cluster's CPU per server start. ``tests/test_schema_agreement.py`` still migrates an empty
        database (``create_database`` without a template), and each server start still checks that
        every migration is applied."""
        if self._template is None:
            from tms.db.postgres import PostgresDatabase

            name = "tms_migrated_template"
            url = self.create_database(name)
            scratch = Path(tempfile.mkdtemp(prefix="tms-pg-template-"))

            async def migrate() -> None:
                db = PostgresDatabase(url, scratch, pool_size=1)
                await db.open()  # applies every migration
                await db.close()  # a template may have no open connection while it is copied

            run_sync(migrate)
            shutil.rmtree(scratch, ignore_errors=True)
            self._template = name
        return self._template


_cluster: Cluster | None = None


def cluster() -> Cluster:
    """This process's cluster, started on first use."""
    global _cluster
    if _cluster is None:
        _cluster = Cluster().start()
    return _cluster


def database_url_for(data_dir: Path) -> str:
    """The database of the server whose data dir is ``data_dir`` (created on first use)."""
    name = "tms_" + hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    return cluster().create_database(name, template=cluster().migrated_template())


class Connection:
    """Just enough of a sqlite3 connection for tests that read or poke the database directly:
    ``execute(sql, params)`` with SQLite spelling, rows as tuples, ``with`` for a block."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.row_factory: Any = None  # any factory (sqlite3.Row) gives rows as dicts

    def execute(self, sql: str, params: Any = ()) -> _Cursor:
        import asyncpg

        from tms.db.postgres import _arguments, _prepare_connection
        from tms.db.translate import to_postgres

        text, names = to_postgres(sql)

        shape: Any = tuple if self.row_factory is None else dict

        async def run() -> list[Any]:
            conn = await asyncpg.connect(self.url)
            try:
                await _prepare_connection(conn)
                return [shape(record) for record in await conn.fetch(text, *_arguments(names, params))]
            finally:
                await conn.close()

        return _Cursor(run_sync(run))

    def executemany(self, sql: str, rows: Any) -> None:
        for params in rows:
            self.execute(sql, params)

    def commit(self) -> None:
        """Each statement commits on its own."""

    def close(self) -> None:
        """Nothing stays open between statements."""

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _Cursor:
    def __init__(self, rows: list[Any]) -> None:
        self._rows = rows

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return list(self._rows)

    def __iter__(self) -> Any:
        return iter(self._rows)

