"""Reports of a run, a plan or a milestone, and the export of a run's results (issue 27).

A report is built from a fixed number of aggregate queries whatever the size of the runs: totals and
environments from the run summaries, sections and assignees grouped in SQL, the largest
``CLUSTER_LIMIT`` failure clusters, the first ``FAILURE_LIMIT`` failures. Memory is bounded by those
limits, not by the number of results. The export streams the run in keyset pages of ``EXPORT_BATCH``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from tms.db import Database, Row
from tms.errors import InvalidInput, NotFound
from tms.failures import fingerprints
from tms.ids import now_iso
from tms.reports import export as export_format
from tms.reports import store
from tms.reports.models import (
    EXPORT_FORMATS,
    AssigneeLine,
    BugLink,
    Cluster,
    Counts,
    EnvironmentLine,
    Failure,
    Report,
    ReportKind,
    RunLine,
    SectionLine,
    Trend,
    TrendPoint,
)

CLUSTER_LIMIT = 50
FAILURE_LIMIT = 200
HISTORY_RUNS = 10
EXPORT_BATCH = 1000
SECTION_SEPARATOR = " / "
KINDS: tuple[ReportKind, ...] = ("run", "plan", "milestone")


def counts_of(row: Row | None) -> Counts:
    """Counts from a row holding total, passed, failed, broken, skipped and unknown (None: zeros)."""
    def value(key: str) -> int:
        return 0 if row is None or row.get(key) is None else int(row[key])

    total, unknown, passed = value("total"), value("unknown"), value("passed")
    executed = total - unknown
    return Counts(total=total, passed=passed, failed=value("failed"), broken=value("broken"),
                  skipped=value("skipped"), unknown=unknown, executed=executed,
                  pass_rate=round(100 * passed / executed, 1) if executed > 0 else None,
                  progress=round(100 * executed / total, 1) if total > 0 else None)


def _run_line(row: Row) -> RunLine:
    return RunLine(id=row["id"], name=row["name"], environment=row["environment"], status=row["status"],
                   created_at=row["created_at"], completed_at=row["completed_at"], counts=counts_of(row))


def check_format(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidInput(f"format must be one of {', '.join(allowed)}", field="format")
    return value


# ---- reports ----------------------------------------------------------------------------------------

async def build(db: Database, tenant_id: str, kind: ReportKind, target_id: str) -> Report:
    """The report of run, plan or milestone ``target_id``; another tenant's (or none) is a 404."""
    status = environment = due_on = None
    trend: Trend | None = None
    if kind == "run":
        run = await store.run(db, tenant_id, target_id)
        if run is None:
            raise NotFound(f"run {target_id} not found")
        target, runs, ids = run, [run], [run["id"]]
        status, environment = run["status"], run["environment"]
    else:
        column = "plan_id" if kind == "plan" else "milestone_id"
        found = await (store.plan if kind == "plan" else store.milestone)(db, tenant_id, target_id)
        if found is None:
            raise NotFound(f"{kind} {target_id} not found")
        target = found
        ids = await store.run_ids(db, tenant_id, column, target_id)
        runs = await store.runs_of(db, tenant_id, column, target_id)
        if kind == "milestone":
            status, due_on = found["status"], found["due_on"]
    scope = json.dumps(ids)
    project_id = target["project_id"]
    envs = await store.environments(db, tenant_id, scope)
    environments = sorted(
        (EnvironmentLine(environment=row["environment"], runs=int(row["runs"]), counts=counts_of(row)) for row in envs),
        key=lambda line: (line.environment is None, line.environment or ""),
    )
    totals = counts_of({key: sum(int(row[key]) for row in envs)
                        for key in ("total", "passed", "failed", "broken", "skipped", "unknown")})
    clusters, clusters_total = await _clusters(db, tenant_id, project_id, scope, target_id if kind == "run" else None)
    failures = [Failure(**row) for row in await store.failures(db, tenant_id, scope, FAILURE_LIMIT)]
    if kind == "run":
        trend = await _trend(db, tenant_id, target)
    return Report(
        kind=kind, id=target["id"], name=target["name"], project_id=project_id,
        project_name=await store.project_name(db, tenant_id, project_id), generated_at=now_iso(),
        status=status, environment=environment, due_on=due_on, totals=totals,
        runs=[_run_line(row) for row in runs], runs_total=len(ids), environments=environments,
        sections=await _sections(db, tenant_id, project_id, scope),
        assignees=await _assignees(db, tenant_id, scope),
        unlinked=counts_of(await store.unlinked_counts(db, tenant_id, scope)),
        clusters=clusters, clusters_total=clusters_total,
        failures=failures, failures_total=totals.failed + totals.broken, trend=trend,
    )


async def _sections(db: Database, tenant_id: str, project_id: str, scope: str) -> list[SectionLine]:
    groups = await store.by_section(db, tenant_id, scope)
    if not groups:
        return []
    known = await store.sections(db, tenant_id, project_id)
    names = {row["id"]: row["name"] for row in known}
    paths = {row["id"]: SECTION_SEPARATOR.join(names.get(part, "?") for part in row["path"].strip("/").split("/"))
             for row in known}
    lines = [SectionLine(section_id=row["section_id"],
                         section=paths.get(row["section_id"] or "", "(no section)"), counts=counts_of(row))
             for row in groups]
    return sorted(lines, key=lambda line: (line.section_id is None, line.section.lower()))


