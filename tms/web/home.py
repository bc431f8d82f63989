"""The signed-in home page: the dashboard of the active project."""

from __future__ import annotations

from litestar import Router, get
from litestar.response import Template

from tms.web.common import AnyRequest, render
from tms.web.session import page_guard


@get("/", include_in_schema=False)
async def home(request: AnyRequest) -> Template:
    return render(request, "home.html", active_nav="dashboard")


def router() -> Router:
    return Router(path="/", route_handlers=[home], guards=[page_guard], include_in_schema=False)
