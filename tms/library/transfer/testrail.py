"""TestRail's XML export read into ``Parsed`` rows: sections by path, steps turned into Gherkin,
``custom_*`` fields kept (see ``service.py`` for how they become the project's custom fields)."""


import io
import re
from dataclasses import dataclass, field
from typing import Any

from defusedxml import ElementTree as SafeET
from defusedxml.common import DefusedXmlException

from tms.errors import InvalidInput
from tms.library.fields import values as field_values
from tms.library.fields.models import CustomField
from tms.library.transfer.csvfile import (
    MAX_CASE_ID_DIGITS,
    MAX_SECTION_DEPTH,
    MAX_XML_DEPTH,
    ImportRow,
    Parsed,
    check_section_count,
)

_JIRA_KEY = re.compile(r"^[A-Z][A-Z0-9]+-\d+$")

# TestRail ----------------------------------------------------------------------------------------------

_TR_PRIORITY = {"low": "LOW", "medium": "MEDIUM", "high": "HIGH", "critical": "CRITICAL", "1": "LOW",
                "2": "MEDIUM", "3": "HIGH", "4": "CRITICAL"}
# custom fields mapped to steps or BDD; every other custom field is kept in the feature's description
_TR_STEP_FIELDS = {"steps_separated", "steps", "expected", "preconds", "testrail_bdd_scenario", "automation_type"}


def _child_text(element: Any, name: str) -> str:
    child = element.find(name)
    if child is None:
        return ""
    return "".join(child.itertext()).strip()


def _value_of(element: Any) -> str:
    """A custom field as text: its ``<value>`` when it has one (dropdowns), else all its text."""
    value = element.find("value")
    if value is not None:
        return "".join(value.itertext()).strip()
    return "\n".join(t.strip() for t in element.itertext() if t.strip())


def _free_lines(text: str) -> list[str]:
    """Free text kept inside a feature's description: each line quoted so no line reads as Gherkin."""
    return [f"  > {line.strip()}" for line in text.splitlines() if line.strip()]


