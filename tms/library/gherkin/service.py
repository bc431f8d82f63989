"""Gherkin validation with the official Cucumber parser, shared by the API, the web UI and AI drafts,
and a case's checklist (its steps as a tester executes them), counted and listed page by page."""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from gherkin.errors import CompositeParserException, ParserError
from gherkin.parser import Parser
from gherkin.pickles.compiler import Compiler, GherkinDocumentWithURI, Pickle
from gherkin.token_scanner import TokenScanner

from tms.errors import InvalidInput
from tms.library.gherkin.shared import markers, origin

T = TypeVar("T")

# The most steps a case's checklist may expand to when it is saved (create, PATCH, import, AI drafts):
# Background steps once, every other step once per pickle (an Outline's once per Examples row, a Rule's
# Background in each of its scenarios). A manual checklist of 2,000 steps is already days of work, and
# a step_results PATCH (at most 10,000) records a whole one. A text that writes out more steps than
# that (bounded by its 200,000 characters) may not repeat any: its checklist is at most what it writes.
# A case stored before the limit (100 steps x 1,000 rows = 100,000) stays usable, page by page.
EXPANDED_STEPS_LIMIT = 2_000
# The execution view shows this many steps per page (?steps_page=N), whatever the case's size.
STEPS_PAGE_SIZE = 200
# Below this many characters parsing takes under ~4 ms (~2 us a character): not worth a thread.
PARSE_THREAD_THRESHOLD = 2_000


def _describe(error: Exception) -> str:
    location = getattr(error, "location", None) or {}
    message = str(error)
    # the parser prefixes "(line:column): "; say it in words so the line is obvious to a person
    if message.startswith("(") and "): " in message:
        message = message.split("): ", 1)[1]
    if location.get("line"):
        return f"line {location['line']}, column {location.get('column') or 1}: {message}"
    return message


def validate_gherkin(text: str, *, field: str = "bdd_content", written: int | None = None) -> None:
    """Raises ``InvalidInput`` naming the line unless ``text`` is a parseable feature.

    A document without a ``Feature:`` parses cleanly but no tool can run it, so it is refused too, and
    so is one whose checklist would hold more than ``EXPANDED_STEPS_LIMIT`` steps (counted, not expanded).
    Linear in the text (~2 us a character): callers run big texts off the event loop (``off_loop``).
    ``written``: the steps the case's own text writes out, when ``text`` is its expansion with shared
    steps (expanding them multiplies steps as Examples rows do).
    """
    try:
        document = Parser().parse(TokenScanner(text))
    except CompositeParserException as exc:
        details = "; ".join(_describe(error) for error in exc.errors)
        raise InvalidInput(f"{field} is not valid Gherkin: {details}", field=field) from None
    except ParserError as exc:
        raise InvalidInput(f"{field} is not valid Gherkin: {_describe(exc)}", field=field) from None
    feature = cast("dict[str, Any] | None", document.get("feature"))
    if not feature:
        raise InvalidInput(f"{field} is not valid Gherkin: it has no 'Feature:' line", field=field)
    plan = _plan(cast("dict[str, Any]", document), feature)
    if plan.over_limit if written is None else plan.size > max(EXPANDED_STEPS_LIMIT, written):
        raise InvalidInput(
            f"{field} expands to {plan.size:,} steps to execute (Background steps once, a Scenario Outline's "
            f"steps once per Examples row, a Rule's Background in each of its scenarios); a case may have "
            f"at most {EXPANDED_STEPS_LIMIT:,} (or, when its text writes out more steps than that, no more "
            "than it writes out): split its Examples over several cases", field=field)




@dataclass(frozen=True, slots=True)
class ChecklistStep:
    index: int  # 1-based position in the whole checklist: step_results refer to steps by it
    keyword: str
    text: str
    argument: str | None  # a doc string or a data table, as text
    shared: str | None = None  # the shared step it comes from (`* shared: <name>`, expanded)


