"""Answers of the case import (POST /api/v1/cases/import)."""

from __future__ import annotations

import msgspec


class RowError(msgspec.Struct):
    row: int  # CSV: the record's number with the header as row 1; TestRail XML: the case's position in the file
    error: str


class ImportAnswer(msgspec.Struct):
    created: int
    updated: int
    rejected: int
    errors: list[RowError]
    unchanged: int = 0
    sections_created: int = 0
    dry_run: bool = False
