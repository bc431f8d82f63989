"""Settings → Developer → Webhooks: subscriptions (create, edit, pause, delete), delivery log, redeliver, ping.

The pages share every rule with /api/webhooks through tms.notifications.service (URL safety, events,
secrets); this module only turns forms into the same request models.
"""

from __future__ import annotations

from typing import Any

from litestar import Router, get, post
from litestar.response import Redirect, Template

from tms.config import Config
from tms.db import Database
from tms.errors import Conflict, DomainError, NotFound
from tms.http.pages import AnyRequest, convert, done, field_errors, form_of, not_found, render, tenant_of
from tms.notifications import service as webhook_service
from tms.notifications.events import EVENT_NAMES
from tms.notifications.models import FORMATS, SubscriptionCreate, SubscriptionUpdate
from tms.state import ConfigDep, DatabaseDep
from tms.team.signin.session import needs_role, page_guard

EVENT_HELP = {
    "test_run.completed": "a run's status changes to COMPLETED",
    "test_run_result.failed": "a result becomes FAILED in a run",
    "bug.resolved": "a linked bug is resolved in the issue tracker",
    "retest.required": "a test case is flagged for retest",
}


FORMAT_LABELS = {
    "standard": "Standard JSON event (signed envelope)",
    "slack": "Slack incoming webhook",
    "teams": "Microsoft Teams (Workflows / incoming webhook, Adaptive Card)",
    "google_chat": "Google Chat incoming webhook",
}

FORMAT_NAMES = {"standard": "Standard", "slack": "Slack", "teams": "Teams", "google_chat": "Google Chat"}


def _form(single: dict[str, str], multi: dict[str, list[str]]) -> dict[str, Any]:
    return {"url": single.get("url", "").strip(), "events": multi.get("events", []),
            "secret": single.get("secret", ""), "active": single.get("active") == "on",
            "remove_secret": single.get("remove_secret") == "on",
            "format": single.get("format", "standard"),
            "only_failures": single.get("only_failures") == "on",
            "only_failed_runs": single.get("only_failed_runs") == "on",
            "environments": single.get("environments", "")}


def _filters(form: dict[str, Any]) -> dict[str, Any]:
    """The form's filter fields as the API's ``filters`` object (environments comma-separated)."""
    names = [name.strip() for name in form["environments"].split(",")]
    return {"only_failures": form["only_failures"], "only_failed_runs": form["only_failed_runs"],
            "environments": [name for name in names if name]}


def _form_of(subscription: Any) -> dict[str, Any]:
    return {"url": subscription.url, "events": subscription.events, "active": subscription.active,
            "format": subscription.format, "only_failures": subscription.filters.only_failures,
            "only_failed_runs": subscription.filters.only_failed_runs,
            "environments": ", ".join(subscription.filters.environments)}


def _errors(errors: dict[str, str]) -> dict[str, str]:
    """Errors about ``filters`` (a model or service path) are shown next to the environments field."""
    shown = {("environments" if key.startswith("filters") else key): text for key, text in errors.items()}
    if "format" in shown:
        shown["format"] = "Choose one of the listed formats."
    return shown


async def _previews(db: Database, config: Config, request: AnyRequest) -> dict[str, Any]:
    previews = await webhook_service.previews(db, config, tenant_of(request))
    return {"previews": previews, "formats": FORMATS, "format_labels": FORMAT_LABELS, "format_names": FORMAT_NAMES}


async def _list_page(db: Database, config: Config, request: AnyRequest, form: dict[str, Any] | None = None,
                     errors: dict[str, str] | None = None, status_code: int = 200) -> Template:
    subscriptions = await webhook_service.list_subscriptions(db, config, tenant_of(request))
    form = form or {"events": list(EVENT_NAMES[:2]), "active": True, "format": "standard", "environments": ""}
    return render(request, "webhooks/list.html", status_code=status_code, active_nav="settings",
                  settings_nav="webhooks", subscriptions=subscriptions, event_names=EVENT_NAMES,
                  event_help=EVENT_HELP, form=form, errors=_errors(errors or {}),
                  **await _previews(db, config, request))


@get("/")
async def webhooks_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template:
    return await _list_page(db, config, request)


@post("/", status_code=303)
async def create_webhook(request: AnyRequest, db: DatabaseDep, config: ConfigDep) -> Template | Redirect:
    form = _form(*await form_of(request))
    body, errors = convert(SubscriptionCreate, {"url": form["url"], "events": form["events"],
                                                "secret": form["secret"] or None, "active": form["active"],
                                                "format": form["format"], "filters": _filters(form)})
    if body is not None:
        try:
            created = await webhook_service.create_subscription(db, config,
                                                                tenant_of(request), body)
        except DomainError as exc:
            errors = field_errors(exc, "url")
        else:
            return done(request, f"/settings/webhooks/{created.id}",
                        "Webhook created. Send a test ping to check the receiver.")
    if "url" in errors and "length" in errors["url"].lower():
        errors["url"] = "Enter the receiver's URL."
    return await _list_page(db, config, request, form, errors, status_code=400)


