"""What `tms ingest` prints and the exit status it ends with (the codes are listed in cli.py).

All output goes through ``Console``, so the token cannot reach a CI log even inside an error text."""

from __future__ import annotations

from typing import TextIO

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REJECTED = 3
EXIT_NETWORK = 4


class Console:
    """All output goes through here, so the token cannot reach a CI log even inside an error text."""

    def __init__(self, token: str | None, verbose: bool, stdout: TextIO, stderr: TextIO) -> None:
        self.token = token
        self.verbose = verbose
        self.stdout = stdout
        self.stderr = stderr
        self.tty = stderr.isatty()
        self._progress_shown = False

    def _clean(self, text: str) -> str:
        if self.token and len(self.token) >= 4:
            text = text.replace(self.token, "***")
        return text

    def out(self, text: str = "") -> None:
        self.end_progress()
        self.stdout.write(self._clean(text) + "\n")
        self.stdout.flush()

    def err(self, text: str) -> None:
        self.end_progress()
        self.stderr.write(self._clean(text) + "\n")
        self.stderr.flush()

    def debug(self, text: str) -> None:
        if self.verbose:
            self.err(f"tms ingest: {text}")

    def progress(self, text: str) -> None:
        """A line rewritten in place on a terminal; nothing in a CI log, where it would be noise."""
        if self.tty:
            self.stderr.write("\r\x1b[K" + self._clean(text))
            self.stderr.flush()
            self._progress_shown = True

    def end_progress(self) -> None:
        if self._progress_shown:
            self.stderr.write("\r\x1b[K")
            self.stderr.flush()
            self._progress_shown = False


