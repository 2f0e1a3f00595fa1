"""`edgecron listen`: its signature check agrees with the reference `standardwebhooks` library, and
its scripted answers (status, share of failures, delay, forward) are deterministic."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from fractions import Fraction

import pytest
import typer
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from typer.testing import CliRunner

from edgecron.domain.signing import new_secret, webhook_headers
from edgecron_cli.commands.listen import (
    Listener,
    Script,
    parse_fail_rate,
    parse_timestamp,
    printable,
    verify,
)
from edgecron_cli.main import app

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NOW_SEC = int(NOW.timestamp())
BODY = json.dumps({"event": "invoice.paid", "amount": 4200, "note": "café ✓"}).encode()
MSG_ID = "run_01JDQ7Z8S5B0W6X3K2M9P4R7TV"


def library_headers(
    secret: str, msg_id: str = MSG_ID, at: datetime = NOW, body: bytes = BODY
) -> dict[str, str]:
    """Headers as the reference library signs them."""
    signature = Webhook(secret).sign(msg_id, at, body.decode())
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }


# --- the signature check ------------------------------------------------------------------------


def test_a_delivery_signed_by_the_reference_library_verifies() -> None:
    secret = new_secret()
    assert verify([secret], library_headers(secret), BODY, NOW_SEC).verified is True


def test_header_names_are_matched_whatever_their_case() -> None:
    secret = new_secret()
    headers = {k.title(): v for k, v in library_headers(secret).items()}
    assert verify([secret], headers, BODY, NOW_SEC).verified is True


def test_what_the_listener_verifies_the_reference_library_verifies_too() -> None:
    secret, old = new_secret(), new_secret()
    now = int(time.time())  # the reference library checks the timestamp against its own clock
    headers = webhook_headers([old, secret], MSG_ID, now, BODY)  # a rotation: two signatures
    assert verify([secret], headers, BODY, now).verified is True
    assert Webhook(secret).verify(BODY, headers) == json.loads(BODY)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda h, b: (h, b + b" "),
        lambda h, b: ({**h, "webhook-id": "run_other"}, b),
        lambda h, b: ({**h, "webhook-timestamp": str(int(h["webhook-timestamp"]) + 1)}, b),
        lambda h, b: ({**h, "webhook-signature": "v1,AAAA"}, b),
        lambda h, b: ({**h, "webhook-signature": h["webhook-signature"].replace("v1,", "v2,")}, b),
    ],
    ids=["body", "id", "timestamp", "signature", "version"],
)
def test_a_tampered_delivery_is_refused_by_the_listener_and_by_the_reference_library(tamper) -> None:  # type: ignore[no-untyped-def]
    secret = new_secret()
    at = datetime.fromtimestamp(int(time.time()), UTC)  # the reference library's clock is the real one
    headers, body = tamper(library_headers(secret, at=at), BODY)
    verdict = verify([secret], headers, body, int(at.timestamp()))
    assert verdict.verified is False and verdict.reason
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, headers)


def test_another_secret_does_not_verify() -> None:
    verdict = verify([new_secret()], library_headers(new_secret()), BODY, NOW_SEC)
    assert (verdict.verified, verdict.reason) == (False, "no matching signature")


def test_a_timestamp_more_than_five_minutes_away_is_refused() -> None:
    secret = new_secret()
    stale = library_headers(secret, at=NOW - timedelta(seconds=301))
    assert verify([secret], stale, BODY, NOW_SEC).reason == "timestamp outside tolerance"
    assert verify([secret], library_headers(secret, at=NOW - timedelta(seconds=299)), BODY, NOW_SEC).verified


@pytest.mark.parametrize(
    "headers, reason",
    [
        ({}, "missing webhook headers"),
        (
            {"webhook-id": MSG_ID, "webhook-timestamp": "12e3", "webhook-signature": "v1,x"},
            "invalid timestamp",
        ),
        ({"webhook-id": MSG_ID, "webhook-timestamp": "-5", "webhook-signature": "v1,x"}, "invalid timestamp"),
        (
            {"webhook-id": MSG_ID, "webhook-timestamp": "١٢٣", "webhook-signature": "v1,x"},
            "invalid timestamp",
        ),
        (
            {"webhook-id": "a b\r\nx", "webhook-timestamp": str(NOW_SEC), "webhook-signature": "v1,x"},
            "invalid webhook-id",
        ),
        (
            {"webhook-id": MSG_ID, "webhook-timestamp": str(NOW_SEC), "webhook-signature": "v1,\udcff"},
            "no matching signature",
        ),
    ],
)
def test_hostile_headers_are_a_refusal_never_an_exception(headers: dict[str, str], reason: str) -> None:
    verdict = verify([new_secret()], headers, BODY, NOW_SEC)
    assert (verdict.verified, verdict.reason) == (False, reason)


def test_without_a_secret_a_delivery_is_unchecked() -> None:
    verdict = verify([], library_headers(new_secret()), BODY, NOW_SEC)
    assert verdict.verified is None and verdict.label == "unchecked"


def test_timestamps_are_whole_ascii_seconds() -> None:
    assert parse_timestamp("1614265330") == 1614265330
    assert [parse_timestamp(v) for v in (None, "", "1.5", " 1", "1" * 13)] == [None] * 5


# --- scripted answers ---------------------------------------------------------------------------


def test_the_share_of_failures_is_exact_and_spread_evenly() -> None:
    script = Script(fail_rate=parse_fail_rate(0.3))
    answers = [script.answer(n) for n in range(1, 21)]
    assert answers.count(503) == 6
    assert [n for n in range(1, 11) if script.fails(n)] == [1, 4, 7]


def test_no_fail_rate_answers_the_status_and_a_rate_of_one_always_fails() -> None:
    assert {Script(status=202).answer(n) for n in range(1, 50)} == {202}
    assert {Script(fail_rate=Fraction(1), fail_status=500).answer(n) for n in range(1, 50)} == {500}


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan")])
def test_a_fail_rate_outside_zero_to_one_is_a_usage_error(rate: float) -> None:
    with pytest.raises(typer.BadParameter):
        parse_fail_rate(rate)


def listener(script: Script, secrets: list[str] | None = None, **kw: object) -> tuple[Listener, list[str]]:
    lines: list[str] = []
    made = Listener(secrets or [], script, echo=lines.append, now=lambda: NOW, **kw)  # type: ignore[arg-type]
    return made, lines


def test_each_delivery_prints_one_line_with_id_attempt_lag_verdict_and_body() -> None:
    secret = new_secret()
    made, lines = listener(Script(), [secret])
    headers = {**library_headers(secret, at=NOW - timedelta(seconds=2)), "edgecron-attempt": "3"}
    assert made.handle("POST", "/", headers, BODY) == (200, b"")
    (line,) = lines
    assert MSG_ID in line and "attempt 3" in line and "lag 2.0s" in line and "verified" in line
    assert '{"event": "invoice.paid"' in line and "-> 200" in line


def test_scripted_failures_follow_the_delivery_count() -> None:
    made, lines = listener(Script(fail_rate=Fraction(1, 2), fail_status=503))
    statuses = [made.handle("POST", "/", {}, b"{}")[0] for _ in range(4)]
    assert statuses == [503, 200, 503, 200]
    assert [line.split("-> ")[1][:3] for line in lines] == ["503", "200", "503", "200"]


def test_the_delay_is_taken_before_answering() -> None:
    slept: list[float] = []
    made, _ = listener(Script(delay_ms=1500), sleep=slept.append)
    made.handle("POST", "/", {}, b"{}")
    assert slept == [1.5]


def test_a_hostile_body_and_id_are_printed_escaped() -> None:
    made, lines = listener(Script())
    made.handle("POST", "/", {"webhook-id": "run_\x1b[31mred"}, b"\x1b[2J\r\nnot json \xff")
    (line,) = lines
    assert "\x1b" not in line and "\r" not in line and "\n" not in line
    assert "\\x1b[2J" in line and "NOT VERIFIED" not in line


def test_a_long_body_is_cut_in_the_preview() -> None:
    assert printable("x" * 200).endswith("…") and len(printable("x" * 200)) == 81


def test_a_secret_read_from_standard_input_or_the_environment_is_checked_before_listening() -> None:
    empty = CliRunner().invoke(app, ["listen", "--port", "0", "--secret", "-"], input="")
    assert empty.exit_code == 2
    assert "standard input gave no secret" in empty.stderr
    bad = CliRunner(env={"EDGECRON_LISTEN_SECRET": "not-a-secret"}).invoke(app, ["listen", "--port", "0"])
    assert bad.exit_code == 2
    assert "--secret" in bad.stderr and "edgecron listen on" not in bad.stdout
