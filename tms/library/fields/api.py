"""/api/v1/custom-fields: a project's typed fields for cases and results."""

from __future__ import annotations

from typing import Literal

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.library.fields import service as field_service
from tms.library.fields.models import CustomFieldCreate, CustomFieldEnvelope, CustomFieldList, CustomFieldUpdate
from tms.state import DatabaseDep


@get("/custom-fields", **requires("read"), summary="A project's custom fields in their order (retired ones flagged)")
async def list_fields(request: ApiRequest, db: DatabaseDep, project_id: str,
                      entity: Literal["case", "result"] | None = None) -> CustomFieldList:
    fields = await field_service.list_fields(db, request.user.tenant_id, project_id, entity)
    return CustomFieldList(data=fields)


@post("/custom-fields", **requires("write"),
      summary="Define a custom field (key a-z0-9_, type, entity case|result, options, required, default)")
async def create_field(request: ApiRequest, db: DatabaseDep, data: JSONBody[CustomFieldCreate]) -> CustomFieldEnvelope:
    field = await field_service.create_field(db, request.user.tenant_id, data)
    return CustomFieldEnvelope(data=field)


@get("/custom-fields/{field_id:str}", **requires("read"), summary="One custom field")
async def get_field(request: ApiRequest, db: DatabaseDep, field_id: str) -> CustomFieldEnvelope:
    return CustomFieldEnvelope(data=await field_service.get_field(db, request.user.tenant_id, field_id))


@patch("/custom-fields/{field_id:str}", **requires("write"),
       summary="Rename, reorder, change options, required or default; retired=true|false retires or restores")
async def update_field(request: ApiRequest, db: DatabaseDep,
                       field_id: str, data: JSONBody[CustomFieldUpdate]) -> CustomFieldEnvelope:
    field = await field_service.update_field(db, request.user.tenant_id, field_id, data)
    return CustomFieldEnvelope(data=field)


@delete("/custom-fields/{field_id:str}", **requires("write"),
        summary="Retire a custom field: hidden from forms, new values refused, the values cases hold kept")
async def delete_field(request: ApiRequest, db: DatabaseDep, field_id: str) -> None:
    await field_service.retire_field(db, request.user.tenant_id, field_id)
