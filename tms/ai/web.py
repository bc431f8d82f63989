"""AI drafts: paste a requirement, review the model's Gherkin scenarios, save the chosen ones as DRAFT cases.

GET /ai                      the form, the provider and quota state, recent generations
POST /ai/generate            asks the model, then redirects to the stored drafts (a reload never asks again)
GET /ai/generations/{id}     the drafts, editable, each with the Gherkin parser's verdict
POST /ai/generations/{id}    saves the ticked drafts (validated again) in one transaction, then redirects
"""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.ai import quota as ai_quota
from tms.ai import service as ai_service
from tms.ai.provider import ProviderError
from tms.config import Config
from tms.db import Database
from tms.errors import Conflict, DomainError, NotFound
from tms.http.pages import AnyRequest, done, form_of, not_found, render, tenant_of, user_of
from tms.library.projects import service as project_service
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin.session import page_guard

# Upstream trouble is the provider's, not ours: a gateway status, never a 500.
_PROVIDER_STATUS = {"disabled": 400, "timeout": 504, "rate_limited": 503}


def _provider_info(config: Config) -> dict[str, Any]:
    # only the provider kind and model are shown: the base URL may name internal hosts, the key is secret
    return {"name": config.get("ai.provider"), "model": config.get("ai.model"),
            "enabled": config.get("ai.provider") != "none"}


async def _index(db: Database, config: Config, request: AnyRequest, *, form: dict[str, str] | None = None,
                 errors: dict[str, str] | None = None, provider_error: str | None = None,
                 status_code: int = 200) -> Template:
    tenant_id = tenant_of(request)
    quota = await ai_quota.quota_status(db, config, tenant_id)
    return render(
        request, "ai/index.html", status_code=status_code, active_nav="ai",
        provider=_provider_info(config), quota=quota,
        project=await project_service.get_active_project(db, tenant_id),
        recent=await ai_service.recent_generations(db, tenant_id),
        form=form or {"priority": "MEDIUM"}, errors=errors or {}, provider_error=provider_error,
        priorities=ai_service.PRIORITIES, layers=ai_service.LAYERS,
    )


@get("/")
async def ai_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template:
    return await _index(db, config, request)


@post("/generate", status_code=303)
async def generate(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    form, _ = await form_of(request)
    form = {k: form.get(k, "") for k in ("requirement", "tags", "priority", "layer")}
    tenant_id = tenant_of(request)
    project = await project_service.get_active_project(db, tenant_id)
    if project is None:
        return await _index(db, config, request, form=form, status_code=400,
                            errors={"requirement": "Mark a project active first: drafts are saved into it."})
    try:
        options = ai_service.parse_options(form["tags"], form["priority"], form["layer"])
        generation_id = await ai_service.generate(
            db, config, tenant_id=tenant_id, user_id=user_of(request).id, project_id=project.id,
            requirement=form["requirement"], options=options,
        )
    except ProviderError as exc:
        return await _index(db, config, request, form=form, provider_error=exc.message,
                            status_code=_PROVIDER_STATUS.get(exc.kind, 502))
    except ai_service.QuotaExhausted as exc:
        return await _index(db, config, request, form=form, status_code=429, provider_error=exc.detail)
    except DomainError as exc:
        return await _index(db, config, request, form=form, errors={exc.field or "requirement": exc.detail},
                            status_code=400)
    return Redirect(f"/ai/generations/{generation_id}", status_code=303)


async def _generation(db: Database, request: AnyRequest, generation_id: str) -> ai_service.Generation:
    try:
        return await ai_service.get_generation(db, tenant_of(request), generation_id)
    except NotFound as exc:
        raise not_found("AI generation") from exc


def _drafts_page(request: AnyRequest, generation: ai_service.Generation, *, drafts: list[ai_service.Draft],
                 options: dict[str, Any], message: str | None = None, status_code: int = 200) -> Template:
    return render(request, "ai/drafts.html", status_code=status_code, active_nav="ai", generation=generation,
                  drafts=drafts, options=options, message=message, priorities=ai_service.PRIORITIES,
                  layers=ai_service.LAYERS)


@get("/generations/{generation_id:str}")
async def drafts_page(request: AnyRequest, db: DatabaseDep, generation_id: str) -> Template:
    generation = await _generation(db, request, generation_id)
    o = generation.options
    options = {"tags": ", ".join(o.tags), "priority": o.priority, "layer": o.layer or ""}
    return _drafts_page(request, generation, drafts=generation.drafts, options=options)


@post("/generations/{generation_id:str}", status_code=303)
async def save_drafts(request: AnyRequest, db: DatabaseDep, generation_id: str) -> Template | Redirect:
    generation = await _generation(db, request, generation_id)
    form, multi = await form_of(request)
    kept = set(multi.get("keep", []))
    drafts = [
        ai_service.Draft(index=d.index, title=form.get(f"title-{d.index}", d.title),
                         gherkin=form.get(f"gherkin-{d.index}", d.gherkin).replace("\r\n", "\n"),
                         keep=str(d.index) in kept)
        for d in generation.drafts
    ]
    options = {k: form.get(k, "") for k in ("tags", "priority", "layer")}

    def again(message: str, status_code: int = 400) -> Template:
        return _drafts_page(request, generation, drafts=ai_service.check_drafts(drafts), options=options,
                            message=message, status_code=status_code)

    try:
        parsed = ai_service.parse_options(options["tags"], options["priority"], options["layer"])
        created = await ai_service.save_drafts(db, tenant_of(request), generation_id, drafts, parsed)
    except Conflict as exc:
        return again(exc.detail, 409)
    except DomainError as exc:
        return again(exc.detail)
    codes = ", ".join(case.code for case in created)
    noun = "case" if len(created) == 1 else "cases"
    project = generation.project_name or "the project"
    return done(request, "/ai", f"Saved {len(created)} DRAFT {noun} in “{project}”: {codes}.")


def router() -> Router:
    return Router(path="/ai", route_handlers=[ai_page, generate, drafts_page, save_drafts],
                  guards=[page_guard], include_in_schema=False)
