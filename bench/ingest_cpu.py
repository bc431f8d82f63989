"""CPU of one ingest of 100,000 results, in process (issue 23: "the ingest benchmark within 5%").

    .venv/bin/python bench/ingest_cpu.py [--rounds 7] [--source DIR]

The body of `bench/ingest.py`'s single 100,000-result request (half linked by code to 20,000 library
cases, each case at most once per run, half unlinked; ~10% FAILED with an error message), given to the
ingest service directly on a temporary SQLite database, `--rounds` times (a new run each). Prints the
CPU seconds (`time.process_time`: every thread of this process) of each round, their least and median.

CPU time, not wall time: on a shared 2-core machine other processes only add waiting to a wall clock,
and barely change the CPU a run needs. `--source` imports `tms` from another checkout (e.g. a worktree
of an older commit) to compare two commits on the same machine, one after the other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--source", default=str(HERE.parent), help="the checkout whose tms is measured")
    args = parser.parse_args()
    sys.path.insert(0, args.source)
    import tms
    from tms.db.sqlite import SqliteDatabase
    from tms.library.cases import service as case_service
    from tms.library.projects import service as projects
    from tms.library.projects.models import ProjectCreate
    from tms.runs.ingest import service as ingest
    from tms.team import accounts

    # after tms: bench/ingest.py puts this checkout first on sys.path, and `--source`'s tms is loaded by now
    sys.path.insert(1, str(HERE))
    from ingest import FEATURE, items  # the HTTP bench's body, so both measure the same request

    async def run() -> list[float]:
        with tempfile.TemporaryDirectory(prefix="tms-bench-ingest-cpu-") as tmp:
            db = SqliteDatabase(Path(tmp) / "tms.db")
            await db.open()
            try:
                tenant = await accounts.create_tenant(db, "cpu")
                project = (await projects.create_project(db, tenant, ProjectCreate(name="p"))).id
                codes: list[str] = []
                for start in range(0, 20_000, 5_000):
                    bodies = [{"title": f"Bench case {i}", "bdd_content": FEATURE, "project_id": project}
                              for i in range(start, start + 5_000)]
                    codes += [case.code for case in await case_service.create_cases(db, tenant, bodies)]
                seconds = []
                for round_ in range(args.rounds):
                    body = json.dumps({"project_id": project, "results": items(100_000, codes, round_)}).encode()
                    start = time.process_time()
                    status, _ = await ingest.ingest(db, tenant, body)
                    seconds.append(time.process_time() - start)
                    assert status == 201, status
                return seconds
            finally:
                await db.close()

    seconds = asyncio.run(run())
    print(f"tms from {Path(tms.__file__).parent}: " + " ".join(f"{s:.3f}" for s in seconds))
    print(f"CPU per 100,000-result ingest: least {min(seconds):.3f} s, median {statistics.median(seconds):.3f} s")


if __name__ == "__main__":
    main()
