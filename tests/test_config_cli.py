"""Configuration and the admin CLI, tested by running `tms` as a user would."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, ServerProcess, storage_env
from tms.config import ConfigError, load_config, sample_toml
from tms.settings import SETTINGS


def tms(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tms", *args], cwd=cwd, env=full_env, input=stdin,
        capture_output=True, text=True, timeout=60,
    )


def test_admin_commands_create_a_working_tenant_user_and_token(server: ServerProcess, tmp_path: Path) -> None:
    env = storage_env(server.data_dir)
    created = tms("admin", "create-tenant", "--name", "Acme QA", cwd=tmp_path, env=env)
    assert created.returncode == 0, created.stderr
    tenant_id = created.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"c[0-9a-z]{24}", tenant_id)

    user = tms("admin", "create-user", "--tenant", tenant_id, "--email", "lead@acme.test", "--password-stdin",
               cwd=tmp_path, env=env, stdin="s3cret-pass\n")
    assert user.returncode == 0, user.stderr

    token_run = tms("admin", "create-token", "--tenant", tenant_id, "--name", "ci", "--scopes", "read,write",
                    cwd=tmp_path, env=env)
    assert token_run.returncode == 0, token_run.stderr
    token = token_run.stdout.strip().splitlines()[-1]
    me = httpx.get(f"{server.url}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200
    assert me.json()["tenant"] == {"id": tenant_id, "name": "Acme QA", "status": "ACTIVE"}
    assert me.json()["scopes"] == ["read", "write"]

    web = httpx.Client(base_url=server.url)
    web.get("/login")
    login = web.post("/login", data={"email": "lead@acme.test", "password": "s3cret-pass",
                                     "_csrf_token": web.cookies["csrftoken"]})
    assert login.status_code == 303


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["admin", "create-token", "--tenant", "nope", "--name", "x", "--scopes", "read"], "unknown tenant"),
        (["admin", "create-token", "--tenant", "nope", "--name", "x", "--scopes", "admin"], "unknown scope"),
        (["admin", "create-user", "--tenant", "nope", "--email", "a@b.co", "--password", "longenough"],
         "unknown tenant"),
        (["admin", "create-tenant", "--name", "  "], "name"),
    ],
)
def test_admin_errors_are_one_clear_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = tms(*args, cwd=tmp_path, env=storage_env(tmp_path / "d"))
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_duplicate_user_email_is_refused(tmp_path: Path) -> None:
    env = storage_env(tmp_path / "d")
    tenant_id = tms("admin", "create-tenant", "--name", "T", cwd=tmp_path, env=env).stdout.split()[-1]
    args = ["admin", "create-user", "--tenant", tenant_id, "--email", "a@b.co", "--password", "longenough"]
    assert tms(*args, cwd=tmp_path, env=env).returncode == 0
    again = tms(*args, cwd=tmp_path, env=env)
    assert again.returncode == 1 and "already exists" in again.stderr


@pytest.mark.parametrize(
    ("toml", "env", "key"),
    [
        ("[server]\nport = 'eighty'\n", {}, "server.port"),
        ("[server]\nprot = 8080\n", {}, "server.prot"),
        ("[nosuch]\nx = 1\n", {}, "nosuch.x"),
        ("[webhooks]\nmax_retries = -1\n", {}, "webhooks.max_retries"),
        ("[ai]\nprovider = 'skynet'\n", {}, "ai.provider"),
        ("[webhooks]\nallow_private_targets = 'yes'\n", {}, "webhooks.allow_private_targets"),
        ("", {"TMS_SERVER_PORT": "x"}, "TMS_SERVER_PORT"),
        ("", {"ATTACHMENT_MAX_BYTES": "ten"}, "ATTACHMENT_MAX_BYTES"),
        ("[server\n", {}, "invalid TOML"),
    ],
)
def test_bad_config_stops_startup_with_one_line_and_exit_2(tmp_path: Path, toml: str, env, key: str) -> None:
    (tmp_path / "tms.toml").write_text(toml)
    result = tms("serve", cwd=tmp_path, env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0], result.stderr


def test_config_precedence_file_then_env(tmp_path: Path) -> None:
    path = tmp_path / "tms.toml"
    path.write_text("[retention]\nunlinked_days = 7\n[attachments]\nmax_bytes = 100\n")
    config = load_config(path, {"TMS_RETENTION_UNLINKED_DAYS": "3"})
    assert config.get("retention.unlinked_days") == 3
    assert config.get("attachments.max_bytes") == 100
    config = load_config(path, {"ATTACHMENT_MAX_BYTES": "5000", "TMS_WEBHOOKS_BACKOFF_SECONDS": "0.5"})
    assert config.get("attachments.max_bytes") == 5000
    assert config.get("webhooks.backoff_seconds") == 0.5
    with pytest.raises(ConfigError):
        load_config(path, {"TMS_WEBHOOKS_TIMEOUT_SECONDS": "0"})


def test_sample_config_is_the_committed_tms_toml_and_loads() -> None:
    committed = (ROOT / "tms.toml").read_text()
    assert committed == sample_toml()
    config = load_config(ROOT / "tms.toml", {})
    assert all(config.get(s.name) == s.default for s in SETTINGS)


def test_every_setting_and_command_is_documented() -> None:
    docs = (ROOT / "README.md").read_text() + (ROOT / "docs" / "configuration.md").read_text()
    for setting in SETTINGS:
        assert f"`{setting.name}`" in docs, f"{setting.name} is not documented"
        assert setting.env_name in docs, f"{setting.env_name} is not documented"
    for command in ("tms serve", "tms admin create-tenant", "tms admin create-user", "tms admin create-token",
                    "tms ingest"):
        assert command in docs, f"{command} is not documented"


def test_config_file_flag_and_env_var(tmp_path: Path, start_server) -> None:
    config_path = tmp_path / "custom.toml"
    config_path.write_text("[server]\nport = 'x'\n")
    assert tms("--config", str(config_path), "serve", cwd=tmp_path).returncode == 2
    assert tms("serve", cwd=tmp_path, env={"TMS_CONFIG": str(config_path)}).returncode == 2
    assert tms("--config", str(tmp_path / "missing.toml"), "serve", cwd=tmp_path).returncode == 2


def test_help_lists_commands(tmp_path: Path) -> None:
    result = tms("--help", cwd=tmp_path)
    assert result.returncode == 0
    for command in ("serve", "admin", "ingest"):
        assert command in result.stdout


@pytest.mark.parametrize(
    ("toml", "env", "key"),
    [
        ("[server]\nport = 70000\n", {}, "server.port"),
        ("", {"TMS_SERVER_PORT": "-1"}, "TMS_SERVER_PORT"),
        ("[webhooks]\ntimeout_seconds = nan\n", {}, "webhooks.timeout_seconds"),
        ("[webhooks]\nbackoff_seconds = inf\n", {}, "webhooks.backoff_seconds"),
        ("", {"TMS_AI_TIMEOUT_SECONDS": "inf"}, "TMS_AI_TIMEOUT_SECONDS"),
        ("", {"TMS_WEBHOOKS_BACKOFF_FACTOR": "nan"}, "TMS_WEBHOOKS_BACKOFF_FACTOR"),
        ("", {"TMS_WEBHOOKS_TIMEOUT_SECONDS": "-1"}, "TMS_WEBHOOKS_TIMEOUT_SECONDS"),
        ("[attachments]\nmax_bytes = 0\n", {}, "attachments.max_bytes"),
        ("[retention]\nunlinked_days = 99999999999\n", {}, "retention.unlinked_days"),
    ],
)
def test_out_of_range_values_stop_startup_with_one_line(tmp_path: Path, toml: str, env, key: str) -> None:
    (tmp_path / "tms.toml").write_text(toml)
    result = tms("serve", cwd=tmp_path, env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0], result.stderr
    assert tms("serve", "--port", "70000", cwd=tmp_path).returncode == 2


def test_unknown_keys_name_the_nearest_known_one(tmp_path: Path) -> None:
    (tmp_path / "tms.toml").write_text("[server]\nprot = 8080\n")
    result = tms("serve", cwd=tmp_path)
    assert result.returncode == 2 and "did you mean server.port?" in result.stderr
    (tmp_path / "tms.toml").write_text("")
    # an unknown TMS_* variable is a warning (the environment is shared), naming the likely setting
    result = tms("admin", "create-tenant", "--name", "Acme", cwd=tmp_path,
                 env={"TMS_STORAGE_DATA_DIR": str(tmp_path / "data"), "TMS_WEBHOOKS_MAX_RETRY": "5"})
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == ("tms: config warning: TMS_WEBHOOKS_MAX_RETRY: unknown environment variable, "
                                     "ignored (did you mean TMS_WEBHOOKS_MAX_RETRIES?)")


def test_version(tmp_path: Path) -> None:
    from tms import __version__

    result = tms("--version", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == f"tms {__version__}"


def _as_nobody(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs tms as an unprivileged user: root writes anywhere, so a read-only directory needs one."""
    if os.geteuid() != 0:
        return tms(*args, cwd=cwd, env=env)
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv to drop root")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")} | env
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "tms", *args],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=60,
    )


