"""Three `tms serve` replicas on one PostgreSQL database and one data dir (issue 17).

They run in the PostgreSQL half of the suite (``TMS_TEST_DATABASE=postgres``); on SQLite a second
process on the same data dir refuses to start (tests/test_operations.py).
"""

from __future__ import annotations

import concurrent.futures
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import postgres_cluster
from tests.conftest import ServerProcess, Tenant, make_tenant_on, run_admin
from tests.webhook_receiver import Receiver
from tms.team.tokens import service as token_service

pytestmark = pytest.mark.skipif(not postgres_cluster.selected(), reason="replicas share a PostgreSQL database")

REPLICA_ENV = {
    "TMS_WEBHOOKS_BACKOFF_SECONDS": "0.2",
    "TMS_WEBHOOKS_TIMEOUT_SECONDS": "1",
}


@pytest.fixture
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ServerProcess]]:
    data_dir = tmp_path_factory.mktemp("replicated")
    started: list[ServerProcess] = []
    try:
        for _ in range(3):
            started.append(ServerProcess(data_dir, dict(REPLICA_ENV)).start())
        yield started
    finally:
        for server in started:
            server.stop()


def _client(server: ServerProcess, token: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _ingest_body(project_id: str, job: int, results: int) -> dict[str, object]:
    return {
        "project_id": project_id,
        "run_name": f"CI job {job}",
        "results": [
            {"title": f"job {job} test {n}", "status": "FAILED" if n % 50 == 0 else "PASSED",
             **({"error_message": f"boom {n % 3}"} if n % 50 == 0 else {})}
            for n in range(results)
        ],
    }


def test_three_replicas_take_concurrent_ingests_without_losing_or_doubling_a_row(
    replicas: list[ServerProcess],
) -> None:
    tenant = make_tenant_on(replicas[0])
    project = tenant.create_project("Replicated")
    jobs, per_job = 24, 400

    def ingest(job: int) -> int:
        with _client(replicas[job % 3], tenant.write_token) as client:
            response = client.post("/api/v1/ingest", json=_ingest_body(project["id"], job, per_job))
            return response.status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:  # 8 concurrent CI clients
        statuses = list(pool.map(ingest, range(jobs)))
    assert statuses == [201] * jobs
    # every replica sees every run and every row, exactly once
    for server in replicas:
        with _client(server, tenant.read_token) as client:
            runs = client.get("/api/v1/runs", params={"project_id": project["id"], "limit": 100}).json()
            assert runs["pagination"]["total"] == jobs
            names = sorted(run["name"] for run in runs["data"])
            assert names == sorted(f"CI job {job}" for job in range(jobs))
            assert [run["counts"]["total"] for run in runs["data"]] == [per_job] * jobs
    with _client(replicas[1], tenant.read_token) as client:
        run_id = runs["data"][0]["id"]
        results = client.get(f"/api/v1/runs/{run_id}/results", params={"limit": 500}).json()
        assert results["pagination"]["total"] == per_job
        assert len({row["title"] for row in results["data"]}) == per_job


def _subscribe(server: ServerProcess, tenant: Tenant, url: str) -> str:
    web = tenant.web()
    web.base_url = httpx.URL(server.url)
    response = web.post("/api/webhooks", json={"url": url, "events": ["test_run.completed"]})
    assert response.status_code == 201, response.text
    return str(response.json()["data"]["id"])


def _ingest_small_runs(replicas: list[ServerProcess], tenant: Tenant, project_id: str, count: int) -> None:
    def ingest(job: int) -> None:
        with _client(replicas[job % len(replicas)], tenant.write_token) as client:
            response = client.post("/api/v1/ingest", json=_ingest_body(project_id, job, 3))
            assert response.status_code == 201, response.text

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        list(pool.map(ingest, range(count)))


def _delivered_runs(receiver: Receiver) -> list[str]:
    return [json.loads(request.body)["data"]["run_id"] for request in receiver.requests]


def _wait_until(condition: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("condition not reached")


def test_every_event_is_delivered_once_by_exactly_one_of_the_healthy_replicas(replicas: list[ServerProcess]) -> None:
    receiver = Receiver()
    try:
        tenant = make_tenant_on(replicas[0])
        project = tenant.create_project("Hooks")
        _subscribe(replicas[0], tenant, receiver.url)
        _ingest_small_runs(replicas, tenant, project["id"], 30)
        receiver.wait_for(30, timeout=60)
        time.sleep(2)  # room for a second copy to arrive, were one sent
        delivered = _delivered_runs(receiver)
        assert len(delivered) == 30 and len(set(delivered)) == 30
        ids = [request.header("x-service-delivery") for request in receiver.requests]
        assert len(set(ids)) == 30
    finally:
        receiver.stop()


def test_a_replica_killed_during_deliveries_loses_no_event(replicas: list[ServerProcess]) -> None:
    # the receiver hangs on the first requests, so deliveries are in flight when the replica dies
    receiver = Receiver(script=["hang"] * 6)
    try:
        tenant = make_tenant_on(replicas[0])
        project = tenant.create_project("Killed")
        _subscribe(replicas[0], tenant, receiver.url)
        _ingest_small_runs(replicas, tenant, project["id"], 24)
        _wait_until(lambda: len(receiver.requests) >= 3, 30)
        replicas[0].kill()  # SIGKILL: no shutdown, its leases simply run out
        expected = set()
        with _client(replicas[1], tenant.read_token) as client:
            runs = client.get("/api/v1/runs", params={"project_id": project["id"], "limit": 100}).json()["data"]
            expected = {run["id"] for run in runs}
        assert len(expected) == 24
        _wait_until(lambda: expected <= set(_delivered_runs(receiver)), 90)
    finally:
        receiver.stop()


def test_a_token_revoked_on_one_replica_is_refused_by_the_others_within_a_second(
    replicas: list[ServerProcess],
) -> None:
    tenant = make_tenant_on(replicas[0])
    for server in replicas:  # every replica has the token verified and cached
        with _client(server, tenant.read_token) as client:
            assert client.get("/api/v1/me").status_code == 200
    listed = run_admin(replicas[0].db_path, lambda db: token_service.list_tokens(db, tenant.id))
    reporting = next(row for row in listed if row["name"] == "reporting")
    web = tenant.web()  # signed in on replica 0 (the tenant's server), revoking in its web UI
    revoked = web.post(f"/settings/tokens/{reporting['id']}/revoke")
    assert revoked.status_code == 303, revoked.text
    started = time.monotonic()
    for server in replicas[1:]:
        with _client(server, tenant.read_token) as client:
            _wait_until(lambda client=client: client.get("/api/v1/me").status_code == 401, 1.0)
    assert time.monotonic() - started < 2.0


def test_attachments_written_through_one_replica_are_served_by_the_others(
    replicas: list[ServerProcess], tmp_path: Path
) -> None:
    tenant = make_tenant_on(replicas[0])
    project = tenant.create_project("Files")
    with _client(replicas[0], tenant.write_token) as client:
        run_id = client.post("/api/v1/ingest", json=_ingest_body(project["id"], 1, 1)).json()["run_id"]
    with _client(replicas[0], tenant.read_token) as client:
        result = client.get(f"/api/v1/runs/{run_id}/results").json()["data"][0]
    with _client(replicas[1], tenant.write_token) as client:
        uploaded = client.post(f"/api/v1/results/{result['id']}/attachments",
                               files={"file": ("log.txt", b"replicated log\n", "text/plain")})
        assert uploaded.status_code == 201, uploaded.text
        [attachment] = uploaded.json()["data"]
    with _client(replicas[2], tenant.read_token) as client:
        download = client.get(f"/api/v1/attachments/{attachment['id']}")
        assert download.status_code == 200
        assert download.content == b"replicated log\n"
