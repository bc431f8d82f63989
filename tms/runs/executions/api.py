"""/api/v1/results/{id}: one result, read and changed by hand; bulk assignment of a run's results."""

from __future__ import annotations

from litestar import get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.runs.executions import service as executions
from tms.runs.executions.models import AssignAnswer, AssignBody, AssignEnvelope, ResultEnvelope, ResultPatch
from tms.state import ConfigDep, DatabaseDep


@get("/results/{result_id:str}", **requires("read"), summary="Get one result (linked or unlinked)")
async def get_result(request: ApiRequest, db: DatabaseDep, result_id: str) -> ResultEnvelope:
    return ResultEnvelope(data=await executions.get_result(db, request.user.tenant_id,
                                                           result_id))


@patch("/results/{result_id:str}", **requires("write"),
       summary="Change a result: status, comment, bug, assignee, step results (last write wins)")
async def update_result(
    request: ApiRequest, db: DatabaseDep, config: ConfigDep, result_id: str, data: JSONBody[ResultPatch]
) -> ResultEnvelope:
    saved = await executions.update_result(db, request.user.tenant_id, result_id, data,
                                           config=config)
    return ResultEnvelope(data=saved.result)


@post("/runs/{run_id:str}/assign", **requires("write"), status_code=200,
      summary="Assign results of a run to a user (assignee_id null unassigns)")
async def assign_results(
    request: ApiRequest, db: DatabaseDep, config: ConfigDep, run_id: str, data: JSONBody[AssignBody]
) -> AssignEnvelope:
    count = await executions.assign_results(db, request.user.tenant_id, run_id,
                                            data.result_ids, data.assignee_id, config=config)
    return AssignEnvelope(data=AssignAnswer(assigned=count))
