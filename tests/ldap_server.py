"""A real OpenLDAP server (Debian's slapd) for the LDAP sign-in tests: started in a temporary directory
on free loopback ports (ldap:// with StartTLS and ldaps://), with a certificate from a CA made for the
run and a small directory (people, groups, a service account), then stopped by its PID.

``make slapd`` installs slapd (``make test`` does it first); without it the tests using the fixture are
skipped with the reason.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SLAPD = shutil.which("slapd") or "/usr/sbin/slapd"
SLAPADD = shutil.which("slapadd") or "/usr/sbin/slapadd"
SCHEMA_DIR = Path("/etc/ldap/schema")
MODULE_DIR = Path("/usr/lib/ldap")
BASE = "dc=example,dc=org"
SERVICE_DN = f"cn=tms-service,{BASE}"
SERVICE_PASSWORD = "service-password-9"


def missing_reason() -> str | None:
    """Why slapd cannot run here, or None."""
    if not (os.path.exists(SLAPD) and os.path.exists(SLAPADD)):
        return "Debian's slapd is not installed (make slapd: apt-get install slapd ldap-utils)"
    if not (SCHEMA_DIR / "inetorgperson.schema").exists() or not MODULE_DIR.exists():
        return "slapd's schema files or modules are missing"
    return None


@dataclass
class DirectoryPerson:
    uid: str
    password: str
    email: str | None
    name: str
    groups: list[str] = field(default_factory=list)

    @property
    def dn(self) -> str:
        return f"uid={self.uid},ou=people,{BASE}"


@dataclass
class Slapd:
    directory: Path
    ldap_port: int
    ldaps_port: int
    ca_pem: str
    people: dict[str, DirectoryPerson]
    process: subprocess.Popen[bytes] | None = None

    @property
    def ldap_url(self) -> str:
        return f"ldap://127.0.0.1:{self.ldap_port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.ldaps_port}"

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.kill(self.process.pid, signal.SIGTERM)  # by PID: only the slapd this helper started
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _certificates(directory: Path) -> str:
    """A CA and a server certificate for 127.0.0.1 and localhost; the CA's PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "TMS test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
              .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                          x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                             critical=False)
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
    ca_pem = ca.public_bytes(serialization.Encoding.PEM).decode()
    (directory / "ca.pem").write_text(ca_pem)
    (directory / "server.pem").write_bytes(server.public_bytes(serialization.Encoding.PEM))
    (directory / "server.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
    os.chmod(directory / "server.key", 0o600)
    return ca_pem


def _people() -> dict[str, DirectoryPerson]:
    """Addresses are unique per run: the suite's servers hold every test's accounts, and an address
    has one account in the whole install."""
    domain = f"{secrets.token_hex(4)}.example.org"
    return {person.uid: person for person in (
        DirectoryPerson("alice", "alice-password-1", f"alice@{domain}", "Alice Admin", ["tms-admins"]),
        DirectoryPerson("tom", "tom-password-1", f"tom@{domain}", "Tom Tester", ["qa"]),
        DirectoryPerson("nina", "nina-password-1", f"nina@{domain}", "Nina Nogroup"),
        DirectoryPerson("ghost", "ghost-password-1", None, "Ghost Nomail", ["qa"]),
        DirectoryPerson("o'brien", "obrien-password-1", f"obrien@{domain}", "Pat O'Brien", ["qa"]),
        DirectoryPerson("carol", "carol-password-1", f"carol@{domain}", "Carol Other", ["qa"]),
    )}


def _ldif(people: dict[str, DirectoryPerson]) -> str:
    entries = [
        f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n",
        f"dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people\n",
        f"dn: ou=groups,{BASE}\nobjectClass: organizationalUnit\nou: groups\n",
        f"dn: {SERVICE_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: tms-service\n"
        f"userPassword: {SERVICE_PASSWORD}\n",
    ]
    for person in people.values():
        entry = (f"dn: {person.dn}\nobjectClass: inetOrgPerson\nuid: {person.uid}\ncn: {person.name}\n"
                 f"sn: {person.name.split()[-1]}\ndisplayName: {person.name}\nuserPassword: {person.password}\n")
        if person.email:
            entry += f"mail: {person.email}\n"
        entries.append(entry)
    for group in sorted({g for person in people.values() for g in person.groups}):
        members = "".join(f"member: {p.dn}\n" for p in people.values() if group in p.groups)
        entries.append(f"dn: cn={group},ou=groups,{BASE}\nobjectClass: groupOfNames\ncn: {group}\n{members}")
    return "\n".join(entries)


def _config(directory: Path) -> str:
    return f"""include {SCHEMA_DIR}/core.schema
include {SCHEMA_DIR}/cosine.schema
include {SCHEMA_DIR}/inetorgperson.schema
include {SCHEMA_DIR}/nis.schema
modulepath {MODULE_DIR}
moduleload back_mdb
pidfile {directory}/slapd.pid
TLSCACertificateFile {directory}/ca.pem
TLSCertificateFile {directory}/server.pem
TLSCertificateKeyFile {directory}/server.key
database mdb
maxsize 10485760
suffix "{BASE}"
rootdn "cn=admin,{BASE}"
rootpw {secrets.token_hex(16)}
directory {directory}/db
access to attrs=userPassword by self read by anonymous auth by * none
access to * by users read by * none
"""


def start_slapd(directory: Path, timeout: float = 20) -> Slapd:
    """slapd with the test directory, listening on two free loopback ports; stop it with ``stop()``."""
    (directory / "db").mkdir(parents=True)
    ca_pem = _certificates(directory)
    people = _people()
    (directory / "slapd.conf").write_text(_config(directory))
    (directory / "data.ldif").write_text(_ldif(people))
    subprocess.run([SLAPADD, "-f", str(directory / "slapd.conf"), "-l", str(directory / "data.ldif")],
                   check=True, capture_output=True)
    server = Slapd(directory, _free_port(), _free_port(), ca_pem, people)
    log = (directory / "slapd.log").open("wb")
    # -d keeps slapd in the foreground (so its PID is the one we started); level 0 logs nothing more
    server.process = subprocess.Popen(
        [SLAPD, "-f", str(directory / "slapd.conf"), "-h", f"{server.ldap_url}/ {server.ldaps_url}/", "-d", "0"],
        stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"slapd exited early: {(directory / 'slapd.log').read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", server.ldap_port), timeout=1), \
                    socket.create_connection(("127.0.0.1", server.ldaps_port), timeout=1):
                return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("slapd did not start listening in time")
