"""/api/v1/sections: the folder tree of a project's cases."""

from __future__ import annotations

from litestar import delete, get, patch, post
from litestar.params import JSONBody

from tms.http.api_auth import ApiRequest, requires
from tms.library.sections import service as section_service
from tms.library.sections.models import SectionCreate, SectionEnvelope, SectionList, SectionUpdate
from tms.state import DatabaseDep


@get("/sections", **requires("read"), summary="A project's section tree, flat, parents before children")
async def list_sections(request: ApiRequest, db: DatabaseDep, project_id: str | None = None) -> SectionList:
    sections = await section_service.list_sections(db, request.user.tenant_id, project_id)
    return SectionList(data=sections)


@post("/sections", **requires("write"), summary="Create a section (under parent_id, or at the project's root)")
async def create_section(
    request: ApiRequest, db: DatabaseDep, data: JSONBody[SectionCreate]
) -> SectionEnvelope:
    section = await section_service.create_section(db, request.user.tenant_id, data)
    return SectionEnvelope(data=section)


@get("/sections/{section_id:str}", **requires("read"), summary="One section with its counts")
async def get_section(request: ApiRequest, db: DatabaseDep, section_id: str) -> SectionEnvelope:
    return SectionEnvelope(
        data=await section_service.get_section(db, request.user.tenant_id, section_id)
    )


@patch("/sections/{section_id:str}", **requires("write"),
       summary="Rename, describe, reorder or move a section (409 when moved under itself or a descendant)")
async def update_section(
    request: ApiRequest, db: DatabaseDep, section_id: str, data: JSONBody[SectionUpdate]
) -> SectionEnvelope:
    section = await section_service.update_section(db, request.user.tenant_id, section_id, data)
    return SectionEnvelope(data=section)


@delete("/sections/{section_id:str}", **requires("write"),
        summary="Delete a section; its cases and subsections move to its parent")
async def delete_section(request: ApiRequest, db: DatabaseDep, section_id: str) -> None:
    await section_service.delete_section(db, request.user.tenant_id, section_id)
