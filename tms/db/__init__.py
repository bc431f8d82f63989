"""The database seam: what every store module writes against, and the factory that picks a backend.

Two backends implement it: SQLite in ``data_dir`` (the default: one process, one file; see
``tms.db.sqlite``) and PostgreSQL (``storage.database_url``; several replicas may share it; see
``tms.db.postgres``). Store modules write SQLite-flavoured SQL with ``?`` or ``:name`` parameters;
the PostgreSQL backend rewrites the mechanical differences (placeholders, ``INSERT OR IGNORE``,
``IS ?``, subquery aliases, index hints …) once per statement text, and a store module that needs a
genuinely different statement asks ``db.dialect`` and keeps both next to each other.

Semantics both backends keep:

* text parameters never hold NUL (U+0000): PostgreSQL cannot store it, so both backends refuse such
  a parameter of ``execute``/``fetch_*`` with ``InvalidInput`` (``refuse_nul``) before sending it, and
  PostgreSQL's own refusal of one in a bulk write (``executemany``, ``insert_rows``, a JSON or array
  parameter) becomes the same 400. The bulk paths are not scanned: a 100,000-result ingest passes some
  two million values (a scan costs ~50 ms of its ~2 s), and the bodies feeding them were already
  checked (``tms.http.bodies``);

* one write transaction at a time (SQLite's single writer; on PostgreSQL a transaction-scoped
  advisory lock taken at ``BEGIN``), so read-then-write code in services stays correct with any
  number of replicas, and no two transactions can deadlock;
* reads never wait for writers;
* ``tx.signal(name)`` reaches every process serving the same database once the transaction commits
  (``db.epoch(name)`` changes), which is how caches and the outbox wake-up cross replicas;
* ``db.job_lock(name)`` lets exactly one process at a time run a periodic job.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from tms.errors import text_with_nul

if TYPE_CHECKING:
    from tms.config import Config

Row = dict[str, Any]
Params = Sequence[Any] | dict[str, Any]
Dialect = Literal["sqlite", "postgres"]

# names passed to Transaction.signal / Database.epoch
AUTH_SIGNAL = "auth"  # a token was revoked or a tenant suspended: drop verified-token caches
OUTBOX_SIGNAL = "outbox"  # events were written or subscriptions changed: wake the webhook dispatchers
AI_QUOTA_SIGNAL = "ai_quota"  # AI generations were reserved or released: drop cached month counts


class Transaction(Protocol):
    """A write transaction; what a store function writes with."""

    dialect: Dialect

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Runs one statement; returns the number of rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """Runs one statement per parameter set, in one round trip where the driver allows."""
        ...

    async def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Appends rows to ``table`` by the backend's bulk path: one executemany on SQLite, COPY on
        PostgreSQL (several times faster than row-by-row INSERTs there). No upsert: plain inserts only."""
        ...

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None: ...

    async def fetch_value(self, sql: str, params: Params = ()) -> Any: ...

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` in this process once the transaction has committed (never on rollback)."""
        ...

    async def signal(self, name: str) -> None:
        """Changes ``epoch(name)`` in every process on this database once the transaction commits."""
        ...


class Database(Protocol):
    dialect: Dialect
    data_dir: Path
    # set when events were written (here or, on PostgreSQL, by another replica); the dispatcher waits on it
    outbox_wakeup: asyncio.Event
    # told (tenant_id, project_id) after each commit that wrote results in this process: what
    # create_app registers (the flaky re-check); a process without an app (`tms admin`) has none
    results_written: list[Callable[[str, str], None]]

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    def transaction(self) -> contextlib.AbstractAsyncContextManager[Transaction]: ...

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None: ...

    async def fetch_value(self, sql: str, params: Params = ()) -> Any: ...

    def epoch(self, name: str) -> int:
        """A number that changes whenever some process signals ``name`` (see ``Transaction.signal``)."""
        ...

    def job_lock(self, name: str) -> contextlib.AbstractAsyncContextManager[bool]:
        """Yields True in the one process that may run periodic job ``name`` now, False elsewhere."""
        ...

    def migrations(self) -> list[tuple[int, str, str]]:
        """(version, file name, sql) of this backend's migrations, in order."""
        ...

    async def housekeeping(self) -> None: ...

    async def refresh_statistics(self, tables: list[str]) -> None:
        """After a bulk write: the planner's statistics of ``tables`` brought up to date (see backends)."""
        ...


def refuse_nul(params: Params) -> None:
    """Raises ``InvalidInput`` when a ``str`` parameter holds a NUL character (the backstop above)."""
    for value in params.values() if isinstance(params, dict) else params:
        if isinstance(value, str) and "\x00" in value:
            raise text_with_nul()


def database_for(config: Config, *, readers: int | None = None) -> Database:
    """The backend ``config`` names: PostgreSQL for a ``storage.database_url``, else SQLite in data_dir."""
    if config.database_url:
        from tms.db.postgres import PostgresDatabase

        return PostgresDatabase(config.database_url, config.data_dir, pool_size=readers)
    from tms.db.sqlite import SqliteDatabase

    return SqliteDatabase(config.db_path, readers=readers)


@contextlib.asynccontextmanager
async def opened(config: Config, *, readers: int | None = 1) -> AsyncIterator[Database]:
    """An open database for a one-off command (``tms admin``, tests, benches)."""
    db = database_for(config, readers=readers)
    await db.open()
    try:
        yield db
    finally:
        await db.close()


__all__ = [
    "AI_QUOTA_SIGNAL",
    "AUTH_SIGNAL",
    "OUTBOX_SIGNAL",
    "Database",
    "Dialect",
    "Params",
    "Row",
    "Transaction",
    "database_for",
    "opened",
    "refuse_nul",
]
