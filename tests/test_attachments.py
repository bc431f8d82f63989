"""Attachments over the API, in-process (tests/inprocess.py): upload (typed by content, nothing kept on
refusal), download headers, tenant isolation, scopes, file-name sanitising and the orphan sweep. The size
limit and a client that hangs up mid-upload speak to a real server's socket (tests/test_attachments_http.py)."""

from __future__ import annotations

import hashlib
import io
import os
import struct
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import postgres_cluster
from tests.conftest import ServerProcess, Tenant, assert_problem, connect_db, make_tenant_on, run_admin
from tms.attachments.objects import LocalStore

IN_PROCESS = True

# ---------------------------------------------------------------- minimal real files of each type


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


JPG = (
    b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    b"\xff\xdb\x00\x43\x00" + bytes(range(1, 65)) + b"\xff\xd9"
)
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"  # noqa: E501
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"
SVG = b'<?xml version="1.0"?>\n<!-- a dot -->\n<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1"/></svg>'  # noqa: E501
PDF = (
    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)
TXT = "Test log: ✓ passed\n".encode()
JSON = b'{"suite": "checkout", "passed": 3, "cases": [1, 2, 3]}'
MP4 = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2" + b"\x00\x00\x00\x08free" + b"\x00\x00\x00\x10mdat" + bytes(8)
WEBM = (
    b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81\x04\x42\xf3\x81\x08"
    b"\x42\x82\x84webm\x42\x87\x81\x04\x42\x85\x81\x02" + b"\x18\x53\x80\x67\x01\x00\x00\x00\x00\x00\x00\x00"
)


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("report/index.txt", "hello")
    return buffer.getvalue()


PNG = _png()
ZIP = _zip()

VALID = [
    ("shot.png", PNG, "image/png"),
    ("photo.jpg", JPG, "image/jpeg"),
    ("photo.JPEG", JPG, "image/jpeg"),
    ("anim.gif", GIF, "image/gif"),
    ("pic.webp", WEBP, "image/webp"),
    ("diagram.svg", SVG, "image/svg+xml"),
    ("report.pdf", PDF, "application/pdf"),
    ("output.txt", TXT, "text/plain"),
    ("data.json", JSON, "application/json"),
    ("bundle.zip", ZIP, "application/zip"),
    ("video.mp4", MP4, "video/mp4"),
    ("video.webm", WEBM, "video/webm"),
]

# ---------------------------------------------------------------- helpers


FEATURE = "Feature: Checkout\n  Scenario: pay\n    Given a cart\n    When I pay\n    Then it is paid\n"


def add_run_result(tenant: Tenant, *, unlinked: bool = False) -> tuple[str, str]:
    """A fresh (run id, result id) of the tenant, made through the public API.

    Linked: a case, a run and a FAILED result of that case; unlinked: an ingest item naming no case.
    """
    project = tenant.create_project()
    api = tenant.api
    if unlinked:
        answer = api.post(
            "/api/v1/ingest",
            json={"project_id": project["id"], "results": [{"title": "a test", "status": "FAILED"}]},
        )
        assert answer.status_code == 201, answer.text
        run_id = answer.json()["run_id"]
    else:
        case = api.post(
            "/api/v1/cases", json={"title": "Pay", "bdd_content": FEATURE, "project_id": project["id"]}
        )
        assert case.status_code == 201, case.text
        run = api.post("/api/v1/runs", json={"name": "nightly", "project_id": project["id"]})
        assert run.status_code == 201, run.text
        run_id = run.json()["data"]["id"]
        posted = api.post(
            f"/api/v1/runs/{run_id}/results",
            json={"results": [{"test_case_id": case.json()["data"]["id"], "status": "FAILED"}]},
        )
        assert posted.status_code == 201, posted.text
    [result] = api.get(f"/api/v1/runs/{run_id}/results").json()["data"]
    return run_id, result["id"]


def add_result(tenant: Tenant, *, unlinked: bool = False) -> str:
    return add_run_result(tenant, unlinked=unlinked)[1]


