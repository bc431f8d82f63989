"""Runs every benchmark in turn with its default settings (`make bench`); each prints its own table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["auth.py", "cases_list.py", "ingest.py", "attachments.py", "webhooks.py", "reporter.py", "web_pages.py",
           "gzip_bodies.py"]
SCRIPTS += ["plans.py"]


def main() -> int:
    failed = []
    for script in SCRIPTS:
        print(f"\n=== bench/{script} ===", flush=True)
        if subprocess.run([sys.executable, str(HERE / script)], check=False).returncode != 0:
            failed.append(script)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
