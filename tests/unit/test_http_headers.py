"""The custom request header rule (edgecron.domain.http_headers): RFC 9110 token names, visible-ASCII
values without edge whitespace or control characters, and the names EdgeCron keeps for itself."""

from __future__ import annotations

import pytest

from edgecron.domain.http_headers import MAX_NAME_LENGTH, MAX_VALUE_LENGTH, header_problem, is_reserved


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-Team", "billing"),
        ("Authorization", "Bearer abc.def-ghi"),
        ("x_custom!#$%&'*+.^`|~", "v"),
        ("X-Empty", ""),
        ("X-Inner", "a b\tc"),
        ("X-Json", '{"a":[1,2]}'),
        ("X", "~"),
        ("N" * MAX_NAME_LENGTH, "v" * MAX_VALUE_LENGTH),
        ("Content-Type", "application/cloudevents+json"),
    ],
)
def test_acceptable_headers(name: str, value: str) -> None:
    assert header_problem(name, value) is None


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("X-Team", "日本", "must be ASCII"),
        ("X-Team", "caf\u00e9", "must be ASCII"),  # obs-text: requests would send latin-1
        ("X-Team", "\x80", "must be ASCII"),
        ("X-Team", " leading", "whitespace"),
        ("X-Team", "trailing\t", "whitespace"),
        ("X-Team", " ", "whitespace"),
        ("X-Team", "a\x00b", "CR, LF or NUL"),
        ("X-Team", "a\r\nX-Injected: 1", "CR, LF or NUL"),
        ("X-Team", "a\nb", "CR, LF or NUL"),
        ("X-Team", "a\x01b", "control character"),
        ("X-Team", "a\x7fb", "control character"),
        ("X-Team", "v" * (MAX_VALUE_LENGTH + 1), "exceeds"),
        ("X-Team", 5, "must be a string"),
        ("", "v", "token characters"),
        ("X Team", "v", "token characters"),
        ("X-Team:", "v", "token characters"),
        ("X-Tëam", "v", "token characters"),
        ("X-(Team)", "v", "token characters"),
        ("N" * (MAX_NAME_LENGTH + 1), "v", "token characters"),
        (None, "v", "must be a string"),
        ("webhook-id", "x", "cannot be overridden"),
        ("Webhook-Signature", "x", "cannot be overridden"),
        ("webhook-timestamp", "1", "cannot be overridden"),
        ("EdgeCron-Attempt", "1", "cannot be overridden"),
        ("Content-Length", "1", "cannot be overridden"),
        ("HOST", "example.com", "cannot be overridden"),
        ("Transfer-Encoding", "chunked", "cannot be overridden"),
        ("Connection", "close", "cannot be overridden"),
        ("Expect", "100-continue", "cannot be overridden"),
        ("User-Agent", "me", "cannot be overridden"),
    ],
)
def test_refused_headers(name: object, value: object, words: str) -> None:
    problem = header_problem(name, value)
    assert problem is not None and words in problem


def test_the_problem_never_quotes_the_value() -> None:
    secret = "sk_live_\u00e9secret"
    problem = header_problem("Authorization", secret)
    assert problem is not None and "secret" not in problem


def test_reserved_names_are_case_insensitive() -> None:
    assert is_reserved("WEBHOOK-ID") and is_reserved("Te") and not is_reserved("X-Webhook-Id")
