"""Single sign-on in a real browser, through the identity provider's own pages (issue 25).

The owner switches OpenID Connect on in Settings → Sign-in; a teammate (invited as a viewer, with a
password) clicks "Sign in with Acme ID" on the team's sign-in link, fills the provider's own login and
consent pages (panva's oidc-provider on loopback, tests/oidc/provider.js) and lands in TMS as a tester,
the role the provider's group maps to. The owner then turns "SSO required" on: the team's sign-in page
folds the password form away, the teammate's password is refused, and the owner's password still works.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser_support import browser, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, Tenant, make_tenant_on
from tests.team_helpers import Member, add_member
from tests.test_oidc import Provider, audit_actions, member, start_provider


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    started = start_provider()
    yield started
    started.stop()


def _context(browser: Any) -> tuple[Any, Any]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    # the provider's development pages import a web font: nothing leaves the machine
    context.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda route: route.abort())
    return context, context.new_page()


def _password_sign_in(page: Any, email: str, password: str) -> None:
    page.get_by_label("Email", exact=True).fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()


def _through_the_provider(page: Any, base: str, issuer: str, login: str) -> None:
    """From the provider's login page to TMS: its login form, then its consent page if it shows one."""
    page.wait_for_url(f"{issuer}/**")
    page.get_by_placeholder("Enter any login").fill(login)
    page.get_by_placeholder("and password").fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    home = f"{base}/"
    for _ in range(100):  # the provider redirects a few times; it may stop at its consent page
        if page.url == home:
            return
        consent = page.locator("input[name=prompt][value=consent]")
        if urlsplit(page.url).netloc == urlsplit(issuer).netloc and consent.count():
            page.get_by_role("button", name="Continue").click()
        page.wait_for_timeout(100)
    raise AssertionError(f"the sign-in did not come back to TMS: {page.url}")


def _tenant_and_teammate(server: ServerProcess) -> tuple[Tenant, Member]:
    # Playwright's sync API runs an event loop in this thread: the admin calls need their own thread
    with ThreadPoolExecutor(1) as pool:
        tenant = pool.submit(make_tenant_on, server, "SSO team").result()
        teammate = pool.submit(add_member, tenant, "viewer").result()
    return tenant, teammate


def test_a_teammate_signs_in_through_the_providers_own_pages(server: ServerProcess, browser: Any,  # noqa: F811
                                                             provider: Provider) -> None:
    base = server.url
    tenant, teammate = _tenant_and_teammate(server)
    provider.account(teammate.email, groups=["tms-testers", "marketing"])
    client_id, client_secret = provider.client_for(server)
    contexts = []
    try:
        # the owner switches single sign-on on in Settings -> Sign-in
        context, owner = _context(browser)
        contexts.append(context)
        owner.goto(f"{base}/login")
        _password_sign_in(owner, tenant.email, tenant.password)
        owner.wait_for_url(f"{base}/")
        owner.goto(f"{base}/settings/sign-in")
        assert owner.locator("#redirect-uri").inner_text() == f"{base}/auth/oidc/callback"
        owner.get_by_label("Provider name").fill("Acme ID")
        owner.get_by_label("Issuer URL").fill(provider.issuer)
        owner.get_by_label("Client id").fill(client_id)
        owner.get_by_label("Client secret").fill(client_secret)
        owner.get_by_label("Scopes").fill("openid email profile groups")
        owner.get_by_label("Allowed email domains").fill("example.com")
        owner.get_by_label("Groups claim").fill("groups")
        owner.get_by_label("Groups → roles").fill("tms-admins = admin\ntms-testers = tester")
        owner.get_by_label("Single sign-on is on").check()
        owner.get_by_role("button", name="Save").click()
        owner.wait_for_url(f"{base}/settings/sign-in")
        assert "Single sign-on settings saved." in owner.content()
        assert client_secret not in owner.content()
        sign_in_url = owner.locator("#sign-in-url").inner_text().strip()
        assert sign_in_url == f"{base}/login?tenant={tenant.id}"

        # the teammate follows the team's sign-in link through the provider's own pages
        context, mate = _context(browser)
        contexts.append(context)
        mate.goto(sign_in_url)
        mate.get_by_role("link", name="Sign in with Acme ID").click()
        _through_the_provider(mate, base, provider.issuer, teammate.email)
        assert mate.locator("a.who").inner_text().strip() == teammate.email
        assert mate.locator("a.who").get_attribute("title") == "SSO team · tester"
        shot(mate, "sso-signed-in")
        with ThreadPoolExecutor(1) as pool:  # (httpx is fine here; kept apart from Playwright's loop anyway)
            assert pool.submit(member, tenant, teammate.email).result()["role"] == "tester"
            actions = pool.submit(audit_actions, tenant).result()
        assert ("user.role_changed", {"role": ["viewer", "tester"]}) in actions
        assert any(action == "sso.signed_in" and changes["email"] == teammate.email for action, changes in actions)

        # the owner requires single sign-on (the secret field stays empty: the stored one is kept)
        owner.goto(f"{base}/settings/sign-in")
        assert owner.get_by_label("Client secret").input_value() == ""
        owner.get_by_label(re.compile(r"SSO required: password sign-in is off")).check()
        owner.get_by_role("button", name="Save").click()
        owner.wait_for_url(f"{base}/settings/sign-in")
        expect(owner.locator("span.badge", has_text="SSO required")).to_have_count(1)

        # the team's sign-in page now offers the provider and folds the password form away
        context, later = _context(browser)
        contexts.append(context)
        later.goto(sign_in_url)
        assert later.get_by_role("link", name="Sign in with Acme ID").is_visible()
        assert not later.get_by_label("Password").is_visible()
        shot(later, "sso-required-sign-in")
        # the teammate's password is refused even so
        later.get_by_text("Team owner? Sign in with your password").click()
        _password_sign_in(later, teammate.email, teammate.password)
        later.wait_for_load_state()
        assert "signs in with Acme ID" in later.locator("p.error").inner_text()
        later.goto(f"{base}/runs")
        assert later.url.startswith(f"{base}/login")  # not signed in
        with ThreadPoolExecutor(1) as pool:
            actions = pool.submit(audit_actions, tenant).result()
        assert ("user.sign_in_failed", {"method": "password", "reason": "SSO required"}) in actions

        # the owner's password still works: the way back in when the provider fails
        context, way_back = _context(browser)
        contexts.append(context)
        way_back.goto(sign_in_url)
        way_back.get_by_text("Team owner? Sign in with your password").click()
        _password_sign_in(way_back, tenant.email, tenant.password)
        way_back.wait_for_url(f"{base}/")
        assert way_back.locator("a.who").get_attribute("title") == "SSO team · owner"
    finally:
        for context in contexts:
            context.close()
