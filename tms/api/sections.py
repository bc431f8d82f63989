"""/api/v1/sections: the folder tree of a project's cases."""

from __future__ import annotations

from litestar import Request, delete, get, patch, post
from litestar.params import JSONBody

from tms.api.auth import requires
from tms.models.sections import SectionCreate, SectionEnvelope, SectionList, SectionUpdate
from tms.services import sections as section_service
from tms.services.tokens import ApiPrincipal


@get("/sections", **requires("read"), summary="A project's section tree, flat, parents before children")
async def list_sections(request: Request[ApiPrincipal, str, object], project_id: str | None = None) -> SectionList:
    sections = await section_service.list_sections(request.app.state.db, request.user.tenant_id, project_id)
    return SectionList(data=sections)


@post("/sections", **requires("write"), summary="Create a section (under parent_id, or at the project's root)")
async def create_section(
    request: Request[ApiPrincipal, str, object], data: JSONBody[SectionCreate]
) -> SectionEnvelope:
    section = await section_service.create_section(request.app.state.db, request.user.tenant_id, data)
    return SectionEnvelope(data=section)


@get("/sections/{section_id:str}", **requires("read"), summary="One section with its counts")
async def get_section(request: Request[ApiPrincipal, str, object], section_id: str) -> SectionEnvelope:
    return SectionEnvelope(
        data=await section_service.get_section(request.app.state.db, request.user.tenant_id, section_id)
    )


@patch("/sections/{section_id:str}", **requires("write"),
       summary="Rename, describe, reorder or move a section (409 when moved under itself or a descendant)")
async def update_section(
    request: Request[ApiPrincipal, str, object], section_id: str, data: JSONBody[SectionUpdate]
) -> SectionEnvelope:
    section = await section_service.update_section(request.app.state.db, request.user.tenant_id, section_id, data)
    return SectionEnvelope(data=section)


@delete("/sections/{section_id:str}", **requires("write"),
        summary="Delete a section; its cases and subsections move to its parent")
async def delete_section(request: Request[ApiPrincipal, str, object], section_id: str) -> None:
    await section_service.delete_section(request.app.state.db, request.user.tenant_id, section_id)
