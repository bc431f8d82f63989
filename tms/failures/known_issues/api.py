"""/api/v1/known-issues: bugs that explain failures, by fingerprint or pattern."""

from __future__ import annotations

from typing import Literal

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.failures.known_issues import service
from tms.failures.known_issues.models import KnownIssueCreate, KnownIssueEnvelope, KnownIssueList, KnownIssueUpdate
from tms.http.api_auth import ApiRequest, requires
from tms.state import DatabaseDep


@get("/known-issues", **requires("read"), summary="List known issues (filters project_id, status; limit/offset)")
async def list_known_issues(request: ApiRequest, db: DatabaseDep, project_id: str | None = None,
                            status: Literal["OPEN", "CLOSED"] | None = None, limit: int | None = None,
                            offset: int | None = None) -> KnownIssueList:
    issues, pagination = await service.list_issues(db, request.user.tenant_id,
                                                   project_id=project_id, status=status, limit=limit, offset=offset)
    return KnownIssueList(data=issues, pagination=pagination)


@post("/known-issues", **requires("write"), summary="Create a known issue (fingerprint and/or RE2 pattern)")
async def create_known_issue(request: ApiRequest, db: DatabaseDep,
                             data: JSONBody[KnownIssueCreate]) -> KnownIssueEnvelope:
    return KnownIssueEnvelope(data=await service.create(db, request.user.tenant_id, data))


@get("/known-issues/{issue_id:str}", **requires("read"), summary="Get a known issue")
async def get_known_issue(request: ApiRequest, db: DatabaseDep, issue_id: str) -> KnownIssueEnvelope:
    return KnownIssueEnvelope(data=await service.get(db, request.user.tenant_id, issue_id))


@patch("/known-issues/{issue_id:str}", **requires("write"), summary="Change a known issue (or close it)")
async def update_known_issue(request: ApiRequest, db: DatabaseDep, issue_id: str,
                             data: JSONBody[KnownIssueUpdate]) -> KnownIssueEnvelope:
    issue = await service.update(db, request.user.tenant_id, issue_id, data)
    return KnownIssueEnvelope(data=issue)


@delete("/known-issues/{issue_id:str}", **requires("write"), summary="Delete a known issue")
async def delete_known_issue(request: ApiRequest, db: DatabaseDep, issue_id: str) -> None:
    await service.delete(db, request.user.tenant_id, issue_id)
