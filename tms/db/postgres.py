"""PostgreSQL backend: a connection pool shared by any number of ``tms serve`` replicas.

Why these choices:

* asyncpg: the fastest PostgreSQL driver for asyncio, with prepared-statement caching and a binary
  COPY path; statements come from the store modules in SQLite spelling and are rewritten once per
  text by ``tms.db.translate``.
* One write transaction at a time, across every replica: each transaction takes the same
  transaction-scoped advisory lock right after ``BEGIN``. That is SQLite's single-writer model, so
  the services' read-then-write code (case codes, counters, once-only claims) is as correct on
  PostgreSQL as on SQLite, and our transactions can never deadlock each other. Reads run on the
  pool without any lock. A write transaction lasts milliseconds, so the lock caps writes at
  hundreds of transactions a second: far above what CI ingest needs (see bench/README.md, capacity).
* ``signal``/``epoch`` ride on LISTEN/NOTIFY: a notification is sent at commit, and every replica's
  listener connection bumps its epoch (a lost listener reconnects and bumps every epoch, since it
  may have missed some).
* Text with NUL (U+0000), which PostgreSQL cannot store: a ``str`` parameter of a statement is
  refused before it is sent (``refuse_nul``, as on SQLite), and PostgreSQL's own refusal of one
  deeper in (a COPY or batch row, an array, ``\\u0000`` in a JSON parameter) becomes the same
  ``InvalidInput`` (400) instead of a 500.
* Periodic jobs take a session advisory lock with ``pg_try_advisory_lock``: one replica runs a job,
  the others skip that round.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg

from tms.db import Dialect, Params, Row, refuse_nul
from tms.db.epochs import Epochs
from tms.db.migrations import migration_files
from tms.db.translate import to_postgres
from tms.errors import text_with_nul
from tms.ids import now_iso

log = logging.getLogger(__name__)

POOL_SIZE = 8
NOTIFY_CHANNEL = "tms_signal"
LISTENER_CHECK_SECONDS = 1.0


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``name``."""
    return int.from_bytes(hashlib.sha256(f"tms:{name}".encode()).digest()[:8], "big", signed=True)


WRITE_LOCK = lock_key("write")
MIGRATION_LOCK = lock_key("migrations")


def _numeric(text: str) -> int | float:
    # SUM over a BIGINT column is NUMERIC in PostgreSQL; SQLite gives an integer, so does this
    value = Decimal(text)
    return int(value) if value == value.to_integral_value() else float(value)


# Per connection. JIT off: PostgreSQL compiles a statement whose estimated cost passes jit_above_cost, and
# TMS's statements are short ones whose estimates overshoot (json_array_elements counts 100 rows a case):
# the traceability page spent ~245 ms of ~500 compiling 123 functions it then ran once (bench/README.md).
SERVER_SETTINGS = {"jit": "off"}


async def _prepare_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("numeric", encoder=str, decoder=_numeric, schema="pg_catalog", format="text")


def _arguments(names: tuple[str, ...] | None, params: Params) -> tuple[Any, ...]:
    if names is None:
        if isinstance(params, dict):
            raise TypeError("named parameters given to a statement with ? placeholders")
        return tuple(params)
    if not isinstance(params, dict):
        raise TypeError("positional parameters given to a statement with :name placeholders")
    return tuple(params[name] for name in names)


@contextlib.contextmanager
def _nul_refused() -> Iterator[None]:
    """PostgreSQL refusing a NUL character in text → ``InvalidInput``: "invalid byte sequence for
    encoding UTF8: 0x00" (22021) for text, "unsupported Unicode escape sequence" (22P05) for ``\\u0000``
    in a JSON value. The statement failed, so the caller's transaction rolls back as the error leaves it."""
    try:
        yield
    except asyncpg.CharacterNotInRepertoireError as exc:
        if "0x00" not in str(exc):
            raise
        raise text_with_nul() from exc
    except asyncpg.UntranslatableCharacterError as exc:
        if "\\u0000" not in f"{exc} {getattr(exc, 'detail', '')}":
            raise
        raise text_with_nul() from exc


def _changed(status: str) -> int:
    """Rows changed, from a command tag such as ``UPDATE 3`` or ``INSERT 0 5``."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


class _Statements:
    """Runs SQLite-spelled statements on one asyncpg connection (or the pool)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Params = ()) -> int:
        text, names = to_postgres(sql)
        refuse_nul(params)
        with _nul_refused():
            return _changed(await self._conn.execute(text, *_arguments(names, params)))

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        text, names = to_postgres(sql)
        refuse_nul(params)
        with _nul_refused():
            return [dict(record) for record in await self._conn.fetch(text, *_arguments(names, params))]

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        text, names = to_postgres(sql)
        refuse_nul(params)
        with _nul_refused():
            record = await self._conn.fetchrow(text, *_arguments(names, params))
        return None if record is None else dict(record)

    async def fetch_value(self, sql: str, params: Params = ()) -> Any:
        text, names = to_postgres(sql)
        refuse_nul(params)
        with _nul_refused():
            return await self._conn.fetchval(text, *_arguments(names, params))


