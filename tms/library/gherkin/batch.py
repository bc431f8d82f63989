"""Gherkin verdicts of many texts at once (an import's check), in a module light enough for workers.

Import files of 3,000+ cases are checked in worker processes (``tms.library.transfer.plan``). A spawned
worker imports the module of the function it runs: this one needs only the parser (~0.15 s to import),
not the import code and everything it pulls in (~0.45 s), on every import.
"""

from __future__ import annotations

from tms.errors import InvalidInput
from tms.library.gherkin.service import validate_gherkin


def gherkin_error(text: str) -> str | None:
    """What is wrong with ``text`` as a feature file, or None when it is valid."""
    try:
        validate_gherkin(text)
    except InvalidInput as exc:
        return exc.detail
    return None


def gherkin_errors(texts: list[str]) -> list[str | None]:
    return [gherkin_error(text) for text in texts]
