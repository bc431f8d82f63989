"""The retention sweep removing 100,000 attachment objects (issue 28: < 60 s), local folder and S3 (moto).

    .venv/bin/python bench/attachments_retention.py [--objects 100000] [--runs 10] [--stores local,s3]
    TMS_TEST_DATABASE=postgres .venv/bin/python bench/attachments_retention.py   # on a throwaway cluster

For each store: a real `tms serve` (the s3 one on a fresh bucket of a moto server started here,
tests/s3_server.py) creates the schema, a tenant and `--runs` runs holding `--objects` unlinked
results in all (the real ingest API, 10,000 a request); the server is stopped. The attachments are
then seeded the way an upload leaves them, one distinct object per result: an `attachments` row
naming the result and the key `<tenant>/<sha256>`, its `attachment_objects` row, and the object
itself (a file under the data dir's `attachments/`, or a PUT into the bucket under the `tms` prefix).
Seeding by rows is equivalent to 100,000 uploads and takes a minute instead of many.

The runs are then dated `--days`+1 days back and the daily job's own code removes them,
`tms.runs.retention.service.sweep_old_runs` (retention.runs_days), on the server's database, as the
server's loop would run it; the objects leave the store after each chunk's commit
(`tms.attachments.collection`), and the clock stops once every one is gone (`settle_pending`). The
bench then checks that the store holds none of them and no attachment or object row is left. Reports
wall and CPU time (this process: the sweep, the collector and, on SQLite, the database).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import postgres_cluster  # noqa: E402
from tests.conftest import ServerProcess, connect_db, make_tenant_on, open_database  # noqa: E402
from tests.s3_server import S3Server  # noqa: E402
from tms.attachments.objects import AttachmentStore, LocalStore  # noqa: E402
from tms.ids import iso, new_id, now_iso  # noqa: E402

PER_INGEST = 10_000
PUT_CONCURRENCY = 32


def content_of(i: int) -> bytes:
    return b"PK\x03\x04" + i.to_bytes(8, "big") + b"retention bench object\n"


def s3_store(s3: S3Server, bucket: str) -> AttachmentStore:
    from tms.attachments.s3 import S3Settings, S3Store

    env = s3.env(bucket)
    return S3Store(S3Settings(endpoint=env["TMS_ATTACHMENTS_S3_ENDPOINT"], bucket=bucket,
                              prefix=env["TMS_ATTACHMENTS_S3_PREFIX"], region=env["TMS_ATTACHMENTS_S3_REGION"],
                              access_key_id=env["TMS_ATTACHMENTS_S3_ACCESS_KEY_ID"],
                              secret_access_key=env["TMS_ATTACHMENTS_S3_SECRET_ACCESS_KEY"]))


async def put_objects(store: AttachmentStore, keys: list[tuple[str, bytes]]) -> None:
    import obstore

    gate = asyncio.Semaphore(PUT_CONCURRENCY)
    inner = store.store  # type: ignore[attr-defined]  # the obstore S3Store under our S3Store

    async def put(key: str, data: bytes) -> None:
        async with gate:
            await obstore.put_async(inner, key, data, use_multipart=False)

    for start in range(0, len(keys), 5_000):
        await asyncio.gather(*(put(k, d) for k, d in keys[start : start + 5_000]))


def seed(server: ServerProcess, tenant_id: str, store: AttachmentStore, days: int) -> tuple[int, float]:
    """One attachment (and object) per unlinked result of the tenant; the runs dated ``days`` back."""
    start = time.perf_counter()
    result_ids = asyncio.run(_result_ids(server, tenant_id))
    at = now_iso()
    attachments, objects_rows, blobs = [], [], []
    for i, result_id in enumerate(result_ids):
        data = content_of(i)
        sha = hashlib.sha256(data).hexdigest()
        key = f"{tenant_id}/{sha}"
        attachment_id = new_id()
        attachments.append((attachment_id, tenant_id, result_id, f"shot-{i}.zip", "application/zip", len(data),
                            attachment_id, at, key))
        objects_rows.append((key, tenant_id, sha, len(data), at))
        blobs.append((key, data))
    asyncio.run(_insert(server, tenant_id, attachments, objects_rows, days))
    if isinstance(store, LocalStore):
        for key, data in blobs:
            path = store.path_of(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    else:
        asyncio.run(put_objects(store, blobs))
    return len(result_ids), time.perf_counter() - start


async def _result_ids(server: ServerProcess, tenant_id: str) -> list[str]:
    db = open_database(server.db_path)
    await db.open()
    try:
        rows = await db.fetch_all("SELECT id FROM unlinked_test_results WHERE tenant_id = ? ORDER BY id", (tenant_id,))
        return [row["id"] for row in rows]
    finally:
        await db.close()


async def _insert(server: ServerProcess, tenant_id: str, attachments: list[Any], objects_rows: list[Any],
                  days: int) -> None:
    """The rows in one transaction through the server's own database layer (bulk on both backends)."""
    db = open_database(server.db_path)
    await db.open()
    try:
        async with db.transaction() as tx:
            await tx.executemany(
                "INSERT INTO attachments (id, tenant_id, result_id, file_name, mime_type, size, storage_name, "
                "created_at, object_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", attachments)
            await tx.executemany(
                "INSERT INTO attachment_objects (object_key, tenant_id, sha256, size, created_at) "
                "VALUES (?, ?, ?, ?, ?)", objects_rows)
            await tx.execute("UPDATE test_runs SET created_at = ? WHERE tenant_id = ?",
                             (iso(datetime.now(UTC) - timedelta(days=days + 1)), tenant_id))
    finally:
        await db.close()