@pytest.mark.parametrize("existing", [False, True])
def test_a_read_only_data_dir_exits_at_once_with_one_line(tmp_path: Path, existing: bool) -> None:
    """It left a process alive and not listening (an existing database), or a long traceback."""
    data = tmp_path / "data"
    env = {"TMS_STORAGE_DATA_DIR": str(data), "TMS_SERVER_PORT": "1"}
    if existing:
        assert tms("admin", "create-tenant", "--name", "Acme", cwd=tmp_path, env=env).returncode == 0
    data.mkdir(exist_ok=True)
    for path in [data, *data.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    tmp_path.chmod(0o755)
    try:
        result = _as_nobody(["serve"], cwd=Path("/"), env=env)
    finally:
        for path in [data, *data.rglob("*")]:
            path.chmod(0o755)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write to the data directory" in lines[0], result.stderr


def test_a_data_dir_that_cannot_be_created_exits_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    result = tms("serve", cwd=tmp_path, env={"TMS_STORAGE_DATA_DIR": str(tmp_path / "file" / "data")})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write to the data directory" in lines[0], result.stderr


@pytest.mark.parametrize(("env", "expected"), [
    ({}, "http://127.0.0.1:8080"),
    ({"TMS_SERVER_HOST": "0.0.0.0"}, f"http://{__import__('socket').gethostname()}:8080"),
    ({"TMS_SERVER_HOST": "0.0.0.0", "TMS_SERVER_BASE_URL": "http://qa-box.example:8080"},
     "http://qa-box.example:8080"),
    ({"TMS_SERVER_HOST": "10.1.2.3", "TMS_SERVER_PORT": "9000"}, "http://10.1.2.3:9000"),
])
def test_links_for_teammates_name_a_reachable_host(tmp_path: Path, env: dict[str, str], expected: str) -> None:
    """Listening on every interface is for teammates: their invitation links must not say 127.0.0.1."""
    path = tmp_path / "tms.toml"
    path.write_text("")
    config = load_config(path, env).with_derived_base_url()
    assert config.base_url == expected


def test_every_setting_is_typed_by_its_default() -> None:
    """Config.get's overloads give each setting the type of its default: every setting in exactly one
    group (a new setting left out of the groups, or put in the wrong one, fails here)."""
    from typing import get_args

    from tms import settings

    groups = {str: settings.TextSetting, int: settings.NumberSetting, float: settings.DecimalSetting,
              bool: settings.FlagSetting}
    typed = {name: kind for kind, group in groups.items() for name in get_args(group)}
    assert sum(len(get_args(group)) for group in groups.values()) == len(typed), "a setting is in two groups"
    assert typed == {s.name: type(s.default) for s in settings.SETTINGS}
    loaded = load_config(None, environ={})
    assert all(isinstance(loaded.get(name), kind) for name, kind in typed.items())  # type: ignore[call-overload]
