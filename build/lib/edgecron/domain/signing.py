"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

A delivery carries three headers:

* ``webhook-id``: the message id, stable across retries of one Task Run so
  receivers can de-duplicate;
* ``webhook-timestamp``: integer seconds since the Unix epoch;
* ``webhook-signature``: space-separated ``v1,<base64 HMAC-SHA256>`` entries,
  one per active secret.

The signed content is ``f"{msg_id}.{timestamp}.".encode() + body`` and the HMAC
key is the base64-decoded part of the ``whsec_...`` secret after the prefix.
During a secret rotation the caller passes both the old and the new secret for
24 h; a receiver holding either one verifies the message.

Pure module except :func:`new_secret`, which draws from the OS CSPRNG.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets as _secrets
from collections.abc import Sequence
from typing import Final

SECRET_PREFIX: Final = "whsec_"
SECRET_BYTES: Final = 32  # what new_secret() generates
# Standard Webhooks: a secret SHOULD be 24 to 64 bytes (192 to 512 bits).
MIN_SECRET_BYTES: Final = 24
MAX_SECRET_BYTES: Final = 64
SIGNATURE_VERSION: Final = "v1"

HEADER_ID: Final = "webhook-id"
HEADER_TIMESTAMP: Final = "webhook-timestamp"
HEADER_SIGNATURE: Final = "webhook-signature"


class SigningSecretError(ValueError):
    """A signing secret that is not ``whsec_`` + base64 of 24 to 64 bytes.

    The message never contains the secret itself.
    """


def new_secret() -> str:
    """A fresh secret: ``whsec_`` + base64 of 32 random bytes from the OS CSPRNG."""
    return SECRET_PREFIX + base64.b64encode(_secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_key(secret: str) -> bytes:
    """The HMAC key of ``secret``; raise :class:`SigningSecretError` if malformed."""
    if not isinstance(secret, str):
        raise SigningSecretError("a signing secret must be a string")
    if not secret.startswith(SECRET_PREFIX):
        raise SigningSecretError(f"a signing secret must start with {SECRET_PREFIX!r}")
    encoded = secret[len(SECRET_PREFIX) :]
    if not encoded.isascii():
        raise SigningSecretError("a signing secret must be base64 after the prefix")
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise SigningSecretError("a signing secret must be base64 after the prefix") from None
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise SigningSecretError(
            f"a signing secret must decode to {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes"
        )
    return key


def validate_secret(secret: str) -> str:
    """Return ``secret`` unchanged if well formed, else raise :class:`SigningSecretError`."""
    secret_key(secret)
    return secret


def _check_message(msg_id: str, timestamp: int) -> None:
    # The id goes into a header and into the signed content: visible ASCII only,
    # which also rules out header injection (CR/LF) and the space separator.
    if not isinstance(msg_id, str) or not msg_id:
        raise ValueError("msg_id must be a non-empty string")
    if not all("\x21" <= c <= "\x7e" for c in msg_id):
        raise ValueError("msg_id must contain visible ASCII characters only")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
        raise ValueError("timestamp must be a non-negative integer (seconds since the epoch)")


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256(key, f"{msg_id}.{timestamp}." + body)>``."""
    key = secret_key(secret)
    _check_message(msg_id, timestamp)
    if not isinstance(body, bytes):
        raise TypeError("body must be bytes")
    content = f"{msg_id}.{timestamp}.".encode("ascii") + body
    digest = hmac.new(key, content, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}"


def signature_header(secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: one ``v1,...`` entry per secret, space separated.

    Pass every active secret (old and new during a rotation). Duplicates are
    signed once; order is kept. At least one secret is required.
    """
    if isinstance(secrets, str):
        raise TypeError("secrets must be a sequence of secrets, not a single string")
    unique = list(dict.fromkeys(secrets))
    if not unique:
        raise SigningSecretError("at least one signing secret is required")
    return " ".join(sign(secret, msg_id, timestamp, body) for secret in unique)


def webhook_headers(secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers for one delivery attempt."""
    signature = signature_header(secrets, msg_id, timestamp, body)
    return {
        HEADER_ID: msg_id,
        HEADER_TIMESTAMP: str(timestamp),
        HEADER_SIGNATURE: signature,
    }
