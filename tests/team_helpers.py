"""Members of a test tenant with a given role, and web clients signed in as them."""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass

import httpx

from tests.conftest import Tenant

_numbers = itertools.count(1)


@dataclass
class Member:
    id: str
    email: str
    password: str
    role: str


def add_member(tenant: Tenant, role: str) -> Member:
    from tms.team import accounts

    email = f"{role}{next(_numbers)}-{os.getpid()}-{time.time_ns()}@example.com"
    password = "member password 1"

    async def create(db: object) -> str:
        return await accounts.create_user(db, tenant.id, email, password, role)  # type: ignore[arg-type]

    return Member(tenant.server.run_admin(create), email, password, role)


def web_as(tenant: Tenant, email: str, password: str) -> httpx.Client:
    client = tenant.server.http_client(timeout=30, follow_redirects=False)
    client.get("/login")
    token = client.cookies.get("csrftoken") or ""
    response = client.post("/login", data={"email": email, "password": password, "_csrf_token": token})
    assert response.status_code == 303, response.text
    client.headers["x-csrftoken"] = token
    return client


def owner_id(tenant: Tenant) -> str:
    users = tenant.api.get("/api/v1/users").json()["data"]
    return next(u["id"] for u in users if u["role"] == "owner")
