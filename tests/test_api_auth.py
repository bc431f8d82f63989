"""Bearer authentication, scopes and /api/v1/me, driven over HTTP against the real server."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from tests import postgres_cluster
from tests.conftest import ServerProcess, Tenant, assert_problem, run_admin, storage_env


def test_me_reports_tenant_scopes_and_ai(tenant: Tenant) -> None:
    response = tenant.client("read").get("/api/v1/me")
    assert response.status_code == 200
    body = response.json()
    assert body["tenant"] == {"id": tenant.id, "name": tenant.name, "status": "ACTIVE"}
    assert body["scopes"] == ["read"]
    assert body["ai"] == {"provider": "none", "model": "", "quota_exhausted": False}
    assert tenant.client("write").get("/api/v1/me").json()["scopes"] == ["read", "write"]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "Bearer svc_short_x",
        "Bearer svc_abcdefgh_" + "A" * 40,  # well-formed, unknown
        "Bearer not-a-token",
    ],
)
def test_missing_malformed_or_unknown_token_is_401(server, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    response = httpx.get(f"{server.url}/api/v1/me", headers=headers)
    body = assert_problem(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert body["detail"]


def test_tampered_secret_is_401(tenant: Tenant) -> None:
    tampered = tenant.read_token[:-1] + ("A" if tenant.read_token[-1] != "A" else "B")
    response = httpx.get(f"{tenant.server.url}/api/v1/me", headers={"Authorization": f"Bearer {tampered}"})
    assert_problem(response, 401)


def test_read_token_on_write_route_is_403(tenant: Tenant) -> None:
    response = tenant.client("read").post("/api/v1/projects", json={"name": "x"})
    body = assert_problem(response, 403)
    assert "write" in body["detail"]


def test_write_only_token_cannot_read(tenant: Tenant) -> None:
    from tms.team.tokens import service as tokens

    new = run_admin(tenant.server.db_path, lambda db: tokens.create_token(db, tenant.id, "w", "write"))
    client = httpx.Client(base_url=tenant.server.url, headers={"Authorization": f"Bearer {new.token}"})
    assert_problem(client.get("/api/v1/projects"), 403)
    assert client.get("/api/v1/me").status_code == 200
    assert client.post("/api/v1/projects", json={"name": "ok"}).status_code == 201


def test_revoked_token_stops_working_on_next_request(tenant: Tenant) -> None:
    from tms.team.tokens import service as tokens

    client = tenant.client("read")
    assert client.get("/api/v1/me").status_code == 200
    token_id = run_admin(tenant.server.db_path, lambda db: tokens.list_tokens(db, tenant.id))
    reporting = next(t for t in token_id if t["name"] == "reporting")
    run_admin(tenant.server.db_path, lambda db: tokens.revoke_token(db, tenant.id, reporting["id"]))
    assert_problem(client.get("/api/v1/me"), 401)
    assert tenant.client("write").get("/api/v1/me").status_code == 200


def test_suspended_tenant_tokens_are_401_until_reactivated(tenant: Tenant) -> None:
    from tests.test_config_cli import tms

    env = storage_env(tenant.server.data_dir)
    assert tenant.api.get("/api/v1/me").status_code == 200  # now cached as verified
    cwd = tenant.server.data_dir.parent

    def set_status(status: str) -> int:
        return tms("admin", "set-tenant-status", "--tenant", tenant.id, "--status", status, cwd=cwd, env=env).returncode

    assert set_status("SUSPENDED") == 0
    assert_problem(tenant.api.get("/api/v1/me"), 401)
    client = httpx.Client(base_url=tenant.server.url)
    client.get("/login")
    login = client.post("/login", data={"email": tenant.email, "password": tenant.password,
                                        "_csrf_token": client.cookies["csrftoken"]})
    assert login.status_code == 400
    assert set_status("ACTIVE") == 0
    assert tenant.api.get("/api/v1/me").status_code == 200


def test_token_format_matches_contract(tenant: Tenant) -> None:
    import re

    assert re.fullmatch(r"svc_[a-z0-9]{8}_[A-Za-z0-9]{32,}", tenant.write_token)


def _database_bytes(server: ServerProcess) -> bytes:
    """Everything the database holds: the SQLite file and its WAL, or a pg_dump of the PostgreSQL one."""
    if postgres_cluster.selected():
        dump = subprocess.run([postgres_cluster.binary("pg_dump"), "--data-only", server.database_url],
                              capture_output=True, check=True)
        return dump.stdout
    wal = server.db_path.with_name("tms.db-wal")
    return server.db_path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_token_secret_is_not_stored_in_clear(tenant: Tenant) -> None:
    blob = _database_bytes(tenant.server)
    assert tenant.id.encode() in blob  # the dump holds the tenant's rows: the check below can fail
    secret = tenant.write_token.rsplit("_", 1)[1]
    assert secret.encode() not in blob


def test_openapi_documents_bearer_scheme_and_scopes(server) -> None:
    schema = httpx.get(f"{server.url}/schema/openapi.json").json()
    assert schema["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"
    assert schema["paths"]["/api/v1/projects"]["post"]["security"] == [{"BearerToken": ["write"]}]
    assert schema["paths"]["/api/v1/projects"]["get"]["security"] == [{"BearerToken": ["read"]}]
    for path, item in schema["paths"].items():
        if path.startswith("/api/v1"):
            for operation in item.values():
                assert operation.get("security"), f"{path} has no security requirement"
    page = httpx.get(f"{server.url}/schema")
    assert page.status_code == 200
    assert "cdn" not in page.text.lower() and "<script" not in page.text.lower()
