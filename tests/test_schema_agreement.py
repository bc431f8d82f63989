"""Both schemas agree: a fresh SQLite database and a fresh PostgreSQL database, each migrated by its
own series (``tms/migrations/`` and ``tms/migrations/postgres/``), hold the same tables, columns,
NOT NULL columns, primary keys, unique constraints and indexes.

The store modules write one SQL text for both backends (``tms/db/translate.py``), so a column or an
index that one series forgot is a bug that only one half of the suite may notice (or none: a missing
index is only slow). What differs on purpose is listed in ``ALLOWED`` below, each entry with its reason.

How each side is read and normalised:

* types, by what a value may be: SQLite's declared type by its affinity rules (``INT`` → integer;
  ``CHAR``, ``CLOB``, ``TEXT`` → text; ``BLOB`` or nothing → blob; ``REAL``, ``FLOA``, ``DOUB`` → real;
  anything else → numeric), and ``text nocase`` for a text column that collates ``NOCASE``. PostgreSQL:
  ``bigint`` → integer (SQLite's integers are 64-bit, so the baseline's INTEGER is BIGINT), ``text`` and
  ``varchar`` without a length → text, ``citext`` → text nocase, ``double precision`` → real,
  ``numeric`` → numeric, ``bytea`` → blob. What holds less than SQLite's column keeps a name of its own
  and shows up as a difference: ``integer`` (32-bit), ``smallint``, ``real`` (32-bit), ``varchar(n)``.
  Booleans are INTEGER 0/1 on both (the store modules compare with ``= 0``/``= 1``, which a PostgreSQL
  ``boolean`` refuses), so ``boolean`` is its own type too;
* NOT NULL: a primary key's columns count as NOT NULL on both (PostgreSQL implies it; SQLite stores
  NULL in a non-INTEGER key column unless told, but every writer gives one);
* rowid: a SQLite table has an implicit ``rowid`` unless it is ``WITHOUT ROWID``; PostgreSQL spells it
  as a ``rowid`` identity column (with a unique constraint) where the code reads it. That column and
  its constraint are dropped from the PostgreSQL side when the SQLite table has a rowid (and reported
  when it has none);
* unique constraints (SQLite's ``sqlite_autoindex_*``, PostgreSQL's ``*_key`` indexes) compare by
  their columns, since their names are generated; indexes made by ``CREATE INDEX`` compare by name:
  table, unique or not, key columns (with DESC) and the partial-index predicate, spelled the same way
  (lower case, no blanks, parentheses or PostgreSQL's casts);
* defaults, CHECK constraints (PostgreSQL's ``x = ANY (ARRAY[…])`` read as ``x IN (…)``) and foreign keys
  (columns, parent, ON DELETE) are compared too;
* not compared: triggers and functions (each backend writes them in its own language, and PostgreSQL
  has some of its own: tests of behaviour cover them), column order, ``schema_migrations``.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import postgres_cluster

# --- what differs on purpose -------------------------------------------------------------------
# Each entry is an exact difference as `differences()` words it, and why it is allowed. An entry
# that no longer matches any difference fails the test too, so the list never outlives its reason.
ALLOWED: dict[str, str] = {
    # Full-text search. SQLite: an FTS5 virtual table kept by triggers (0017, 0023), whose shadow
    # tables (_data, _idx, _content, _docsize, _config) FTS5 creates itself. PostgreSQL: a tsvector
    # column on test_cases kept by a PL/pgSQL trigger and its GIN index (baseline).
    "table test_cases_fts: only in SQLite": "full-text search: FTS5 in SQLite, tsvector in PostgreSQL",
    "table test_cases_fts_config: only in SQLite": "FTS5 shadow table",
    "table test_cases_fts_content: only in SQLite": "FTS5 shadow table",
    "table test_cases_fts_data: only in SQLite": "FTS5 shadow table",
    "table test_cases_fts_docsize: only in SQLite": "FTS5 shadow table",
    "table test_cases_fts_idx: only in SQLite": "FTS5 shadow table",
    "column test_cases.search: only in PostgreSQL": "full-text search: the tsvector column FTS5 replaces",
    "index test_cases_search: only in PostgreSQL": "full-text search: GIN index on the tsvector column",
    # SQLite's rowid is the table's key; PostgreSQL's rowid column needs an index of its own for the
    # flaky list's "latest marked result" lookup (postgres/0003).
    "index test_results_rowid: only in PostgreSQL": "SQLite's rowid is its B-tree key already",
    "index test_results_run: only in PostgreSQL":
        "a run's results in insertion order: (run_id, rowid); SQLite reads them through its unique "
        "(run_id, test_case_id) index and sorts, PostgreSQL's planner wants the order in an index (baseline)",
    # PostgreSQL checks a foreign key with a per-row trigger that locks the parent row: the results
    # tables keep none on their tenant, project or run there; a trigger on test_runs deletes a run's
    # results instead (postgres/0005, docs/DEVELOPING.md "Database API").
    "table test_results: foreign key (run_id) -> test_runs (id) on delete CASCADE only in SQLite":
        "postgres/0005: the cascade is the test_runs_delete_results trigger",
    "table test_results: foreign key (tenant_id) -> tenants (id) on delete CASCADE only in SQLite":
        "postgres/0005: a tenant's runs cascade, and their trigger takes the results",
    "table unlinked_test_results: foreign key (project_id) -> projects (id) on delete CASCADE only in SQLite":
        "postgres/0005: a project's runs cascade, and their trigger takes the results",
    "table unlinked_test_results: foreign key (run_id) -> test_runs (id) on delete CASCADE only in SQLite":
        "postgres/0005: the cascade is the test_runs_delete_results trigger",
    "table unlinked_test_results: foreign key (tenant_id) -> tenants (id) on delete CASCADE only in SQLite":
        "postgres/0005: a tenant's runs cascade, and their trigger takes the results",
}
# Tables neither side compares: the runner's own bookkeeping.
IGNORED_TABLES = frozenset({"schema_migrations"})
FTS_TABLE = re.compile(r"^test_cases_fts(_\w+)?$")


@dataclass
class Index:
    table: str
    unique: bool
    columns: tuple[str, ...]
    predicate: str | None


@dataclass
class Table:
    columns: dict[str, tuple[str, bool]] = field(default_factory=dict)  # name -> (type, not null)
    primary_key: tuple[str, ...] = ()
    uniques: set[tuple[str, ...]] = field(default_factory=set)  # unique constraints, by columns
    defaults: dict[str, str] = field(default_factory=dict)  # column -> normalised DEFAULT expression
    foreign_keys: set[str] = field(default_factory=set)  # "(columns) -> table (columns) on delete ACTION"
    checks: set[str] = field(default_factory=set)  # normalised CHECK expressions
    has_rowid: bool = True


@dataclass
class Schema:
    tables: dict[str, Table] = field(default_factory=dict)
    indexes: dict[str, Index] = field(default_factory=dict)


def sqlite_type(declared: str) -> str:
    """SQLite's column affinity (https://sqlite.org/datatype3.html, 3.1), named as in the docstring."""
    upper = declared.upper()
    if "INT" in upper:
        return "integer"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if not upper or "BLOB" in upper:
        return "blob"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "numeric"


