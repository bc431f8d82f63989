"""Webhook benchmark (issue 4): 1,000 events fanned out to 4 loopback subscribers.

    .venv/bin/python bench/webhooks.py [--events 1000] [--subscribers 4] [--ingest-rounds 40] [--format slack]

Starts a real `tms serve` and a receiver process (asyncio, HTTP/1.1 keep-alive, answers 200 at
once, one port per subscriber) and measures:

1. drain: the time from the commit of 1,000 events until the receivers have counted all
   events x subscribers deliveries, and until the delivery log shows them all `delivered`
   (the outcome writes are batched, so they trail the last request slightly);
2. ingest latency (when `POST /api/v1/ingest` exists): p50 of a 50-result ingest while idle, and
   while a second batch of events drains.

The events are written by this script into the outbox from its own process (as `tms admin`
would), which the server's in-process wakeup cannot see, so the script then pings a spare
subscription to wake the dispatcher at once, as a commit inside the server does. Prints a table;
copy it into bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import ServerProcess, make_tenant_on, run_admin


def receiver_main(ports: list[int], ready: Any, counts: Any) -> None:
    """Answers every POST with 200 at once and counts requests per port (shared array)."""

    async def serve(index: int, port: int) -> asyncio.AbstractServer:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":", 1)[1])
                    if length:
                        await reader.readexactly(length)
                    counts[index] += 1
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        return await asyncio.start_server(handle, "127.0.0.1", port)

    async def main() -> None:
        servers = [await serve(i, port) for i, port in enumerate(ports)]
        ready.set()
        await asyncio.gather(*(s.serve_forever() for s in servers))

    asyncio.run(main())


def free_ports(count: int) -> list[int]:
    from tests.conftest import free_port

    ports: set[int] = set()
    while len(ports) < count:
        ports.add(free_port())
    return sorted(ports)


def emit_events(server: ServerProcess, tenant_id: str, count: int) -> float:
    """Commits ``count`` test_run_result.failed events in one transaction; returns the commit time."""
    from tms.notifications import events

    data = {"run_id": "bench", "run_name": "bench", "project_id": "p", "result_id": "r",
            "test_case_id": None, "test_case_code": None, "title": "t", "error_message": "boom",
            "bug_ticket_key": None}

    async def action(db: Any) -> None:
        async with db.transaction() as tx:
            await events.emit_many(tx, db, tenant_id, "test_run_result.failed", [data] * count)

    run_admin(server.db_path, action)
    return time.monotonic()


def delivered_count(server: ServerProcess, tenant_id: str) -> int:
    conn = sqlite3.connect(server.db_path)
    try:
        return int(conn.execute(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE tenant_id = ? AND status = 'delivered' "
            "AND event = 'test_run_result.failed'", (tenant_id,)
        ).fetchone()[0])
    finally:
        conn.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc): less sensitive to a shared machine's
    load than wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drain(server: ServerProcess, web: httpx.Client, spare_id: str, tenant_id: str, counts: Any,
          events: int, expected: int) -> tuple[float, float]:
    """Seconds from the events' commit until all requests arrived, and until all are logged delivered."""
    before = sum(counts)
    committed = emit_events(server, tenant_id, events)
    web.post(f"/api/webhooks/{spare_id}/ping")  # wake the dispatcher (see the module docstring)
    while sum(counts) - before < expected:
        time.sleep(0.005)
    received = time.monotonic() - committed
    target = expected + delivered_count_baseline[0]
    while delivered_count(server, tenant_id) < target:
        time.sleep(0.01)
    logged = time.monotonic() - committed
    delivered_count_baseline[0] = target
    return received, logged


delivered_count_baseline = [0]


