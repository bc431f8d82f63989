"""Chat messages: an event rendered as the body of a Slack, Microsoft Teams or Google Chat incoming webhook.

Pure functions, no I/O. An event becomes one ``Message`` (a title, a link, facts and a list of
lines: the failed tests), and each chat service gets its own rendering of that message:

* Slack: ``{text, blocks}``: ``text`` is the notification fallback, the blocks a header section,
  the counts as fields and the failed tests in sections of a few lines each (Slack caps a section's
  text at 3000 characters);
* Teams: a ``message`` carrying one Adaptive Card (what the Teams "Workflows" incoming webhook
  posts; the older Office 365 connectors accept it too), facts as a FactSet, an "Open run" action;
* Google Chat: ``{text}`` in its markup (``*bold*``, ``<url|label>`` links).

Every link points into the web UI under ``server.base_url``: the run page, and a case's page for a
failed test linked to a case (an unlinked result links to its run).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from tms.runs.statuses import LABELS, label

CHAT_FORMATS: tuple[str, ...] = ("slack", "teams", "google_chat")
FAILED_LIST_MAX = 15  # failed tests named in a message; the rest are counted ("and 12 more")
TITLE_MAX = 150
ERROR_MAX = 300
SLACK_LINES_PER_SECTION = 5


@dataclass(frozen=True, slots=True)
class FailedTest:
    """One failed or broken result of a run, as a message names it."""

    test_case_id: str | None
    test_case_code: str | None
    title: str | None
    status: str


def failed_tests_of(rows: Sequence[Mapping[str, Any]]) -> list[FailedTest]:
    """From rows of ``test_case_id, test_case_code, title, status``."""
    return [FailedTest(row["test_case_id"], row["test_case_code"], row["title"], row["status"]) for row in rows]


@dataclass(frozen=True, slots=True)
class Context:
    """What the event's own data does not say: where the UI lives and what the database knows."""

    base_url: str
    project_name: str | None = None
    environment: str | None = None
    failed_tests: Sequence[FailedTest] = ()


@dataclass(frozen=True, slots=True)
class Line:
    label: str  # e.g. the case code
    text: str  # e.g. the title
    url: str | None


@dataclass(slots=True)
class Message:
    title: str
    url: str | None
    link_label: str
    ok: bool  # no failure to report (colours the card)
    facts: list[tuple[str, str]] = field(default_factory=list)
    detail: str | None = None
    lines_heading: str | None = None
    lines: list[Line] = field(default_factory=list)
    more: int = 0


