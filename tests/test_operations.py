"""Operations: /healthz, /readyz, /metrics, one serve per SQLite data dir, backup, and run retention."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from tests.conftest import ROOT, ServerProcess, Tenant, connect_db, make_tenant_on, run_admin, storage_env
from tests.test_attachments import PNG, upload


def test_health_and_readiness_answer_without_auth(server: ServerProcess, tenant: Tenant) -> None:
    import httpx

    for path in ("/healthz", "/readyz"):
        response = httpx.get(server.url + path)
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}


def test_readyz_is_503_while_a_migration_is_not_applied(start_app, tmp_path: Path) -> None:
    srv = start_app()  # in-process (tests/inprocess.py): a database of its own, no process needed
    with connect_db(srv.db_path) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM schema_migrations)")
    response = srv.http_client().get("/readyz")
    assert response.status_code == 503
    assert "migrations not applied" in response.json()["detail"]
    assert srv.http_client().get("/healthz").status_code == 200  # alive, just not ready


def test_metrics_on_loopback_count_requests_and_show_the_outbox(server: ServerProcess, tenant: Tenant) -> None:
    import httpx

    project = tenant.create_project()
    tenant.api.get(f"/api/v1/runs?project_id={project['id']}")
    response = httpx.get(server.url + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'tms_requests_total{' in text
    assert 'path="/api/v1/runs"' in text  # grouped by route template, never by id
    assert "tms_outbox_backlog " in text
    assert "tms_request_duration_seconds_bucket" in text


def _ingested_total(server: ServerProcess) -> float:
    import httpx

    for line in httpx.get(server.url + "/metrics").text.splitlines():
        if line.startswith("tms_ingested_results_total "):
            return float(line.split()[1])
    raise AssertionError("tms_ingested_results_total missing")


def test_metrics_count_ingested_results(server: ServerProcess, tenant: Tenant) -> None:
    project = tenant.create_project()
    before = _ingested_total(server)
    response = tenant.api.post("/api/v1/ingest", json={"project_id": project["id"], "results": [
        {"title": "one", "status": "PASSED"}, {"title": "two", "status": "FAILED"}]})
    assert response.status_code == 201, response.text
    assert _ingested_total(server) == before + 2


def _in_process_client(env: dict[str, str], tmp_path: Path) -> TestClient:
    from litestar.exceptions import LitestarDeprecationWarning

    from tms.app import create_app
    from tms.config import load_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LitestarDeprecationWarning)
        app = create_app(load_config(None, {**storage_env(tmp_path), **env}))
    return TestClient(app)  # its client address is not loopback


def test_metrics_need_the_metrics_token_off_loopback(tmp_path: Path) -> None:
    with _in_process_client({"TMS_SERVER_METRICS_TOKEN": "s3cret-scrape"}, tmp_path) as client:
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape"}).status_code == 200


def test_metrics_without_a_token_configured_are_loopback_only(tmp_path: Path) -> None:
    with _in_process_client({}, tmp_path) as client:
        assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 401


@pytest.mark.sqlite_only("on PostgreSQL replicas share the data dir on purpose")
def test_a_second_serve_on_the_same_data_dir_refuses_to_start(server: ServerProcess) -> None:
    env = {"TMS_STORAGE_DATA_DIR": str(server.data_dir), "TMS_SERVER_PORT": "0", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "tms", "serve"], env=env, capture_output=True, text=True,
                            timeout=30, cwd=ROOT)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "another tms serve already uses the data dir" in lines[0]


@pytest.mark.sqlite_only("SQLite's online backup; PostgreSQL is backed up with pg_dump")
def test_backup_while_serving_is_a_consistent_copy(server: ServerProcess, tenant: Tenant, tmp_path: Path) -> None:
    project = tenant.create_project("Backed up")
    target = tmp_path / "copy.db"
    env = {"TMS_STORAGE_DATA_DIR": str(server.data_dir), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "tms", "admin", "backup", str(target)], env=env,
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "backed up" in result.stdout
    with sqlite3.connect(target) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT name FROM projects WHERE id = ?", (project["id"],)).fetchone() == ("Backed up",)
    assert not Path(str(target) + "-wal").exists()


@pytest.mark.sqlite_only("SQLite's online backup; PostgreSQL is backed up with pg_dump")
def test_backup_of_a_missing_database_fails_with_one_line(tmp_path: Path) -> None:
    env = {"TMS_STORAGE_DATA_DIR": str(tmp_path / "nothing"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "tms", "admin", "backup", str(tmp_path / "x.db")], env=env,
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 1
    assert result.stderr.startswith("tms: backup failed: no database at")
    assert not (tmp_path / "x.db").exists()


def _ingest_with_attachment(tenant: Tenant, project_id: str, name: str) -> tuple[str, str]:
    response = tenant.api.post("/api/v1/ingest", json={
        "project_id": project_id, "run_name": name,
        "results": [{"title": f"{name} unlinked", "status": "FAILED"}],
    })
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    result_id = tenant.api.get(f"/api/v1/runs/{run_id}/results").json()["data"][0]["id"]
    # bytes of its own: identical files are stored once per tenant (content-addressed objects)
    assert upload(tenant.api, result_id, ("shot.png", PNG + name.encode(), "image/png")).status_code == 201
    return run_id, result_id


def _stored_files(srv: ServerProcess) -> set[Path]:
    """The attachments' objects on disk (``<tenant>/<sha256>`` under data_dir/attachments), without
    the folder where uploads are written before they are published."""
    root = srv.data_dir / "attachments"
    return {path for path in root.rglob("*") if path.is_file() and "incoming" not in path.relative_to(root).parts}


def test_runs_older_than_runs_days_go_with_their_results_and_files(start_app) -> None:
    srv = start_app(env={"TMS_RETENTION_RUNS_DAYS": "10"})
    tenant = make_tenant_on(srv)
    project = tenant.create_project()
    old_run, _ = _ingest_with_attachment(tenant, project["id"], "old")
    new_run, _ = _ingest_with_attachment(tenant, project["id"], "new")
    files_before = _stored_files(srv)
    assert len(files_before) == 2
    counter = "SELECT unlinked_results FROM project_counters WHERE project_id = ?"
    with connect_db(srv.db_path) as conn:
        assert conn.execute(counter, (project["id"],)).fetchone() == (2,)
    with connect_db(srv.db_path) as conn:  # age the first run, as eleven days would
        conn.execute("UPDATE test_runs SET created_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", (old_run,))

    from tms.config import load_config
    from tms.runs.retention import service as retention

    config = load_config(None, {**storage_env(srv.data_dir), "TMS_RETENTION_RUNS_DAYS": "10"})
    from tms.attachments.collection import settle_pending
    from tms.attachments.objects import store_for

    async def sweep(db: Any) -> int:
        removed = await retention.sweep_old_runs(db, store_for(config), 10)
        await settle_pending()  # the objects go after commit, in the background of this event loop
        return removed

    removed = run_admin(srv.db_path, sweep)

    assert removed == 1
    assert tenant.api.get(f"/api/v1/runs/{old_run}").status_code == 404
    assert tenant.api.get(f"/api/v1/runs/{new_run}").status_code == 200
    files_after = _stored_files(srv)
    assert len(files_after) == 1 and files_after < files_before
    with connect_db(srv.db_path) as conn:
        left = conn.execute("SELECT COUNT(*) FROM unlinked_test_results WHERE run_id = ?", (old_run,)).fetchone()
        assert left == (0,)
        assert conn.execute("SELECT COUNT(*) FROM attachments").fetchone() == (1,)
        assert conn.execute(counter, (project["id"],)).fetchone() == (1,)  # the dashboard's figure follows


@pytest.mark.sqlite_only("the write-ahead log is SQLite's; PostgreSQL checkpoints on its own")
def test_the_wal_is_folded_back_in_the_background_not_by_the_committing_writer(tmp_path: Path) -> None:
    """100 commits of ~1 MB each: the writer alone would let the WAL grow to its fallback (80 MB) before
    folding it back; the background checkpoints keep it to a few commits' worth."""
    import asyncio

    from tms.db.sqlite import WAL_FALLBACK_PAGES, SqliteDatabase

    path = tmp_path / "tms.db"
    largest = 0

    async def write() -> None:
        nonlocal largest
        db = SqliteDatabase(path, readers=1)
        await db.open()
        try:
            for number in range(100):
                async with db.transaction() as tx:
                    await tx.execute("INSERT INTO instance_settings (key, value) VALUES (?, ?)",
                                     (f"filler-{number}", "x" * 1_000_000))
                await asyncio.sleep(0.02)  # the gap between two requests
                largest = max(largest, (tmp_path / "tms.db-wal").stat().st_size)
        finally:
            await db.close()

    asyncio.run(write())
    assert largest < 20 * 1024 * 1024 < WAL_FALLBACK_PAGES * 4096
    with sqlite3.connect(path) as conn:  # and nothing was lost on the way
        assert conn.execute("SELECT COUNT(*) FROM instance_settings WHERE key LIKE 'filler-%'").fetchone() == (100,)
