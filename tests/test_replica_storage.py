"""Issue 28: with PostgreSQL and S3 a replica needs no shared and no persistent local directory.

Three `tms serve` replicas, each with its own EMPTY data dir, on one PostgreSQL database and one S3
bucket (moto on loopback): each serves the attachments (a result's and a case's) and confirms the
import previews the others took in, and none of them writes a file into its data dir. PostgreSQL only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import postgres_cluster
from tests.conftest import ServerProcess, make_tenant_on
from tests.s3_server import S3Server
from tests.test_attachments import PNG
from tests.test_case_import import csv_of
from tests.web_helpers import HTML, flashes, follow

pytestmark = pytest.mark.skipif(not postgres_cluster.selected(), reason="replicas share a PostgreSQL database")


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = S3Server(tmp_path_factory.mktemp("moto") / "moto.log").start()
    yield server
    server.stop()


@pytest.fixture
def replicas(tmp_path_factory: pytest.TempPathFactory, s3: S3Server) -> Iterator[list[ServerProcess]]:
    first = tmp_path_factory.mktemp("replica")
    env = {**s3.env(s3.new_bucket()), "TMS_STORAGE_DATABASE_URL": postgres_cluster.database_url_for(first)}
    started: list[ServerProcess] = []
    try:
        for n in range(3):
            data_dir = first if n == 0 else tmp_path_factory.mktemp("replica")
            started.append(ServerProcess(data_dir, dict(env)).start())
        yield started
    finally:
        for server in started:
            server.stop()


def files_in(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def on(server: ServerProcess, signed_in: httpx.Client) -> httpx.Client:
    """The same browser session, talking to another replica."""
    return httpx.Client(base_url=server.url, cookies=signed_in.cookies, headers=dict(signed_in.headers), timeout=30)


def test_three_replicas_with_empty_data_dirs_serve_each_others_files_and_previews(
    replicas: list[ServerProcess],
) -> None:
    assert len({server.data_dir for server in replicas}) == 3
    tenant = make_tenant_on(replicas[0])
    project = tenant.create_project("Spread")
    api = [httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {tenant.write_token}"}, timeout=30)
           for s in replicas]
    case = api[0].post("/api/v1/cases", json={"title": "Pay", "project_id": project["id"],
                                              "bdd_content": "Feature: F\n  Scenario: S\n    Given x\n"}).json()["data"]
    run_id = api[0].post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"test_case_code": case["code"], "status": "FAILED"}]}).json()["run_id"]
    result = api[0].get(f"/api/v1/runs/{run_id}/results").json()["data"][0]

    # a result's attachment through replica 1, a case's through replica 2; each served by the others
    shot = api[1].post(f"/api/v1/results/{result['id']}/attachments", files={"file": ("shot.png", PNG, "image/png")})
    assert shot.status_code == 201, shot.text
    spec = api[2].post(f"/api/v1/cases/{case['code']}/attachments",
                       files={"file": ("spec.txt", b"the spec\n", "text/plain")})
    assert spec.status_code == 201, spec.text
    for client in api:
        assert client.get(f"/api/v1/attachments/{shot.json()['data'][0]['id']}").content == PNG
        assert client.get(f"/api/v1/attachments/{spec.json()['data'][0]['id']}").content == b"the spec\n"
        listed = client.get(f"/api/v1/cases/{case['id']}/attachments").json()["data"]
        assert [a["fileName"] for a in listed] == ["spec.txt"]

    # an import previewed on replica 0 is confirmed on replica 1, once
    web = tenant.web()
    data = csv_of(["", "Imported case", "", "", "", "", "", "", "", "", "Feature: F\n  Scenario: S\n    Given y\n"])
    preview = web.post("/cases/import", data={"project_id": project["id"], "format": "csv"},
                       files={"file": ("cases.csv", data.encode(), "text/csv")}, headers=HTML)
    assert preview.status_code == 200, preview.text[:300]
    token = preview.text.split('name="token" value="')[1].split('"')[0]
    with on(replicas[1], web) as other:
        confirmed = follow(other, other.post("/cases/import/confirm", data={"token": token}))
        assert "1 created" in " ".join(flashes(confirmed.text)), confirmed.text[:500]
    with on(replicas[2], web) as third:
        again = follow(third, third.post("/cases/import/confirm", data={"token": token}))
        assert "expired" in " ".join(flashes(again.text))
    assert api[2].get("/api/v1/cases", params={"q": "Imported"}).json()["pagination"]["total"] == 1

    # nothing of it on any replica's disk
    for server in replicas:
        assert files_in(server.data_dir) == [], server.data_dir


def test_a_postgresql_replica_without_auth_secret_key_does_not_start(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {"TMS_AUTH_SECRET_KEY": ""})
    with pytest.raises(RuntimeError) as failed:
        server.start(timeout=30)
    assert "auth.secret_key: required with storage.database_url" in str(failed.value)
    assert server.process is not None and server.process.returncode == 2
    assert not (tmp_path / "data" / "secret.key").exists()
