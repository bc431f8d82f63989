"""/api/v1/cases/{id}/review: request a review, approve, request changes (issue 26). ``{id}`` is a
case's cuid or its code. The acting person is the token's creator (API tokens are made by users)."""

from __future__ import annotations

from litestar import post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.library.cases.models import CaseEnvelope, ReviewReject, ReviewRequest
from tms.library.cases.review import service as review_service
from tms.state import ConfigDep, DatabaseDep


@post("/cases/{case_id:str}/review", **requires("write"), status_code=200,
      summary="Ask a tester or admin of the team to review a test case",
      description="The case's review becomes REQUESTED with this reviewer. Under the project's require_review "
      "the author may not name themselves.")
async def request_review(request: ApiRequest, db: DatabaseDep, config: ConfigDep,
                         case_id: str, data: JSONBody[ReviewRequest]) -> CaseEnvelope:
    case = await review_service.request_review(db, config, request.user.tenant_id, case_id,
                                               data.reviewer_id)
    return CaseEnvelope(data=case)


@post("/cases/{case_id:str}/review/approve", **requires("write"), status_code=200,
      summary="Approve a test case's review: the case becomes READY",
      description="Needs an open request (409 otherwise). Under the project's require_review the author of the "
      "version under review may not approve it (409). No body.")
async def approve(request: ApiRequest, db: DatabaseDep, config: ConfigDep, case_id: str) -> CaseEnvelope:
    case = await review_service.approve(db, config, request.user.tenant_id, case_id)
    return CaseEnvelope(data=case)


@post("/cases/{case_id:str}/review/reject", **requires("write"), status_code=200,
      summary="Request changes to a test case, saying what (comment required); it stays DRAFT")
async def reject(request: ApiRequest, db: DatabaseDep, config: ConfigDep,
                 case_id: str, data: JSONBody[ReviewReject]) -> CaseEnvelope:
    case = await review_service.reject(db, config, request.user.tenant_id, case_id,
                                       data.comment)
    return CaseEnvelope(data=case)


ROUTES = [request_review, approve, reject]
