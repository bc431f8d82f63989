"""Reading the model's answer into drafts, leniently: models rarely follow a format to the letter.

Accepted, in this order: the JSON asked for (``{"scenarios": [{"title", "gherkin"}]}``, also a bare
list, other common key names, or JSON inside a Markdown code fence or surrounded by prose), then plain
Gherkin (fenced or not), split into one draft per ``Scenario:``. The answer is data: it is never
evaluated, only decoded and sliced, and the drafts are shown escaped for a person to review.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MAX_DRAFTS = 20
MAX_TITLE = 200

# reasoning models (DeepSeek-R1, QwQ via Ollama) think aloud first; braces in there would confuse the JSON search
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_SCENARIO_LINE = re.compile(r"^\s*(Scenario Outline|Scenario Template|Scenario|Example)\s*:\s*(.*)$")
_FEATURE_LINE = re.compile(r"^\s*(Feature|Business Need|Ability)\s*:\s*(.*)$", re.M)
_TAG_LINE = re.compile(r"^\s*@")
_TITLE_KEYS = ("title", "name", "scenario_title", "summary")
_BODY_KEYS = ("gherkin", "bdd_content", "bdd", "content", "scenario", "text", "steps")


class MalformedAnswer(Exception):
    """The answer holds no scenario in any accepted form; the message says what was wrong."""


@dataclass(frozen=True)
class RawDraft:
    title: str
    gherkin: str


def parse_answer(text: str) -> list[RawDraft]:
    """The drafts in a model's answer; raises ``MalformedAnswer`` when there are none."""
    text = _THINK.sub("", text)
    if not text.strip():
        raise MalformedAnswer("the answer is empty")
    document = _find_json(text)
    if document is not None:
        drafts = _from_json(document)
        if drafts:
            return drafts[:MAX_DRAFTS]
    drafts = _from_gherkin(_unfenced(text))
    if drafts:
        return drafts[:MAX_DRAFTS]
    if document is not None:
        raise MalformedAnswer("the JSON answer holds no scenarios with Gherkin text")
    raise MalformedAnswer("the answer is neither the requested JSON nor Gherkin with a 'Scenario:' line")


def _find_json(text: str) -> Any:
    candidates = [text.strip()]
    candidates += [body.strip() for _, body in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        if candidate[:1] not in ("{", "["):
            continue
        try:
            # strict=False: models often put raw newlines inside JSON strings (the Gherkin), which is
            # invalid JSON but unambiguous
            return json.loads(candidate, strict=False)
        except ValueError:
            continue
    return None


def _from_json(document: Any) -> list[RawDraft]:
    items: Any = document
    if isinstance(document, dict):
        items = next((document[k] for k in ("scenarios", "test_cases", "cases", "drafts", "items")
                      if isinstance(document.get(k), list)), [document])
    if not isinstance(items, list):
        return []
    drafts: list[RawDraft] = []
    for item in items:
        title, body = "", None
        if isinstance(item, str):
            body = item
        elif isinstance(item, dict):
            title = next((str(item[k]) for k in _TITLE_KEYS if isinstance(item.get(k), str)), "")
            raw = next((item[k] for k in _BODY_KEYS if isinstance(item.get(k), str | list)), None)
            body = "\n".join(str(line) for line in raw) if isinstance(raw, list) else raw
        if body and body.strip():
            drafts.extend(_from_gherkin(body, title) or [_draft(title, body)])
    return drafts


def _unfenced(text: str) -> str:
    """Fenced blocks joined when there are any (prose around them dropped), else the text itself."""
    blocks = [body for _, body in _FENCE.findall(text)]
    return "\n".join(blocks) if blocks else text


def _from_gherkin(text: str, title: str = "") -> list[RawDraft]:
    """One draft per scenario; the feature header (Feature, description, Background) is kept in each."""
    lines = text.replace("\r\n", "\n").strip("\n").split("\n")
    starts = [i for i, line in enumerate(lines) if _SCENARIO_LINE.match(line)]
    if not starts:
        return []
    # tag lines right above a scenario belong to it, not to the header or the previous scenario
    starts = [_with_tags(lines, i) for i in starts]
    header = lines[:starts[0]]
    if not any(_FEATURE_LINE.match(line) for line in header):
        header = []
    drafts = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        block = lines[start:end]
        while block and not block[-1].strip():
            block.pop()
        name = next((m.group(2).strip() for m in map(_SCENARIO_LINE.match, block) if m), "")
        chosen = title if title and len(starts) == 1 else name or title
        drafts.append(_draft(chosen, "\n".join(header + block)))
    return drafts


def _with_tags(lines: list[str], index: int) -> int:
    while index > 0 and _TAG_LINE.match(lines[index - 1]):
        index -= 1
    return index


def _draft(title: str, gherkin: str) -> RawDraft:
    """A draft whose Gherkin is a whole document: a scenario alone gets a Feature line named after it."""
    body = gherkin.replace("\r\n", "\n").strip("\n")
    scenario = next((m.group(2).strip() for m in map(_SCENARIO_LINE.match, body.split("\n")) if m), "")
    title = " ".join((title or scenario or "Untitled scenario").split())[:MAX_TITLE]
    if not _FEATURE_LINE.search(body):
        indented = "\n".join(("  " + line) if line.strip() else "" for line in _dedent(body).split("\n"))
        body = f"Feature: {title}\n\n{indented}"
    return RawDraft(title=title, gherkin=body + "\n")


def _dedent(text: str) -> str:
    lines = text.split("\n")
    margins = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(margins) if margins else 0
    return "\n".join(line[cut:] for line in lines)
