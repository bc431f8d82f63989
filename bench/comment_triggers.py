"""What the result comments' triggers (migration 0044 / postgres 0025) cost the deletion of results.

Seeds one run of ``--results`` unlinked results (each with a 300-character error message), comments on
``--commented`` of them and ``--case-comments`` comments on cases (rows the triggers must not touch),
then removes the run the way the retention sweep does (tms.runs.retention: 2,000 result ids a
transaction through ``writes.delete_of_run``), with the triggers and again with them dropped; the
median of ``--repeat`` rounds each. ``TMS_TEST_DATABASE=postgres`` runs it on a throwaway PostgreSQL
cluster (tests/postgres_cluster.py). Prints a table; checks no comment of a removed result is left.

    PYTHONPATH=. .venv/bin/python bench/comment_triggers.py [--results 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tests import postgres_cluster
from tms.config import load_config
from tms.db import Database, database_for
from tms.ids import new_ids, now_iso
from tms.runs import writes
from tms.runs.retention import store as run_retention_store
from tms.runs.retention.service import RUN_RESULTS_BATCH

DROP = {"sqlite": ["DROP TRIGGER comments_result_deleted", "DROP TRIGGER comments_unlinked_result_deleted"],
        "postgres": ["DROP TRIGGER comments_result_deleted ON test_results",
                     "DROP TRIGGER comments_unlinked_result_deleted ON unlinked_test_results"]}


async def seed(db: Database, results: int, commented: int, case_comments: int) -> tuple[str, str, list[str]]:
    now = now_iso()
    tenant, project, run = new_ids(3)
    ids = new_ids(results)
    async with db.transaction() as tx:
        await tx.insert_rows("tenants", ("id", "name", "created_at"), [(tenant, "bench", now)])
        await tx.insert_rows("projects", ("id", "tenant_id", "name", "created_at", "updated_at"),
                             [(project, tenant, "bench", now, now)])
        await tx.insert_rows("test_runs", ("id", "tenant_id", "project_id", "name", "created_at", "updated_at"),
                             [(run, tenant, project, "bench", now, now)])
        await tx.insert_rows(
            "unlinked_test_results",
            ("id", "tenant_id", "project_id", "run_id", "title", "status", "error_message", "created_at", "updated_at"),
            [(rid, tenant, project, run, f"test {n}", "FAILED", "x" * 300, now, now) for n, rid in enumerate(ids)])
        step = max(1, results // max(1, commented))
        targets = [("result", rid) for rid in ids[::step][:commented]]
        targets += [("case", cid) for cid in new_ids(case_comments)]
        comment_ids = new_ids(len(targets))
        await tx.insert_rows(
            "comments", ("id", "tenant_id", "project_id", "target_kind", "target_id", "author_kind", "author_id",
                         "author_name", "body", "body_html", "created_at", "updated_at"),
            [(cid, tenant, project, kind, target, "user", "u", "bench", "b", "<p>b</p>", now, now)
             for cid, (kind, target) in zip(comment_ids, targets, strict=True)])
    return tenant, run, ids


async def remove_run(db: Database, run: str) -> None:
    """tms.runs.retention.service._remove_run without the attachments (none here)."""
    while True:
        async with db.transaction() as tx:
            result_ids = await run_retention_store.result_ids_chunk(tx, run, RUN_RESULTS_BATCH)
            if not result_ids:
                return
            await writes.delete_of_run(tx, run, result_ids)


async def round_(args: argparse.Namespace, triggers: bool) -> float:
    with tempfile.TemporaryDirectory() as folder:
        env = {"TMS_STORAGE_DATA_DIR": folder}
        if postgres_cluster.selected():
            env["TMS_STORAGE_DATABASE_URL"] = postgres_cluster.database_url_for(Path(folder))
        db = database_for(load_config(None, env))
        await db.open()
        try:
            if not triggers:
                async with db.transaction() as tx:
                    for statement in DROP[db.dialect]:
                        await tx.execute(statement)
            tenant, run, _ = await seed(db, args.results, args.commented, args.case_comments)
            started = time.perf_counter()
            await remove_run(db, run)
            took = time.perf_counter() - started
            left = await db.fetch_value(
                "SELECT COUNT(*) FROM comments WHERE tenant_id = ? AND target_kind = 'result'", (tenant,))
            cases = await db.fetch_value(
                "SELECT COUNT(*) FROM comments WHERE tenant_id = ? AND target_kind = 'case'", (tenant,))
            assert int(cases) == args.case_comments
            assert int(left) == (0 if triggers else args.commented), left
            return took
        finally:
            await db.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--commented", type=int, default=1_000)
    parser.add_argument("--case-comments", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    backend = "PostgreSQL" if postgres_cluster.selected() else "SQLite"
    print(f"{backend}: removing a run of {args.results:,} results ({args.commented:,} with a comment, "
          f"{args.case_comments:,} case comments beside), median of {args.repeat}")
    for triggers in (False, True):
        times = [await round_(args, triggers) for _ in range(args.repeat)]
        label = "with the triggers" if triggers else "without them"
        print(f"  {label:<18} {statistics.median(times):7.2f} s   (rounds: {', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    asyncio.run(main())