async def _assignees(db: Database, tenant_id: str, scope: str) -> list[AssigneeLine]:
    lines = [AssigneeLine(assignee_id=row["assignee_id"],
                          name=("Unassigned" if row["assignee_id"] is None else row["name"] or row["email"]
                                or "(removed user)"),
                          counts=counts_of(row))
             for row in await store.by_assignee(db, tenant_id, scope)]
    return sorted(lines, key=lambda line: (line.assignee_id is None, line.name.lower()))


async def _clusters(db: Database, tenant_id: str, project_id: str, scope: str, run_id: str | None
                    ) -> tuple[list[Cluster], int]:
    rows, total = await store.clusters(db, tenant_id, project_id, scope, run_id, CLUSTER_LIMIT, fingerprints.EMPTY)
    bugs: dict[str, list[BugLink]] = {}
    for row in await store.cluster_bugs(db, tenant_id, scope, [row["fingerprint"] for row in rows],
                                        fingerprints.EMPTY):
        bugs.setdefault(row["fingerprint"], []).append(BugLink(key=row["bug_ticket_key"], url=row["bug_ticket_url"]))
    clusters = [Cluster(fingerprint=row["fingerprint"], failures=int(row["failures"]),
                        error_message=_cut(row["error_message"]), first_seen_at=row["first_seen_at"],
                        new=bool(row["new"]) and run_id is not None, bugs=bugs.get(row["fingerprint"], []))
                for row in rows]
    return clusters, total


def _cut(text: str | None, limit: int = 1000) -> str | None:
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


async def _trend(db: Database, tenant_id: str, run: Row) -> Trend:
    history = await store.history(db, tenant_id, run, HISTORY_RUNS)
    points = [TrendPoint(run_id=row["id"], name=row["name"], created_at=row["created_at"],
                         pass_rate=counts_of(row).pass_rate) for row in reversed(history)]
    previous = history[1] if len(history) > 1 else None
    if previous is None:
        return Trend(previous_run_id=None, previous_run_name=None, previous=None, pass_rate_change=None,
                     new_failures=0, fixed=0, history=points)
    now, before = counts_of(run), counts_of(previous)
    change = None
    if now.pass_rate is not None and before.pass_rate is not None:
        change = round(now.pass_rate - before.pass_rate, 1)
    moved = await store.changes(db, tenant_id, run["id"], previous["id"])
    return Trend(previous_run_id=previous["id"], previous_run_name=previous["name"], previous=before,
                 pass_rate_change=change, new_failures=int(moved["new_failures"]) if moved else 0,
                 fixed=int(moved["fixed"]) if moved else 0, history=points)


@dataclass(frozen=True)
class Rendered:
    body: bytes
    media_type: str
    filename: str


def _renderers() -> dict[str, tuple[Callable[[Report], bytes], str, str]]:
    from tms.reports import csvfile, html, pdf  # renderers load their libraries (fpdf2) on first use

    return {
        "html": (html.render, "text/html; charset=utf-8", "html"),
        "pdf": (pdf.render, "application/pdf", "pdf"),
        "csv": (csvfile.report_csv, "text/csv; charset=utf-8", "csv"),
    }


async def render(report: Report, fmt: str) -> Rendered:
    """``report`` as html, pdf or csv, rendered in a worker thread (the PDF takes a few hundred ms)."""
    function, media_type, extension = _renderers()[fmt]
    body = await asyncio.to_thread(function, report)
    return Rendered(body=body, media_type=media_type, filename=f"{report.kind}-{report.id}-report.{extension}")


# ---- run export -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Export:
    chunks: AsyncIterator[bytes]
    media_type: str
    filename: str


async def export_run(db: Database, tenant_id: str, run_id: str, fmt: str) -> Export:
    """The run's results as JUnit XML, CTRF JSON or CSV, produced page by page (the run is checked
    here, before the first byte, so a missing run is a 404 and not a broken stream)."""
    check_format(fmt, EXPORT_FORMATS)
    run = await store.run(db, tenant_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    writer = export_format.WRITERS[fmt]
    framework = export_format.uniform_framework(await store.frameworks(db, tenant_id, run_id))
    return Export(chunks=writer(run, _rows(db, tenant_id, run_id), framework),
                  media_type=export_format.MEDIA_TYPES[fmt], filename=f"run-{run_id}.{export_format.EXTENSIONS[fmt]}")


async def _rows(db: Database, tenant_id: str, run_id: str) -> AsyncIterator[list[Row]]:
    """Linked results (in case id order), then unlinked ones (as stored), EXPORT_BATCH at a time."""
    after = ""
    while True:
        rows = await store.linked_page(db, tenant_id, run_id, after, EXPORT_BATCH)
        if rows:
            yield rows
        if len(rows) < EXPORT_BATCH:
            break
        after = rows[-1]["test_case_id"]
    seq = 0
    while True:
        rows = await store.unlinked_page(db, tenant_id, run_id, seq, EXPORT_BATCH)
        if rows:
            yield rows
        if len(rows) < EXPORT_BATCH:
            break
        seq = int(rows[-1]["seq"])
