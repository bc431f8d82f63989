"""Gherkin validation with the official Cucumber parser, shared by the API, the web UI and AI drafts."""

from __future__ import annotations

from gherkin.errors import CompositeParserException, ParserError
from gherkin.parser import Parser
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