async def sweep(server: ServerProcess, store: AttachmentStore, days: int) -> tuple[int, float, float, float]:
    """(runs removed, seconds until the rows are gone, seconds until the objects are too, CPU seconds)."""
    from tms.attachments.collection import settle_pending
    from tms.runs.retention.service import sweep_old_runs

    db = open_database(server.db_path)
    await db.open()
    try:
        cpu, start = time.process_time(), time.perf_counter()
        removed = await sweep_old_runs(db, store, days)
        rows_gone = time.perf_counter() - start
        await settle_pending()
        return removed, rows_gone, time.perf_counter() - start, time.process_time() - cpu
    finally:
        await db.close()


def left_over(server: ServerProcess, tenant_id: str, store: AttachmentStore, s3: S3Server | None,
              bucket: str) -> tuple[int, int, int]:
    """(attachment rows, object rows, stored objects) of the tenant still there."""
    connection = connect_db(server.db_path)
    rows = connection.execute("SELECT COUNT(*) FROM attachments WHERE tenant_id = ?", (tenant_id,)).fetchone()[0]
    objects_rows = connection.execute("SELECT COUNT(*) FROM attachment_objects WHERE tenant_id = ?",
                                      (tenant_id,)).fetchone()[0]
    connection.close()
    if isinstance(store, LocalStore):
        stored = sum(len(files) for _root, _dirs, files in os.walk(store.directory / tenant_id))
    elif s3 is not None:
        stored = len(s3.keys(bucket, f"tms/{tenant_id}/"))
    else:
        stored = 0
    return rows, objects_rows, stored


def measure(kind: str, root: Path, args: argparse.Namespace, s3: S3Server) -> dict[str, Any]:
    data_dir = root / f"data-{kind}"
    data_dir.mkdir()
    bucket = s3.new_bucket() if kind == "s3" else ""
    env = s3.env(bucket) if kind == "s3" else {}
    server = ServerProcess(data_dir, env).start()
    try:
        tenant = make_tenant_on(server)
        project = tenant.create_project("bench")
        client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {tenant.write_token}"},
                              timeout=600)
        per_run = args.objects // args.runs
        assert per_run <= PER_INGEST, f"at most {PER_INGEST} results a run: raise --runs"
        for run in range(args.runs):
            items = [{"title": f"r{run}-t{i}", "status": "FAILED"} for i in range(per_run)]
            answer = client.post("/api/v1/ingest", json={"project_id": project["id"], "results": items})
            assert answer.status_code == 201, answer.text
    finally:
        server.stop()
    store: AttachmentStore = s3_store(s3, bucket) if kind == "s3" else LocalStore(data_dir / "attachments")
    seeded, seed_seconds = seed(server, tenant.id, store, args.days)
    # moto lists a bucket of 100,000 keys at ~3 s a page of 1,000: the seeded objects are counted
    # by their successful PUTs, the bucket is listed only once it should be empty
    before = left_over(server, tenant.id, store, None, bucket)
    assert before == (seeded, seeded, seeded if kind == "local" else 0), before
    removed, rows_gone, objects_gone, cpu = asyncio.run(sweep(server, store, args.days))
    after = left_over(server, tenant.id, store, s3, bucket)
    assert removed == args.runs and after == (0, 0, 0), (removed, after)
    return {"kind": kind, "objects": seeded, "seed": seed_seconds, "rows": rows_gone, "all": objects_gone,
            "cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--stores", default="local,s3")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        s3 = S3Server(root / "moto.log").start()
        try:
            found = [measure(kind, root, args, s3) for kind in args.stores.split(",")]
        finally:
            s3.stop()
    backend = "PostgreSQL" if postgres_cluster.selected() else "SQLite"
    print(f"{backend}; {args.runs} runs older than retention.runs_days = {args.days}, one attachment object each "
          "of their results")
    print("| store | objects | rows gone s | objects gone s (total) | CPU s | seeding s |")
    print("|---|---|---|---|---|---|")
    for row in found:
        print(f"| {row['kind']} | {row['objects']:,} | {row['rows']:.1f} | {row['all']:.1f} | {row['cpu']:.1f} | "
              f"{row['seed']:.0f} |")


if __name__ == "__main__":
    main()