def ingest_latencies(client: httpx.Client, project_id: str, rounds: int) -> list[float]:
    body = {
        "project_id": project_id,
        "run_name": "bench",
        "results": [{"title": f"test {i}", "status": "PASSED"} for i in range(50)],
    }
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = client.post("/api/v1/ingest", json=body)
        samples.append(time.perf_counter() - started)
        assert response.status_code in (201, 207), response.text
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--subscribers", type=int, default=4)
    parser.add_argument("--ingest-rounds", type=int, default=40)
    parser.add_argument("--format", default="standard", choices=("standard", "slack", "teams", "google_chat"),
                        help="the subscriptions' format: a chat one renders a message per event and subscription "
                             "at fan-out (and looks up the events' runs and projects)")
    args = parser.parse_args()
    expected = args.events * args.subscribers

    ports = free_ports(args.subscribers + 1)
    counts = multiprocessing.Array("l", len(ports), lock=False)
    ready = multiprocessing.Event()
    receivers = multiprocessing.Process(target=receiver_main, args=(ports, ready, counts), daemon=True)
    receivers.start()
    ready.wait(10)

    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(Path(tmp) / "data", {"TMS_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true"}).start()
        try:
            tenant = make_tenant_on(server)
            web = tenant.web()
            for port in ports[:-1]:
                response = web.post("/api/webhooks", json={
                    "url": f"http://127.0.0.1:{port}/hook", "events": ["test_run_result.failed"],
                    "secret": "bench-secret", "format": args.format})
                assert response.status_code == 201, response.text
            spare = web.post("/api/webhooks", json={
                "url": f"http://127.0.0.1:{ports[-1]}/hook", "events": ["bug.resolved"]}).json()["data"]

            assert server.process is not None
            cpu_before = cpu_seconds(server.process.pid)
            received, logged = drain(server, web, spare["id"], tenant.id, counts, args.events, expected)
            cpu = cpu_seconds(server.process.pid) - cpu_before
            rows = [
                (f"{expected:,} deliveries ({args.events:,} events x {args.subscribers}): all received", "< 10 s",
                 f"{received:.2f} s ({expected / received:,.0f}/s)"),
                (f"{expected:,} deliveries: all logged delivered", "< 10 s", f"{logged:.2f} s"),
                ("server CPU time for those deliveries (fan-out, sends, log)", "",
                 f"{cpu:.2f} s ({cpu / expected * 1000:.2f} ms per delivery)"),
            ]

            api = tenant.api
            probe = api.post("/api/v1/ingest", json={"project_id": "x", "results": []})
            if probe.status_code in (404, 405):
                rows.append(("ingest latency while draining", "<= 1.5x idle p50", "ingest not available"))
            else:
                project = tenant.create_project("Bench")
                ingest_latencies(api, project["id"], 5)  # warm-up
                idle = ingest_latencies(api, project["id"], args.ingest_rounds)
                busy: list[float] = []
                thread = threading.Thread(
                    target=lambda: busy.extend(ingest_latencies(api, project["id"], args.ingest_rounds)))
                before = sum(counts)
                committed = emit_events(server, tenant.id, args.events)
                web.post(f"/api/webhooks/{spare['id']}/ping")
                # measure the steady drain: fan-out (one write per 100 events) is over once a tenth arrived
                while sum(counts) - before < expected // 10:
                    time.sleep(0.001)
                thread.start()
                thread.join()
                overlap = sum(counts) - before - expected // 10
                while sum(counts) - before < expected:
                    time.sleep(0.005)
                second = time.monotonic() - committed
                time.sleep(1)
                # idle again after the drain: the baseline is both idle runs, the machine's load drifts
                idle += ingest_latencies(api, project["id"], args.ingest_rounds)
                idle_p50, busy_p50 = statistics.median(idle), statistics.median(busy)
                rows.append(("ingest (50 results) p50, idle", "", f"{idle_p50 * 1000:.1f} ms"))
                rows.append((f"ingest p50 while draining ({overlap:,} of {expected:,} delivered meanwhile)",
                             "<= 1.5x idle", f"{busy_p50 * 1000:.1f} ms ({busy_p50 / idle_p50:.2f}x)"))
                rows.append(("second drain, with ingest running", "< 10 s", f"{second:.2f} s"))
        finally:
            server.stop()
            receivers.terminate()

    print(f"format: {args.format}")
    print("| measure | target | result |")
    print("|---|---|---|")
    for measure, target, result in rows:
        print(f"| {measure} | {target} | {result} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
