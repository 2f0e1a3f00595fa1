"""Signing secrets encrypted at rest under the KMS key `SECRETS_KMS_KEY_ID`, by envelope encryption.

A function that seals secrets asks KMS for a data key once per container and `DATA_KEY_SECONDS`, and
encrypts each secret locally with it (AES-256-GCM); the stored value carries the KMS-encrypted data
key. A worker then pays one KMS Decrypt per data key and container, not one per secret: an Event
fanned out to a thousand Endpoints created by the same API container costs one KMS call, not a
thousand. Decrypted data keys (and secrets sealed by the earlier one-call-per-secret scheme, prefix
`kms:`) are cached per container, keyed by calling function and ciphertext, and never logged.

The cipher (cryptography's AES-GCM) is imported when a secret is first sealed or opened: most
functions that load this module (the scan, the DLQ consumers, the compensation) never do either."""

from __future__ import annotations

import base64
import os
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from edgecron.config import get_settings
from edgecron.data.aws import caller, client

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "kms:"  # a secret encrypted by KMS itself (sealed before data keys)
ENVELOPE = "dk1:"  # dk1:<KMS-encrypted data key>:<nonce>:<AES-GCM ciphertext>, each base64
CONTEXT = {"purpose": "edgecron-signing-secret"}
DATA_KEY_SECONDS = 3600  # a sealing container asks for a new data key after this long
_AAD = b"edgecron-signing-secret"


@dataclass(frozen=True)
class _DataKey:
    plaintext: bytes
    sealed: str  # base64 of the KMS CiphertextBlob
    made_at: float


_keys: dict[str, _DataKey] = {}
_keys_lock = threading.Lock()
_opening = threading.Lock()  # held while a sealed key or secret is looked up (and on a miss, decrypted)


def _data_key(key_id: str) -> _DataKey:
    """This container's data key for the calling function, renewed every DATA_KEY_SECONDS."""
    who = caller()
    with _keys_lock:
        key = _keys.get(who)
        if key is None or time.monotonic() - key.made_at > DATA_KEY_SECONDS:
            made = client("kms").generate_data_key(KeyId=key_id, KeySpec="AES_256", EncryptionContext=CONTEXT)
            key = _DataKey(
                bytes(made["Plaintext"]), base64.b64encode(made["CiphertextBlob"]).decode(), time.monotonic()
            )
            _keys[who] = key
        return key


def _cipher(key: bytes) -> AESGCM:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def seal(plaintext: str) -> str:
    """Ciphertext to store; without a configured key (unit tests) the secret is stored as given."""
    key_id = get_settings().secrets_kms_key_id
    if not key_id:
        return plaintext
    key = _data_key(key_id)
    nonce = os.urandom(12)
    box = _cipher(key.plaintext).encrypt(nonce, plaintext.encode(), _AAD)
    return ENVELOPE + ":".join((key.sealed, base64.b64encode(nonce).decode(), base64.b64encode(box).decode()))


def unseal(stored: str) -> str:
    if stored.startswith(ENVELOPE):
        sealed_key, nonce, box = stored[len(ENVELOPE) :].split(":")
        with _opening:  # one KMS call per data key, however many deliveries ask at once
            key = _open_data_key(caller(), sealed_key)
        return _cipher(key).decrypt(base64.b64decode(nonce), base64.b64decode(box), _AAD).decode()
    if stored.startswith(PREFIX):
        with _opening:
            return _decrypt(caller(), stored)
    return stored


@lru_cache(maxsize=1024)
def _open_data_key(function: str, sealed_key: str) -> bytes:
    blob = base64.b64decode(sealed_key)
    return bytes(client("kms").decrypt(CiphertextBlob=blob, EncryptionContext=CONTEXT)["Plaintext"])


@lru_cache(maxsize=4096)
def _decrypt(function: str, stored: str) -> str:
    blob = base64.b64decode(stored[len(PREFIX) :])
    return str(client("kms").decrypt(CiphertextBlob=blob, EncryptionContext=CONTEXT)["Plaintext"].decode())
