"""Retention of unlinked results: POST /api/v1/admin/sweep per tenant, and the server's daily sweep."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tests import postgres_cluster
from tests.conftest import ServerProcess, Tenant, assert_problem, connect_db, make_tenant_on, run_admin, storage_env
from tests.test_cases import new_case
from tests.test_ingest import ingest, results_of
from tms.attachments.objects import LocalStore, store_for
from tms.ids import iso

IN_PROCESS = True  # tests/inprocess.py; a test that needs settings or a database of its own takes start_app


def report(tenant: Tenant, unlinked: int, linked: list[str] = ()) -> str:  # type: ignore[assignment]
    project = tenant.create_project()
    items = [{"title": f"t{i}", "status": "PASSED"} for i in range(unlinked)]
    items += [{"test_case_code": code, "status": "FAILED"} for code in linked]
    response = ingest(tenant, {"project_id": project["id"], "results": items})
    assert response.status_code == 201, response.text
    return response.json()["run_id"]  # type: ignore[no-any-return]


def age_unlinked_rows(tenant: Tenant, run_id: str, days: int, count: int | None = None) -> None:
    """Moves the creation time of (some of) a run's unlinked rows into the past, as time would."""
    with connect_db(tenant.server.db_path) as conn:
        conn.execute(
            "UPDATE unlinked_test_results SET created_at = ? "
            "WHERE rowid IN (SELECT rowid FROM unlinked_test_results WHERE run_id = ? ORDER BY rowid LIMIT ?)",
            (iso(datetime.now(UTC) - timedelta(days=days)), run_id, 10**9 if count is None else count),
        )


def sweep(tenant: Tenant) -> Any:
    response = tenant.api.post("/api/v1/admin/sweep")
    assert response.status_code == 200, response.text
    return response.json()


def test_sweep_removes_only_old_unlinked_rows_of_the_callers_tenant(tenant: Tenant, other_tenant: Tenant) -> None:
    case = new_case(tenant)
    run_id = report(tenant, unlinked=10, linked=[case["code"]])
    age_unlinked_rows(tenant, run_id, days=29, count=6)  # rows 5-6 stay 29 days old: kept
    age_unlinked_rows(tenant, run_id, days=31, count=4)  # rows 1-4: past the 30 days
    foreign_run = report(other_tenant, unlinked=3)
    age_unlinked_rows(other_tenant, foreign_run, days=90)

    assert sweep(tenant) == {"data": {"deleted": 4}}
    rows = results_of(tenant, run_id)
    assert len(rows) == 7 and rows[0]["test_case_code"] == case["code"]  # linked results are never swept
    assert sweep(tenant) == {"data": {"deleted": 0}}
    assert len(results_of(other_tenant, foreign_run)) == 3  # the other tenant is untouched
    # the run keeps its summary as reported
    assert tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]["counts"]["total"] == 11


def test_sweep_needs_write_scope(tenant: Tenant) -> None:
    assert_problem(tenant.client("read").post("/api/v1/admin/sweep"), 403)
    assert_problem(tenant.api.get("/api/v1/admin/sweep"), 405)


def test_zero_days_sweeps_everything_existing(start_app: Callable[..., ServerProcess]) -> None:
    server = start_app(env={"TMS_RETENTION_UNLINKED_DAYS": "0"})
    tenant = make_tenant_on(server)
    run_id = report(tenant, unlinked=12)
    project_id = tenant.api.get(f"/api/v1/runs/{run_id}").json()["data"]["project_id"]
    assert _unlinked_on_dashboard(tenant, project_id) == "12"
    assert sweep(tenant) == {"data": {"deleted": 12}}
    assert results_of(tenant, run_id) == []
    # the dashboard reads a counter kept at write time: the sweep keeps it right
    assert _unlinked_on_dashboard(tenant, project_id) == "0"


def _unlinked_on_dashboard(tenant: Tenant, project_id: str) -> str:
    import re

    page = tenant.web().get(f"/?project_id={project_id}").text
    match = re.search(r'id="unlinked"><span class="value">([^<]*)</span>', page)
    assert match, "the dashboard shows no unlinked figure"
    return match.group(1)


def test_daily_sweep_covers_every_tenant(start_app: Callable[..., ServerProcess]) -> None:
    from tms.config import Config
    from tms.runs.retention import service as retention

    server = start_app()
    first, second = make_tenant_on(server), make_tenant_on(server)
    old_first, old_second = report(first, unlinked=5), report(second, unlinked=6)
    fresh = report(first, unlinked=2)
    age_unlinked_rows(first, old_first, days=40)
    age_unlinked_rows(second, old_second, days=40)

    config = Config(values={"retention.unlinked_days": 30, "retention.runs_days": 0})
    store = LocalStore(server.data_dir / "attachments")
    deleted = run_admin(server.db_path, lambda db: retention.sweep_all(db, config, store))
    assert deleted == 11
    assert results_of(first, old_first) == [] and results_of(second, old_second) == []
    assert len(results_of(first, fresh)) == 2


def test_sweep_deletes_in_batches(tenant: Tenant, monkeypatch: Any) -> None:
    from tms.runs.retention import service as retention

    run_id = report(tenant, unlinked=25)
    age_unlinked_rows(tenant, run_id, days=60)
    monkeypatch.setattr(retention, "BATCH", 10)
    deleted = run_admin(tenant.server.db_path, lambda db: retention.sweep_tenant(db, tenant.id, 30))
    assert deleted == 25


