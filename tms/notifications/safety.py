"""SSRF defences for webhook targets.

A subscription URL is user input that makes the server open connections, so unless
``webhooks.allow_private_targets`` is true the service refuses to reach loopback, private,
link-local (cloud metadata at 169.254.169.254), multicast, reserved, unspecified or otherwise
non-global addresses. The check runs at send time on every address the host resolves to, and the
connection is then made to an address that was checked, inside the HTTP client's network backend:
a DNS answer that changes between check and connect (DNS rebinding) cannot slip through, because
there is no second lookup. Redirects are never followed (deliveries go straight to the transport,
which has no redirect logic at all; ``make_client`` sets ``follow_redirects=False``), and proxy
environment variables are ignored: a proxy, not us, would choose the address.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
import typing
from urllib.parse import urlsplit

import httpcore
import httpx

from tms.notifications import netstream

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(Exception):
    """The target is not allowed; the message says why and is stored as the attempt's error."""


@functools.lru_cache(maxsize=4096)  # checked again on every send: the same few URLs, parsed once
def url_problem(url: str, *, https_only: bool) -> str | None:
    """Why ``url`` can never be a webhook target (scheme, host), or None when it may be one."""
    if any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in url):
        return "url must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
        httpx.URL(url)  # what the client will send to must parse too
    except (ValueError, httpx.InvalidURL):
        return "url is not a valid URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "url must be an absolute http:// or https:// URL"
    if https_only and parts.scheme != "https":
        return "url must use https:// (the service runs with an https base_url)"
    return None


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix: IPv4 in the low 32 bits
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215 local-use: the site's own translator
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated ::a.b.c.d


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 transition form carries (and may reach through a relay or translator):
    IPv4-mapped, 6to4 (2002::/16), Teredo (2001::/32, the client and the server), NAT64
    (64:ff9b::/96) and IPv4-compatible (::a.b.c.d). Checked on their own, so a refused IPv4 address
    cannot come back dressed as IPv6, whatever Python's own tables say about the IPv6 range."""
    found = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def address_problem(address: IPAddress) -> str | None:
    """Why connecting to ``address`` is refused, or None for a public (global) address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        elif address in _NAT64_LOCAL:
            return f"{address} is a local-use NAT64 address"
        else:
            for inner in embedded_ipv4(address):
                problem = address_problem(inner)
                if problem:
                    return f"{address} embeds a refused IPv4 address: {problem}"
    for label, flag in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
    ):
        if flag:
            return f"{address} is a {label} address"
    if not address.is_global:
        return f"{address} is not a public address"
    return None


def literal_address_problem(url: str) -> str | None:
    """At save time: a URL whose host is a literal non-public IP is refused at once (no DNS here;
    names are resolved and checked when each delivery is sent)."""
    host = urlsplit(url).hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return address_problem(address)


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (TCP), in the resolver's order, without duplicates."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc.strerror or exc}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore network backend that resolves, checks and connects to the checked address
    (over plain asyncio streams, see ``netstream``)."""

    def __init__(self, allow_private: bool) -> None:
        self._allow_private = allow_private

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await resolve(host, port)
        if not self._allow_private:
            for address in addresses:
                problem = address_problem(ipaddress.ip_address(address.split("%", 1)[0]))
                if problem:
                    # one bad address refuses the host: otherwise an attacker's name with one public and
                    # one private answer would get through whenever the public one is unreachable
                    raise TargetRefused(
                        f"target refused: {host} resolves to {problem} "
                        "(set webhooks.allow_private_targets = true to allow it)"
                    )
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await netstream.open_tcp(address, port, timeout)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        raise last_error or httpcore.ConnectError(f"cannot resolve {host}")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise TargetRefused("target refused: unix sockets are never webhook targets")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with its connection pool built on ``GuardedBackend``.

    httpx does not take a network backend itself, so the pool it builds is replaced by an
    identical one with ours; ``tests/test_webhook_safety.py`` proves the refusal end to end, so
    an httpx upgrade that changed this would fail the suite rather than silently stop checking.
    """

    def __init__(self, *, allow_private: bool, max_connections: int, ssl_context: ssl.SSLContext) -> None:
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        super().__init__(verify=ssl_context, trust_env=False, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(allow_private),
        )


def make_ssl_context() -> ssl.SSLContext:
    """Certificate verification as httpx does it; SSL_CERT_FILE / SSL_CERT_DIR are honoured (a private
    CA on a self-hosted network). Loading the CA bundle takes tens of milliseconds: build it once."""
    return httpx.create_ssl_context(trust_env=True)


def make_transport(
    *, allow_private: bool, max_connections: int = 64, ssl_context: ssl.SSLContext | None = None
) -> GuardedTransport:
    """What deliveries are sent with: httpx's transport on the guarded backend. Deliveries use it
    directly rather than through an ``AsyncClient``: the client's layers (cookies, auth, redirect
    handling, default headers) do nothing for a webhook and cost a fifth of the CPU per delivery."""
    return GuardedTransport(
        allow_private=allow_private, max_connections=max_connections, ssl_context=ssl_context or make_ssl_context()
    )


def make_client(
    *, allow_private: bool, max_connections: int = 64, ssl_context: ssl.SSLContext | None = None
) -> httpx.AsyncClient:
    """A client on the guarded transport: no redirects, no proxies, netrc or cookies from the environment."""
    return httpx.AsyncClient(
        transport=make_transport(
            allow_private=allow_private, max_connections=max_connections, ssl_context=ssl_context
        ),
        follow_redirects=False,
        trust_env=False,
    )