POSTGRES_TYPES = {
    "bigint": "integer", "integer": "integer (32-bit)", "smallint": "integer (16-bit)",
    "text": "text", "character varying": "text", "citext": "text nocase",
    "double precision": "real", "real": "real (32-bit)", "numeric": "numeric",
    "bytea": "blob", "boolean": "boolean",
}


def postgres_type(name: str) -> str:
    """``name`` as format_type spells it with its modifier: a length limit stays visible."""
    limited = re.fullmatch(r"(character varying|character)\((\d+)\)", name)
    if limited:
        return f"text ({limited.group(2)} characters at most)"
    return POSTGRES_TYPES.get(name, name)


_CAST = re.compile(r"::(double precision|character varying|[a-z_]+)(\[\])?")


_LITERAL = re.compile(r"('(?:[^']|'')*')")


def normalise_expression(text: str) -> str:
    """One spelling of an index column expression, a predicate or a default for both backends: lower
    case, no blanks, parentheses, double quotes or PostgreSQL casts (string literals kept as written)."""
    parts = _LITERAL.split(text)
    for index in range(0, len(parts), 2):  # even parts are code, odd ones literals
        code = _CAST.sub("", parts[index].lower()).replace("!=", "<>")
        parts[index] = re.sub(r"[\s()\"]", "", code)
    return "".join(parts)