def test_the_servers_own_sweep_runs_soon_after_start(start_app: Callable[..., ServerProcess]) -> None:
    """sweep_daily (started by the app's lifespan) sweeps once right after its first delay.

    On a server of its own: the sweep runs once per period per database (whichever replica claims
    it first), and the shared server's database may have had its sweep claimed by another test."""
    import asyncio

    from tms.config import Config
    from tms.runs.retention import service as retention

    tenant = make_tenant_on(start_app())
    run_id = report(tenant, unlinked=3)
    age_unlinked_rows(tenant, run_id, days=45)

    async def one_pass(db: Any) -> None:
        config = Config(values={"retention.unlinked_days": 30, "retention.runs_days": 0})
        store = LocalStore(tenant.server.data_dir / "attachments")
        task = asyncio.create_task(retention.sweep_daily(db, config, store, first_delay=0, period=3600))
        for _ in range(200):
            await asyncio.sleep(0.02)
            if not await db.fetch_value("SELECT COUNT(*) FROM unlinked_test_results WHERE run_id = ?", (run_id,)):
                break
        task.cancel()

    run_admin(tenant.server.db_path, one_pass)
    assert results_of(tenant, run_id) == []


def test_removing_an_old_run_clears_the_failure_fingerprints_references_to_it(tenant: Tenant) -> None:
    """retention.runs_days removes whole runs: a fingerprint first or last seen in one keeps its times and
    counts, but names no removed run (NULL), and the pages and the API that link to those runs still work."""
    from tms.config import load_config
    from tms.runs.retention import service as retention

    project = tenant.create_project()["id"]

    def failing(title: str, message: str) -> dict[str, Any]:
        return {"title": title, "status": "FAILED", "error_message": message}

    old = ingest(tenant, {"project_id": project, "results": [failing("a", "gone for good"),
                                                             failing("b", "still failing")]}).json()["run_id"]
    new = ingest(tenant, {"project_id": project, "results": [failing("b", "still failing")]}).json()["run_id"]
    fingerprints = "SELECT error_message, first_run_id, last_run_id, occurrences FROM failure_fingerprints " \
                   "WHERE project_id = ? ORDER BY error_message"
    with connect_db(tenant.server.db_path) as conn:
        assert conn.execute(fingerprints, (project,)).fetchall() == [
            ("gone for good", old, old, 1), ("still failing", old, new, 2)]
        conn.execute("UPDATE test_runs SET created_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", (old,))

    config = load_config(None, storage_env(tenant.server.data_dir))
    assert run_admin(tenant.server.db_path, lambda db: retention.sweep_old_runs(db, store_for(config), 10)) == 1

    with connect_db(tenant.server.db_path) as conn:
        assert conn.execute(fingerprints, (project,)).fetchall() == [
            ("gone for good", None, None, 1), ("still failing", None, new, 2)]
    [cluster] = tenant.api.get(f"/api/v1/runs/{new}/failures").json()["data"]
    assert (cluster["new"], cluster["first_run_id"]) == (False, None)  # seen before, in a run now removed
    page = tenant.web().get(f"/runs/{new}")
    assert page.status_code == 200 and f'href="/runs/{old}"' not in page.text
    dashboard = tenant.web().get(f"/?project_id={project}")
    assert dashboard.status_code == 200 and f"/runs/{old}" not in dashboard.text
    # a known issue made from the fingerprint whose runs are all gone is made, linking no result
    gone = connect_db(tenant.server.db_path).execute(
        "SELECT fingerprint FROM failure_fingerprints WHERE project_id = ? AND last_run_id IS NULL", (project,)
    ).fetchone()[0]
    made = tenant.api.post("/api/v1/known-issues", json={"project_id": project, "fingerprint": gone,
                                                        "bug_ticket_key": "BUG-1"})
    assert made.status_code == 201, made.text


def test_a_deleted_run_takes_its_results_with_it_on_both_backends(tenant: Tenant, other_tenant: Tenant) -> None:
    """The results tables' cascade from their run (a foreign key on SQLite, a trigger on PostgreSQL,
    migration postgres/0005), also when the run goes with its tenant."""
    case = new_case(tenant)
    gone, kept = report(tenant, unlinked=5, linked=[case["code"]]), report(tenant, unlinked=2)
    foreign = report(other_tenant, unlinked=3)

    def counts(conn: Any, run_id: str) -> tuple[int, int]:
        return (conn.execute("SELECT COUNT(*) FROM test_results WHERE run_id = ?", (run_id,)).fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM unlinked_test_results WHERE run_id = ?", (run_id,)).fetchone()[0])

    with connect_db(tenant.server.db_path) as conn:
        if not postgres_cluster.selected():
            conn.execute("PRAGMA foreign_keys = ON")  # as the server's own connections have it
        assert counts(conn, gone) == (1, 5)
        conn.execute("DELETE FROM test_runs WHERE id = ?", (gone,))
        conn.commit()
        assert counts(conn, gone) == (0, 0)
        assert counts(conn, kept) == (0, 2)
        conn.execute("DELETE FROM tenants WHERE id = ?", (tenant.id,))
        conn.commit()
        assert counts(conn, kept) == (0, 0)
        assert counts(conn, foreign) == (0, 3)
