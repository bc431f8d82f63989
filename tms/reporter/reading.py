"""What every parser of the newer formats shares: reading JSON and XML safely, and small text helpers.

JSON is decoded with msgspec into typed structs that name only the fields a parser reads: the rest of
the document (Playwright's config, Allure's steps' parameters, ...) is validated as JSON and skipped
without being built as Python objects, so a 50,000-test report costs its bytes plus the fields kept.
A malformed document is reported with its line; a document of the wrong shape with its JSON path
(`$.results.tests[3].name`); nesting deeper than msgspec's limit is refused, not recursed into.

XML: a DOCTYPE with an internal subset (where entities are declared) is refused before parsing
(billion laughs, XXE: `_check_prolog`), the rest is read as a stream by ElementTree's C parser
(`xml_stream`): the tree is built in C, and Python sees only the elements a format reads (its tests,
whole, and the suites around them), each once, dropped as soon as it has been read.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import PurePath
from typing import Any
from xml.etree import ElementTree
from xml.etree.ElementTree import ParseError

import msgspec
from defusedxml import DefusedXmlException, EntitiesForbidden

from tms.reporter.model import MAX_XML_DEPTH, RefusedPath, ReportError, too_deep

# a failing test's own output goes into its stack; more than this is noise in a result page
MAX_OUTPUT_CHARS = 16_000

_BYTE_OFFSET = re.compile(r"\(byte (\d+)\)")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def read_json_bytes(path: str) -> bytes:
    """The file as UTF-8 bytes: a UTF-8 BOM is dropped, UTF-16/32 (with a BOM) re-encoded."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc
    return json_bytes(path, data)