def nocase(column: str) -> str:
    """A key that compares without case: SQLite's ``COLLATE NOCASE``, PostgreSQL's ``lower(x)`` or a
    ``citext`` column."""
    return normalise_expression(f"lower({column})")


def normalise_check(text: str) -> str:
    """A CHECK expression; PostgreSQL shows ``x IN (a, b)`` as ``x = ANY (ARRAY[a, b])``."""
    text = normalise_expression(text)
    return re.sub(r"=anyarray\[([^\]]*)\]", r"in\1", text)


def _sqlite_checks(sql: str) -> list[str]:
    """The expressions of the CHECK constraints in a CREATE TABLE statement (columns' and table's)."""
    checks = []
    code = _LITERAL.sub(lambda m: "\0" * len(m.group(1)), sql)  # literals blanked, offsets kept
    for match in re.finditer(r"\bCHECK\s*\(", code, re.I):
        depth, start = 1, match.end()
        for position in range(start, len(code)):
            depth += {"(": 1, ")": -1}.get(code[position], 0)
            if depth == 0:
                checks.append(sql[start:position])
                break
    return checks


def _sqlite_predicate(sql: str | None) -> str | None:
    if not sql:
        return None
    # the predicate follows the column list's closing parenthesis
    match = re.search(r"\)\s+WHERE\s+(.*)$", sql, re.I | re.S)
    return normalise_expression(match.group(1)) if match else None


def _sqlite_index_columns(conn: sqlite3.Connection, name: str, sql: str | None) -> tuple[str, ...]:
    rows = conn.execute(f'PRAGMA index_xinfo("{name}")').fetchall()
    keys = [row for row in rows if row[5]]  # key columns, not the rowid appended to every entry
    expressions: list[str] = []
    if any(row[1] == -2 for row in keys) and sql:
        body = sql[sql.index("(", sql.upper().index(" ON ")) + 1:]
        expressions = _split_top_level(body)
    columns = []
    for position, row in enumerate(keys):
        seqno, cid, column, desc, coll = row[0], row[1], row[2], row[3], row[4]
        del seqno
        if cid == -2:
            text = re.sub(r"\s+(ASC|DESC)\s*$", "", expressions[position], flags=re.I)
            text = re.sub(r"\s+COLLATE\s+NOCASE", "", text, flags=re.I)
            spelled = normalise_expression(text)
        else:
            spelled = column
        if coll and coll.upper() == "NOCASE":
            spelled = nocase(spelled)
        columns.append(spelled + (" desc" if desc else ""))
    return tuple(columns)


def _split_top_level(body: str) -> list[str]:
    """The comma-separated items of an index's column list (``body`` starts after its "(")."""
    items, depth, current, quote = [], 0, "", False
    for char in body:
        if char == "'":
            quote = not quote
        elif not quote and char == "(":
            depth += 1
        elif not quote and char == ")":
            if depth == 0:
                items.append(current.strip())
                return items
            depth -= 1
        elif not quote and char == "," and depth == 0:
            items.append(current.strip())
            current = ""
            continue
        current += char
    items.append(current.strip())
    return items


def _sqlite_collation(conn: sqlite3.Connection, table: str, column: str) -> str:
    """A column's collation: SQLite tells it for an index's columns only, so a probe index (on this
    throwaway database) asks."""
    conn.execute(f'CREATE INDEX schema_probe ON "{table}" ("{column}")')
    try:
        return str(conn.execute('PRAGMA index_xinfo("schema_probe")').fetchone()[4]).upper()
    finally:
        conn.execute("DROP INDEX schema_probe")


