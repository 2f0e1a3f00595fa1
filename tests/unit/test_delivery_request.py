"""Which header values the request view redacts, and the body a delivery sends."""

from __future__ import annotations

import pytest

from edgecron.domain.delivery_request import edgecron_headers, is_sensitive, request_body, request_view


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "X-Api-Key",
        "api_key",
        "Cookie",
        "X-Auth-Token",
        "X-Secret",
        "Proxy-Authorization",
        "X-Password",
        "X-Session-Id",
        "x-key",
    ],
)
def test_credential_headers_are_sensitive(name: str) -> None:
    assert is_sensitive(name)


@pytest.mark.parametrize("name", ["X-Tenant", "Accept", "X-Request-Source", "X-Keyboard-Layout", "Monkey"])
def test_other_headers_are_shown(name: str) -> None:
    assert not is_sensitive(name)


def test_the_view_redacts_credentials_and_the_signature_and_names_what_varies() -> None:
    view = request_view(
        "POST", "https://x.test/h", {"Authorization": "Bearer t", "X-Tenant": "a"}, "UA/1", "run_1", b"{}"
    )
    assert view.headers == {
        "Authorization": "[redacted]",
        "X-Tenant": "a",
        "user-agent": "UA/1",
        "content-type": "application/json",
        "edgecron-attempt": "<attempt number in its series>",
        "webhook-id": "run_1",
        "webhook-timestamp": "<the attempt's start, Unix seconds>",
        "webhook-signature": "v1,[redacted]",
    }
    assert view.body_bytes == 2


def test_the_body_is_compact_json_and_absent_for_a_get_without_payload() -> None:
    assert request_body({"a": [1, 2]}, "POST") == b'{"a":[1,2]}'
    assert request_body(None, "GET") is None and request_body(None, "POST") == b"null"
    assert edgecron_headers("UA", 3)["edgecron-attempt"] == "3"