def json_bytes(path: str, data: bytes) -> bytes:
    """The file's bytes `data` as UTF-8 (see read_json_bytes)."""
    if data[:1] not in (b"\xef", b"\xff", b"\xfe", b"\x00"):
        return data  # the common case: no byte order mark (every one starts with one of these bytes)
    if data.startswith(codecs.BOM_UTF8):
        return data[3:]
    for bom, encoding in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                          (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(encoding).encode("utf-8")
            except UnicodeError as exc:
                raise ReportError(path, f"not valid {encoding.upper()} text: {exc}") from exc
    return data


def decode_json(path: str, data: bytes, kind: Any, what: str) -> Any:
    """`data` decoded as `kind` (a type, or a ready msgspec Decoder); ReportError with the line
    (malformed JSON) or the JSON path (a value of the wrong type) otherwise. `what` names the format."""
    try:
        if isinstance(kind, msgspec.json.Decoder):
            return kind.decode(data)
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        raise ReportError(path, f"not a valid {what} report: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise json_error(path, data, exc) from exc
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1 if exc.object is data else None
        raise ReportError(path, f"not UTF-8 text: {exc.reason} (a report in another encoding needs a BOM)",
                          line) from exc
    except RecursionError as exc:  # belt and braces: msgspec has its own depth limit
        raise ReportError(path, "refused: JSON nested too deeply (possible nesting bomb)") from exc


def json_lines(path: str, decoder: msgspec.json.Decoder[Any], what: str) -> Iterator[tuple[int, Any]]:
    """The events of a JSON-lines stream (``go test -json``, ``dart test --reporter json``), one line
    at a time with its number: lines that are not a JSON object (build output between events) are
    skipped, a BOM on the first line is dropped, and a line that is not ``what`` is a ReportError
    naming its number."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed by the with below; open's own error named here)
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.strip()
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if not line.startswith(b"{"):
                continue
            try:
                event = decoder.decode(line)
            except msgspec.ValidationError as exc:
                raise ReportError(path, f"not a {what}: {exc}", number) from exc
            except msgspec.DecodeError as exc:
                cut = "truncated" in str(exc)
                reason = "the line is cut short (truncated file?)" if cut else f"malformed JSON: {exc}"
                raise ReportError(path, reason, number) from exc
            yield number, event


def json_error(path: str, data: bytes, exc: Exception) -> ReportError:
    message = str(exc)
    line = None
    match = _BYTE_OFFSET.search(message)
    if match:
        offset = min(int(match.group(1)), len(data))
        line = data.count(b"\n", 0, offset) + 1
    if "truncated" in message.lower():
        line = data.count(b"\n") + 1
        message = "JSON ends too early (truncated file?)"
    elif "depth" in message.lower():
        message = f"refused: {message} (possible nesting bomb)"
    elif "utf-8" in message.lower():
        message = f"not UTF-8 text: {message}"
    else:
        message = f"malformed JSON: {message}"
    return ReportError(path, message, line)


START, END = "start", "end"
_CHUNK = 1 << 16


def xml_stream(path: str, units: frozenset[str], prune: str | None = None) -> Iterator[tuple[str, str, Any]]:
    """The file's elements as `(START or END, local name, element)`, read inside `xml_errors`, in
    document order: a START and an END for every element outside a unit (suites, containers, the root,
    each START with its attributes), and one END for each element named in `units` (a test), complete
    with everything inside it, which is never evented. Nothing but a unit's subtree is kept: each
    element is dropped from the tree once it has been handed out (the consumer reads it then).

    Why: ElementTree's `iterparse` costs a Python event per element, and reports hold three to six
    elements per test (TRX's definitions, xUnit's traits, Robot's keywords); here the C parser builds
    the tree with no events at all, and after each chunk the open elements are found as the chain of
    last children from the root (every earlier sibling is complete: the parser appends in document
    order), so only suites and finished tests reach Python. `prune` names an element emptied as soon
    as it is complete inside a test still being read (Robot's keyword log lines), so one test's log
    does not have to fit in memory.

    Defused before it starts, like `iterparse` was: entities can only be declared in a DOCTYPE, which
    can only stand in the prolog, before the root element. A prolog holding a DOCTYPE with an internal
    subset (`[...]`, where entity declarations live) is refused with defusedxml's own exception
    (`_check_prolog`); the C parser never loads an external DTD or entity. JUnit XML keeps defusedxml's
    own `iterparse`.
    """
    _check_prolog(path)
    return _Stream(path, units, prune).events()


class _Stream:
    def __init__(self, path: str, units: frozenset[str], prune: str | None) -> None:
        self.path = path
        self.units = units
        self.prune = prune
        self.names: dict[str, str] = {}  # element tag -> local name, computed once per distinct tag
        self.open: list[Any] = []  # the open elements that were handed out (START), root first
        self.pruned: dict[Any, int] = {}  # inside the test being read: element -> children emptied
        self.unit: Any = None

    def name(self, tag: str) -> str:
        found = self.names.get(tag)
        if found is None:
            found = self.names[tag] = local(tag)
        return found

    def events(self) -> Iterator[tuple[str, str, Any]]:
        parser: Any = ElementTree.XMLPullParser(events=("start",))  # start events only until the root is known
        with open(self.path, "rb") as handle:
            while True:
                data = handle.read(_CHUNK)
                if not data:
                    break
                parser.feed(data)  # a syntax error is queued, raised by read_events after the events before it
                if not self.open:
                    for _, root in parser.read_events():
                        self.open.append(root)
                        yield START, self.name(root.tag), root
                        _quiet(parser)
                        break
                for _ in parser.read_events():  # empty once quiet, unless an error was queued
                    pass
                if self.open:
                    yield from self._walk(final=False)
            parser.close()
        if not self.open:
            return
        yield from self._walk(final=True)
        root = self.open.pop()
        yield END, self.name(root.tag), root

    def _walk(self, final: bool) -> Iterator[tuple[str, str, Any]]:
        """Hand out what is complete, from the root down the chain of open elements."""
        level = 0
        names, units = self.names, self.units
        while level < len(self.open):
            node = self.open[level]
            done = len(node) if final else len(node) - 1
            if done > 0:
                complete = node[:done]
                del node[:done]
                for child in complete:
                    tag = names.get(child.tag) or self.name(child.tag)
                    if tag in units:  # the common case: a finished test (a unit is never opened)
                        if len(child):
                            self._check_complete(child, level + 1)
                        yield END, tag, child
                    else:
                        yield from self._complete(child, tag, level + 1)
            if final or not len(node):
                return
            last = node[-1]
            if level + 1 < len(self.open):  # the chain went on through this element before
                level += 1
                continue
            tag = self.name(last.tag)
            if tag in units:
                self._check_unit(last)
                if self.prune is not None:
                    self._prune(last)
                return
            if len(self.open) >= MAX_XML_DEPTH:
                raise too_deep(self.path)
            self.open.append(last)
            yield START, tag, last
            level += 1

    def _complete(self, elem: Any, tag: str, level: int) -> Iterator[tuple[str, str, Any]]:
        """Events of a complete element (not a unit) and of everything in it not handed out yet:
        depth first with a stack of its own (no recursion), refusing a nesting past MAX_XML_DEPTH."""
        names, units, open_ = self.names, self.units, self.open
        opened = level < len(open_) and open_[level] is elem
        if not opened:
            yield START, tag, elem
        children = elem[:]
        del elem[:]
        stack: list[tuple[Any, str, int, bool, Iterator[Any]]] = [(elem, tag, level, opened, iter(children))]
        while stack:
            node, node_tag, node_level, node_opened, pending = stack[-1]
            for child in pending:
                child_tag = names.get(child.tag) or self.name(child.tag)
                if child_tag in units:
                    if len(child):
                        self._check_complete(child, node_level + 1)
                    yield END, child_tag, child
                    continue
                child_level = node_level + 1
                if child_level >= MAX_XML_DEPTH:
                    raise too_deep(self.path)
                child_opened = child_level < len(open_) and open_[child_level] is child
                if not child_opened:
                    yield START, child_tag, child
                grandchildren = child[:]
                del child[:]
                stack.append((child, child_tag, child_level, child_opened, iter(grandchildren)))
                break
            else:
                stack.pop()
                if node_opened:
                    del open_[node_level:]
                yield END, node_tag, node

    def _check_complete(self, unit: Any, level: int) -> None:
        """A finished test, read whole by the C parser: not nested past MAX_XML_DEPTH. Counting its
        elements (in C) settles nearly every test; only one holding more elements than the limit
        allows levels is measured, iteratively."""
        room = MAX_XML_DEPTH - level
        if len(list(unit.iter())) <= room:
            return
        pending = [(unit, level)]
        while pending:
            node, depth = pending.pop()
            if depth >= MAX_XML_DEPTH:
                raise too_deep(self.path)
            pending.extend((child, depth + 1) for child in node)

    def _check_unit(self, unit: Any) -> None:
        """The test still being read, down its chain of open elements: not past MAX_XML_DEPTH (checked
        once per chunk, so a nesting bomb inside a test is refused before it fills the memory)."""
        depth, node = len(self.open) + 1, unit
        while len(node):
            node = node[-1]
            depth += 1
            if depth > MAX_XML_DEPTH:
                raise too_deep(self.path)

    def _prune(self, unit: Any) -> None:
        """Empty the `prune` elements already complete inside the unit still being read."""
        if unit is not self.unit:
            self.unit, self.pruned = unit, {}
        node, prune = unit, self.prune
        while len(node):
            done = len(node) - 1
            for child in node[self.pruned.get(node, 0):done]:
                for elem in child.iter(prune):
                    elem.clear()
            self.pruned[node] = done
            node = node[-1]


def _quiet(parser: Any) -> None:
    """Stop the parser's start events once the root is known: from then on the tree is read by
    walking it. `_setevents` is how XMLPullParser itself sets them; without it (another Python), the
    events are read and dropped, which only costs time."""
    setevents = getattr(getattr(parser, "_parser", None), "_setevents", None)
    queue = getattr(parser, "_events_queue", None)
    if setevents is not None and queue is not None:
        with contextlib.suppress(TypeError, NotImplementedError):
            setevents(queue, ())


_PROLOG_BYTES = 1 << 20
_PROLOG_ITEM = re.compile(rb"\s*(<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>)", re.S)


def _check_prolog(path: str) -> None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(_PROLOG_BYTES)
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or head[:2] in (b"<\x00", b"\x00<"):
        encoding = "utf-16" if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else (
            "utf-16-le" if head[0] == 0x3C else "utf-16-be")
        head = head.decode(encoding, errors="ignore").encode("utf-8")
    head = head.removeprefix(codecs.BOM_UTF8)
    position = 0
    while True:
        match = _PROLOG_ITEM.match(head, position)
        if not match:
            break
        item = match.group(1)
        if item.startswith(b"<!DOCTYPE") and (b"[" in item or b"<!ENTITY" in item):
            raise EntitiesForbidden("DOCTYPE", None, None, None, None, None)
        position = match.end()
    rest = head[position:].lstrip()
    if rest.startswith(b"<!DOCTYPE") or (not rest and len(head) == _PROLOG_BYTES):
        # an unterminated DOCTYPE, or a prolog longer than a report ever writes
        raise EntitiesForbidden("DOCTYPE", None, None, None, None, None)


@contextlib.contextmanager
def xml_errors(path: str, what: str) -> Iterator[None]:
    """Every XML parse failure inside the block as a ReportError naming the file, line and reason."""
    try:
        yield
    except DefusedXmlException as exc:
        raise ReportError(path, f"refused: {type(exc).__name__}: the {what} report declares XML entities or "
                                "external references, which a test report never needs (possible XML bomb)") from exc
    except ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise ReportError(path, f"malformed XML: {exc}", line) from exc
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc


@lru_cache(maxsize=4096)  # a report uses a few dozen distinct tags, each thousands of times
def local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if "}" in tag else tag


def text_of(elem: Any) -> str:
    return "".join(elem.itertext()) if elem is not None else ""


def child_text(elem: Any, name: str) -> str:
    for child in elem:
        if local(child.tag) == name:
            return text_of(child)
    return ""


def first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:1000]
    return ""


def cap(text: str | None, limit: int = MAX_OUTPUT_CHARS) -> str:
    text = text or ""
    if len(text) <= limit:
        return text
    return text[: limit - 40] + f"\n… [{len(text) - limit + 40} characters cut]"


def strip_ansi(text: str | None) -> str:
    return _ANSI.sub("", text) if text and "\x1b" in text else (text or "")


@lru_cache(maxsize=8192)
def as_tag(value: str) -> str | None:
    """A tag, label or category value as "@value", so mapping finds `@service('X')` and `service('X')`."""
    value = value.strip()
    if not value:
        return None
    return value if value.startswith("@") else f"@{value}"


def tags_of(values: Any) -> tuple[str, ...]:
    if not values:
        return ()
    try:
        return _tags_of(tuple(values))
    except TypeError:  # an unhashable value (a JSON object where a tag belongs): keep the strings
        return _tags_of(tuple(v for v in values if isinstance(v, str)))


@lru_cache(maxsize=8192)  # most tests of a report share their few tags
def _tags_of(values: tuple[Any, ...]) -> tuple[str, ...]:
    found = [as_tag(v) for v in values if isinstance(v, str)]
    return tuple(dict.fromkeys(t for t in found if t))


def ms_to_iso(value: Any) -> str | None:
    """Milliseconds since the epoch as ISO 8601 UTC with Z."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < 253402300800000:
        return None
    ms = int(value)
    second = _second_iso(ms // 1000)
    return f"{second}.{ms % 1000:03d}Z" if second else None


@lru_cache(maxsize=4096)  # tests of a run share their seconds
def _second_iso(second: int) -> str | None:
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    except (OverflowError, OSError, ValueError):
        return None


def non_negative_ms(value: Any) -> int | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e15:
        return round(value)
    return None


def seconds_to_ms(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if seconds != seconds or seconds < 0 or seconds == float("inf"):
        return None
    return round(seconds * 1000)


def resolve_path(base: str, raw: str) -> str:
    """`raw` (absolute, or relative to the report's folder `base`) as an existing path when one is
    found, else as written (the upload then reports it missing). A path that does not exist as
    written is looked up by its last components under the report's folder, then under the working
    directory: reports are often moved between CI steps (artifacts) or machines."""
    raw = raw.strip()
    if raw.startswith("file://"):
        raw = raw[len("file://"):]
    candidate = raw if os.path.isabs(raw) else os.path.join(base, raw)
    if os.path.isfile(candidate):
        return os.path.normpath(candidate)
    parts = PurePath(raw.replace("\\", "/")).parts
    for folder in (base, os.getcwd()):
        for start in range(1, len(parts)):
            tail = os.path.join(folder, *parts[start:])
            if os.path.isfile(tail):
                return os.path.normpath(tail)
    return os.path.normpath(candidate)


_REAL_FOLDERS: dict[str, str] = {}


def path_inside(base: str, raw: str, what: str) -> str:
    """`raw` (relative to the folder `base`) as a real path inside `base`, or a RefusedPath when it is
    anywhere else once `..`, an absolute path or a symbolic link is resolved: a report whose format
    keeps its files in its own folder (Allure) never makes the reporter read another one."""
    raw = raw.strip()
    root = _REAL_FOLDERS.get(base)
    if root is None:
        root = _REAL_FOLDERS[base] = os.path.realpath(base)
    candidate = os.path.normpath(os.path.join(base, raw))
    real = os.path.realpath(candidate)
    if real.startswith(root.rstrip(os.sep) + os.sep):
        return real
    return RefusedPath(candidate, f"outside the {what} folder {base}: the reporter reads no file outside it")