def read_sqlite(path: Path) -> Schema:
    schema = Schema()
    conn = sqlite3.connect(path)
    try:
        tables = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        for name, sql in tables:
            if name in IGNORED_TABLES:
                continue
            table = Table(has_rowid=not re.search(r"WITHOUT\s+ROWID\s*;?\s*$", sql or "", re.I))
            schema.tables[name] = table
            if (sql or "").upper().startswith("CREATE VIRTUAL TABLE"):
                continue
            table.checks = {normalise_check(check) for check in _sqlite_checks(sql)}
            info = conn.execute(f'PRAGMA table_xinfo("{name}")').fetchall()
            pk = sorted((row[5], row[1]) for row in info if row[5])
            table.primary_key = tuple(column for _, column in pk)
            for _cid, column, declared, notnull, default, in_pk, hidden in info:
                if hidden == 1:  # a virtual table's hidden column (2, 3: generated columns, compared)
                    continue
                kind = sqlite_type(declared or "")
                if kind == "text" and _sqlite_collation(conn, name, column) == "NOCASE":
                    kind = "text nocase"
                table.columns[column] = (kind, bool(notnull or in_pk))
                if default is not None and default.upper() != "NULL":
                    table.defaults[column] = normalise_expression(default)
            keys: dict[int, list[tuple[str, str, str | None, str]]] = {}
            for key_id, _seq, parent, child, parent_column, _update, on_delete, _match in conn.execute(
                    f'PRAGMA foreign_key_list("{name}")'):
                keys.setdefault(key_id, []).append((parent, child, parent_column, on_delete))
            for parts in keys.values():
                parent = parts[0][0]
                parent_columns = [p[2] for p in parts]
                if None in parent_columns:  # REFERENCES parent with no columns: its primary key
                    pk_rows = conn.execute(f'PRAGMA table_info("{parent}")').fetchall()
                    parent_columns = [r[1] for r in sorted((r for r in pk_rows if r[5]), key=lambda r: r[5])]
                table.foreign_keys.add(foreign_key([p[1] for p in parts], parent, parent_columns, parts[0][3]))
            for _seq, index_name, unique, origin, _partial in conn.execute(f'PRAGMA index_list("{name}")'):
                if origin == "pk":
                    continue
                index_sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (index_name,)).fetchone()[0]
                columns = _sqlite_index_columns(conn, index_name, index_sql)
                if origin == "u":
                    table.uniques.add(columns)
                else:
                    schema.indexes[index_name] = Index(name, bool(unique), columns, _sqlite_predicate(index_sql))
    finally:
        conn.close()
    return schema


def foreign_key(columns: list[str], parent: str, parent_columns: list[str | None], on_delete: str) -> str:
    return f"({', '.join(columns)}) -> {parent} ({', '.join(str(c) for c in parent_columns)}) on delete {on_delete}"


POSTGRES_ACTIONS = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}


