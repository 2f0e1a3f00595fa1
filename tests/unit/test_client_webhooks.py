"""The client's receiver-side signing (edgecron_client.webhooks, standard library only, used by
`edgecron listen`) agrees with the signer the workers use: same headers, same signatures, same
secrets refused."""

from __future__ import annotations

import pytest

from edgecron.domain import outcome, signing
from edgecron_client import webhooks


@pytest.mark.parametrize("body", [b"", b'{"order":42}', "é\u2028".encode(), bytes(range(256))])
def test_every_signature_the_workers_send_is_one_the_client_computes(body: bytes) -> None:
    old, new = signing.new_secret(), signing.new_secret()
    sent = signing.webhook_headers([old, new], "run_01ABC", 1_790_000_000, body)
    entries = sent[webhooks.HEADER_SIGNATURE].split(" ")
    assert entries == [webhooks.sign(secret, "run_01ABC", 1_790_000_000, body) for secret in (old, new)]
    assert set(sent) == {webhooks.HEADER_ID, webhooks.HEADER_TIMESTAMP, webhooks.HEADER_SIGNATURE}


@pytest.mark.parametrize(
    "secret",
    [
        "",
        "whsec_",
        "secret_abc",
        "whsec_!!!!",
        "whsec_" + "A" * 8,
        "whsec_" + "QUFB" * 40,
        "whsec_ü" + "A" * 40,
    ],
)
def test_a_malformed_secret_is_refused_by_both(secret: str) -> None:
    with pytest.raises(signing.SigningSecretError):
        signing.validate_secret(secret)
    with pytest.raises(webhooks.SigningSecretError):
        webhooks.validate_secret(secret)


def test_the_receiver_directive_is_the_one_the_workers_read() -> None:
    assert webhooks.RETRY_DIRECTIVE_HEADER == outcome.RETRY_DIRECTIVE_HEADER
    assert webhooks.SECRET_PREFIX == signing.SECRET_PREFIX
