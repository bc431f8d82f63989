"""The house's import contracts (.importlinter) hold: `make test` checks them as `make lint` does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_the_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_no_layer_folder_is_left() -> None:
    """Features live in domain folders (tms/runs, tms/library, ...), not in layer folders."""
    for layer in ("api", "web", "services", "store", "models", "webhooks"):
        assert not list((ROOT / "tms" / layer).glob("*.py")), f"tms/{layer}/ is back: put the module in its domain"