@dataclass(frozen=True, slots=True)
class ChecklistGroup:
    title: str  # "Background", a scenario's name, or an outline's name with its example row
    steps: list[ChecklistStep]


@dataclass(frozen=True, slots=True)
class _Unit:
    """One scenario as the checklist lists it: ``pickles`` times ``per_pickle`` steps."""

    scenario: dict[str, Any]
    rule: dict[str, Any] | None  # the Rule holding it, if any (its Background repeats in every pickle)
    rule_background: list[dict[str, Any]]  # the Rule's Background children
    per_pickle: int  # the steps each pickle adds to the checklist (0 for a scenario without steps)
    rows: list[tuple[dict[str, Any], dict[str, Any]]] | None  # (examples, row) of an outline; None: one pickle

    @property
    def pickles(self) -> int:
        return 1 if self.rows is None else len(self.rows)


@dataclass(frozen=True, slots=True)
class Expansion:
    """A parsed case and the size of its checklist, computed without expanding anything."""

    document: dict[str, Any]
    feature: dict[str, Any]
    background: list[dict[str, Any]]  # the Feature's Background steps: listed once, first
    units: list[_Unit]
    size: int  # the checklist's steps
    written: int  # the steps the text writes out, each once
    shared: list[tuple[int, int, str]]  # (first line, last line, name) of each expanded shared step

    @property
    def over_limit(self) -> bool:
        """Whether saving this text now would be refused (a case stored before the limit can be)."""
        return self.size > max(EXPANDED_STEPS_LIMIT, self.written)


@dataclass(frozen=True, slots=True)
class ChecklistPage:
    groups: list[ChecklistGroup]
    total: int  # steps in the whole checklist
    page: int  # 1-based, within 1..pages
    pages: int
    first: int  # the indexes of the page's steps: first..last (last < first when the checklist is empty)
    last: int
    over_limit: bool  # the case expands past what a save allows now (stored before the limit existed)


def _units(feature: dict[str, Any]) -> tuple[list[dict[str, Any]], list[_Unit]]:
    """(Feature Background steps, scenarios in order) as the official pickle compiler sees them:
    a scenario without Examples is one pickle, an outline one per row of each Examples table that has
    a header; a pickle of a scenario without steps has none (not even the Background's)."""
    background: list[dict[str, Any]] = []
    units: list[_Unit] = []

    def add(scenario: dict[str, Any], rule: dict[str, Any] | None, rule_background: list[dict[str, Any]]) -> None:
        own = len(scenario.get("steps") or [])
        inherited = sum(len(child["background"].get("steps") or []) for child in rule_background)
        rows = None
        if scenario.get("examples"):
            rows = [(examples, row) for examples in scenario["examples"] if "tableHeader" in examples
                    for row in examples.get("tableBody") or []]
        units.append(_Unit(scenario, rule, rule_background, own + inherited if own else 0, rows))

    for child in feature.get("children") or []:
        if "background" in child:
            background.extend(child["background"].get("steps") or [])
        elif "rule" in child:
            rule = child["rule"]
            rule_background: list[dict[str, Any]] = []
            for inner in rule.get("children") or []:
                if "background" in inner:
                    rule_background.append(inner)
                elif "scenario" in inner:
                    add(inner["scenario"], rule, list(rule_background))
        elif "scenario" in child:
            add(child["scenario"], None, [])
    return background, units


def _size(background: list[dict[str, Any]], units: list[_Unit]) -> int:
    return len(background) + sum(unit.per_pickle * unit.pickles for unit in units)


def _written(feature: dict[str, Any]) -> int:
    """The steps the text writes out, each once (a long plain scenario is bounded by the text's length)."""
    def steps(children: list[dict[str, Any]]) -> int:
        total = 0
        for child in children:
            for key in ("background", "scenario"):
                if key in child:
                    total += len(child[key].get("steps") or [])
            if "rule" in child:
                total += steps(child["rule"].get("children") or [])
        return total

    return steps(feature.get("children") or [])


