"""Attachments where the HTTP layer itself is the subject, on real servers: a body announced beyond any
acceptable size is refused before it is read, and a client that hangs up mid-upload leaves nothing. The
rest of the attachments' behaviour runs in-process (tests/test_attachments.py)."""

from __future__ import annotations

import socket
import time

from tests.conftest import Tenant, assert_problem, make_tenant_on
from tests.test_attachments import PNG, add_result, attachments_dir, stored_files, stored_rows, upload


def test_size_limit_is_413_and_nothing_kept(start_server) -> None:
    server = start_server(env={"ATTACHMENT_MAX_BYTES": "1000"})
    tenant = make_tenant_on(server)
    result_id = add_result(tenant)
    directory = attachments_dir(server)

    exactly = b"a" * 1000
    ok = upload(tenant.api, result_id, ("limit.txt", exactly, "text/plain"))
    assert ok.status_code == 201, ok.text
    before = stored_files(directory)
    rows_before = stored_rows(server, tenant.id)

    for files in (
        [("big.txt", b"a" * 1001, "text/plain")],
        [("big.png", PNG + bytes(2000), "image/png")],
        # a good file first: it must go too
        [("small.png", PNG, "image/png"), ("big.txt", b"b" * 50_000, "text/plain")],
    ):
        assert_problem(upload(tenant.api, result_id, *files), 413)
        assert stored_files(directory) == before
        assert stored_rows(server, tenant.id) == rows_before

    # a body announced far beyond any acceptable size is refused before a byte of it is read
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(
            f"POST /api/v1/results/{result_id}/attachments HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {tenant.write_token}\r\n"
            "Content-Type: multipart/form-data; boundary=abc\r\nContent-Length: 1000000000\r\n\r\n".encode()
        )
        assert sock.recv(4096).startswith(b"HTTP/1.1 413")


def test_client_disconnect_mid_upload_leaves_nothing(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    directory = attachments_dir(tenant.server)
    before = stored_files(directory)
    head = (
        b'--zz\r\nContent-Disposition: form-data; name="file"; filename="cut.txt"\r\n\r\n' + b"x" * 200_000
    )
    with socket.create_connection(("127.0.0.1", tenant.server.port), timeout=10) as sock:
        sock.sendall(
            f"POST /api/v1/results/{result_id}/attachments HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Bearer {tenant.write_token}\r\n"
            f"Content-Type: multipart/form-data; boundary=zz\r\nContent-Length: {len(head) + 1000}\r\n\r\n".encode()
            + head
        )
        # the file exists on disk while its body is still arriving (the upload streams)
        deadline = time.monotonic() + 10
        while not stored_files(directory) - before and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stored_files(directory) - before, "the partial file never reached the disk"
    deadline = time.monotonic() + 10
    while stored_files(directory) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stored_files(directory) <= before
    assert stored_rows(tenant.server, tenant.id) == []
