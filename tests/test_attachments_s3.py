"""Attachments on object storage (issue 28): the same behaviour on the local folder and on a real
S3-protocol server on loopback (moto's standalone server, tests/s3_server.py), the 503s of a store
that is down or missing, presigned downloads (each on an in-process app of its own, tests/inprocess.py: the
store is the setting), and `tms admin attachments migrate` both ways (real servers, stopped and restarted)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess, Tenant, assert_problem, connect_db, make_tenant_on, run_admin, storage_env
from tests.s3_server import ACCESS_KEY, REGION, SECRET_KEY, S3Server
from tests.test_attachments import PNG, SVG, TXT, add_result, stored_files, upload


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = S3Server(tmp_path_factory.mktemp("moto") / "moto.log").start()
    yield server
    server.stop()


def store_env(kind: str, s3: S3Server) -> dict[str, str]:
    return s3.env(s3.new_bucket()) if kind == "s3" else {}


def stored_objects(kind: str, server: ServerProcess, env: dict[str, str], s3: S3Server) -> dict[str, int]:
    """Object key (without prefix) -> size, in whichever store the server uses."""
    if kind == "s3":
        prefix = env["TMS_ATTACHMENTS_S3_PREFIX"] + "/"
        return {key[len(prefix):]: size for key, size in s3.keys(env["TMS_ATTACHMENTS_S3_BUCKET"], prefix).items()}
    directory = server.data_dir / "attachments"
    return {name: (directory / name).stat().st_size for name in stored_files(directory)}


def object_rows(server: ServerProcess, tenant_id: str) -> list[tuple[Any, ...]]:
    with connect_db(server.db_path) as conn:
        rows = conn.execute("SELECT object_key, size FROM attachment_objects WHERE tenant_id = ? ORDER BY object_key",
                            (tenant_id,)).fetchall()
    conn.close()
    return [tuple(row) for row in rows]


def attachment_count(server: ServerProcess, tenant_id: str) -> int:
    with connect_db(server.db_path) as conn:
        count = conn.execute("SELECT COUNT(*) FROM attachments WHERE tenant_id = ?", (tenant_id,)).fetchone()[0]
    conn.close()
    return int(count)


def store_of(server: ServerProcess, env: dict[str, str]) -> Any:
    from tms.attachments import objects
    from tms.config import load_config

    return objects.store_for(load_config(None, {**storage_env(server.data_dir), **env}))


def key_of(tenant: Tenant, content: bytes) -> str:
    return f"{tenant.id}/{hashlib.sha256(content).hexdigest()}"


# ------------------------------------------------------------------- the same on both stores


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_upload_download_dedupe_and_delete(kind: str, s3: S3Server, start_app) -> None:
    from tms.attachments.collection import delete_attachment_files_for

    env = store_env(kind, s3)
    server = start_app(env=env)
    tenant = make_tenant_on(server)
    first, second = add_result(tenant), add_result(tenant)
    a = upload(tenant.api, first, ("shot.png", PNG, "image/png"), ("log.txt", TXT, "text/plain"))
    assert a.status_code == 201, a.text
    b = upload(tenant.api, second, ("same-pixels.png", PNG, "image/png"))
    assert b.status_code == 201, b.text

    # identical bytes of one tenant are one object; the key is the tenant and the hash, nothing else
    assert stored_objects(kind, server, env, s3) == {key_of(tenant, PNG): len(PNG), key_of(tenant, TXT): len(TXT)}
    assert object_rows(server, tenant.id) == sorted([(key_of(tenant, PNG), len(PNG)), (key_of(tenant, TXT), len(TXT))])

    # each attachment keeps its own name and type
    checks = ((b.json()["data"][0], PNG, "image/png"), (a.json()["data"][1], TXT, "text/plain"))
    for attachment, content, mime in checks:
        got = tenant.api.get(f"/api/v1/attachments/{attachment['id']}")
        assert got.status_code == 200, got.text
        assert got.content == content
        assert got.headers["content-type"].startswith(mime)
        assert attachment["fileName"] in got.headers["content-disposition"]

    metrics = server.http_client().get("/metrics").text
    assert f'tms_attachment_objects{{tenant="{tenant.id}"}} 2.0' in metrics
    assert f'tms_attachment_bytes{{tenant="{tenant.id}"}} {float(len(PNG) + len(TXT))}' in metrics

    # deleting the first result's attachments keeps the PNG object: the second result still names it
    store = store_of(server, env)
    assert run_admin(server.db_path, lambda db: delete_attachment_files_for(db, tenant.id, [first], store)) == 2
    assert stored_objects(kind, server, env, s3) == {key_of(tenant, PNG): len(PNG)}
    assert tenant.api.get(f"/api/v1/attachments/{b.json()['data'][0]['id']}").content == PNG
    assert run_admin(server.db_path, lambda db: delete_attachment_files_for(db, tenant.id, [second], store)) == 1
    assert stored_objects(kind, server, env, s3) == {}
    assert object_rows(server, tenant.id) == []


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_another_tenants_attachment_is_404(kind: str, s3: S3Server, start_app) -> None:
    server = start_app(env=store_env(kind, s3))
    owner, other = make_tenant_on(server), make_tenant_on(server)
    attachment = upload(owner.api, add_result(owner), ("a.png", PNG, "image/png")).json()["data"][0]
    assert_problem(other.api.get(f"/api/v1/attachments/{attachment['id']}"), 404)
    # the same bytes uploaded by the other tenant are its own object
    assert upload(other.api, add_result(other), ("a.png", PNG, "image/png")).status_code == 201
    assert key_of(owner, PNG) != key_of(other, PNG)


def test_the_sweep_collects_objects_no_attachment_names(s3: S3Server, start_app) -> None:
    from tms.attachments.collection import sweep_orphans

    env = store_env("s3", s3)
    server = start_app(env=env)
    tenant = make_tenant_on(server)
    upload(tenant.api, add_result(tenant), ("a.png", PNG, "image/png"), ("b.txt", TXT, "text/plain"))
    # a caller that deleted rows without forget_after_commit (or a crash right after its commit)
    with connect_db(server.db_path) as conn:
        conn.execute("DELETE FROM attachments WHERE tenant_id = ? AND file_name = 'b.txt'", (tenant.id,))
        conn.commit()
    conn.close()
    assert run_admin(server.db_path, lambda db: sweep_orphans(db, store_of(server, env))) == 1
    assert stored_objects("s3", server, env, s3) == {key_of(tenant, PNG): len(PNG)}


# ----------------------------------------------------------------------------- presigned downloads


def test_presigned_download_redirects_with_the_attachments_name_and_type(s3: S3Server, start_app) -> None:
    server = start_app(env=s3.env(s3.new_bucket(), TMS_ATTACHMENTS_S3_PRESIGNED_SECONDS="60"))
    tenant = make_tenant_on(server)
    png, svg = upload(tenant.api, add_result(tenant), ("ünïcode shot.png", PNG, "image/png"),
                      ("dot.svg", SVG, "image/svg+xml")).json()["data"]
    answer = tenant.api.get(f"/api/v1/attachments/{png['id']}", follow_redirects=False)
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(s3.endpoint) and "X-Amz-Expires=60" in location and "X-Amz-Signature=" in location
    assert "response-content-disposition=" in location and "response-content-type=image%2Fpng" in location
    fetched = httpx.get(location)
    assert fetched.status_code == 200 and fetched.content == PNG
    # SVG is always served by TMS itself, with its sandboxing CSP
    served = tenant.api.get(f"/api/v1/attachments/{svg['id']}", follow_redirects=False)
    assert served.status_code == 200 and "sandbox" in served.headers["content-security-policy"]
    # the web interface's download redirects the same way, and a case's attachment too
    spec = tenant.api.post(f"/api/v1/cases/{add_case(tenant)}/attachments",
                           files={"file": ("spec.txt", TXT, "text/plain")}).json()["data"][0]
    web = tenant.web()
    for attachment, content in ((png, PNG), (spec, TXT)):
        answer = web.get(f"/web/attachments/{attachment['id']}", follow_redirects=False)
        assert answer.status_code == 302, answer.text
        assert answer.headers["location"].startswith(s3.endpoint)
        assert answer.headers["cache-control"] == "private, no-store"
        assert httpx.get(answer.headers["location"]).content == content
    assert web.get(f"/web/attachments/{svg['id']}", follow_redirects=False).status_code == 200


def add_case(tenant: Tenant) -> str:
    answer = tenant.api.post("/api/v1/cases", json={"title": "Spec", "bdd_content": "Feature: F\n  Scenario: S\n"})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["data"]["id"])


def test_presigned_url_is_botocores_signature() -> None:
    """The hand-written SigV4 query signing equals botocore's for the same request and moment."""
    from unittest import mock

    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from tms.attachments.presign import presigned_get

    moment = datetime(2026, 3, 1, 12, 30, 5, tzinfo=UTC)
    overrides = {"response-content-type": "image/png",
                 "response-content-disposition": "inline; filename=\"a b.png\"; filename*=UTF-8''a%20b.png"}
    key = "tms/t1/" + "a" * 64
    ours = presigned_get(endpoint="http://127.0.0.1:9000", bucket="b", key=key, region=REGION,
                         access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, seconds=300,
                         response_headers=overrides, at=moment)
    request = AWSRequest(method="GET", url=f"http://127.0.0.1:9000/b/{key}", params=overrides)
    with mock.patch.object(botocore.auth, "get_current_datetime", lambda: moment.replace(tzinfo=None)):
        botocore.auth.S3SigV4QueryAuth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", REGION, expires=300).add_auth(request)
    assert "X-Amz-Date=20260301T123005Z" in request.url
    assert ours.split("X-Amz-Signature=")[1] == request.url.split("X-Amz-Signature=")[1]
    # and a moment later the signature differs: the test can fail
    later = presigned_get(endpoint="http://127.0.0.1:9000", bucket="b", key=key, region=REGION,
                          access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, seconds=300,
                          response_headers=overrides, at=moment.replace(second=6))
    assert later.split("X-Amz-Signature=")[1] != ours.split("X-Amz-Signature=")[1]


