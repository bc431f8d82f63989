"""`tms admin create-user --role`: admin by default; the tenant's first user is always its owner.
`tms admin two-factor reset`: the way back for an owner who lost the device."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Tenant, connect_db, storage_env
from tests.test_config_cli import tms
from tests.test_two_factor import audit, enrol, next_code, password_step, second_step
from tests.web_helpers import text_of


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


def test_two_factor_reset_for_an_owner_who_lost_the_device(tenant: Tenant, tmp_path: Path) -> None:
    """`tms admin two-factor reset --email`: the owner lost the phone and the recovery codes, and no admin
    may reset an owner's two-factor: whoever runs the server resets it, audited, and the sessions end."""
    seed, _ = enrol(tenant.web())
    signed_in, _ = password_step(tenant, tenant.email, tenant.password)
    assert second_step(signed_in, next_code(seed)).status_code == 303
    assert signed_in.get("/runs").status_code == 200
    env = storage_env(tenant.server.data_dir)

    reset = tms("admin", "two-factor", "reset", "--email", f"  {tenant.email} ", cwd=tmp_path, env=env)
    assert reset.returncode == 0, reset.stderr
    assert f"two-factor of {tenant.email} reset" in reset.stdout and "ended" in reset.stdout
    assert seed not in reset.stdout + reset.stderr
    assert signed_in.get("/runs").status_code in (302, 303)  # the open sessions ended
    entry = audit(tenant, "user.two_factor_reset")[0]
    assert entry["actor"]["type"] == "system" and entry["actor"]["name"] == "tms admin (command line)"
    assert entry["changes"] == {"email": tenant.email, "by": "command line"}
    assert audit(tenant, "user.sessions_ended")[0]["changes"]["reason"] == "two-factor reset"
    # the password alone signs in now, and the owner sets two-factor up again
    again, went = password_step(tenant, tenant.email, tenant.password)
    assert went == "/" and again.get("/runs").status_code == 200
    assert "Two-factor is off" in text_of(again.get("/account/2fa").text)

    # nothing to reset, an unknown address: a clear message and exit 1, nothing audited
    for email, message in ((tenant.email, "has no two-factor to reset"), ("nobody@example.com", "no account uses")):
        refused = tms("admin", "two-factor", "reset", "--email", email, cwd=tmp_path, env=env)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr
    assert len(audit(tenant, "user.two_factor_reset")) == 1