class PostgresTransaction(_Statements):
    dialect: Dialect = "postgres"

    def __init__(self, conn: asyncpg.Connection, db: PostgresDatabase) -> None:
        super().__init__(conn)
        self._db = db
        self._after_commit: list[Callable[[], None]] = []

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """One pipelined round trip; returns the number of parameter sets (PostgreSQL reports no
        per-statement counts for a batch, so a caller that needs what an upsert skipped asks with
        RETURNING instead)."""
        text, names = to_postgres(sql)
        batch = [_arguments(names, params) for params in rows]
        if batch:
            with _nul_refused():
                await self._conn.executemany(text, batch)
        return len(batch)

    async def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        records = list(rows)
        if records:
            with _nul_refused():
                await self._conn.copy_records_to_table(table, columns=list(columns), records=records)

    def after_commit(self, callback: Callable[[], None]) -> None:
        if callback not in self._after_commit:
            self._after_commit.append(callback)

    async def signal(self, name: str) -> None:
        # NOTIFY is transactional: the other replicas hear it at commit, never after a rollback
        await self._conn.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, name)
        self.after_commit(self._db.signalled(name))


class PostgresDatabase(_Statements, Epochs):
    dialect: Dialect = "postgres"

    def __init__(self, url: str, data_dir: Path, pool_size: int | None = None) -> None:
        _Statements.__init__(self, None)
        Epochs.__init__(self)
        self._url = url
        self.data_dir = data_dir
        self._pool_size = POOL_SIZE if pool_size is None else max(2, pool_size + 1)
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self._listener_task: asyncio.Task[None] | None = None
        self._write_lock = asyncio.Lock()  # replicas queue on the advisory lock; this process's writers queue here

    async def open(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._pool = await asyncpg.create_pool(
                self._url, min_size=1, max_size=self._pool_size, init=_prepare_connection,
                statement_cache_size=1024, server_settings=SERVER_SETTINGS,
            )
            self._conn = self._pool
            async with self._pool.acquire() as conn:
                await apply_migrations(conn)
            await self._listen()
            self._listener_task = asyncio.create_task(self._keep_listening())
        except BaseException:
            with contextlib.suppress(Exception):
                await self.close()
            raise

    async def close(self) -> None:
        if self._listener_task is not None:
            self._listener_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener_task
            self._listener_task = None
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
            self._listener = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresTransaction]:
        assert self._pool is not None, "database is not open"
        async with self._write_lock, self._pool.acquire() as conn:
            transaction = conn.transaction()
            await transaction.start()
            try:
                await conn.execute("SELECT pg_advisory_xact_lock($1)", WRITE_LOCK)
                tx = PostgresTransaction(conn, self)
                yield tx
            except BaseException:
                await transaction.rollback()
                raise
            await transaction.commit()
        for callback in tx._after_commit:
            callback()

    def _on_notification(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self.bump(payload)

    async def _listen(self) -> None:
        self._listener = await asyncpg.connect(self._url)
        await self._listener.add_listener(NOTIFY_CHANNEL, self._on_notification)

    async def _keep_listening(self) -> None:
        """Reconnects a lost listener; whatever it may have missed counts as signalled."""
        while True:
            await asyncio.sleep(LISTENER_CHECK_SECONDS)
            if self._listener is not None and not self._listener.is_closed():
                continue
            try:
                await self._listen()
            except (OSError, asyncpg.PostgresError) as exc:
                log.warning("database listener: reconnect failed: %s", exc)
                continue
            self.bump_all()

    @contextlib.asynccontextmanager
    async def job_lock(self, name: str) -> AsyncIterator[bool]:
        assert self._pool is not None, "database is not open"
        async with self._pool.acquire() as conn:
            got = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", lock_key(f"job:{name}")))
            try:
                yield got
            finally:
                if got:
                    await conn.execute("SELECT pg_advisory_unlock($1)", lock_key(f"job:{name}"))

    def migrations(self) -> list[tuple[int, str, str]]:
        return migration_files("postgres")

    async def housekeeping(self) -> None:
        """Daily: refresh the planner's statistics (autovacuum does the rest)."""
        assert self._pool is not None
        async with self._pool.acquire() as conn:
            await conn.execute("ANALYZE")

    async def refresh_statistics(self, tables: list[str]) -> None:
        """``ANALYZE`` of ``tables`` (after commit: it samples ~30,000 rows, ~0.1-0.5 s, blocks no writer).

        Autovacuum analyzes a table a minute or more after a tenth of it changed; until then the planner
        takes a tenant that just imported 10,000 cases for one holding a few, and joins the cases with
        their custom field values in a nested loop that re-reads the values for every case: at 20,000
        cases, a list filtered by a field and a priority counted its total in 8 s, a `q` search in 40 s
        (0.02 s once analyzed).
        """
        assert self._pool is not None
        async with self._pool.acquire() as conn:
            await conn.execute("ANALYZE " + ", ".join(tables))


async def apply_migrations(conn: asyncpg.Connection) -> list[str]:
    """Applies each pending migration in its own transaction; replicas starting together take turns."""
    done = []
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TEXT NOT NULL)"
        )
        applied = {row["version"] for row in await conn.fetch("SELECT version FROM schema_migrations")}
        for version, name, sql in migration_files("postgres"):
            if version in applied:
                continue
            async with conn.transaction():
                await conn.execute(sql)  # a script: asyncpg runs it with the simple query protocol
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                    version, name, now_iso(),
                )
            log.info("applied migration postgres/%s", name)
            done.append(name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
    return done
