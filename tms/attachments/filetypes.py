"""What an uploaded file is, judged by its bytes *and* its name; the two must agree.

The name alone is a claim by the client and the client's Content-Type even more so: an HTML page
named ``shot.png`` would otherwise be stored and later served from the service's origin. So each
allowed extension maps to one kind, and the content must prove that kind: magic bytes for binary
formats, text heuristics (valid UTF-8, no NUL, plus a parse or a root check) for text formats.

The sniffer is fed the file chunk by chunk while it streams to disk, so nothing here needs the
whole file in memory.
"""

from __future__ import annotations

import codecs
import mmap
import re
from dataclasses import dataclass
from pathlib import Path

import msgspec


@dataclass(frozen=True)
class Kind:
    name: str
    mime_type: str
    text: bool = False
    # served inline (a browser may display it) or only as a download
    inline: bool = False


PNG = Kind("PNG", "image/png", inline=True)
JPG = Kind("JPG", "image/jpeg", inline=True)
GIF = Kind("GIF", "image/gif", inline=True)
WEBP = Kind("WebP", "image/webp", inline=True)
# SVG is an image but also a document that can carry script: always a download, plus a sandbox CSP.
SVG = Kind("SVG", "image/svg+xml", text=True)
PDF = Kind("PDF", "application/pdf", inline=True)
TXT = Kind("TXT", "text/plain", text=True, inline=True)
JSON = Kind("JSON", "application/json", text=True)
ZIP = Kind("ZIP", "application/zip")
MP4 = Kind("MP4", "video/mp4")
WEBM = Kind("WebM", "video/webm")

KINDS_BY_EXTENSION: dict[str, Kind] = {
    "png": PNG,
    "jpg": JPG,
    "jpeg": JPG,
    "gif": GIF,
    "webp": WEBP,
    "svg": SVG,
    "pdf": PDF,
    "txt": TXT,
    "log": TXT,  # CI logs are plain text under another name
    "json": JSON,
    "zip": ZIP,
    "mp4": MP4,
    "webm": WEBM,
}
KINDS_BY_MIME: dict[str, Kind] = {kind.mime_type: kind for kind in KINDS_BY_EXTENSION.values()}

ALLOWED_EXTENSIONS = ", ".join(f".{ext}" for ext in KINDS_BY_EXTENSION)

# Enough for every magic number below and for an SVG root after a generous prolog.
HEAD_BYTES = 64 * 1024
BINARY_HEAD_BYTES = 64


def kind_for_name(file_name: str) -> Kind | None:
    _, dot, extension = file_name.rpartition(".")
    return KINDS_BY_EXTENSION.get(extension.lower()) if dot else None


def _binary_kind(head: bytes) -> Kind | None:
    """The binary format the first bytes prove, if any."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith(b"\xff\xd8\xff"):
        return JPG
    if head.startswith((b"GIF87a", b"GIF89a")):
        return GIF
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return WEBP
    if head.startswith(b"%PDF-"):
        return PDF
    # a local file header, or the end-of-central-directory record of an empty archive
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return ZIP
    # ISO base media: the first box is 'ftyp'
    if len(head) >= 12 and head[4:8] == b"ftyp":
        return MP4
    # EBML header whose DocType is webm (Matroska proper says 'matroska')
    if head.startswith(b"\x1a\x45\xdf\xa3") and b"webm" in head[:64]:
        return WEBM
    return None


_SVG_START = re.compile(r"<svg[\s>/]", re.IGNORECASE)


def has_svg_root(text: str) -> bool:
    """True if the first element, after the XML prolog (declaration, comments, doctype), is <svg>.

    A plain scan rather than one regular expression: a regex with lazy items inside a repetition
    backtracks exponentially on a crafted prolog (thirty empty comments and no root take minutes).
    """
    pos, end = (1 if text.startswith("\ufeff") else 0), len(text)
    while pos < end:
        if text[pos].isspace():
            pos += 1
        elif text.startswith("<?", pos):
            close = text.find("?>", pos + 2)
            if close < 0:
                return False
            pos = close + 2
        elif text.startswith("<!--", pos):
            close = text.find("-->", pos + 4)
            if close < 0:
                return False
            pos = close + 3
        elif text[pos : pos + 9].upper() == "<!DOCTYPE":
            close = text.find(">", pos)
            subset = text.find("[", pos)
            if 0 <= subset < close:  # an internal subset may hold '>' of its own
                subset_end = text.find("]", subset)
                close = text.find(">", subset_end) if subset_end >= 0 else -1
            if close < 0:
                return False
            pos = close + 1
        else:
            return _SVG_START.match(text, pos) is not None
    return False


class Sniffer:
    """Checks one file against the kind its name claims, fed the bytes as they stream by."""

    def __init__(self, claimed: Kind) -> None:
        self.claimed = claimed
        self._head = bytearray()
        self._head_limit = HEAD_BYTES if claimed.text else BINARY_HEAD_BYTES
        self._decoder = codecs.getincrementaldecoder("utf-8")() if claimed.text else None
        self._refusal: str | None = None
        self._magic_checked = False

    def feed(self, chunk: bytes) -> str | None:
        """Takes the next chunk; returns why the file is refused as soon as that is certain."""
        if len(self._head) < self._head_limit:
            self._head += chunk[: self._head_limit - len(self._head)]
        if self._decoder is not None:
            if self._refusal is None and (b"\x00" in chunk or not self._decodes(chunk)):
                self._refusal = f"the content is not {self.claimed.name} text (binary data)"
        elif not self._magic_checked and len(self._head) >= BINARY_HEAD_BYTES:
            self._magic_checked = True
            self._refusal = self._check_binary()
        return self._refusal

    def _decodes(self, chunk: bytes) -> bool:
        assert self._decoder is not None
        try:
            self._decoder.decode(chunk)
        except UnicodeDecodeError:
            return False
        return True

    def finish(self, path: Path) -> str | None:
        """After the last chunk, with the complete file on disk: None if it is what it claims."""
        if self._refusal is not None:
            return self._refusal
        if self._decoder is None:
            return self._check_binary()
        try:
            self._decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return f"the content is not {self.claimed.name} text (invalid UTF-8)"
        if _binary_kind(bytes(self._head)) is not None:
            return f"the content is not {self.claimed.name} text"
        if self.claimed is SVG:
            head_text = bytes(self._head).decode("utf-8", errors="ignore")
            if not has_svg_root(head_text):
                return "the content is not an SVG document (no <svg> root element)"
        if self.claimed is JSON:
            return _json_problem(path)
        return None

    def _check_binary(self) -> str | None:
        found = _binary_kind(bytes(self._head))
        if found is self.claimed:
            return None
        if found is None:
            return f"the content is not a {self.claimed.name} file"
        return f"the content is {found.name}, but the file name says {self.claimed.name}"


def _json_problem(path: Path) -> str | None:
    """Parses the stored file through a read-only mapping, so even a large file costs no heap.

    Decoding to ``msgspec.Raw`` validates the whole document without building Python objects.
    Blocking: call it in a worker thread.
    """
    with path.open("rb") as handle:
        if path.stat().st_size == 0:
            return "the content is not valid JSON (empty)"
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            try:
                data = memoryview(mapped)
                try:
                    msgspec.json.decode(data, type=msgspec.Raw)
                finally:
                    data.release()
            except (msgspec.DecodeError, msgspec.ValidationError):
                return "the content is not valid JSON"
            except RecursionError:  # valid JSON perhaps, but deeper than anything can read it back
                return "the content is JSON nested too deeply"
    return None
