"""/api/v1/integrations (the trackers' settings, both ways) and POST /api/v1/results/{id}/defect.

API tokens are created by admins (Settings → Developer); reading an integration needs the read scope,
changing one or creating a defect the write scope. ``api_token`` is write-only: no answer holds it.
"""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.integrations import defects, service
from tms.integrations.models import (
    DefectCreate,
    DefectEnvelope,
    IntegrationCreate,
    IntegrationEnvelope,
    IntegrationList,
    IntegrationUpdate,
)
from tms.state import ConfigDep, DatabaseDep


@get("/integrations", **requires("read"), summary="The tenant's issue-tracker integrations (tokens never shown)")
async def list_integrations(request: ApiRequest, db: DatabaseDep, config: ConfigDep) -> IntegrationList:
    rows = await service.list_integrations(db, request.user.tenant_id)
    base = config.base_url
    return IntegrationList(data=[service.to_api(row, base) for row in rows])


@post("/integrations", **requires("write"),
      summary="Connect a tracker: kind, name, and for issues created from TMS api_url, api_token, repository "
      "(GitHub), project_path (GitLab) or project_key and api_user (Jira)",
      description="The answer holds the webhook `secret` once; `api_token` is stored encrypted and never returned.")
async def create_integration(request: ApiRequest, db: DatabaseDep, config: ConfigDep,
                             data: JSONBody[IntegrationCreate]) -> IntegrationEnvelope:
    created = await service.create_from_api(db, config, request.user.tenant_id, data)
    return IntegrationEnvelope(data=created)


@get("/integrations/{integration_id:str}", **requires("read"), summary="One integration (its token never shown)")
async def get_integration(request: ApiRequest, db: DatabaseDep, config: ConfigDep,
                          integration_id: str) -> IntegrationEnvelope:
    row = await service.get_integration(db, request.user.tenant_id, integration_id)
    return IntegrationEnvelope(data=service.to_api(row, config.base_url))


@patch("/integrations/{integration_id:str}", **requires("write"),
       summary="Change an integration's settings; null clears one (api_token: null forgets the token)")
async def update_integration(request: ApiRequest, db: DatabaseDep, config: ConfigDep, integration_id: str,
                             data: JSONBody[IntegrationUpdate]) -> IntegrationEnvelope:
    updated = await service.update_from_api(db, config, request.user.tenant_id,
                                            integration_id, data)
    return IntegrationEnvelope(data=updated)


@delete("/integrations/{integration_id:str}", **requires("write"),
        summary="Remove an integration: its webhook URL stops working and its token is forgotten")
async def delete_integration(request: ApiRequest, db: DatabaseDep, integration_id: str) -> None:
    await service.delete_integration(db, request.user.tenant_id, integration_id)


@post("/results/{result_id:str}/defect", **requires("write"),
      summary="Create the issue for a failed or broken result in the integration's tracker; the result gets "
      "its bug_ticket_key and bug_ticket_url",
      description="`title` and `body` default to the case, the failed step or error and stack, the environment, "
      "a link to the result and its attachments' links. 409 when the result is not failed or broken or already "
      "has a bug; 502 when the tracker refuses or does not answer (nothing is linked; retry).")
async def create_defect(request: ApiRequest, db: DatabaseDep, config: ConfigDep,
                        result_id: str, data: JSONBody[DefectCreate]) -> DefectEnvelope:
    defect = await defects.create_defect(db, config, request.user.tenant_id, result_id, data)
    return DefectEnvelope(data=defect)


HANDLERS = [list_integrations, create_integration, get_integration, update_integration, delete_integration,
            create_defect]
