"""Gherkin validation with the official Cucumber parser, shared by the API, the web UI and AI drafts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from gherkin.errors import CompositeParserException, ParserError
from gherkin.parser import Parser
from gherkin.pickles.compiler import Compiler
from gherkin.token_scanner import TokenScanner

from tms.services.errors import InvalidInput


def _describe(error: Exception) -> str:
    location = getattr(error, "location", None) or {}
    message = str(error)
    # the parser prefixes "(line:column): "; say it in words so the line is obvious to a person
    if message.startswith("(") and "): " in message:
        message = message.split("): ", 1)[1]
    if location.get("line"):
        return f"line {location['line']}, column {location.get('column') or 1}: {message}"
    return message


def validate_gherkin(text: str, *, field: str = "bdd_content") -> None:
    """Raises ``InvalidInput`` naming the line unless ``text`` is a parseable feature.

    A document without a ``Feature:`` parses cleanly but no tool can run it, so it is refused too.
    """
    try:
        document = Parser().parse(TokenScanner(text))
    except CompositeParserException as exc:
        details = "; ".join(_describe(error) for error in exc.errors)
        raise InvalidInput(f"{field} is not valid Gherkin: {details}", field=field) from None
    except ParserError as exc:
        raise InvalidInput(f"{field} is not valid Gherkin: {_describe(exc)}", field=field) from None
    if not document.get("feature"):
        raise InvalidInput(f"{field} is not valid Gherkin: it has no 'Feature:' line", field=field)


@dataclass(frozen=True, slots=True)
class ChecklistStep:
    index: int  # 1-based position in the whole checklist: step_results refer to steps by it
    keyword: str
    text: str
    argument: str | None  # a doc string or a data table, as text


@dataclass(frozen=True, slots=True)
class ChecklistGroup:
    title: str  # "Background", a scenario's name, or an outline's name with its example row
    steps: list[ChecklistStep]


def checklist(text: str | None) -> list[ChecklistGroup]:
    """The case's steps as a tester executes them: the Feature's Background once, first, then every
    scenario (an Outline once per Examples row, placeholders filled in), from the official pickles.

    Text that does not parse gives an empty checklist (a case is validated when it is written).
    """
    if not text or not text.strip():
        return []
    try:
        document = Parser().parse(TokenScanner(text))
    except (CompositeParserException, ParserError):
        return []
    # read as the JSON it is: the parser's types declare `feature` required (a text without one has
    # none) and a feature's children as envelopes without keys
    feature = cast("dict[str, Any] | None", document.get("feature"))
    if not feature:
        return []
    keywords: dict[str, str] = {}
    _collect_keywords(feature, keywords)
    background_ids: set[str] = set()
    groups: list[ChecklistGroup] = []
    counter = 0
    for child in feature.get("children", []):
        if "background" in child:
            background = child["background"]
            steps = []
            for step in background.get("steps", []):
                counter += 1
                background_ids.add(step["id"])
                steps.append(ChecklistStep(counter, step["keyword"].strip(), step["text"], _ast_argument(step)))
            if steps:
                groups.append(ChecklistGroup("Background", steps))
    for pickle in Compiler().compile({**document, "uri": "case.feature"}):
        steps = []
        for step in pickle.get("steps", []):
            if step["astNodeIds"][0] in background_ids:
                continue
            counter += 1
            steps.append(ChecklistStep(counter, keywords.get(step["astNodeIds"][0], "*"), step["text"],
                                       _pickle_argument(step)))
        title = pickle.get("name") or "Scenario"
        if len(pickle.get("astNodeIds", [])) > 1:  # an outline's example row: show the row's values
            title += f" ({_example_values(feature, pickle['astNodeIds'][-1])})"
        groups.append(ChecklistGroup(title, steps))
    return groups


def step_count(text: str | None) -> int:
    return sum(len(group.steps) for group in checklist(text))


def _collect_keywords(node: Any, keywords: dict[str, str]) -> None:
    if isinstance(node, dict):
        if "keyword" in node and "text" in node and "id" in node:
            keywords[node["id"]] = node["keyword"].strip()
        for value in node.values():
            _collect_keywords(value, keywords)
    elif isinstance(node, list):
        for value in node:
            _collect_keywords(value, keywords)


def _ast_argument(step: dict[str, Any]) -> str | None:
    if step.get("docString"):
        return str(step["docString"].get("content", ""))
    if step.get("dataTable"):
        return "\n".join("| " + " | ".join(c["value"] for c in row["cells"]) + " |"
                         for row in step["dataTable"].get("rows", []))
    return None


def _pickle_argument(step: Mapping[str, Any]) -> str | None:
    argument = step.get("argument") or {}
    if argument.get("docString"):
        return str(argument["docString"].get("content", ""))
    if argument.get("dataTable"):
        return "\n".join("| " + " | ".join(c["value"] for c in row["cells"]) + " |"
                         for row in argument["dataTable"].get("rows", []))
    return None


def _example_values(feature: dict[str, Any], row_id: str) -> str:
    found: list[str] = []

    def walk(node: Any) -> None:
        if found:
            return
        if isinstance(node, dict):
            if "examples" in node:
                for examples in node["examples"]:
                    header = [c["value"] for c in (examples.get("tableHeader") or {}).get("cells", [])]
                    for row in examples.get("tableBody", []):
                        if row["id"] == row_id:
                            found.append(", ".join(f"{h}={c['value']}" for h, c in
                                                   zip(header, row["cells"], strict=False)))
                            return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(feature)
    return found[0] if found else "example"
