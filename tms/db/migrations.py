"""Numbered migration files, one series per backend: ``tms/migrations/NNNN_name.sql`` for SQLite
(the history since the first release) and ``tms/migrations/postgres/NNNN_name.sql`` for PostgreSQL
(which starts from a baseline of the schema SQLite had reached when the backend was added)."""

from __future__ import annotations

import sqlite3
from importlib import resources

from tms.db import Dialect


def migration_files(dialect: Dialect) -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration of ``dialect``, in order."""
    folder = resources.files("tms.migrations")
    if dialect == "postgres":
        folder = folder.joinpath("postgres")
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append((version, entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate {dialect} migration numbers: {versions}")
    return found


def split_sql(script: str) -> list[str]:
    """The statements of a SQLite migration script (a trigger's body stays one statement)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
