"""The route tables: every API route and every web router, in one place to read them (app.py wires them)."""

from __future__ import annotations

from typing import Any

from litestar import Router
from litestar.middleware import DefineMiddleware

from tms.ai import web as web_ai
from tms.attachments import api as attachments_api
from tms.attachments import web as attachments_web
from tms.failures import api as failures_api
from tms.failures import web as web_failures
from tms.failures.flaky import api as flaky_api
from tms.failures.known_issues import api as known_issues_api
from tms.failures.quarantine import api as quarantine_api
from tms.http.api_auth import BearerAuthMiddleware, scope_guard
from tms.integrations import api as integrations_api
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
from tms.notifications.inbox import api as inbox_api
from tms.notifications.inbox import web as inbox_web
from tms.planning.dashboard import web as web_home
from tms.planning.milestones import api as milestones_api
from tms.planning.milestones import web as web_milestones
from tms.planning.plans import api as plans_api
from tms.planning.plans import web as web_plans
from tms.reports import api as reports_api
from tms.reports import web as reports_web
from tms.reports.schedules import api as report_schedules_api
from tms.reports.schedules import web as report_schedules_web
from tms.runs import api as runs_api
from tms.runs import web as web_runs
from tms.runs.executions import api as executions_api
from tms.runs.executions import web as web_execution
from tms.runs.ingest import api as ingest_api
from tms.runs.results import api as results_api
from tms.runs.retention import api as retention_api
from tms.team import api as team_api
from tms.team import web as web_team
from tms.team.audit import web as web_audit
from tms.team.ldap import web as web_ldap
from tms.team.me import api as me_api
from tms.team.signin import two_factor_web as web_two_factor
from tms.team.signin import web as web_auth
from tms.team.sso import web as web_sso
from tms.team.tokens import web as web_tokens
from tms.traceability import api as traceability_api
from tms.traceability import web as traceability_web


def api_router() -> Router:
    """Every /api/v1 route: Bearer tokens, checked for their scope by the guard."""
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


def web_routers() -> list[Any]:
    """The web UI's routes (sessions, CSRF) and the few JSON routes that take the web session."""
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
