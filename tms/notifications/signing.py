"""Delivery signatures: the contract's ``X-Service-Signature`` and the Standard Webhooks headers.

Both sign the exact body bytes that are sent, with the subscription's secret:

* ``X-Service-Signature: sha256=<hex HMAC-SHA256(secret, body)>``; the key is the secret's UTF-8
  bytes exactly as it was saved (a ``whsec_`` prefix included), so a receiver needs no decoding.
* ``webhook-signature: v1,<base64 HMAC-SHA256(key, f"{webhook-id}.{webhook-timestamp}.{body}")>``
  (https://www.standardwebhooks.com). The key follows that ecosystem's convention: a secret saved as
  ``whsec_<base64>`` signs with the decoded bytes, so ``standardwebhooks.Webhook("whsec_...")``
  verifies it as is; any other secret signs with its raw UTF-8 bytes, so a receiver passes
  ``Webhook(secret.encode())`` (bytes are used undecoded by the libraries).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

STANDARD_PREFIX = "whsec_"


def service_signature(secret: str, body: bytes) -> str:
    """The ``X-Service-Signature`` value."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_key(secret: str) -> bytes:
    """The Standard Webhooks signing key of a secret (see the module docstring)."""
    if secret.startswith(STANDARD_PREFIX):
        return decode_standard_secret(secret)
    return secret.encode()


def decode_standard_secret(secret: str) -> bytes:
    """The bytes of a ``whsec_<base64>`` secret; ValueError when it is not valid base64."""
    encoded = secret[len(STANDARD_PREFIX):]
    try:
        # the libraries accept unpadded base64; so do we
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a secret starting with whsec_ must continue with base64") from None
    if not key:
        raise ValueError("a secret starting with whsec_ must continue with base64")
    return key


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,<base64 HMAC-SHA256>`` over ``id.timestamp.body``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(standard_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()
