"""The directory, through ldap3 (pure Python, RFC 4510): connect over LDAPS or StartTLS, bind as the
user (a DN made from a template, or found by a service bind and a search), read their address, name
and groups. Blocking: the service runs it in a worker thread with connect and receive timeouts.

Nothing here logs or returns a password; errors are words for the person (or the admin testing the
connection), never the server's raw answer with a DN in it.
"""

from __future__ import annotations

import ssl
import warnings
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# ldap3 2.9.1 still reads names pyasn1 0.6 deprecates (tagMap, typeMap): a DeprecationWarning at import
# that is neither ours to fix nor a problem; it is silenced for this import only.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from ldap3 import BASE, NONE, SUBTREE, Connection, Server, Tls
    from ldap3.core.exceptions import LDAPException, LDAPInvalidCredentialsResult, LDAPStartTLSError
    from ldap3.utils.conv import escape_filter_chars
    from ldap3.utils.dn import escape_rdn

CONNECT_TIMEOUT = 5  # seconds to reach the server
RECEIVE_TIMEOUT = 10  # seconds for each answer
MAIL_ATTRIBUTES = ("mail", "userPrincipalName")
NAME_ATTRIBUTES = ("displayName", "cn")


class DirectoryError(Exception):
    """The directory could not be used (unreachable, TLS refused, a bad service bind or search)."""


class WrongCredentials(Exception):
    """The directory refused the user's bind, or knows no such user."""


@dataclass(frozen=True, slots=True)
class Directory:
    url: str
    start_tls: bool = True
    ca_cert: str = ""
    user_dn_template: str = ""
    search_base: str = ""
    search_filter: str = ""
    bind_dn: str = ""
    bind_password: str = field(default="", repr=False)
    group_base: str = ""


@dataclass(frozen=True, slots=True)
class DirectoryUser:
    dn: str
    email: str
    name: str
    groups: list[str]  # group DNs


def _server(directory: Directory) -> Server:
    parts = urlsplit(directory.url)
    if parts.scheme not in ("ldap", "ldaps") or not parts.hostname:
        raise DirectoryError("The URL must be ldap://host[:port] (with StartTLS) or ldaps://host[:port].")
    context_options = {"validate": ssl.CERT_REQUIRED, "version": ssl.PROTOCOL_TLS_CLIENT}
    tls = Tls(ca_certs_data=directory.ca_cert or None, **context_options)
    use_ssl = parts.scheme == "ldaps"
    port = parts.port or (636 if use_ssl else 389)
    return Server(parts.hostname, port=port, use_ssl=use_ssl, tls=tls, get_info=NONE,
                  connect_timeout=CONNECT_TIMEOUT)


def _open(directory: Directory, user: str | None, password: str | None) -> Connection:
    """A bound connection; StartTLS first on ldap:// unless switched off."""
    connection = Connection(_server(directory), user=user, password=password, receive_timeout=RECEIVE_TIMEOUT,
                            raise_exceptions=True, auto_bind=False, read_only=True)
    try:
        connection.open()
        if urlsplit(directory.url).scheme == "ldap" and directory.start_tls:
            connection.start_tls()
        connection.bind()
    except LDAPInvalidCredentialsResult:
        connection.unbind()
        raise WrongCredentials() from None
    except LDAPStartTLSError as exc:
        raise DirectoryError(f"StartTLS failed: {_reason(exc)}") from None
    except LDAPException as exc:
        raise DirectoryError(f"Could not connect and bind: {_reason(exc)}") from None
    except ssl.SSLError as exc:
        raise DirectoryError(f"TLS failed: {exc.reason or exc}") from None
    return connection


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:300]


def _service_connection(directory: Directory) -> Connection:
    try:
        return _open(directory, directory.bind_dn or None, directory.bind_password or None)
    except WrongCredentials:
        raise DirectoryError("The service account's bind DN or password was refused.") from None


def _find_user_dn(directory: Directory, username: str) -> str:
    connection = _service_connection(directory)
    try:
        query = (directory.search_filter or "(uid={username})").replace("{username}", escape_filter_chars(username))
        connection.search(directory.search_base, query, SUBTREE, attributes=[])
        entries = [entry for entry in connection.response or [] if entry.get("type") == "searchResEntry"]
    except LDAPException as exc:
        raise DirectoryError(f"The user search failed: {_reason(exc)}") from None
    finally:
        connection.unbind()
    if len(entries) != 1:
        raise WrongCredentials()  # nobody, or an ambiguous name: never guess
    return str(entries[0]["dn"])


def _first(attributes: dict[str, object], names: tuple[str, ...]) -> str:
    for name in names:
        value = attributes.get(name)
        if isinstance(value, list):
            value = value[0] if value else None
        if value:
            return str(value)
    return ""


def authenticate(directory: Directory, username: str, password: str) -> DirectoryUser:
    """Binds as the user; their address, name and groups. An empty password never binds (an LDAP
    server would take it as an anonymous bind and answer success)."""
    if not username or not password:
        raise WrongCredentials()
    if directory.user_dn_template:
        dn = directory.user_dn_template.replace("{username}", escape_rdn(username))
    else:
        dn = _find_user_dn(directory, username)
    connection = _open(directory, dn, password)
    try:
        connection.search(dn, "(objectClass=*)", BASE, attributes=[*MAIL_ATTRIBUTES, *NAME_ATTRIBUTES, "memberOf"])
        entries = [entry for entry in connection.response or [] if entry.get("type") == "searchResEntry"]
        attributes = dict(entries[0]["attributes"]) if entries else {}
        groups = [str(group) for group in attributes.get("memberOf") or []]
        if directory.group_base:
            query = "(|(member={dn})(uniqueMember={dn})(memberUid={uid}))".format(
                dn=escape_filter_chars(dn), uid=escape_filter_chars(username))
            connection.search(directory.group_base, query, SUBTREE, attributes=[])
            groups += [str(e["dn"]) for e in connection.response or [] if e.get("type") == "searchResEntry"]
    except LDAPException as exc:
        raise DirectoryError(f"Reading the user's entry failed: {_reason(exc)}") from None
    finally:
        connection.unbind()
    return DirectoryUser(dn, _first(attributes, MAIL_ATTRIBUTES), _first(attributes, NAME_ATTRIBUTES),
                         list(dict.fromkeys(groups)))


def test_connection(directory: Directory) -> str:
    """Connects (and StartTLS), binds as the service account or anonymously, and reads the search base
    as the service account: what worked, in a sentence; DirectoryError saying what did not."""
    connection = _service_connection(directory)
    try:
        secured = "LDAPS" if urlsplit(directory.url).scheme == "ldaps" else (
            "StartTLS" if directory.start_tls else "no TLS")
        who = f"bound as {directory.bind_dn}" if directory.bind_dn else "anonymous bind"
        # anonymous reads are commonly refused: the base is read only as the service account
        base = (directory.search_base or directory.group_base) if directory.bind_dn else ""
        if base:
            connection.search(base, "(objectClass=*)", BASE, attributes=[])
            if not connection.response:
                raise DirectoryError(f"Connected ({secured}, {who}) but {base} was not found.")
            return f"Connected ({secured}, {who}); {base} is readable."
        return f"Connected ({secured}, {who})."
    except LDAPException as exc:
        raise DirectoryError(f"Connected, but reading the search base failed: {_reason(exc)}") from None
    finally:
        connection.unbind()
