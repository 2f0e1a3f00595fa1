"""What a receiver needs to check an EdgeCron delivery: the Standard Webhooks headers, the secret
format and the signature (https://www.standardwebhooks.com/), with the standard library only.

EdgeCron signs ``f"{webhook-id}.{webhook-timestamp}."`` + body with HMAC-SHA256 under the key that
follows ``whsec_`` (base64 of 24 to 64 bytes); ``webhook-signature`` holds one ``v1,<base64>`` entry per
active secret (two during a rotation). A receiver may answer a failure with ``edgecron-retry: stop``
to end the retries of that run.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Final

SECRET_PREFIX: Final = "whsec_"
MIN_SECRET_BYTES: Final = 24
MAX_SECRET_BYTES: Final = 64
SIGNATURE_VERSION: Final = "v1"
HEADER_ID: Final = "webhook-id"
HEADER_TIMESTAMP: Final = "webhook-timestamp"
HEADER_SIGNATURE: Final = "webhook-signature"
RETRY_DIRECTIVE_HEADER: Final = "edgecron-retry"


class SigningSecretError(ValueError):
    """A signing secret that is not ``whsec_`` + base64 of 24 to 64 bytes (the message never
    contains the secret)."""


def secret_key(secret: str) -> bytes:
    """The HMAC key of ``secret``; :class:`SigningSecretError` if it is malformed."""
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise SigningSecretError(f"a signing secret must start with {SECRET_PREFIX!r}")
    encoded = secret[len(SECRET_PREFIX) :]
    try:
        key = base64.b64decode(encoded.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise SigningSecretError("a signing secret must be base64 after the prefix") from None
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise SigningSecretError(
            f"a signing secret must decode to {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes"
        )
    return key


def validate_secret(secret: str) -> str:
    """``secret`` unchanged if well formed, else :class:`SigningSecretError`."""
    secret_key(secret)
    return secret


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``v1,<base64 HMAC-SHA256>`` entry ``secret`` makes for one message; ValueError for an id
    that is not visible ASCII or a negative timestamp."""
    key = secret_key(secret)
    if not msg_id or not all("\x21" <= c <= "\x7e" for c in msg_id):
        raise ValueError("msg_id must be non-empty visible ASCII")
    if isinstance(timestamp, bool) or timestamp < 0:
        raise ValueError("timestamp must be a non-negative integer")
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode("ascii") + body, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}"