async def _read_postgres(url: str) -> Schema:
    import asyncpg

    schema = Schema()
    conn = await asyncpg.connect(url)
    try:
        columns = await conn.fetch(
            """SELECT c.relname AS table_name, a.attname, format_type(a.atttypid, a.atttypmod) AS type_name,
                      t.typname, a.attnotnull, pg_get_expr(d.adbin, d.adrelid) AS default
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
               JOIN pg_type t ON t.oid = a.atttypid
               LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
               WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY c.relname, a.attnum"""
        )
        for row in columns:
            if row["table_name"] in IGNORED_TABLES:
                continue
            table = schema.tables.setdefault(row["table_name"], Table(has_rowid=False))
            type_name = "citext" if row["typname"] == "citext" else row["type_name"]
            table.columns[row["attname"]] = (postgres_type(type_name), bool(row["attnotnull"]))
            if row["default"] is not None:
                table.defaults[row["attname"]] = normalise_expression(row["default"])
        indexes = await conn.fetch(
            """SELECT i.relname AS index_name, c.relname AS table_name, x.indisunique, x.indisprimary,
                      x.indnkeyatts, pg_get_expr(x.indpred, x.indrelid) AS predicate,
                      (SELECT contype::text FROM pg_constraint WHERE conindid = x.indexrelid
                       AND conrelid = x.indrelid AND contype IN ('p', 'u')) AS contype,
                      x.indexrelid, x.indoption
               FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' ORDER BY i.relname"""
        )
        for row in indexes:
            if row["table_name"] in IGNORED_TABLES:
                continue
            table = schema.tables[row["table_name"]]
            keys = []
            for position in range(1, row["indnkeyatts"] + 1):
                text = await conn.fetchval("SELECT pg_get_indexdef($1, $2, true)", row["indexrelid"], position)
                desc = bool(row["indoption"][position - 1] & 1)
                keys.append((text if re.fullmatch(r"\w+", text) else normalise_expression(text))
                            + (" desc" if desc else ""))
            # a citext column is indexed as SQLite indexes a NOCASE one
            keys = [nocase(key) if table.columns.get(key, ("", False))[0] == "text nocase" else key for key in keys]
            if keys[-1:] == ["rowid"] and len(keys) > 1:
                keys.pop()  # what SQLite appends to every index entry of a rowid table, spelled out
            columns = tuple(keys)
            if row["indisprimary"]:
                table.primary_key = columns
            elif row["contype"] == "u":
                table.uniques.add(columns)
            else:
                predicate = normalise_expression(row["predicate"]) if row["predicate"] else None
                schema.indexes[row["index_name"]] = Index(row["table_name"], row["indisunique"], columns, predicate)
        foreign_keys = await conn.fetch(
            """SELECT c.relname AS table_name, p.relname AS parent, k.confdeltype::text AS on_delete,
                      ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, i)
                            JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i) AS columns,
                      ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(n, i)
                            JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i)
                      AS parent_columns
               FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND k.contype = 'f'"""
        )
        checks = await conn.fetch(
            """SELECT c.relname AS table_name, pg_get_expr(k.conbin, k.conrelid) AS expression
               FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND k.contype = 'c'"""
        )
        for row in checks:
            if row["table_name"] not in IGNORED_TABLES:
                schema.tables[row["table_name"]].checks.add(normalise_check(row["expression"]))
        for row in foreign_keys:
            schema.tables[row["table_name"]].foreign_keys.add(foreign_key(
                list(row["columns"]), row["parent"], list(row["parent_columns"]), POSTGRES_ACTIONS[row["on_delete"]]))
    finally:
        await conn.close()
    # PostgreSQL's stand-in for SQLite's implicit rowid
    for table in schema.tables.values():
        if "rowid" in table.columns:
            table.has_rowid = True
            del table.columns["rowid"]
            table.uniques.discard(("rowid",))
    return schema


def read_postgres(url: str) -> Schema:
    return postgres_cluster.run_sync(lambda: _read_postgres(url))


