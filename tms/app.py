"""create_app(config) -> Litestar: the one place that wires routes, middleware and background tasks."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

from litestar import Litestar, Request, Router
from litestar.config.csrf import CSRFConfig
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.plugins.flash import FlashConfig, FlashPlugin
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

from tms import __version__
from tms.ai import web as web_ai
from tms.attachments import api as attachments_api
from tms.attachments import collection as attachment_collection
from tms.attachments import service as attachment_service
from tms.attachments import web as attachments_web
from tms.background import run_periodically
from tms.config import Config
from tms.db import database_for
from tms.db.settings import get_or_create_setting
from tms.failures import api as failures_api
from tms.failures import web as web_failures
from tms.failures.flaky import api as flaky_api
from tms.failures.flaky import service as flaky_service
from tms.failures.known_issues import api as known_issues_api
from tms.failures.quarantine import api as quarantine_api
from tms.http.api_auth import BEARER_SCHEME, SESSION_SCHEME, BearerAuthMiddleware, scope_guard
from tms.http.bodies import inflation_slots
from tms.http.middleware import options_middleware, security_headers
from tms.http.openapi import JsonDocument
from tms.http.problems import EXCEPTION_HANDLERS
from tms.http.query import check_request
from tms.integrations import api as integrations_api
from tms.integrations import requirements
from tms.integrations import web as web_integrations
from tms.library import web as web_library
from tms.library.cases import api as cases_api
from tms.library.cases import web as web_cases
from tms.library.cases.review import api as review_api
from tms.library.cases.review import web as review_web
from tms.library.comments import api as comments_api
from tms.library.comments import web as comments_web
from tms.library.fields import api as fields_api
from tms.library.fields import web as web_fields
from tms.library.projects import api as projects_api
from tms.library.projects import web as web_projects
from tms.library.sections import api as sections_api
from tms.library.shared_steps import api as shared_steps_api
from tms.library.shared_steps import web as web_shared_steps
from tms.library.transfer import api as case_io_api
from tms.notifications import web as web_webhooks
from tms.notifications import web_api as webhooks_api
from tms.notifications.dispatcher import Dispatcher
from tms.notifications.gauge import RequestGauge
from tms.notifications.inbox import api as inbox_api
from tms.notifications.inbox import service as inbox_service
from tms.notifications.inbox import web as inbox_web
from tms.operations import api as operations_api
from tms.operations.reference import ApiReferencePlugin
from tms.planning.dashboard import web as web_home
from tms.planning.milestones import api as milestones_api
from tms.planning.milestones import web as web_milestones
from tms.planning.plans import api as plans_api
from tms.planning.plans import web as web_plans
from tms.reports import api as reports_api
from tms.reports import web as reports_web
from tms.reports.schedules import api as report_schedules_api
from tms.reports.schedules import service as report_schedules
from tms.reports.schedules import web as report_schedules_web
from tms.runs import api as runs_api
from tms.runs import statuses
from tms.runs import web as web_runs
from tms.runs.executions import api as executions_api
from tms.runs.executions import web as web_execution
from tms.runs.ingest import api as ingest_api
from tms.runs.results import api as results_api
from tms.runs.retention import api as retention_api
from tms.runs.retention import service as retention
from tms.state import AppState, dependencies
from tms.team import accounts
from tms.team import api as team_api
from tms.team import store as user_store
from tms.team import web as web_team
from tms.team.audit import service as audit
from tms.team.audit import web as web_audit
from tms.team.ldap import service as ldap_service
from tms.team.ldap import web as web_ldap
from tms.team.me import api as me_api
from tms.team.scim import api as scim_api
from tms.team.signin import two_factor_web as web_two_factor
from tms.team.signin import web as web_auth
from tms.team.signin.session import LoginRequired
from tms.team.signin.session_cookie import RotatingSessionConfig
from tms.team.signin.sessions import SQLiteSessionStore
from tms.team.signin.throttle import LoginThrottle
from tms.team.sso import web as web_sso
from tms.team.tokens import web as web_tokens
from tms.team.tokens.service import LastUsedTracker
from tms.traceability import api as traceability_api
from tms.traceability import web as traceability_web

PACKAGE_DIR = Path(__file__).parent
DEFAULT_MAX_BODY = 10 * 1024 * 1024


def _login_required(request: Request[Any, Any, Any], exc: LoginRequired) -> Redirect:
    return Redirect(exc.location)


def _api_router() -> Router:
    return Router(
        path="/api/v1",
        route_handlers=[
            me_api.get_me,
            projects_api.list_projects,
            projects_api.create_project,
            attachments_api.upload_attachments,
            attachments_api.download_attachment,
            attachments_api.upload_case_attachments,
            attachments_api.list_case_attachments,
            attachments_api.delete_attachment,
            cases_api.list_cases,
            cases_api.create_case,
            cases_api.get_case,
            cases_api.update_case,
            cases_api.delete_case,
            runs_api.list_runs,
            runs_api.create_run,
            runs_api.get_run,
            runs_api.update_run,
            runs_api.add_cases,
            runs_api.remove_cases,
            runs_api.rerun,
            results_api.list_results,
            results_api.post_results,
            executions_api.get_result,
            executions_api.update_result,
            executions_api.assign_results,
            team_api.list_users,
            team_api.list_audit,
            ingest_api.ingest,
            retention_api.sweep,
            failures_api.run_failures,
            failures_api.compare_runs,
            known_issues_api.list_known_issues,
            known_issues_api.create_known_issue,
            known_issues_api.get_known_issue,
            known_issues_api.update_known_issue,
            known_issues_api.delete_known_issue,
            quarantine_api.list_quarantine,
            quarantine_api.create_quarantine,
            quarantine_api.delete_quarantine,
            flaky_api.list_flaky,
            sections_api.list_sections,
            sections_api.create_section,
            sections_api.get_section,
            sections_api.update_section,
            sections_api.delete_section,
            fields_api.list_fields,
            fields_api.create_field,
            fields_api.get_field,
            fields_api.update_field,
            fields_api.delete_field,
            shared_steps_api.list_steps,
            shared_steps_api.create_step,
            shared_steps_api.get_step,
            shared_steps_api.update_step,
            shared_steps_api.delete_step,
            cases_api.list_versions,
            *review_api.ROUTES,
            case_io_api.export_cases,
            case_io_api.import_cases,
            projects_api.get_project,
            projects_api.update_project,
            milestones_api.list_milestones,
            milestones_api.create_milestone,
            milestones_api.get_milestone,
            milestones_api.update_milestone,
            milestones_api.delete_milestone,
            plans_api.list_plans,
            plans_api.create_plan,
            plans_api.get_plan,
            plans_api.update_plan,
            plans_api.delete_plan,
            *reports_api.HANDLERS,
            *integrations_api.HANDLERS,
            *traceability_api.HANDLERS,
            *comments_api.HANDLERS,
            *report_schedules_api.HANDLERS,
        ],
        middleware=[DefineMiddleware(BearerAuthMiddleware)],
        guards=[scope_guard],
        tags=["api"],
    )


def _web_routers() -> list[Any]:
    return [
        web_auth.login_page,
        web_auth.login,
        web_auth.logout,
        web_auth.setup_page,
        web_auth.setup,
        web_auth.second_step_page,
        web_auth.second_step,
        web_auth.forgot_page,
        web_auth.forgot,
        web_two_factor.account_router(),
        web_two_factor.settings_router(),
        web_home.router(),
        web_ai.router(),
        web_projects.router(),
        web_fields.router(),
        web_shared_steps.router(),
        web_tokens.router(),
        web_library.router(),
        web_cases.router(),
        review_web.router(),
        web_runs.router(),
        web_execution.router(),
        web_execution.upload_router(),
        attachments_web.router(),
        web_sso.router(),
        web_sso.public_router(),
        web_team.router(),
        web_team.public_router(),
        web_team.account_router(),
        web_audit.router(),
        web_webhooks.router(),
        webhooks_api.router(),
        inbox_api.router(),
        inbox_web.router(),
        comments_web.router(),
        web_integrations.settings_router(),
        web_integrations.cases_router(),
        web_integrations.inbound_router(),
        web_integrations.defects_router(),
        traceability_web.router(),
        web_failures.router(),
        web_milestones.router(),
        web_plans.router(),
        reports_web.router(),
        report_schedules_web.router(),
        *web_ldap.sign_in_routes(),
        web_ldap.settings_router(),
    ]


async def _offer_setup(app: Litestar) -> None:
    """On a database without users, prints the one-time link to the setup page (each replica its own)."""
    state = cast(AppState, app.state)
    if state.setup_token is None or await user_store.any_user_exists(state.db):
        state.setup_token = None
        return
    config = state.config
    await accounts.remember_setup_link(state.db, state.setup_token)
    print(f"tms: first run: no user yet. Open {config.base_url}/setup?token={state.setup_token} "
          "to create your team and admin account (link valid until a user exists).", flush=True)


def _template_filters(engine: JinjaTemplateEngine) -> None:
    """Filters every page may use: one reading of an audit entry's ``changes`` for all of them."""
    engine.engine.filters["change_lines"] = audit.change_lines
    # one word per result status on every page (Blocked, Untested): tms.runs.statuses owns them (issue 23)
    engine.engine.filters["status_label"] = statuses.label
    engine.engine.globals.update(RESULT_STATUSES=statuses.RESULT_STATUSES, STATUS_LABELS=statuses.LABELS,
                                 STATUS_COLORS=statuses.COLORS, FAILING_STATUSES=statuses.FAILING)


