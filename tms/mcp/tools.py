"""The MCP tools: each one call (or two) of the public API, its answer returned as JSON.

Read tools are always offered; write tools (create and update a case) only when the token has the
``write`` scope, so an assistant holding a read-only token is never shown a tool it cannot use.
Gherkin is validated by the server, the one place that checks it: a refused write comes back as a
tool error naming the line.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from tms.mcp.client import NO_ROUTE_DETAIL, ApiError, TmsClient, segment

INSTRUCTIONS = (
    "Tools over a TMS test-management service: its library of test cases (Gherkin scenarios with a "
    "code like TC-12), its test runs and their results. Find project ids with list_projects, cases "
    "with search_cases, then read one with get_case. A run's failures are grouped by cause with "
    "run_failures; compare_runs tells new failures from old ones."
)

Priority = Literal["LOW", "MEDIUM", "HIGH", "CRITICAL"]
CaseStatus = Literal["DRAFT", "READY", "DEPRECATED"]
Layer = Literal["UI", "API", "INTEGRATION", "UNIT"]
AutomationStatus = Literal["MANUAL", "IN_PROGRESS", "AUTOMATED", "FLAKY", "ARCHIVED"]
RunStatus = Literal["PENDING", "IN_PROGRESS", "COMPLETED", "SYNCED"]
CaseRef = Annotated[str, Field(description="the case's code (e.g. TC-12) or its id")]
RunId = Annotated[str, Field(description="the run's id")]
Limit = Annotated[int, Field(ge=1, le=500, description="page size (at most 500)")]
Offset = Annotated[int, Field(ge=0, description="how many to skip")]

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
CREATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
UPDATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

READ_TOOLS = ("list_projects", "search_cases", "get_case", "list_runs", "get_run", "run_failures",
              "compare_runs", "list_quarantine")
WRITE_TOOLS = ("create_case", "update_case")


def _fields(**values: Any) -> dict[str, Any]:
    """The given values, without those left out (None)."""
    return {key: value for key, value in values.items() if value is not None}


async def _run_endpoint(api: TmsClient, run_id: str, tail: str, what: str, **params: Any) -> Any:
    """GET /runs/{id}/<tail>. The server's own 404 (the run, or a ``base`` run unknown or of another
    project) comes back as it is; only a 404 of no route, for a run that exists, means this server has
    no such endpoint yet."""
    path = f"/runs/{segment(run_id, 'run_id')}/{tail}"
    try:
        return await api.get(path, **params)
    except ApiError as exc:
        if exc.status != 404 or exc.detail not in (None, NO_ROUTE_DETAIL):
            raise
        await api.get(f"/runs/{segment(run_id, 'run_id')}")  # the run's own 404 when the run is missing
        raise ToolError(
            f"this TMS server does not provide {what} (GET /api/v1{path} answered 404 for an "
            "existing run): it is older than the failure-analysis API; upgrade the server"
        ) from None


def build_server(api: TmsClient, scopes: set[str]) -> MCPServer:
    from tms import __version__

    # WARNING: the SDK logs each call at INFO to standard error, which an assistant's host shows as noise
    server: MCPServer = MCPServer("tms", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    @server.tool(annotations=READ)
    async def list_projects() -> dict[str, Any]:
        """List the projects of the tenant (id, name, environments)."""
        return await api.get("/projects")  # type: ignore[no-any-return]

    @server.tool(annotations=READ)
    async def search_cases(
        query: Annotated[str | None, Field(description="words that must all appear in title, code, Gherkin, "
                                                       "tags or ticket keys")] = None,
        project_id: str | None = None,
        tag: Annotated[list[str] | None, Field(description="cases carrying any of these tags")] = None,
        priority: Priority | None = None,
        status: CaseStatus | None = None,
        automation_status: AutomationStatus | None = None,
        layer: Layer | None = None,
        section_id: str | None = None,
        limit: Limit = 20,
        offset: Offset = 0,
    ) -> dict[str, Any]:
        """Search the test library; answers {data: [case], pagination: {total, limit, offset}}."""
        return await api.get(  # type: ignore[no-any-return]
            "/cases", q=query, project_id=project_id, tag=tag, priority=priority, status=status,
            automation_status=automation_status, layer=layer, section_id=section_id, limit=limit, offset=offset,
        )

    @server.tool(annotations=READ)
    async def get_case(case: CaseRef) -> dict[str, Any]:
        """Read one test case in full: title, Gherkin (bdd_content), status, priority, tags, tickets."""
        return await api.get(f"/cases/{segment(case, 'case')}")  # type: ignore[no-any-return]

    @server.tool(annotations=READ)
    async def list_runs(
        project_id: str | None = None, status: RunStatus | None = None, limit: Limit = 20, offset: Offset = 0
    ) -> dict[str, Any]:
        """List test runs, oldest first, with their counts; answers {data: [run], pagination}."""
        return await api.get(  # type: ignore[no-any-return]
            "/runs", project_id=project_id, status=status, limit=limit, offset=offset
        )

    @server.tool(annotations=READ)
    async def get_run(run_id: RunId) -> dict[str, Any]:
        """Read one run: name, environment, status and counts (passed, failed, broken, skipped)."""
        return await api.get(f"/runs/{segment(run_id, 'run_id')}")  # type: ignore[no-any-return]

    @server.tool(annotations=READ)
    async def run_failures(run_id: RunId) -> dict[str, Any]:
        """A run's failed results grouped by cause (fingerprint), largest group first, each marked new
        or known, with the known issue it matches."""
        return await _run_endpoint(api, run_id, "failures", "failure clusters")  # type: ignore[no-any-return]

    @server.tool(annotations=READ)
    async def compare_runs(
        run_id: RunId,
        base_run_id: Annotated[str | None, Field(description="the run to compare with (default: the previous "
                                                             "run of the same project and environment)")] = None,
    ) -> dict[str, Any]:
        """Compare a run with an earlier one: new failures, fixed, still failing, added and missing tests."""
        return await _run_endpoint(  # type: ignore[no-any-return]
            api, run_id, "compare", "run comparison", base=base_run_id
        )

    @server.tool(annotations=READ)
    async def list_quarantine(project_id: str | None = None) -> dict[str, Any]:
        """Tests in quarantine (their failures do not fail the CI gate), with reason and expiry."""
        try:
            return await api.get("/quarantine", project_id=project_id)  # type: ignore[no-any-return]
        except ApiError as exc:
            if exc.status == 404:
                raise ToolError("this TMS server does not provide a quarantine list (GET /api/v1/quarantine "
                                "answered 404): it is older than the flaky-test API; upgrade the server") from None
            raise

    if "write" not in scopes:
        return server

    @server.tool(annotations=CREATE)
    async def create_case(
        title: Annotated[str, Field(min_length=1, max_length=200)],
        bdd_content: Annotated[str, Field(description="the Gherkin text: Feature, Scenario, Given/When/Then "
                                                      "steps; the server validates it")],
        project_id: str | None = None,
        code: Annotated[str | None, Field(description="e.g. LOGIN-3; the server assigns TC-<n> when left "
                                                      "out")] = None,
        status: CaseStatus | None = None,
        priority: Priority | None = None,
        layer: Layer | None = None,
        is_e2e: bool | None = None,
        automation_status: AutomationStatus | None = None,
        tags: list[str] | None = None,
        section_id: str | None = None,
    ) -> dict[str, Any]:
        """Create a test case; answers {data: case} with its code. Invalid Gherkin is refused with the line."""
        body = _fields(title=title, bdd_content=bdd_content, project_id=project_id, code=code, status=status,
                       priority=priority, layer=layer, is_e2e=is_e2e, automation_status=automation_status,
                       tags=tags, section_id=section_id)
        return await api.post("/cases", body)  # type: ignore[no-any-return]

    @server.tool(annotations=UPDATE)
    async def update_case(
        case: CaseRef,
        title: Annotated[str | None, Field(max_length=200)] = None,
        bdd_content: str | None = None,
        status: CaseStatus | None = None,
        priority: Priority | None = None,
        layer: Layer | None = None,
        is_e2e: bool | None = None,
        automation_status: AutomationStatus | None = None,
        tags: Annotated[list[str] | None, Field(description="replaces every tag")] = None,
        section_id: str | None = None,
    ) -> dict[str, Any]:
        """Change fields of a test case (only those given); answers {data: case}."""
        body = _fields(title=title, bdd_content=bdd_content, status=status, priority=priority, layer=layer,
                       is_e2e=is_e2e, automation_status=automation_status, tags=tags, section_id=section_id)
        if not body:
            raise ToolError("nothing to change: give at least one field")
        return await api.patch(f"/cases/{segment(case, 'case')}", body)  # type: ignore[no-any-return]

    return server
