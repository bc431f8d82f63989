"""Settings → Audit log (admins): every write, newest first, filtered by entity, action and actor.

Read only: no route edits or deletes an entry (and the table refuses UPDATE and DELETE by trigger).
An actor is shown by the name they had when they acted *and* who they are (a member's email, or the
actor's id), so a tester who names themselves like the owner cannot pass for the owner.
"""

from __future__ import annotations

from urllib.parse import urlencode

from litestar import Router, get
from litestar.response import Template

from tms.http.pages import AnyRequest, page_numbers, render, tenant_of
from tms.library.projects import service as project_service
from tms.state import DatabaseDep
from tms.team import service as team
from tms.team.audit import service as audit
from tms.team.signin.session import needs_role, page_guard

PAGE_SIZE = 100
ENTITY_TYPES = ("case", "run", "result", "project", "token", "webhook", "integration", "attachment", "user",
                "invitation", "reset", "ai_generation", "ingest")


@get("/audit")
async def audit_page(request: AnyRequest, db: DatabaseDep, offset: int = 0) -> Template:
    tenant = tenant_of(request)
    query = {key: (request.query_params.get(key) or "").strip()[:200]
             for key in ("entity_type", "entity_id", "action", "actor_id")}
    entries, total, limit, offset = await audit.list_entries(
        db, tenant, entity_type=query["entity_type"] or None, entity_id=query["entity_id"] or None,
        action=query["action"] or None, actor_id=query["actor_id"] or None, limit=PAGE_SIZE, offset=max(0, offset))
    members = await team.list_users(db, tenant)
    emails = {member["id"]: member["email"] for member in members}
    # ids in the changes read as names (issue 24): the members and the projects
    names = {member["id"]: member["name"] or member["email"] for member in members}
    names.update({project.id: project.name for project in await project_service.list_projects(db, tenant)})
    for entry in entries:
        actor = entry["actor"]
        entry["actor_detail"] = emails.get(actor["id"]) if actor["type"] == "user" else None
        entry["lines"] = audit.change_lines(entry["changes"], names)
        entry["entity_name"] = names.get(entry["entity_id"] or "")
    return render(request, "audit/index.html", active_nav="settings", settings_nav="audit", entries=entries,
                  query=query, members=members, entity_types=ENTITY_TYPES,
                  pager=page_numbers(total, limit, offset),
                  pager_query=urlencode({k: v for k, v in query.items() if v}), filtered=any(query.values()))


def router() -> Router:
    return Router(path="/settings", route_handlers=[audit_page], guards=[page_guard], include_in_schema=False,
                  **needs_role("admin"))