async def _detail_page(db: Database, config: Config, request: AnyRequest, subscription_id: str,
                       form: dict[str, Any] | None = None, errors: dict[str, str] | None = None,
                       status_code: int = 200) -> Template:
    tenant = tenant_of(request)
    try:
        subscription = await webhook_service.get_subscription(db, config, tenant, subscription_id)
        deliveries = await webhook_service.list_deliveries(db, config, tenant, subscription_id, limit=50)
    except NotFound as exc:
        raise not_found("webhook") from exc
    if form is None:
        form = _form_of(subscription)
    # no auto-refresh while deliveries are pending: it would wipe an edit in progress; a link reloads
    template = render(request, "webhooks/detail.html", status_code=status_code, active_nav="settings",
                      settings_nav="webhooks", subscription=subscription, deliveries=deliveries,
                      event_names=EVENT_NAMES, event_help=EVENT_HELP, form=form, errors=_errors(errors or {}),
                      pending=any(d.status == "pending" for d in deliveries), **await _previews(db, config, request))
    return template


@get("/{subscription_id:str}")
async def webhook_page(request: AnyRequest, db: DatabaseDep, config: ConfigDep, subscription_id: str) -> Template:
    return await _detail_page(db, config, request, subscription_id)


@post("/{subscription_id:str}", status_code=303)
async def update_webhook(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                         subscription_id: str) -> Template | Redirect:
    form = _form(*await form_of(request))
    data: dict[str, Any] = {"url": form["url"], "events": form["events"], "active": form["active"],
                            "format": form["format"], "filters": _filters(form)}
    if form["remove_secret"]:
        data["secret"] = None
    elif form["secret"]:
        data["secret"] = form["secret"]  # an empty field keeps the current secret
    body, errors = convert(SubscriptionUpdate, data)
    if body is not None:
        try:
            await webhook_service.update_subscription(db, config, tenant_of(request),
                                                      subscription_id, body)
        except NotFound as exc:
            raise not_found("webhook") from exc
        except DomainError as exc:
            errors = field_errors(exc, "url")
        else:
            return done(request, f"/settings/webhooks/{subscription_id}", "Webhook saved.")
    return await _detail_page(db, config, request, subscription_id, form, errors, status_code=400)


async def _set_active(db: Database, config: Config, request: AnyRequest, subscription_id: str,
                      active: bool) -> Redirect:
    try:
        await webhook_service.update_subscription(db, config, tenant_of(request),
                                                  subscription_id, SubscriptionUpdate(active=active))
    except NotFound as exc:
        raise not_found("webhook") from exc
    message = "Webhook resumed." if active else "Webhook paused: no deliveries are sent until you resume it."
    return done(request, f"/settings/webhooks/{subscription_id}", message)


@post("/{subscription_id:str}/pause", status_code=303)
async def pause_webhook(request: AnyRequest, db: DatabaseDep, config: ConfigDep, subscription_id: str) -> Redirect:
    return await _set_active(db, config, request, subscription_id, False)


@post("/{subscription_id:str}/resume", status_code=303)
async def resume_webhook(request: AnyRequest, db: DatabaseDep, config: ConfigDep, subscription_id: str) -> Redirect:
    return await _set_active(db, config, request, subscription_id, True)


@post("/{subscription_id:str}/delete", status_code=303)
async def delete_webhook(request: AnyRequest, db: DatabaseDep, config: ConfigDep, subscription_id: str) -> Redirect:
    try:
        await webhook_service.delete_subscription(db, config, tenant_of(request),
                                                  subscription_id)
    except NotFound as exc:
        raise not_found("webhook") from exc
    return done(request, "/settings/webhooks", "Webhook deleted.")


@post("/{subscription_id:str}/ping", status_code=303)
async def ping_webhook(request: AnyRequest, db: DatabaseDep, config: ConfigDep, subscription_id: str) -> Redirect:
    target = f"/settings/webhooks/{subscription_id}"
    try:
        await webhook_service.ping(db, config, tenant_of(request), subscription_id)
    except NotFound as exc:
        raise not_found("webhook") from exc
    except Conflict as exc:
        return done(request, target, exc.detail[:1].upper() + exc.detail[1:] + ".", "error")
    return done(request, target, "Test ping queued. Its delivery appears in the log below.")


@post("/{subscription_id:str}/deliveries/{delivery_id:str}/redeliver", status_code=303)
async def redeliver(request: AnyRequest, db: DatabaseDep, config: ConfigDep,
                    subscription_id: str, delivery_id: str) -> Redirect:
    target = f"/settings/webhooks/{subscription_id}"
    try:
        await webhook_service.redeliver(db, config, tenant_of(request), subscription_id,
                                        delivery_id)
    except NotFound as exc:
        raise not_found("delivery") from exc
    except Conflict as exc:
        return done(request, target, exc.detail[:1].upper() + exc.detail[1:] + ".", "error")
    return done(request, target, "Delivery queued again with a fresh retry budget.")


def router() -> Router:
    return Router(path="/settings/webhooks",
                  route_handlers=[webhooks_page, create_webhook, webhook_page, update_webhook, pause_webhook,
                                  resume_webhook, delete_webhook, ping_webhook, redeliver],
                  guards=[page_guard], include_in_schema=False, **needs_role("admin"))
