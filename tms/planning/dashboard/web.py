"""The signed-in home page: the dashboard of the active project."""

from __future__ import annotations

from litestar import Router, get
from litestar.response import Template

from tms.errors import NotFound
from tms.failures import service as failure_service
from tms.http.pages import AnyRequest, not_found, render, tenant_of
from tms.library.projects import service as project_service
from tms.library.projects.models import Project
from tms.planning.dashboard import charts
from tms.planning.dashboard import service as dashboard_service
from tms.runs.web import bar_segments
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin.session import page_guard


@get("/", include_in_schema=False)
async def home(request: AnyRequest, db: DatabaseDep, config: ConfigDep, project_id: str | None = None) -> Template:
    """The active project's dashboard; ``?project_id=`` peeks at another project without switching."""
    tenant = tenant_of(request)
    project: Project | None
    if project_id:
        try:
            project = await project_service.get_project(db, tenant, project_id)
        except NotFound as exc:
            raise not_found("project") from exc
    else:
        project = await project_service.get_active_project(db, tenant)
    if project is None:
        projects = await project_service.list_open_projects(db, tenant)
        return render(request, "dashboard/empty.html", active_nav="dashboard", projects=projects)
    board = await dashboard_service.project_dashboard(db, tenant, project.id)
    oldest_first = list(reversed(board.recent_runs))
    return render(
        request, "dashboard/index.html", active_nav="dashboard", project=project, board=board,
        runs_chart=charts.stacked_runs(oldest_first), trend_chart=charts.pass_rate_trend(board.trend),
        bars={run.id: bar_segments(run.counts) for run in board.recent_runs},
        failure_panel=await failure_service.panel(db, tenant, project.id,
                                                  flaky_runs=config.get("flaky.runs")),
    )


def router() -> Router:
    return Router(path="/", route_handlers=[home], guards=[page_guard], include_in_schema=False)