def upload(client: httpx.Client, result_id: str, *files: tuple[str, bytes, str]) -> httpx.Response:
    return client.post(
        f"/api/v1/results/{result_id}/attachments",
        files=[("file", (name, content, ctype)) for name, content, ctype in files],
    )


def attachments_dir(server: ServerProcess) -> Path:
    return server.data_dir / "attachments"


def stored_files(directory: Path) -> set[str]:
    """Every file under the attachment folder (objects live in <tenant>/ and incoming/ folders)."""
    return {str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file()}


def stored_rows(server: ServerProcess, tenant_id: str) -> list[tuple[Any, ...]]:
    with connect_db(server.db_path) as conn:
        rows = conn.execute(
            "SELECT file_name, mime_type, size, object_key FROM attachments WHERE tenant_id = ?", (tenant_id,)
        ).fetchall()
    conn.close()
    return rows


# ---------------------------------------------------------------- upload and download


@pytest.mark.parametrize(("name", "content", "mime"), VALID, ids=[v[0] for v in VALID])
def test_each_allowed_type_round_trips(tenant: Tenant, name: str, content: bytes, mime: str) -> None:
    result_id = add_result(tenant)
    # the client's Content-Type is ignored: the stored type is the detected one
    response = upload(tenant.api, result_id, (name, content, "application/octet-stream"))
    assert response.status_code == 201, response.text
    [attachment] = response.json()["data"]
    assert set(attachment) == {"id", "fileName", "mimeType", "size", "createdAt"}
    assert attachment["fileName"] == name
    assert attachment["mimeType"] == mime
    assert attachment["size"] == len(content)
    assert attachment["createdAt"].endswith("Z")

    download = tenant.client("read").get(f"/api/v1/attachments/{attachment['id']}")
    assert download.status_code == 200
    assert download.content == content
    assert download.headers["content-type"].split(";")[0] == mime
    if mime == "text/plain":  # Litestar adds the charset itself: it was there twice
        assert download.headers["content-type"] == "text/plain; charset=utf-8"
    assert download.headers["x-content-type-options"] == "nosniff"
    disposition = download.headers["content-disposition"]
    inline = (mime.startswith("image/") and mime != "image/svg+xml") or mime in ("application/pdf", "text/plain")
    assert disposition.startswith("inline;" if inline else "attachment;")
    assert f"filename*=UTF-8''{name}" in disposition
    if mime == "image/svg+xml":
        csp = download.headers["content-security-policy"]
        assert csp.startswith("sandbox") and "default-src 'none'" in csp
    else:  # the site-wide policy every response carries
        from tms.http.middleware import CONTENT_SECURITY_POLICY

        assert download.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_several_files_in_one_request(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    response = upload(tenant.api, result_id, ("a.png", PNG, "image/png"), ("b.txt", TXT, "text/plain"),
                      ("c.json", JSON, "application/json"))
    assert response.status_code == 201, response.text
    data = response.json()["data"]
    assert [a["fileName"] for a in data] == ["a.png", "b.txt", "c.json"]
    assert len({a["id"] for a in data}) == 3
    for attachment, content in zip(data, [PNG, TXT, JSON], strict=True):
        assert tenant.api.get(f"/api/v1/attachments/{attachment['id']}").content == content


def test_unlinked_result_takes_attachments(tenant: Tenant) -> None:
    result_id = add_result(tenant, unlinked=True)
    response = upload(tenant.api, result_id, ("trace.zip", ZIP, "application/zip"))
    assert response.status_code == 201, response.text


def test_other_form_fields_are_ignored(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    response = tenant.api.post(
        f"/api/v1/results/{result_id}/attachments",
        data={"comment": "ignored"},
        files=[("file", ("a.png", PNG, "image/png"))],
    )
    assert response.status_code == 201, response.text
    assert len(response.json()["data"]) == 1


def test_files_are_stored_under_their_hash(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    response = upload(tenant.api, result_id, ("../../etc/passwd.png", PNG, "image/png"))
    assert response.status_code == 201, response.text
    assert response.json()["data"][0]["fileName"] == "passwd.png"
    [(file_name, _, size, object_key)] = stored_rows(tenant.server, tenant.id)
    assert file_name == "passwd.png" and size == len(PNG)
    # the key is the tenant and the content's hash: nothing of the client's name
    assert object_key == f"{tenant.id}/{hashlib.sha256(PNG).hexdigest()}"
    assert (attachments_dir(tenant.server) / object_key).read_bytes() == PNG


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("..\\..\\windows\\win.ini.txt", "win.ini.txt"),
        ("/abs/path/log.txt", "log.txt"),
        ("..txt.txt", "txt.txt"),
        ("evil\u202egnp.txt", "evilgnp.txt"),  # right-to-left override removed
        ("résumé ✓.txt", "résumé ✓.txt"),
        ("x" * 300 + ".txt", "x" * 196 + ".txt"),
    ],
)
def test_file_names_are_sanitised(tenant: Tenant, raw: str, stored: str) -> None:
    result_id = add_result(tenant)
    response = upload(tenant.api, result_id, (raw, TXT, "text/plain"))
    assert response.status_code == 201, response.text
    attachment = response.json()["data"][0]
    assert attachment["fileName"] == stored
    disposition = tenant.api.get(f"/api/v1/attachments/{attachment['id']}").headers["content-disposition"]
    assert "\n" not in disposition and "\t" not in disposition
    assert disposition.isascii()


def test_control_characters_are_removed_from_names(tenant: Tenant) -> None:
    # httpx percent-encodes control characters in names, so write the part header by hand
    result_id = add_result(tenant)
    body = (
        b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="tab\there\x07\x1b[31m.txt"\r\n'
        b"Content-Type: text/plain\r\n\r\n" + TXT + b"\r\n--b0undary--\r\n"
    )
    response = tenant.api.post(
        f"/api/v1/results/{result_id}/attachments",
        content=body,
        headers={"Content-Type": "multipart/form-data; boundary=b0undary"},
    )
    assert response.status_code == 201, response.text
    assert response.json()["data"][0]["fileName"] == "tabhere[31m.txt"


# ---------------------------------------------------------------- refusals


HTML = b"<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>"
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(120)
EXE = b"MZ\x90\x00\x03\x00\x00\x00" + bytes(120)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("shot.png", HTML),  # the classic: a page dressed as an image
        ("shot.png", JPG),  # real image, wrong name
        ("photo.jpg", PNG),
        ("tool.exe", EXE),
        ("tool.png", EXE),
        ("a.out", ELF),
        ("binary.txt", ELF),
        ("page.html", HTML),
        ("noextension", PNG),
        ("data.json", b'{"unterminated": '),
        ("data.json", b"not json at all"),
        ("deep.json", b"[" * 50_000 + b"]" * 50_000),  # deeper than any reader goes: was a 500
        ("deep.json", b'{"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"),
        ("drawing.svg", HTML),
        ("drawing.svg", b"<?xml version='1.0'?><html><svg/></html>"),
        ("drawing.svg", b"<!---->" * 5000 + b"<html/>"),  # a prolog built to make a regex backtrack
        ("notes.txt", "caf\xe9".encode("latin-1")),  # not UTF-8
        ("notes.txt", b"text\x00with nul"),
        ("notes.txt", PNG),
        ("video.webm", MP4),
        ("empty.png", b""),
    ],
)
def test_disallowed_content_is_415_and_nothing_kept(tenant: Tenant, name: str, content: bytes) -> None:
    result_id = add_result(tenant)
    before = stored_files(attachments_dir(tenant.server))
    response = upload(tenant.api, result_id, (name, content, "image/png"))
    assert_problem(response, 415)
    assert stored_rows(tenant.server, tenant.id) == []
    assert stored_files(attachments_dir(tenant.server)) <= before