def create_app(config: Config, *, setup_token: str | None = None) -> Litestar:
    db = database_for(config)
    # a local folder or an S3 bucket (attachments.store); handlers reach it through AppState
    attachment_store = attachment_service.store_for_app(config)
    token_usage = LastUsedTracker()
    request_gauge = RequestGauge()  # webhook delivery yields to requests in progress

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        await db.open()
        # LDAP bind passwords stored in clear before migration 0042 are encrypted (a migration cannot)
        await ldap_service.seal_plain_passwords(db, config)
        if attachment_store.name == "local":  # an S3 replica keeps nothing on its disk
            config.attachments_dir.mkdir(parents=True, exist_ok=True)
        await _offer_setup(app)
        # the CSRF middleware reads its secret from this config object on each request
        csrf_config.secret = await get_or_create_setting(db, "csrf_secret", secrets.token_urlsafe(32))
        # the outbox drain: resumes pending deliveries from the database, then follows new events
        dispatcher = Dispatcher(db, config, gauge=request_gauge)
        await dispatcher.start()
        # flaky cases re-evaluated after each write of results, off the request path
        flaky_watcher = flaky_service.watch(db, config.get("flaky.threshold"), config.get("flaky.runs"))
        tasks = [
            # per process: each replica flushes the last-used times it noted itself
            asyncio.create_task(run_periodically(lambda: token_usage.flush(db), 15, "token last-used flush")),
            # shared: once a day across all replicas
            asyncio.create_task(run_periodically(_daily, 24 * 3600, "daily housekeeping", db=db)),
            asyncio.create_task(retention.sweep_daily(db, config, attachment_store)),
            asyncio.create_task(
                run_periodically(
                    lambda: attachment_collection.sweep_orphans(db, attachment_store),
                    attachment_service.SWEEP_SECONDS,
                    "attachment orphan sweep",
                    db=db,
                )
            ),
            # requirements' titles and statuses from the trackers, for the traceability matrix
            asyncio.create_task(
                run_periodically(
                    lambda: requirements.refresh_requirements(db, config),
                    requirements.REFRESH_SECONDS,
                    "tracker issue refresh",
                    first_delay=60,
                    db=db,
                )
            ),
            # scheduled mail reports: every replica polls; a compare-and-set claim mails each occurrence once
            asyncio.create_task(
                run_periodically(
                    lambda: report_schedules.run_due(db, config),
                    float(config.get("reports.schedule_poll_seconds")),
                    "report schedules",
                )
            ),
        ]
        try:
            yield
        finally:
            await dispatcher.stop()
            await flaky_watcher.idle()
            await attachment_collection.settle_pending()
            await inbox_service.settle_mail()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await token_usage.flush(db)
            await db.close()

    async def _daily() -> None:
        await db.housekeeping()
        await session_store.delete_expired()
        await login_throttle.forget_stale()

    session_store = SQLiteSessionStore(db)
    login_throttle = LoginThrottle(db, per_address=config.get("auth.login_failures_per_client"))

    csrf_config = CSRFConfig(
        secret=secrets.token_urlsafe(32),
        cookie_secure=config.production,
        # /api/v1 authenticates with Bearer tokens (no ambient credentials); /api/webhooks checks CSRF
        # itself after the session check, and inbound tracker webhooks are signed; /scim/v2 takes
        # Bearer tokens only, like /api/v1.
        exclude=["/api/", "/scim/"],
    )
    session_config = RotatingSessionConfig(
        key="tms_session",
        max_age=config.get("auth.session_days") * 24 * 3600,
        httponly=True,
        samesite="lax",
        secure=config.production,
        exclude=["/api/v1(?!/notifications)", "/scim/", "/static", "/schema", *operations_api.OPERATIONS_PATHS],
        renew_on_access=False,
    )
    template_config = TemplateConfig(directory=PACKAGE_DIR / "templates", engine=JinjaTemplateEngine,
                                     engine_callback=_template_filters)

    state = AppState.of(
        config=config,
        db=db,
        attachment_store=attachment_store,
        token_usage=token_usage,
        login_throttle=login_throttle,
        inflation_slots=inflation_slots(),
        setup_token=setup_token,
    )
    return Litestar(
        route_handlers=[
            operations_api.healthz,
            operations_api.readyz,
            operations_api.metrics,
            operations_api.favicon,
            _api_router(),
            scim_api.router(),
            *_web_routers(),
            create_static_files_router(path="/static", directories=[PACKAGE_DIR / "static"],
                                       include_in_schema=False),
        ],
        lifespan=[lifespan],
        state=state,
        dependencies=dependencies(),
        stores={"sessions": session_store},
        middleware=[operations_api.PROMETHEUS.middleware, options_middleware, request_gauge.middleware,
                    session_config.middleware, web_sso.login_choices],
        csrf_config=csrf_config,
        template_config=template_config,
        plugins=[FlashPlugin(FlashConfig(template_config=template_config))],
        exception_handlers={**EXCEPTION_HANDLERS, LoginRequired: _login_required},
        request_max_body_size=DEFAULT_MAX_BODY,
        before_request=check_request,
        before_send=[security_headers],
        openapi_config=OpenAPIConfig(
            title="TMS API",
            version=__version__,
            description="Test management service. Every /api/v1 operation needs `Authorization: Bearer "
            "svc_<prefix>_<secret>`; the security requirement of each operation names its scope (the signed-in "
            "user's inbox, /api/v1/notifications, takes the web session instead).",
            path="/schema",
            components=Components(
                security_schemes={
                    BEARER_SCHEME: SecurityScheme(
                        type="http", scheme="bearer", description="svc_<prefix>_<secret> token"
                    ),
                    SESSION_SCHEME: SecurityScheme(
                        type="apiKey", name="tms_session", security_scheme_in="cookie",
                        description="the web session (sign in at /login); unsafe methods also need the "
                        "x-csrftoken header",
                    ),
                }
            ),
            render_plugins=[ApiReferencePlugin(), JsonDocument()],
        ),
        debug=False,
    )
