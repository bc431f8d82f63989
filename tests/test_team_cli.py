"""`tms admin create-user --role`: admin by default; the tenant's first user is always its owner."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import connect_db, storage_env
from tests.test_config_cli import tms


def test_create_user_roles(tmp_path: Path) -> None:
    env = storage_env(tmp_path / "d")
    tenant_id = tms("admin", "create-tenant", "--name", "T", cwd=tmp_path, env=env).stdout.split()[-1]
    for email, extra in (("first@x.co", ["--role", "tester"]), ("second@x.co", []),
                         ("third@x.co", ["--role", "viewer"])):
        made = tms("admin", "create-user", "--tenant", tenant_id, "--email", email, "--password", "longenough",
                   *extra, cwd=tmp_path, env=env)
        assert made.returncode == 0, made.stderr
    assert "with role viewer" in made.stdout
    with connect_db(tmp_path / "d" / "tms.db") as conn:
        roles = dict(conn.execute("SELECT email, role FROM users ORDER BY created_at").fetchall())
    assert roles == {"first@x.co": "owner", "second@x.co": "admin", "third@x.co": "viewer"}
    bad = tms("admin", "create-user", "--tenant", tenant_id, "--email", "x@x.co", "--password", "longenough",
              "--role", "boss", cwd=tmp_path, env=env)
    assert bad.returncode != 0 and "boss" in bad.stderr
