"""Signing secrets encrypted at rest with KMS (`SECRETS_KMS_KEY_ID`). Decrypted secrets are cached per
container, keyed by calling function and ciphertext, so a warm worker does not pay a KMS call per delivery."""

from __future__ import annotations

import base64
from functools import lru_cache

from edgecron.config import get_settings
from edgecron.data.aws import caller, client

PREFIX = "kms:"
CONTEXT = {"purpose": "edgecron-signing-secret"}


def seal(plaintext: str) -> str:
    """Ciphertext to store; without a configured key (unit tests) the secret is stored as given."""
    key_id = get_settings().secrets_kms_key_id
    if not key_id:
        return plaintext
    blob = client("kms").encrypt(KeyId=key_id, Plaintext=plaintext.encode(), EncryptionContext=CONTEXT)
    return PREFIX + base64.b64encode(blob["CiphertextBlob"]).decode()


def unseal(stored: str) -> str:
    if not stored.startswith(PREFIX):
        return stored
    return _decrypt(caller(), stored)


@lru_cache(maxsize=4096)
def _decrypt(function: str, stored: str) -> str:
    blob = base64.b64decode(stored[len(PREFIX) :])
    return str(client("kms").decrypt(CiphertextBlob=blob, EncryptionContext=CONTEXT)["Plaintext"].decode())
