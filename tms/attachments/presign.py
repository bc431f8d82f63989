"""Presigned S3 GET URLs (AWS Signature Version 4, query-string form), written out here.

obstore signs URLs too, but cannot sign ``response-content-type`` / ``response-content-disposition``:
an object is shared by every attachment with the same bytes, so the file name and type of *this*
attachment must travel in the signed URL, not in the object's metadata. The algorithm is AWS's
"Authenticating Requests: Using Query Parameters"; tests/test_attachments_s3.py checks it against
botocore's signer byte for byte. Pure function of its inputs and the clock; no network.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SECONDS = 7 * 24 * 3600  # SigV4's own limit


def _encode(text: str, safe: str = "") -> str:
    # RFC 3986 unreserved characters stay; everything else is %XX (upper case), as SigV4 wants
    return quote(text, safe="-_.~" + safe)


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def presigned_get(
    *,
    endpoint: str,
    bucket: str,
    key: str,
    region: str,
    access_key_id: str,
    secret_access_key: str,
    seconds: int,
    response_headers: dict[str, str] | None = None,
    at: datetime | None = None,
) -> str:
    """A path-style URL that lets anyone holding it GET ``bucket/key`` for ``seconds``."""
    if not 1 <= seconds <= MAX_SECONDS:
        raise ValueError(f"a presigned URL lives 1 to {MAX_SECONDS} seconds, not {seconds}")
    moment = (at or datetime.now(UTC)).astimezone(UTC)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    day = moment.strftime("%Y%m%d")
    scope = f"{day}/{region}/s3/aws4_request"
    parts = urlsplit(endpoint)
    host = parts.netloc
    base_path = parts.path.rstrip("/")
    canonical_uri = f"{base_path}/{_encode(bucket)}/{_encode(key, safe='/')}"
    query = {
        "X-Amz-Algorithm": ALGORITHM,
        "X-Amz-Credential": f"{access_key_id}/{scope}",
        "X-Amz-Date": amz_date,
        "X-Amz-Expires": str(seconds),
        "X-Amz-SignedHeaders": "host",
        **(response_headers or {}),
    }
    canonical_query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(query.items()))
    canonical_request = "\n".join(
        ["GET", canonical_uri, canonical_query, f"host:{host}", "", "host", "UNSIGNED-PAYLOAD"]
    )
    string_to_sign = "\n".join(
        [ALGORITHM, amz_date, scope, hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()]
    )
    signing_key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret_access_key}".encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(signing_key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"{parts.scheme}://{host}{canonical_uri}?{canonical_query}&X-Amz-Signature={signature}"
