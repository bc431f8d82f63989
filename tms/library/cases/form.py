"""The case form (create and edit pages) read into a CaseCreate-shaped dict and filled from a case:
tickets one a line, the model's errors put in words a person acts on."""

from __future__ import annotations

from typing import Any

from tms.library.fields import values as field_values

SOURCES = ("JIRA", "GITHUB", "GITLAB", "LINEAR", "OTHER")


def parse_tickets(text: str) -> tuple[list[dict[str, str]], str | None]:
    """One ticket a line: ``JIRA SHOP-12`` or just ``SHOP-12`` (source OTHER)."""
    tickets = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) == 2 and parts[0].upper() in SOURCES:
            tickets.append({"source": parts[0].upper(), "key": parts[1]})
        elif len(parts) == 1:
            tickets.append({"source": "OTHER", "key": parts[0]})
        else:
            return [], f"Line {number}: write a source and a key, e.g. “JIRA SHOP-12”."
    return tickets, None


def case_data(form: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The form as a CaseCreate-shaped dict, and errors only the form can make (ticket lines)."""
    tickets, ticket_error = parse_tickets(form.get("tickets", ""))
    data: dict[str, Any] = {
        "title": form.get("title", "").strip(),
        "bdd_content": form.get("bdd_content", "").replace("\r\n", "\n"),
        "project_id": form.get("project_id") or None,
        "status": form.get("status") or "DRAFT",
        "priority": form.get("priority") or "MEDIUM",
        "layer": form.get("layer") or None,
        "is_e2e": form.get("is_e2e") == "on",
        "automation_status": form.get("automation_status") or "MANUAL",
        "tags": [tag.strip() for tag in form.get("tags", "").split(",") if tag.strip()],
        "tickets": tickets,
        "section_id": form.get("section_id") or None,
    }
    if form.get("code", "").strip():
        data["code"] = form["code"].strip()
    return data, ({"tickets": ticket_error} if ticket_error else {})


def humane_case_errors(errors: dict[str, str]) -> dict[str, str]:
    if "code" in errors and "regex" in errors["code"]:
        errors["code"] = "A code is capital letters or digits, a dash and a number, e.g. SHOP-12."
    for key in ("status", "priority", "layer", "automation_status"):
        if key in errors:
            errors[key] = "Choose one of the listed values."
    return errors


def form_from_case(case: Any, fields: dict[str, Any]) -> dict[str, Any]:
    return {**field_values.form_values(fields, case.custom_fields),
        "title": case.title, "bdd_content": case.bdd_content, "project_id": case.project_id or "",
        "code": case.code, "status": case.status, "priority": case.priority, "layer": case.layer or "",
        "is_e2e": "on" if case.is_e2e else "", "automation_status": case.automation_status,
        "tags": ", ".join(case.tags), "tickets": "\n".join(f"{t.source} {t.key}" for t in case.tickets),
        "section_id": case.section_id or "",
    }
