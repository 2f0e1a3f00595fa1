"""Standard Webhooks signing, checked against the reference `standardwebhooks` library."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from edgecron.domain.signing import (
    SigningSecretError,
    new_secret,
    secret_key,
    sign,
    signature_header,
    validate_secret,
    webhook_headers,
)

# The worked example of the Standard Webhooks / Svix documentation.
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TIMESTAMP = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

BODY = json.dumps({"event": "invoice.paid", "amount": 4200, "note": "café ✓"}).encode()
MSG_ID = "run_01JDQ7Z8S5B0W6X3K2M9P4R7TV"


def now() -> int:
    # the reference library rejects timestamps more than 5 minutes from its clock
    return int(time.time())


# --- secrets ----------------------------------------------------------------------------------


def test_new_secret_is_whsec_and_32_random_bytes() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret[len("whsec_") :], validate=True)) == 32
    assert secret_key(secret) == base64.b64decode(secret[6:])
    assert validate_secret(secret) == secret


def test_new_secrets_differ() -> None:
    assert len({new_secret() for _ in range(50)}) == 50


@pytest.mark.parametrize(
    "secret",
    [
        "",
        "whsec_",
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",  # no prefix
        "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",  # an asymmetric key prefix
        "whsec_not base64 at all!",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",  # bad padding
        "whsec_MfKQ9r8GKYqrTwjU-D8ILPZIo2LaLaSw",  # url-safe alphabet
        "whsec_" + base64.b64encode(b"k" * 23).decode(),  # too short (23 bytes)
        "whsec_" + base64.b64encode(b"k" * 65).decode(),  # too long (65 bytes)
        "whsec_" + base64.b64encode(b"k" * 32).decode() + "\n",
        "whsec_ＭfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",  # a full-width letter
    ],
)
def test_malformed_secrets_are_rejected(secret: str) -> None:
    with pytest.raises(SigningSecretError):
        sign(secret, MSG_ID, 1_700_000_000, BODY)
    with pytest.raises(SigningSecretError):
        validate_secret(secret)


def test_secret_errors_do_not_echo_the_secret() -> None:
    secret = "whsec_" + base64.b64encode(b"s" * 10).decode()
    with pytest.raises(SigningSecretError) as info:
        validate_secret(secret)
    assert secret[6:] not in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("size", [24, 32, 64])
def test_secret_sizes_within_the_spec_are_accepted(size: int) -> None:
    secret = "whsec_" + base64.b64encode(bytes(range(size))).decode()
    assert secret_key(secret) == bytes(range(size))


def test_a_non_string_secret_is_rejected() -> None:
    with pytest.raises(SigningSecretError):
        validate_secret(b"whsec_abc")  # type: ignore[arg-type]


# --- independent vectors ------------------------------------------------------------------------


def test_sign_matches_the_documented_example() -> None:
    assert sign(SPEC_SECRET, SPEC_MSG_ID, SPEC_TIMESTAMP, SPEC_BODY) == SPEC_SIGNATURE


def test_sign_matches_an_hmac_computed_in_the_test() -> None:
    key = bytes(range(32))
    secret = "whsec_" + base64.b64encode(key).decode()
    timestamp = 1_732_870_000
    body = b'{"a":1}\n\x00\xff binary tail'
    expected = base64.b64encode(
        hmac.new(key, f"{MSG_ID}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    ).decode()
    assert sign(secret, MSG_ID, timestamp, body) == "v1," + expected


def test_signature_covers_id_timestamp_and_body() -> None:
    secret = new_secret()
    base = sign(secret, MSG_ID, 1_700_000_000, BODY)
    assert sign(secret, MSG_ID + "x", 1_700_000_000, BODY) != base
    assert sign(secret, MSG_ID, 1_700_000_001, BODY) != base
    assert sign(secret, MSG_ID, 1_700_000_000, BODY + b" ") != base
    assert sign(secret, MSG_ID, 1_700_000_000, BODY) == base  # deterministic


# --- verification with the reference library --------------------------------------------------


def test_single_secret_verifies_with_standardwebhooks() -> None:
    secret = new_secret()
    headers = webhook_headers([secret], MSG_ID, now(), BODY)
    assert set(headers) == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    assert headers["webhook-id"] == MSG_ID
    assert Webhook(secret).verify(BODY, headers) == json.loads(BODY)


def test_documented_example_headers_verify_with_standardwebhooks() -> None:
    timestamp = now()
    headers = webhook_headers([SPEC_SECRET], SPEC_MSG_ID, timestamp, SPEC_BODY)
    assert Webhook(SPEC_SECRET).verify(SPEC_BODY, headers) == {"test": 2432232314}


def test_rotation_signs_with_both_secrets_and_either_verifies() -> None:
    old, new = new_secret(), new_secret()
    headers = webhook_headers([old, new], MSG_ID, now(), BODY)
    parts = headers["webhook-signature"].split(" ")
    assert len(parts) == 2
    assert all(part.startswith("v1,") for part in parts)
    assert Webhook(old).verify(BODY, headers) == json.loads(BODY)
    assert Webhook(new).verify(BODY, headers) == json.loads(BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(BODY, headers)


def test_tampered_body_fails_verification() -> None:
    secret = new_secret()
    headers = webhook_headers([secret], MSG_ID, now(), BODY)
    tampered = BODY.replace(b"4200", b"4201")
    assert tampered != BODY
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(tampered, headers)


def test_tampered_id_or_timestamp_fails_verification() -> None:
    secret = new_secret()
    timestamp = now()
    headers = webhook_headers([secret], MSG_ID, timestamp, BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY, {**headers, "webhook-id": MSG_ID + "X"})
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY, {**headers, "webhook-timestamp": str(timestamp - 1)})


def test_wrong_secret_fails_verification() -> None:
    headers = webhook_headers([new_secret()], MSG_ID, now(), BODY)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(BODY, headers)


def test_retries_of_one_run_keep_the_webhook_id() -> None:
    secret = new_secret()
    first = webhook_headers([secret], MSG_ID, now() - 120, BODY)
    retry = webhook_headers([secret], MSG_ID, now(), BODY)
    assert first["webhook-id"] == retry["webhook-id"] == MSG_ID
    assert first["webhook-signature"] != retry["webhook-signature"]
    Webhook(secret).verify(BODY, first, json_parse=False)
    Webhook(secret).verify(BODY, retry, json_parse=False)


# --- the header values ------------------------------------------------------------------------


def test_signature_header_lists_one_signature_per_secret_in_order() -> None:
    a, b, c = new_secret(), new_secret(), new_secret()
    header = signature_header([a, b, c], MSG_ID, 1_700_000_000, BODY)
    assert header.split(" ") == [sign(s, MSG_ID, 1_700_000_000, BODY) for s in (a, b, c)]


def test_duplicate_secrets_sign_once() -> None:
    a = new_secret()
    assert signature_header([a, a], MSG_ID, 1_700_000_000, BODY) == sign(a, MSG_ID, 1_700_000_000, BODY)


def test_headers_carry_the_timestamp_as_integer_seconds() -> None:
    headers = webhook_headers((SPEC_SECRET,), SPEC_MSG_ID, SPEC_TIMESTAMP, SPEC_BODY)
    assert headers == {
        "webhook-id": SPEC_MSG_ID,
        "webhook-timestamp": "1614265330",
        "webhook-signature": SPEC_SIGNATURE,
    }


def test_no_secret_is_an_error() -> None:
    with pytest.raises(SigningSecretError):
        webhook_headers([], MSG_ID, 1_700_000_000, BODY)


def test_a_single_string_instead_of_a_list_is_an_error() -> None:
    with pytest.raises(TypeError):
        signature_header(SPEC_SECRET, MSG_ID, 1_700_000_000, BODY)


def test_one_malformed_secret_among_several_is_an_error() -> None:
    with pytest.raises(SigningSecretError):
        signature_header([new_secret(), "whsec_nope"], MSG_ID, 1_700_000_000, BODY)


@pytest.mark.parametrize("msg_id", ["", "run 1", "run\r\nX-Evil: 1", "rün_1", "run_1\t"])
def test_message_ids_must_be_visible_ascii(msg_id: str) -> None:
    with pytest.raises(ValueError, match="msg_id"):
        sign(new_secret(), msg_id, 1_700_000_000, BODY)


@pytest.mark.parametrize("timestamp", [-1, True, 1.5])
def test_timestamps_must_be_non_negative_integers(timestamp: int) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        sign(new_secret(), MSG_ID, timestamp, BODY)


def test_body_must_be_bytes() -> None:
    with pytest.raises(TypeError, match="body"):
        sign(new_secret(), MSG_ID, 1_700_000_000, "text")  # type: ignore[arg-type]