def differences(sqlite: Schema, postgres: Schema) -> list[str]:
    """Every difference between the two schemas, one sentence each (the keys of ALLOWED)."""
    found = []
    for name in sorted(sqlite.tables.keys() | postgres.tables.keys()):
        left, right = sqlite.tables.get(name), postgres.tables.get(name)
        if right is None:
            found.append(f"table {name}: only in SQLite")
            continue
        if left is None:
            found.append(f"table {name}: only in PostgreSQL")
            continue
        for column in sorted(left.columns.keys() | right.columns.keys()):
            lc, rc = left.columns.get(column), right.columns.get(column)
            if rc is None:
                found.append(f"column {name}.{column}: only in SQLite")
            elif lc is None:
                found.append(f"column {name}.{column}: only in PostgreSQL")
            else:
                if lc[0] != rc[0]:
                    found.append(f"column {name}.{column}: type {lc[0]} in SQLite, {rc[0]} in PostgreSQL")
                if lc[1] != rc[1]:
                    found.append(f"column {name}.{column}: NOT NULL in {'SQLite' if lc[1] else 'PostgreSQL'} only")
            if lc is not None and rc is not None and left.defaults.get(column) != right.defaults.get(column):
                found.append(f"column {name}.{column}: default {left.defaults.get(column)!r} in SQLite, "
                             f"{right.defaults.get(column)!r} in PostgreSQL")
        for key in sorted(left.foreign_keys - right.foreign_keys):
            found.append(f"table {name}: foreign key {key} only in SQLite")
        for key in sorted(right.foreign_keys - left.foreign_keys):
            found.append(f"table {name}: foreign key {key} only in PostgreSQL")
        for check in sorted(left.checks - right.checks):
            found.append(f"table {name}: check {check} only in SQLite")
        for check in sorted(right.checks - left.checks):
            found.append(f"table {name}: check {check} only in PostgreSQL")
        if left.primary_key != right.primary_key:
            found.append(f"table {name}: primary key {left.primary_key} in SQLite, {right.primary_key} in PostgreSQL")
        for unique in sorted(left.uniques - right.uniques):
            found.append(f"table {name}: unique {unique} only in SQLite")
        for unique in sorted(right.uniques - left.uniques):
            found.append(f"table {name}: unique {unique} only in PostgreSQL")
        if right.has_rowid and not left.has_rowid:
            found.append(f"table {name}: a rowid column in PostgreSQL, WITHOUT ROWID in SQLite")
    for name in sorted(sqlite.indexes.keys() | postgres.indexes.keys()):
        li, ri = sqlite.indexes.get(name), postgres.indexes.get(name)
        if ri is None:
            found.append(f"index {name}: only in SQLite")
        elif li is None:
            found.append(f"index {name}: only in PostgreSQL")
        else:
            for what in ("table", "unique", "columns", "predicate"):
                if getattr(li, what) != getattr(ri, what):
                    found.append(f"index {name}: {what} {getattr(li, what)!r} in SQLite, "
                                 f"{getattr(ri, what)!r} in PostgreSQL")
    return found


async def _migrate_sqlite(path: Path) -> None:
    from tms.db.sqlite import SqliteDatabase

    db = SqliteDatabase(path, readers=0)
    await db.open()
    await db.close()


async def _migrate_postgres(url: str) -> None:
    import asyncpg

    from tms.db.postgres import apply_migrations

    conn = await asyncpg.connect(url)
    try:
        await apply_migrations(conn)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def schemas(tmp_path_factory: pytest.TempPathFactory) -> tuple[Schema, Schema]:
    try:
        postgres_cluster.binary("initdb")
        postgres_cluster.binary("pg_ctl")
    except RuntimeError as exc:
        pytest.skip(f"PostgreSQL binaries are missing ({exc}); `make test` installs them")
    path = tmp_path_factory.mktemp("schema-agreement") / "tms.db"
    asyncio.run(_migrate_sqlite(path))
    url = postgres_cluster.cluster().create_database(f"tms_schema_agreement_{os.getpid()}")
    postgres_cluster.run_sync(lambda: _migrate_postgres(url))
    return read_sqlite(path), read_postgres(url)


def test_both_schemas_agree_but_for_the_allowed_differences(schemas: tuple[Schema, Schema]) -> None:
    found = differences(*schemas)
    unexplained = [d for d in found if d not in ALLOWED]
    assert not unexplained, (
        "The SQLite and PostgreSQL schemas differ (fix it with a migration in each series, or list the "
        "difference in ALLOWED with its reason):\n" + "\n".join(unexplained)
    )


def test_every_allowed_difference_still_exists(schemas: tuple[Schema, Schema]) -> None:
    found = set(differences(*schemas))
    stale = [d for d in ALLOWED if d not in found]
    assert not stale, "ALLOWED lists differences that are gone; remove them:\n" + "\n".join(stale)