# -------------------------------------------------------------------------------- a store in trouble


def test_a_store_that_goes_down_is_503_and_nothing_is_written(tmp_path: Path, start_app) -> None:
    own = S3Server(tmp_path / "moto.log").start()
    try:
        server = start_app(env=own.env(own.new_bucket()))
        tenant = make_tenant_on(server)
        result_id = add_result(tenant)
        assert upload(tenant.api, result_id, ("a.png", PNG, "image/png")).status_code == 201
        assert server.http_client().get("/readyz").status_code == 200
        rows_before, objects_before = attachment_count(server, tenant.id), object_rows(server, tenant.id)
        own.stop()
        refused = upload(tenant.api, result_id, ("b.txt", TXT, "text/plain"))
        assert_problem(refused, 503)
        assert "try again" in refused.json()["detail"]
        assert attachment_count(server, tenant.id) == rows_before
        assert object_rows(server, tenant.id) == objects_before
        ready = server.http_client().get("/readyz")
        assert ready.status_code == 503 and "attachment store" in ready.json()["detail"]
    finally:
        own.stop()


def test_a_missing_bucket_is_503(s3: S3Server, start_app) -> None:
    server = start_app(env=s3.env("no-such-bucket-here"))
    tenant = make_tenant_on(server)
    assert_problem(upload(tenant.api, add_result(tenant), ("a.png", PNG, "image/png")), 503)
    assert attachment_count(server, tenant.id) == 0 and object_rows(server, tenant.id) == []
    assert server.http_client().get("/readyz").status_code == 503