def test_one_bad_file_refuses_the_whole_request(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    before = stored_files(attachments_dir(tenant.server))
    response = upload(tenant.api, result_id, ("good.png", PNG, "image/png"), ("bad.png", HTML, "image/png"))
    assert_problem(response, 415)
    assert stored_rows(tenant.server, tenant.id) == []
    assert stored_files(attachments_dir(tenant.server)) <= before


def test_missing_file_part_is_400(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    response = tenant.api.post(
        f"/api/v1/results/{result_id}/attachments", data={"note": "no file"}, files={"other": ("a.png", PNG)}
    )
    assert_problem(response, 400)
    assert stored_rows(tenant.server, tenant.id) == []


def test_file_part_without_filename_is_400(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    response = tenant.api.post(f"/api/v1/results/{result_id}/attachments", data={"file": "plain text"},
                               files={"x": ("a.png", PNG)})
    assert_problem(response, 400)


@pytest.mark.parametrize(
    ("content_type", "body", "status"),
    [
        ("application/json", b'{"file": "x"}', 415),
        ("text/plain", b"hello", 415),
        ("multipart/form-data", b"--x\r\n", 400),  # no boundary
        ("multipart/form-data; boundary=abc", b"--abc\r\nContent-Disposition: form-data; name=\"file\"", 400),
        ("multipart/form-data; boundary=abc", b"", 400),
        # what a browser sends when the form's file input was left empty
        (
            "multipart/form-data; boundary=abc",
            b'--abc\r\nContent-Disposition: form-data; name="file"; filename=""\r\n'
            b"Content-Type: application/octet-stream\r\n\r\n\r\n--abc--\r\n",
            400,
        ),
    ],
)
def test_bad_bodies(tenant: Tenant, content_type: str, body: bytes, status: int) -> None:
    result_id = add_result(tenant)
    response = tenant.api.post(
        f"/api/v1/results/{result_id}/attachments", content=body, headers={"Content-Type": content_type}
    )
    assert_problem(response, status)
    assert stored_rows(tenant.server, tenant.id) == []


def test_unknown_result_is_404(tenant: Tenant) -> None:
    assert_problem(upload(tenant.api, "cnosuchresult", ("a.png", PNG, "image/png")), 404)
    # a sizeable body is read past, so the client sees the 404 rather than a reset connection
    assert_problem(upload(tenant.api, "cnosuchresult", ("big.png", PNG + bytes(5_000_000), "image/png")), 404)
    assert_problem(tenant.api.get("/api/v1/attachments/cnosuchattachment"), 404)


def test_other_tenants_results_and_attachments_are_404(tenant: Tenant, other_tenant: Tenant) -> None:
    result_id = add_result(tenant)
    assert_problem(upload(other_tenant.api, result_id, ("a.png", PNG, "image/png")), 404)
    created = upload(tenant.api, result_id, ("a.png", PNG, "image/png")).json()["data"][0]
    assert_problem(other_tenant.api.get(f"/api/v1/attachments/{created['id']}"), 404)
    assert stored_rows(tenant.server, other_tenant.id) == []


def test_scopes(tenant: Tenant) -> None:
    result_id = add_result(tenant)
    assert_problem(upload(tenant.client("read"), result_id, ("a.png", PNG, "image/png")), 403)
    assert stored_rows(tenant.server, tenant.id) == []
    unauthenticated = tenant.server.http_client().post(
        f"/api/v1/results/{result_id}/attachments", files={"file": ("a.png", PNG)}
    )
    assert_problem(unauthenticated, 401)


# ---------------------------------------------------------------- cleanup of orphans


def test_sweep_removes_attachments_of_deleted_results_and_stray_files(tenant: Tenant) -> None:
    from tms.attachments.collection import sweep_orphans

    keep_id = add_result(tenant)
    gone_id = add_result(tenant)
    kept = upload(tenant.api, keep_id, ("keep.png", PNG, "image/png")).json()["data"][0]
    upload(tenant.api, gone_id, ("gone.png", PNG, "image/png"))
    rows = {row[0]: row[3] for row in stored_rows(tenant.server, tenant.id)}
    directory = attachments_dir(tenant.server)

    with connect_db(tenant.server.db_path) as conn:
        if not postgres_cluster.selected():  # PostgreSQL always enforces foreign keys
            conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM test_runs WHERE id = (SELECT run_id FROM test_results WHERE id = ?)", (gone_id,))
    conn.close()
    stray_old = directory / ("0" * 32)
    stray_old.write_bytes(b"left over by a crash")
    os.utime(stray_old, (time.time() - 7200, time.time() - 7200))
    stray_new = directory / ("1" * 32)
    stray_new.write_bytes(b"an upload in flight")

    removed = run_admin(tenant.server.db_path, lambda db: sweep_orphans(db, LocalStore(directory)))
    assert removed >= 1
    assert [row[0] for row in stored_rows(tenant.server, tenant.id)] == ["keep.png"]
    # the same bytes: one object, which the kept attachment still references
    assert rows["gone.png"] == rows["keep.png"]
    assert (directory / rows["keep.png"]).exists()
    assert not stray_old.exists() and stray_new.exists()
    stray_new.unlink()
    assert tenant.api.get(f"/api/v1/attachments/{kept['id']}").status_code == 200


def test_too_many_files_in_one_request_is_413(tenant: Tenant) -> None:
    from tms.attachments.upload import MAX_FILES

    result_id = add_result(tenant)
    files = [(f"f{i}.txt", TXT, "text/plain") for i in range(MAX_FILES + 1)]
    assert_problem(upload(tenant.api, result_id, *files), 413)
    assert stored_rows(tenant.server, tenant.id) == []
    assert upload(tenant.api, result_id, *files[:MAX_FILES]).status_code == 201


def test_deleting_attachments_of_results_removes_rows_then_files(tenant: Tenant) -> None:
    from tms.attachments.collection import delete_attachment_files_for, delete_attachments_in

    first, second = add_result(tenant), add_result(tenant)
    a = upload(tenant.api, first, ("a.png", PNG, "image/png"), ("b.txt", TXT, "text/plain")).json()["data"]
    b = upload(tenant.api, second, ("c.png", PNG, "image/png")).json()["data"]
    names = {row[0]: row[3] for row in stored_rows(tenant.server, tenant.id)}
    directory = attachments_dir(tenant.server)

    async def rolled_back(db: Any) -> None:
        with pytest.raises(RuntimeError):
            async with db.transaction() as tx:
                await delete_attachments_in(tx, db, tenant.id, [second], LocalStore(directory))
                raise RuntimeError("the results delete failed")

    run_admin(tenant.server.db_path, rolled_back)
    assert (directory / names["c.png"]).exists()

    store = LocalStore(directory)
    assert run_admin(tenant.server.db_path, lambda db: delete_attachment_files_for(db, tenant.id, [first], store)) == 2
    for attachment in a:
        assert_problem(tenant.api.get(f"/api/v1/attachments/{attachment['id']}"), 404)
    # b.txt's object goes; a.png's bytes are c.png's too, so their one object stays for c.png
    assert not (directory / names["b.txt"]).exists()
    assert names["a.png"] == names["c.png"] and (directory / names["a.png"]).exists()
    assert tenant.api.get(f"/api/v1/attachments/{b[0]['id']}").status_code == 200


def test_results_list_carries_attachments(tenant: Tenant) -> None:
    run_id, result_id = add_run_result(tenant)
    created = upload(tenant.api, result_id, ("a.png", PNG, "image/png"), ("b.txt", TXT, "text/plain"))
    assert created.status_code == 201, created.text
    [result] = tenant.client("read").get(f"/api/v1/runs/{run_id}/results").json()["data"]
    assert result["attachments"] == created.json()["data"]


def test_swept_unlinked_results_lose_their_attachments(start_app) -> None:
    from tms.attachments.collection import sweep_orphans

    server = start_app(env={"TMS_RETENTION_UNLINKED_DAYS": "0"})
    tenant = make_tenant_on(server)
    _, result_id = add_run_result(tenant, unlinked=True)
    attachment = upload(tenant.api, result_id, ("trace.zip", ZIP, "application/zip")).json()["data"][0]
    [(_, _, _, storage_name)] = stored_rows(server, tenant.id)

    swept = tenant.api.post("/api/v1/admin/sweep")
    assert swept.status_code == 200 and swept.json()["data"]["deleted"] == 1, swept.text
    assert run_admin(server.db_path, lambda db: sweep_orphans(db, LocalStore(attachments_dir(server)))) == 1
    assert stored_rows(server, tenant.id) == []
    assert not (attachments_dir(server) / storage_name).exists()
    assert_problem(tenant.api.get(f"/api/v1/attachments/{attachment['id']}"), 404)