def test_the_comparison_sees_tables_columns_and_indexes(schemas: tuple[Schema, Schema]) -> None:
    """The readers themselves: a broken query that read nothing would make both sides agree."""
    sqlite, postgres = schemas
    for schema in (sqlite, postgres):
        results = schema.tables["test_results"]
        assert results.columns["status"][0] == "text" and results.columns["status"][1]
        assert results.primary_key == ("id",)
        assert schema.indexes["test_results_marks"].predicate
        assert schema.tables["users"].uniques == {("loweremail",)}  # citext / COLLATE NOCASE
        assert schema.tables["users"].checks and schema.tables["users"].defaults["active"] == "1"
        assert "(project_id) -> projects (id) on delete CASCADE" in schema.tables["test_runs"].foreign_keys
        assert len(schema.tables) > 30 and len(schema.indexes) > 40


def test_a_difference_is_reported(schemas: tuple[Schema, Schema]) -> None:
    sqlite, postgres = schemas
    changed = copy.deepcopy(postgres)
    del changed.tables["test_runs"].columns["name"]
    changed.tables["users"].columns["email"] = ("text", True)
    changed.indexes["test_results_marks"].predicate = "status<>'passed'"
    found = set(differences(sqlite, changed)) - set(differences(sqlite, postgres))
    assert found == {
        "column test_runs.name: only in SQLite",
        "column users.email: type text nocase in SQLite, text in PostgreSQL",
        f"index test_results_marks: predicate {sqlite.indexes['test_results_marks'].predicate!r} in SQLite, "
        "\"status<>'passed'\" in PostgreSQL",
    }


def test_types_are_normalised_as_documented() -> None:
    assert [sqlite_type(t) for t in ("INTEGER", "BIGINT", "TEXT", "VARCHAR(20)", "BLOB", "", "REAL", "NUMERIC")] == [
        "integer", "integer", "text", "text", "blob", "blob", "real", "numeric"]
    assert [postgres_type(t) for t in ("bigint", "citext", "bytea", "double precision", "boolean", "integer",
                                       "character varying(40)", "text")] == [
        "integer", "text nocase", "blob", "real", "boolean", "integer (32-bit)", "text (40 characters at most)", "text"]
    assert normalise_expression("((status <> 'PASSED'::text) OR (passed_on_retry = 1))") == \
        normalise_expression("status != 'PASSED' OR passed_on_retry = 1")


# --- the two series pair up (tms/db/migrations.py) ------------------------------------------------
# SQLite migrations with no PostgreSQL counterpart on purpose, and why (none so far: FTS5 changes
# have had one too, since PostgreSQL's search column follows the same fields).
SQLITE_ONLY: dict[int, str] = {}


def test_every_migration_after_the_baseline_has_its_counterpart() -> None:
    from tms.db.migrations import POSTGRES_BASELINE_OF, migration_files, sqlite_counterparts

    sqlite = {version for version, _, _ in migration_files("sqlite")}
    pairs = sqlite_counterparts()
    headers = {version: sql.split("\n", 1)[0] for version, _, sql in migration_files("postgres")}
    unnamed = [f"postgres/{v:04d}: names no SQLite migration and does not say 'PostgreSQL only'"
               for v, named in pairs.items() if not named and "PostgreSQL only" not in headers[v]]
    unknown = [f"postgres/{v:04d}: names SQLite {n:04d}, which does not exist"
               for v, named in pairs.items() for n in named if n not in sqlite]
    claimed: dict[int, list[int]] = {}
    for version, named in pairs.items():
        for number in named:
            claimed.setdefault(number, []).append(version)
    unpaired = [f"SQLite {n:04d}: no PostgreSQL migration names it" for n in sorted(sqlite)
                if n > POSTGRES_BASELINE_OF and n not in claimed and n not in SQLITE_ONLY]
    doubled = [f"SQLite {n:04d}: named by postgres/{', '.join(f'{v:04d}' for v in vs)}"
               for n, vs in sorted(claimed.items()) if len(vs) > 1]
    problems = unnamed + unknown + unpaired + doubled
    assert not problems, "\n".join(problems)