# ---------------------------------------------------------------------------------------- migrate


def migrate(server: ServerProcess, env: dict[str, str], target: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **storage_env(server.data_dir), **env}
    environ.pop("TMS_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "tms", "admin", "attachments", "migrate", "--to", target],
                          cwd=server.data_dir.parent, env=environ, capture_output=True, text=True, timeout=120)


def test_migrate_to_s3_and_back(s3: S3Server, start_server) -> None:
    bucket_env = s3.env(s3.new_bucket())
    local = start_server()
    tenant = make_tenant_on(local)
    created = upload(tenant.api, add_result(tenant), ("a.png", PNG, "image/png"), ("b.txt", TXT, "text/plain"),
                     ("c.png", PNG, "image/png")).json()["data"]
    data_dir = local.data_dir
    local.stop()
    # the S3 settings without switching: the command copies, verifies, and names the switch
    settings = {k: v for k, v in bucket_env.items() if k != "TMS_ATTACHMENTS_STORE"}
    done = migrate(local, settings, "s3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "copied 2 objects" in done.stdout and "TMS_ATTACHMENTS_STORE=s3" in done.stdout
    assert "2/2 objects" in done.stderr  # the progress bar
    assert s3.keys(bucket_env["TMS_ATTACHMENTS_S3_BUCKET"]) == {
        f"tms/{key_of(tenant, PNG)}": len(PNG), f"tms/{key_of(tenant, TXT)}": len(TXT)}
    again = migrate(local, settings, "s3")  # resumable: what is verified is not copied again
    assert again.returncode == 0 and "copied 0 objects" in again.stdout and "2 were already there" in again.stdout

    on_s3 = start_server(env=bucket_env, data_dir=data_dir)
    api = dataclasses.replace(tenant, server=on_s3).api
    for attachment, content in zip(created, (PNG, TXT, PNG), strict=True):
        assert api.get(f"/api/v1/attachments/{attachment['id']}").content == content
    on_s3.stop()

    shutil.rmtree(data_dir / "attachments")
    back = migrate(on_s3, bucket_env, "local")
    assert back.returncode == 0, back.stdout + back.stderr
    assert "copied 2 objects" in back.stdout and "TMS_ATTACHMENTS_STORE=local" in back.stdout
    assert (data_dir / "attachments" / key_of(tenant, TXT)).read_bytes() == TXT


def test_migrate_refuses_to_switch_while_an_object_is_missing(s3: S3Server, start_server) -> None:
    bucket_env = {k: v for k, v in s3.env(s3.new_bucket()).items() if k != "TMS_ATTACHMENTS_STORE"}
    local = start_server()
    tenant = make_tenant_on(local)
    upload(tenant.api, add_result(tenant), ("a.png", PNG, "image/png"), ("b.txt", TXT, "text/plain"))
    local.stop()
    (local.data_dir / "attachments" / key_of(tenant, TXT)).unlink()
    done = migrate(local, bucket_env, "s3")
    assert done.returncode == 1
    assert "missing in the local store" in done.stdout and "not switching" in done.stdout
    assert "TMS_ATTACHMENTS_STORE=s3" not in done.stdout


def test_wrong_settings_stop_the_start_with_one_line(tmp_path: Path) -> None:
    environ = {**os.environ, "TMS_STORAGE_DATA_DIR": str(tmp_path / "data"), "TMS_ATTACHMENTS_STORE": "s3"}
    environ.pop("TMS_CONFIG", None)
    environ.pop("TMS_ATTACHMENTS_S3_BUCKET", None)
    started = subprocess.run([sys.executable, "-m", "tms", "serve"], cwd=tmp_path, env=environ,
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 2
    assert started.stderr.strip().splitlines()[-1].startswith("tms: config error: attachments.s3_bucket")
