"""Bodies of /api/v1/users and /api/v1/audit."""

from __future__ import annotations

from typing import Any

import msgspec

from tms.library.cases.models import Pagination


class User(msgspec.Struct):
    id: str
    email: str
    name: str
    role: str
    active: bool
    created_at: str


class UserList(msgspec.Struct):
    data: list[User]


class AuditActor(msgspec.Struct):
    type: str
    id: str | None
    name: str


class AuditEntry(msgspec.Struct):
    id: str
    actor: AuditActor
    action: str
    entity_type: str
    entity_id: str | None
    changes: Any
    created_at: str


class AuditList(msgspec.Struct):
    data: list[AuditEntry]
    pagination: Pagination
