"""Modules loaded on first use, so that a process which never needs them never pays their import.

``tms serve`` imports every route at start; a few libraries behind rarely used routes are heavy (SCIM's
pydantic models were ~40% of the app's import time: 0.7 s of CPU at every replica start and in every
process that builds the app). A caller keeps the typed import under ``TYPE_CHECKING`` for the type checker
and binds the name at run time to ``lazy_module(name)``: a plain import on the first attribute read.

Not ``importlib.util.LazyLoader``: it runs the module's code inside a half-made module object, and pydantic
(which reads the source of its models' modules) fails on that.
"""

from __future__ import annotations

import importlib
from typing import Any


class _LazyModule:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        # after the first read the module is in sys.modules: each later read is a dictionary look-up
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def lazy_module(name: str) -> Any:
    """Stands for the module ``name`` and imports it on the first attribute read."""
    return _LazyModule(name)