def _parse(text: str | None) -> Expansion | None:
    """The case's parsed checklist plan, linear in the text; None when it is empty, does not parse or
    has no Feature (a case is validated when it is written)."""
    if not text or not text.strip():
        return None
    try:
        document = Parser().parse(TokenScanner(text))
    except (CompositeParserException, ParserError):
        return None
    # read as the JSON it is: the parser's types declare `feature` required (a text without one has
    # none) and a feature's children as envelopes without keys
    feature = cast("dict[str, Any] | None", document.get("feature"))
    if not feature:
        return None
    return _plan(cast("dict[str, Any]", document), feature)


def _plan(document: dict[str, Any], feature: dict[str, Any]) -> Expansion:
    background, units = _units(feature)
    return Expansion(document, feature, background, units, _size(background, units), _written(feature),
                     markers(document.get("comments") or []))


def checklist(text: str | None) -> list[ChecklistGroup]:
    """The case's whole checklist as a tester executes it: the Feature's Background once, first, then
    every scenario (an Outline once per Examples row, placeholders filled in), from the official pickles.

    Materialises every step: for a case within ``EXPANDED_STEPS_LIMIT``; pages use ``checklist_window``.
    Text that does not parse gives an empty checklist (a case is validated when it is written).
    """
    parsed = _parse(text)
    if parsed is None:
        return []
    return checklist_window(parsed, 1, parsed.size + len(parsed.units) + 1)


def written_steps(text: str | None) -> int:
    """The steps a text writes out, each once (0 when it does not parse)."""
    parsed = _parse(text)
    return 0 if parsed is None else parsed.written


def step_count(text: str | None) -> int:
    """The number of steps in the case's checklist (steps x rows arithmetic: nothing is expanded)."""
    parsed = _parse(text)
    return 0 if parsed is None else parsed.size


def page_bounds(total: int, page: int, per_page: int = STEPS_PAGE_SIZE) -> tuple[int, int, int, int]:
    """(page, pages, first, last) of a checklist of ``total`` steps: a page past the end is the last."""
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    first = (page - 1) * per_page + 1
    return page, pages, first, min(total, first + per_page - 1)


def checklist_page(text: str | None, page: int, per_page: int = STEPS_PAGE_SIZE) -> ChecklistPage:
    """One page of the checklist: time and memory bounded by ``per_page`` (plus parsing the text)."""
    parsed = _parse(text)
    total = 0 if parsed is None else parsed.size
    page, pages, first, last = page_bounds(total, page, per_page)
    groups = [] if parsed is None else checklist_window(parsed, first, per_page, last_page=page == pages)
    return ChecklistPage(groups, total, page, pages, first, last, parsed is not None and parsed.over_limit)