def _clip(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _run_url(base_url: str, run_id: str) -> str:
    return f"{base_url}/runs/{quote(run_id, safe='')}"


def _case_url(base_url: str, case_id: str) -> str:
    return f"{base_url}/cases/{quote(case_id, safe='')}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _run_facts(data: dict[str, Any], context: Context) -> list[tuple[str, str]]:
    facts = []
    if context.project_name:
        facts.append(("Project", context.project_name))
    environment = data.get("environment", context.environment)
    if environment:
        facts.append(("Environment", str(environment)))
    return facts


def _completed(data: dict[str, Any], context: Context) -> Message:
    total = int(data.get("total") or 0)
    failed, broken = int(data.get("failed") or 0), int(data.get("broken") or 0)
    passed, skipped = int(data.get("passed") or 0), int(data.get("skipped") or 0)
    name = _clip(data.get("run_name"), TITLE_MAX)
    problems = failed + broken
    if problems:
        parts = [f"{failed} failed"] + ([f"{broken} {LABELS['BROKEN'].lower()}"] if broken else [])
        title = f"❌ Run “{name}” completed: {', '.join(parts)} of {_plural(total, 'test')}"
    else:
        title = f"✅ Run “{name}” completed: {passed} of {_plural(total, 'test')} passed"
    facts = [
        *_run_facts(data, context), ("Passed", str(passed)), ("Failed", str(failed)), (LABELS["BROKEN"], str(broken)),
        ("Skipped", str(skipped)), ("Total", str(total)),
    ]
    run_url = _run_url(context.base_url, str(data.get("run_id", "")))
    shown = list(context.failed_tests)[:FAILED_LIST_MAX]
    lines = [
        Line(
            label=test.test_case_code or label(test.status).lower(),
            text=_clip(test.title, TITLE_MAX)
            + (f" ({label(test.status).lower()})" if test.status == "BROKEN" and test.test_case_code else ""),
            url=_case_url(context.base_url, test.test_case_id) if test.test_case_id else run_url,
        )
        for test in shown
    ]
    return Message(
        title=title, url=run_url, link_label="Open run", ok=not problems, facts=facts,
        lines_heading="Failed tests" if lines else None, lines=lines, more=max(0, problems - len(lines)),
    )


def _result_failed(data: dict[str, Any], context: Context) -> Message:
    code, title = data.get("test_case_code"), _clip(data.get("title"), TITLE_MAX)
    who = f"{code} {title}".strip() if code else (title or "A test")
    run_url = _run_url(context.base_url, str(data.get("run_id", "")))
    facts = [("Run", _clip(data.get("run_name"), TITLE_MAX)), *_run_facts(data, context)]
    if data.get("bug_ticket_key"):
        facts.append(("Bug", str(data["bug_ticket_key"])))
    lines = []
    if data.get("test_case_id"):
        lines.append(Line(code or "case", title, _case_url(context.base_url, str(data["test_case_id"]))))
    message = data.get("error_message")
    return Message(
        title=f"❌ {who} failed in run “{_clip(data.get('run_name'), TITLE_MAX)}”", url=run_url,
        link_label="Open run", ok=False, facts=facts, detail=_clip(message, ERROR_MAX) if message else None,
        lines_heading="Test case" if lines else None, lines=lines,
    )


def _case_message(title: str, data: dict[str, Any], context: Context, facts: list[tuple[str, str]]) -> Message:
    case_id = data.get("test_case_id")
    url = _case_url(context.base_url, str(case_id)) if case_id else None
    if context.project_name:
        facts = [("Project", context.project_name), *facts]
    return Message(title=title, url=url, link_label="Open test case", ok=True, facts=facts)


def message_for(event: str, data: dict[str, Any], context: Context) -> Message:
    """The message an event makes; an event this module does not know still gets a readable one."""
    if event == "test_run.completed":
        return _completed(data, context)
    if event == "test_run_result.failed":
        return _result_failed(data, context)
    if event == "bug.resolved":
        code, key = data.get("test_case_code") or "a test case", data.get("bug_ticket_key") or "a bug"
        return _case_message(f"🐞 Bug {key} resolved: {code} needs a retest", data, context, [])
    if event == "retest.required":
        code = data.get("test_case_code") or "A test case"
        facts = [("Reason", _clip(data.get("reason"), TITLE_MAX))] if data.get("reason") else []
        return _case_message(f"🔁 {code} needs a retest", data, context, facts)
    if event == "ping":
        return Message(title="👋 Test message from TMS: this chat webhook is reachable.",
                       url=context.base_url or None, link_label="Open TMS", ok=True)
    return Message(title=f"TMS event {event}", url=context.base_url or None, link_label="Open TMS", ok=True)


# --- Slack -------------------------------------------------------------------------------------------


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_link(url: str | None, label: str) -> str:
    return f"<{url}|{_slack_escape(label)}>" if url else _slack_escape(label)


def slack(message: Message) -> dict[str, Any]:
    headline = f"*{_slack_link(message.url, message.title)}*" if message.url else f"*{_slack_escape(message.title)}*"
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": headline}}]
    if message.facts:
        blocks.append({
            "type": "section",
            "fields": [{"type": "mrkdwn", "text": f"*{_slack_escape(k)}*\n{_slack_escape(v)}"}
                       for k, v in message.facts[:10]],
        })
    if message.detail:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{_slack_escape(message.detail)}```"}})
    if message.lines:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*{message.lines_heading}*"}})
        for start in range(0, len(message.lines), SLACK_LINES_PER_SECTION):
            chunk = message.lines[start : start + SLACK_LINES_PER_SECTION]
            text = "\n".join(f"• {_slack_link(line.url, line.label)} {_slack_escape(line.text)}" for line in chunk)
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    if message.more:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": f"…and {message.more} more: {_slack_link(message.url, 'see the run')}"}
        ]})
    return {"text": _slack_escape(message.title), "blocks": blocks}


# --- Microsoft Teams (Adaptive Card) -------------------------------------------------------------------


def _md_escape(text: str) -> str:
    for char in "\\[]*_`":
        text = text.replace(char, "\\" + char)
    return text


def teams(message: Message) -> dict[str, Any]:
    body: list[dict[str, Any]] = [{
        "type": "TextBlock", "text": message.title, "weight": "Bolder", "size": "Medium", "wrap": True,
        "color": "Good" if message.ok else "Attention",
    }]
    if message.facts:
        body.append({"type": "FactSet", "facts": [{"title": k, "value": v} for k, v in message.facts]})
    if message.detail:
        body.append({"type": "TextBlock", "text": message.detail, "wrap": True, "fontType": "Monospace"})
    if message.lines:
        body.append({"type": "TextBlock", "text": message.lines_heading, "weight": "Bolder", "wrap": True})
        for line in message.lines:
            label = f"[{_md_escape(line.label)}]({line.url})" if line.url else _md_escape(line.label)
            body.append({"type": "TextBlock", "text": f"{label} {_md_escape(line.text)}", "wrap": True,
                         "spacing": "None"})
    if message.more:
        body.append({"type": "TextBlock", "text": f"…and {message.more} more", "isSubtle": True, "wrap": True})
    card: dict[str, Any] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    }
    if message.url:
        card["actions"] = [{"type": "Action.OpenUrl", "title": message.link_label, "url": message.url}]
    return {
        "type": "message",
        "summary": message.title,
        "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None,
                         "content": card}],
    }


# --- Google Chat ---------------------------------------------------------------------------------------


_GCHAT_LABEL = str.maketrans({"|": "\u00a6", ">": "\u203a"})  # would end the link markup early


def _gchat_link(url: str | None, label: str) -> str:
    return f"<{url}|{label.translate(_GCHAT_LABEL)}>" if url else label


def google_chat(message: Message) -> dict[str, Any]:
    parts = [f"*{message.title}*"]
    if message.facts:
        parts.append(" · ".join(f"{k}: {v}" for k, v in message.facts))
    if message.detail:
        parts.append(f"```{message.detail}```")
    if message.lines:
        parts.append(f"*{message.lines_heading}*")
        parts.extend(f"• {_gchat_link(line.url, line.label)} {line.text}" for line in message.lines)
    if message.more:
        parts.append(f"…and {message.more} more")
    if message.url:
        parts.append(_gchat_link(message.url, message.link_label))
    return {"text": "\n".join(parts)}


_RENDERERS = {"slack": slack, "teams": teams, "google_chat": google_chat}


def render(chat_format: str, event: str, data: dict[str, Any], context: Context) -> bytes:
    """The exact bytes posted (and signed) for ``event`` to a subscription of ``chat_format``."""
    payload = _RENDERERS[chat_format](message_for(event, data, context))
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
