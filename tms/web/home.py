"""The signed-in home page."""

from __future__ import annotations

from typing import Any

from litestar import Request, Router, get
from litestar.response import Template

from tms.web.session import page_guard


@get("/", include_in_schema=False)
async def home(request: Request[Any, Any, Any]) -> Template:
    return Template("home.html", context={"active_nav": "dashboard"})


def router() -> Router:
    return Router(path="/", route_handlers=[home], guards=[page_guard], include_in_schema=False)