def checklist_window(parsed: Expansion, first: int, count: int, *, last_page: bool = True) -> list[ChecklistGroup]:
    """The groups holding steps ``first`` .. ``first + count - 1``: whole scenarios and Examples rows
    before the window are skipped by arithmetic, and only the pickles in it are compiled (one each,
    from a document holding that scenario and row alone), so the work is bounded by ``count``.

    A scenario without steps (a title alone) is shown on the page where its position falls, at most
    ``count`` of them per window.
    """
    last = first + count - 1
    groups: list[ChecklistGroup] = []
    empty_groups = 0
    position = 0  # steps before the current one
    if parsed.background:
        steps = [ChecklistStep(n, step["keyword"].strip(), step["text"], _ast_argument(step),
                               origin(parsed.shared, step["location"]["line"]))
                 for n, step in enumerate(parsed.background, start=1) if first <= n <= last]
        if steps:
            groups.append(ChecklistGroup("Background", steps))
        position = len(parsed.background)
    for unit in parsed.units:
        if position >= last and not last_page:
            break
        span = unit.per_pickle * unit.pickles
        if unit.per_pickle == 0:
            # titles without steps sit between steps: on the page that holds the next step (or the last)
            if first <= position + 1 <= last or (last_page and position + 1 > last):
                for k in range(unit.pickles):
                    if empty_groups >= count:
                        break
                    groups.append(ChecklistGroup(_title(parsed, unit, k, None), []))
                    empty_groups += 1
            continue
        if position + span < first:
            position += span
            continue
        for k in range(max(0, (first - 1 - position) // unit.per_pickle), unit.pickles):
            start = position + k * unit.per_pickle  # the pickle's steps are start + 1 .. start + per_pickle
            if start + 1 > last:
                break
            pickle = _compile_one(parsed, unit, k)
            keywords = _unit_keywords(unit)
            steps = []
            for offset, step in enumerate(pickle.get("steps", []), start=start + 1):
                if first <= offset <= last:
                    keyword, line = keywords.get(step["astNodeIds"][0], ("*", 0))
                    steps.append(ChecklistStep(offset, keyword, step["text"], _pickle_argument(step),
                                               origin(parsed.shared, line) if parsed.shared else None))
            groups.append(ChecklistGroup(_title(parsed, unit, k, pickle), steps))
        position += span
    return groups


def _compile_one(parsed: Expansion, unit: _Unit, k: int) -> Pickle:
    """The ``k``-th pickle of ``unit``, compiled by the official compiler from a document holding only
    that scenario (and that Examples row), without the Feature's Background (the checklist lists it once)."""
    scenario = unit.scenario
    if unit.rows is not None:
        examples, row = unit.rows[k]
        scenario = {**scenario, "examples": [{**examples, "tableBody": [row]}]}
    child: dict[str, Any] = {"scenario": scenario}
    if unit.rule is not None:
        child = {"rule": {**unit.rule, "children": [*unit.rule_background, child]}}
    document = {**parsed.document, "feature": {**parsed.feature, "children": [child]}, "uri": "case.feature"}
    return Compiler().compile(cast("GherkinDocumentWithURI", document))[0]


def _unit_keywords(unit: _Unit) -> dict[str, tuple[str, int]]:
    """{AST step id: (keyword, line)} of the unit's steps."""
    steps = [*(s for child in unit.rule_background for s in child["background"].get("steps") or []),
             *(unit.scenario.get("steps") or [])]
    return {step["id"]: (step["keyword"].strip(), step["location"]["line"]) for step in steps}


def _title(parsed: Expansion, unit: _Unit, k: int, pickle: Pickle | None) -> str:
    if pickle is None:
        pickle = _compile_one(parsed, unit, k)
    title = pickle.get("name") or "Scenario"
    if unit.rows is not None:  # an outline's example row: show the row's values
        examples, row = unit.rows[k]
        header = [c["value"] for c in (examples.get("tableHeader") or {}).get("cells", [])]
        values = ", ".join(f"{h}={c['value']}" for h, c in zip(header, row["cells"], strict=False))
        title += f" ({values})"
    return title


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


# step counts by the text's digest: a tester's PATCHes and page saves of one case parse it once
_COUNTS: OrderedDict[bytes, int] = OrderedDict()
_COUNTS_KEPT = 512


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


async def off_loop(text: str | None, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` inline for a short text, in a worker thread for a long one (parsing costs
    ~2 us a character), so the event loop keeps serving everyone else."""
    if text is None or len(text) < PARSE_THREAD_THRESHOLD:
        return function(*args)
    return await asyncio.to_thread(function, *args)


async def count_steps(text: str | None) -> int:
    """``step_count`` off the event loop for a long text, remembered by content (called on the loop)."""
    if text is None or len(text) < PARSE_THREAD_THRESHOLD:
        return step_count(text)
    key = _digest(text)
    if key in _COUNTS:
        _COUNTS.move_to_end(key)
        return _COUNTS[key]
    size = await asyncio.to_thread(step_count, text)
    _COUNTS[key] = size
    while len(_COUNTS) > _COUNTS_KEPT:
        _COUNTS.popitem(last=False)
    return size


async def load_checklist_page(text: str | None, page: int, per_page: int = STEPS_PAGE_SIZE) -> ChecklistPage:
    """``checklist_page`` off the event loop for a long text."""
    return await off_loop(text, checklist_page, text, page, per_page)
