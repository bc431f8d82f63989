"""Numbered migration files, one series per backend: ``tms/migrations/NNNN_name.sql`` for SQLite
(the history since the first release) and ``tms/migrations/postgres/NNNN_name.sql`` for PostgreSQL
(which starts from a baseline of the schema SQLite had reached when the backend was added).

The two series are numbered apart, and stay so: a database records the numbers it applied, so
renumbering would re-run or skip migrations on existing databases. PostgreSQL's 0001 is SQLite's
0001-0022 (there is no 0006 or 0011); after it, each PostgreSQL file names its SQLite counterpart in
its leading comment ("-- SQLite 0025: …") or says it is "PostgreSQL only" (``sqlite_counterparts``
reads them; tests/test_schema_agreement.py checks that every SQLite migration after the baseline has
exactly one counterpart).
The pairs so far (docs/DEVELOPING.md, "Database API", has the same table):

    PostgreSQL                    SQLite
    0001_baseline                 0001-0022
    0002_delivery_leases          0025_delivery_leases
    0003_failure_speed            0024_failure_speed
    0004_library_facets           0023_library_facets
    0005_result_foreign_keys      (PostgreSQL only: the results tables' keys become a trigger)
    0006_trust                    0026_trust
    0007_result_source            0027_result_source
    0008_two_factor               0028_two_factor
    0009_oidc                     0029_oidc
    0010_ldap_scim                0030_ldap_scim
    0011_custom_fields            0031_custom_fields
    0012_object_storage           0032_object_storage
    0013_marks_by_source          0033_marks_by_source
    0014_bigint_counts            (PostgreSQL only: results_manual as BIGINT, like the other counts)
    0015_tracker_out              0035_tracker_out
    0016_bigint_flags             (PostgreSQL only: two 0/1 flags of 0008 and 0012 as BIGINT)
    0023_ldap_bind_password_sealed  0042_ldap_bind_password_sealed
    0018_comments                 0037_comments
    0017_shared_steps             0036_shared_steps
    0020_result_fields            0039_result_fields
    0021_report_schedules         0040_report_schedules
    0022_case_attachments         0041_case_attachments
    0019_case_review              0038_case_review
    0024_field_values_project     0043_field_values_project
    0025_retention_and_version_steps 0044_retention_and_version_steps
"""

from __future__ import annotations

import re
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


# postgres/0001_baseline.sql is the schema of SQLite 0001 to this one
POSTGRES_BASELINE_OF = 22
_COUNTERPART = re.compile(r"\bSQLite:?\s+(\d{4})(?!\d)")


def sqlite_counterparts() -> dict[int, tuple[int, ...]]:
    """For each PostgreSQL migration, the SQLite migrations it corresponds to: the numbers its leading
    comment names after "SQLite" ("-- SQLite 0025: …", "-- SQLite: 0030_ldap_scim.sql …"); () for a
    PostgreSQL-only one (or one that names none: the test of the series reports it)."""
    baseline = tuple(v for v, _, _ in migration_files("sqlite") if v <= POSTGRES_BASELINE_OF)
    pairs = {}
    for version, _name, sql in migration_files("postgres"):
        if version == 1:
            pairs[version] = baseline
            continue
        header = []
        for line in sql.splitlines():
            if not line.startswith("--"):
                break
            header.append(line)
        pairs[version] = tuple(dict.fromkeys(int(n) for n in _COUNTERPART.findall("\n".join(header))))
    return pairs


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