def _step_lines(keyword: str, text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [f"    {keyword if i == 0 else 'And'} {line}" for i, line in enumerate(lines)]


def _testrail_gherkin(title: str, steps: list[tuple[str, str]], preconds: str, bdd: str,
                      notes: list[tuple[str, str]]) -> str:
    description: list[str] = []
    for name, value in notes:
        first, *rest = value.splitlines() or [""]
        description.append(f"  > {name}: {first.strip()}")
        description += _free_lines("\n".join(rest))
    if bdd.strip():
        if bdd.lstrip().lower().startswith("feature:"):
            if not description:
                return bdd.strip() + "\n"
            head, _, feature_body = bdd.strip().partition("\n")
            return "\n".join([head, *description, feature_body]) + "\n"
        lines = [f"Feature: {title}", *description, ""]
        lines += [f"  {line.rstrip()}" if line.strip() else "" for line in bdd.strip().splitlines()]
        return "\n".join(lines) + "\n"
    lines = [f"Feature: {title}", *description, "", f"  Scenario: {title}"]
    body = _step_lines("Given", preconds)
    for content, expected in steps:
        body += _step_lines("When", content)
        body += _step_lines("Then", expected)
    if not body:
        body = ["    Given the steps were not written in TestRail"]
    return "\n".join(lines + body) + "\n"


@dataclass
class _Seen:
    """What a TestRail custom field looked like across the file: the kinds of value and the options."""

    name: str
    kinds: set[str] = field(default_factory=set)
    options: list[str] = field(default_factory=list)

    def draft(self, key: str) -> CustomField:
        if self.kinds <= {"select", "multiselect"}:
            kind = "multiselect" if "multiselect" in self.kinds else "select"
            return field_values.draft_field(key, self.name, kind, self.options[:200])
        return field_values.draft_field(key, self.name, "textarea" if "textarea" in self.kinds else "text", [])


def _field_key(tag: str) -> str:
    """TestRail's system name of a custom field (``custom_browser`` or, in the XML, ``browser``) as a key."""
    name = tag.lower().removeprefix("custom_")
    return re.sub(r"[^a-z0-9_]", "_", name)[:50].strip("_")


def _custom_value(child: Any, key: str, seen: dict[str, _Seen]) -> str:
    """A custom field's value as a CSV cell would hold it, noting its kind (and options) in ``seen``."""
    info = seen.setdefault(key, _Seen(child.tag.removeprefix("custom_").replace("_", " ").strip().capitalize()))
    values = [" ".join("".join(v.itertext()).split()).replace(field_values.OPTION_SEPARATOR, ",")
              for v in child.findall("value")]
    values = [v[:200] for v in values if v]
    if values:
        info.kinds.add("multiselect" if len(values) > 1 else "select")
        info.options += [v for v in values if v not in info.options]
        return field_values.OPTION_SEPARATOR.join(values)
    text = "\n".join(t.strip() for t in child.itertext() if t.strip())
    info.kinds.add("textarea" if "\n" in text else "text")
    return text


def _testrail_case(number: int, element: Any, section: tuple[str, ...],
                   seen: dict[str, _Seen] | None = None) -> ImportRow:
    title = " ".join(_child_text(element, "title").split())
    fields: dict[str, Any] = {"title": title}
    case_id = _child_text(element, "id")
    digits = re.sub(r"\D", "", case_id)
    if digits:
        number_part = digits.lstrip("0") or "0"
        if len(number_part) > MAX_CASE_ID_DIGITS:
            raise InvalidInput(f"case {number}: its id {case_id[:24]!r}… has {len(number_part):,} digits; a TestRail "
                               f"case id has at most {MAX_CASE_ID_DIGITS}", field="file")
        fields["code"] = f"C-{number_part}"
    notes: list[tuple[str, str]] = []
    priority = _child_text(element, "priority")
    if priority:
        mapped = _TR_PRIORITY.get(priority.strip().lower())
        if mapped:
            fields["priority"] = mapped
        else:
            notes.append(("priority", priority))
    kind = _child_text(element, "type")
    tags = []
    if kind:
        tags.append(re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-") or kind)
    fields["tags"] = [t for t in tags if t]
    refs = _child_text(element, "references")
    tickets = []
    for ref in re.split(r"[,\s]+", refs):
        if ref:
            tickets.append({"source": "JIRA" if _JIRA_KEY.match(ref) else "OTHER", "key": ref[:100]})
    fields["tickets"] = tickets
    for name in ("template", "estimate", "milestone", "refs"):
        value = _child_text(element, name)
        if value and name != "template":
            notes.append((name, value))
    steps: list[tuple[str, str]] = []
    preconds = bdd = ""
    custom = element.find("custom")
    if custom is not None:
        for child in custom:
            tag = child.tag
            if tag == "steps_separated":
                for step in child.findall("step"):
                    steps.append((_child_text(step, "content"), _child_text(step, "expected")))
            elif tag == "steps":
                steps.append(("".join(child.itertext()).strip(), _child_text(custom, "expected")))
            elif tag == "preconds":
                preconds = "".join(child.itertext()).strip()
            elif tag == "testrail_bdd_scenario":
                bdd = "\n".join(t.strip("\n") for t in child.itertext() if t.strip())
            elif tag == "automation_type":
                value = _value_of(child)
                fields["automation_status"] = "AUTOMATED" if "automat" in value.lower() else "MANUAL"
                if value.lower() not in ("none", "", "automated", "manual"):
                    notes.append(("automation_type", value))
            elif tag not in _TR_STEP_FIELDS:
                key = _field_key(tag)
                if seen is None or not key:
                    value = _value_of(child)
                    if value:
                        notes.append((tag, value))
                    continue
                # a custom field of TestRail becomes one of the project's (created as needed)
                fields.setdefault("_cf", {})[key] = _custom_value(child, key, seen)
    fields["bdd_content"] = _testrail_gherkin(title or "Untitled", steps, preconds, bdd, notes)
    return ImportRow(number, fields, section)


def _read_xml(data: bytes) -> Any:
    """The document's root, built while counting how deep elements (and sections) nest: a file past
    MAX_XML_DEPTH or MAX_SECTION_DEPTH is a 400 before anything recursive (``itertext``) sees it."""
    depth = sections = 0
    try:
        events = SafeET.iterparse(io.BytesIO(data), events=("start", "end"), forbid_dtd=True)
        for event, element in events:
            if event == "start":
                depth += 1
                if depth > MAX_XML_DEPTH:
                    raise InvalidInput(f"the XML nests elements more than {MAX_XML_DEPTH} deep; a TestRail export "
                                       f"nests sections at most {MAX_SECTION_DEPTH} levels here", field="file")
                if element.tag == "section":
                    sections += 1
                    if sections > MAX_SECTION_DEPTH:
                        raise InvalidInput(f"the file nests sections more than {MAX_SECTION_DEPTH} levels deep; an "
                                           f"import takes at most {MAX_SECTION_DEPTH} levels", field="file")
            else:
                depth -= 1
                sections -= element.tag == "section"
        return events.root  # set by iterparse once the whole document is read
    except DefusedXmlException as exc:
        raise InvalidInput(f"the XML file is refused: {type(exc).__name__} (DTDs and entities are not allowed)",
                           field="file") from None
    except SafeET.ParseError as exc:
        raise InvalidInput(f"the file is not well-formed XML: {exc}", field="file") from None


def parse_testrail(data: bytes) -> Parsed:
    """TestRail's XML export (``<suite><sections><section>…<cases><case>``) as rows and sections.

    Parsed with defusedxml: DTDs, entity expansion (billion laughs) and external entities are refused.
    The section tree is walked with a stack (no recursion), depth first, in file order.
    """
    root = _read_xml(data)
    if root.tag not in ("suite", "sections"):
        raise InvalidInput(f"not a TestRail export: the root element is <{root.tag}>, expected <suite>", field="file")
    parsed = Parsed([])
    seen: dict[str, _Seen] = {}
    counter = 0
    top = root.find("sections") if root.tag == "suite" else root
    stack: list[tuple[Any, tuple[str, ...]]] = []
    if top is not None:
        stack += ((section, ()) for section in reversed(top.findall("section")))
    while stack:
        section, prefix = stack.pop()
        name = " ".join(_child_text(section, "name").replace(" / ", "/").split()) or "Untitled section"
        path = (*prefix, name)
        description = _child_text(section, "description") or None
        parsed.sections.setdefault(path, description)
        cases = section.find("cases")
        for case in [] if cases is None else cases.findall("case"):
            counter += 1
            parsed.rows.append(_testrail_case(counter, case, path, seen))
        children = section.find("sections")
        if children is not None:
            stack.extend((child, path) for child in reversed(children.findall("section")))
    parsed.inferred = {key: info.draft(key) for key, info in seen.items()}
    parsed.field_keys = list(seen)
    check_section_count(parsed)
    return parsed
