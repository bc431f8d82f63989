"""Secrets the service must read back (TOTP seeds, the OpenID Connect client secret, the LDAP service
account's password, trackers' API tokens) are encrypted at rest with a key the database does not hold.

The master key is ``[auth] secret_key`` when set (the same value on every replica), otherwise 32 random
bytes generated once into ``<data_dir>/secret.key`` (mode 0600; replicas that share ``data_dir`` share
it). Each purpose gets its own Fernet key (AES-128-CBC + HMAC-SHA256) derived from the master key with
HKDF-SHA256, so one purpose's key never decrypts another's data. A stolen database dump, or a backup of
the database alone, reveals no seed; a backup that is to restore two-factor must include the key file
(kept apart from the database backup). Without it, every enrolled member needs an admin's two-factor
reset.
"""

from __future__ import annotations

import base64
import functools
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tms.config import Config

KEY_FILE = "secret.key"


class SecretUnreadable(Exception):
    """A stored secret that this instance's key cannot decrypt (the key changed or the row was altered)."""


def key_path(config: Config) -> Path:
    return config.data_dir / KEY_FILE


def _master_key(config: Config) -> bytes:
    configured = str(config.get("auth.secret_key"))
    if configured:
        return configured.encode()
    path = key_path(config)
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = base64.urlsafe_b64encode(os.urandom(32))
    try:  # O_EXCL: two replicas starting at once keep the first one's key
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as handle:
        handle.write(key + b"\n")
    return key


@functools.lru_cache(maxsize=8)
def _fernet(master: bytes, purpose: str) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=f"tms/{purpose}".encode()).derive(master)
    return Fernet(base64.urlsafe_b64encode(derived))


def encrypt(config: Config, purpose: str, plaintext: str) -> str:
    return _fernet(_master_key(config), purpose).encrypt(plaintext.encode()).decode()


def decrypt(config: Config, purpose: str, token: str) -> str:
    try:
        return _fernet(_master_key(config), purpose).decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable(f"a stored {purpose} secret does not decrypt with this instance's key") from exc
