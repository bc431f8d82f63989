from __future__ import annotations

import msgspec


class TenantInfo(msgspec.Struct):
    id: str
    name: str
    status: str


class AiInfo(msgspec.Struct):
    provider: str
    model: str
    quota_exhausted: bool


class Me(msgspec.Struct):
    tenant: TenantInfo
    scopes: list[str]
    ai: AiInfo
