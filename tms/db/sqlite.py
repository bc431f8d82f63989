"""SQLite backend: one writer connection, a small pool of readers, numbered migrations.

Every write goes through ``Database.transaction()``: it takes the in-process write lock and then
``BEGIN IMMEDIATE`` on the single write connection, so writers queue in Python instead of racing for
SQLite's lock, and concurrent requests never see ``database is locked``. Readers use their own
connections and, thanks to WAL, never wait for the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from tms.db import Dialect, Params, Row, refuse_nul
from tms.db.epochs import Epochs
from tms.db.migrations import migration_files, split_sql
from tms.ids import now_iso

log = logging.getLogger(__name__)

READER_COUNT = 4
BUSY_TIMEOUT_MS = 10_000
# The writer folds the WAL back itself only when the background checkpoints (_Checkpointer) fall this
# far behind (80 MB of pages); and a WAL file that grew past 64 MB is cut back when it restarts.
WAL_FALLBACK_PAGES = 20_000
WAL_SIZE_LIMIT = 64 * 1024 * 1024


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> Row:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


async def _connect(path: Path) -> aiosqlite.Connection:
    # busy_timeout first: the other pragmas may already need the lock (another process, the admin CLI).
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = _dict_row  # type: ignore[assignment]  # aiosqlite says a class; sqlite3 takes any callable
    await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    await conn.execute("PRAGMA journal_mode = WAL")
    await conn.execute("PRAGMA synchronous = NORMAL")
    await conn.execute("PRAGMA foreign_keys = ON")
    await conn.execute("PRAGMA cache_size = -32000")
    await conn.execute("PRAGMA temp_store = MEMORY")
    return conn


class SqliteTransaction:
    """The write connection inside ``BEGIN IMMEDIATE``; what a store function writes with."""

    dialect: Dialect = "sqlite"

    def __init__(self, conn: aiosqlite.Connection, db: SqliteDatabase) -> None:
        self._conn = conn
        self._db = db
        self._after_commit: list[Callable[[], None]] = []

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Runs one statement; returns the number of rows it changed."""
        refuse_nul(params)
        cursor = await self._conn.execute(sql, params)
        count = cursor.rowcount
        await cursor.close()
        return count

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        cursor = await self._conn.executemany(sql, rows)
        count = cursor.rowcount
        await cursor.close()
        return count

    async def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        await self.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
        )

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        refuse_nul(params)
        return list(await self._conn.execute_fetchall(sql, params))  # type: ignore[arg-type]  # dicts: _dict_row

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        refuse_nul(params)
        rows = await self._conn.execute_fetchall(sql, params)
        return rows[0] if rows else None  # type: ignore[index]

    async def fetch_value(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetch_one(sql, params)
        return None if row is None else next(iter(row.values()))

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` once the transaction has committed (never on rollback)."""
        if callback not in self._after_commit:
            self._after_commit.append(callback)

    async def signal(self, name: str) -> None:
        # one process serves a SQLite file (the data dir's lock), so this process is everyone
        self.after_commit(self._db.signalled(name))


class _Checkpointer:
    """Folds the WAL back into the database file on a connection of its own, after each commit.

    By default the committing writer does this every 1,000 pages, inside its COMMIT: with a long
    history each ingest dirties some 4,700 pages (a case's results index takes a leaf page per linked
    case), so every ingest paid for a checkpoint and its fsync, half its time (bench/history.py). A
    PASSIVE checkpoint here never blocks the writer or a reader; it copies what it can and the next
    commit asks again.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._conn: aiosqlite.Connection | None = None
        self._wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._conn = await _connect(self._path)
        self._task = asyncio.create_task(self._run(self._conn), name="sqlite-checkpoint")

    def wanted(self) -> None:
        self._wanted.set()

    async def _run(self, conn: aiosqlite.Connection) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            try:
                await conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:  # the writer's fallback checkpoints meanwhile
                log.warning("background WAL checkpoint failed: %s", exc)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


class SqliteDatabase(Epochs):
    dialect: Dialect = "sqlite"

    def __init__(self, path: Path, readers: int | None = None) -> None:
        super().__init__()
        self.path = path
        self.data_dir = path.parent
        self._reader_count = READER_COUNT if readers is None else readers
        self._writer: aiosqlite.Connection | None = None
        self._readers: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._all_readers: list[aiosqlite.Connection] = []
        self._write_lock = asyncio.Lock()
        self._checkpointer = _Checkpointer(path)

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = await _connect(self.path)
            await self._writer.execute(f"PRAGMA wal_autocheckpoint = {WAL_FALLBACK_PAGES}")
            await self._writer.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
            await apply_migrations(self._writer)
            await self._checkpointer.start()
            for _ in range(self._reader_count):
                reader = await _connect(self.path)
                await reader.execute("PRAGMA query_only = ON")
                self._all_readers.append(reader)
                self._readers.put_nowait(reader)
        except BaseException:
            # each connection runs on its own non-daemon thread: left open, they kept a process whose
            # start-up had failed alive (and not listening)
            with contextlib.suppress(Exception):
                await self.close()
            raise

    async def close(self) -> None:
        await self._checkpointer.stop()
        for reader in self._all_readers:
            await reader.close()
        self._all_readers.clear()
        if self._writer is not None:
            with contextlib.suppress(sqlite3.Error):
                await self._writer.execute("PRAGMA optimize")
            await self._writer.close()
            self._writer = None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTransaction]:
        assert self._writer is not None, "database is not open"
        async with self._write_lock:
            await self._writer.execute("BEGIN IMMEDIATE")
            tx = SqliteTransaction(self._writer, self)
            try:
                yield tx
            except BaseException:
                await self._writer.execute("ROLLBACK")
                raise
            await self._writer.execute("COMMIT")
        self._checkpointer.wanted()
        for callback in tx._after_commit:
            callback()

    @contextlib.asynccontextmanager
    async def _reader(self) -> AsyncIterator[aiosqlite.Connection]:
        conn = await self._readers.get()
        try:
            yield conn
        finally:
            self._readers.put_nowait(conn)

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        refuse_nul(params)  # SQLite would take it (FTS5 would not): refused as PostgreSQL does
        async with self._reader() as conn:
            return list(await conn.execute_fetchall(sql, params))  # type: ignore[arg-type]  # dicts: _dict_row

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None

    async def fetch_value(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetch_one(sql, params)
        return None if row is None else next(iter(row.values()))

    @contextlib.asynccontextmanager
    async def job_lock(self, name: str) -> AsyncIterator[bool]:
        # the data dir's lock file already keeps a second `tms serve` away from this database
        yield True

    def migrations(self) -> list[tuple[int, str, str]]:
        return migration_files("sqlite")

    async def housekeeping(self) -> None:
        """Daily: fold the WAL back into the main file and refresh the planner's statistics."""
        async with self._write_lock:
            assert self._writer is not None
            await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            await self._writer.execute("PRAGMA optimize")

    async def refresh_statistics(self, tables: list[str]) -> None:
        """Nothing: SQLite weighs its indexes by their shape, not by row counts, until statistics exist, and
        the library's big lists name their index (``INDEXED BY``) or read FTS5 doclists; ``housekeeping``'s
        daily ``PRAGMA optimize`` refreshes what statistics it keeps."""


def backup_database(source: Path, target: Path) -> int:
    """Writes a consistent copy of the database at ``source`` to ``target``; returns its size in bytes.

    SQLite's online backup copies pages while other connections keep writing (a write restarts the
    copy of the pages it changed), so this is safe while ``tms serve`` runs. The copy is written
    beside the target and renamed into place, so a failed backup never leaves a half-written file.
    """
    if not source.exists():
        raise FileNotFoundError(f"no database at {source}")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    src = sqlite3.connect(source)
    try:
        src.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst, pages=1024)
            dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
        finally:
            dst.close()
    finally:
        src.close()
    partial.replace(target)
    return target.stat().st_size


async def apply_migrations(conn: aiosqlite.Connection) -> list[str]:
    """Applies each pending migration in its own transaction and records it; returns their names."""
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "applied_at TEXT NOT NULL)"
    )
    applied_rows = await conn.execute_fetchall("SELECT version FROM schema_migrations")
    applied = {row["version"] for row in applied_rows}
    done = []
    for version, name, sql in migration_files("sqlite"):
        if version in applied:
            continue
        await conn.execute("BEGIN IMMEDIATE")
        try:
            # executescript would COMMIT on its own; run statement by statement inside our transaction.
            for statement in split_sql(sql):
                await conn.execute(statement)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (version, name, now_iso()),
            )
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
        await conn.execute("COMMIT")
        log.info("applied migration %s", name)
        done.append(name)
    return done
