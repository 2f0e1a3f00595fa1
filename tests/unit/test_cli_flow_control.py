"""The endpoints commands' flow-control flags against the stub API on 127.0.0.1: create and update
send the limits given, `--no-max-per-sec` / `--no-max-in-flight` send null (the API clears them), and
`get` shows them."""

from __future__ import annotations

from typer.testing import CliRunner

from tests.unit.test_cli_client import ENDPOINT, Reply, StubApi, cli, run, stub

__all__ = ["cli", "stub"]  # the fixtures, shared with test_cli_client.py


def test_create_sends_both_limits(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("POST", "/v1/endpoints", Reply(201, {**ENDPOINT, "secret": "whsec_abc"}))
    result = run(
        cli, "endpoints", "create", "http://127.0.0.1:9/hook", "--max-per-sec", "2.5", "--max-in-flight", "3"
    )
    assert result.exit_code == 0, result.output
    body = api.seen("POST", "/v1/endpoints")[0].body
    assert (body["max_per_sec"], body["max_in_flight"]) == (2.5, 3)


def test_update_sets_one_limit_and_clears_the_other(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("PATCH", "/v1/endpoints/ep_1", Reply(200, ENDPOINT))
    assert run(cli, "endpoints", "update", "ep_1", "--max-in-flight", "2", "--no-max-per-sec").exit_code == 0
    assert api.seen("PATCH", "/v1/endpoints/ep_1")[0].body == {"max_in_flight": 2, "max_per_sec": None}


def test_a_limit_that_is_not_a_number_is_refused_before_any_request(
    stub: tuple[StubApi, str], cli: CliRunner
) -> None:
    api, _ = stub
    assert run(cli, "endpoints", "update", "ep_1", "--max-in-flight", "two").exit_code == 2
    assert api.seen("PATCH", "/v1/endpoints/ep_1") == []


def test_get_shows_the_limits(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("GET", "/v1/endpoints/ep_1", Reply(200, {**ENDPOINT, "max_per_sec": 5.0, "max_in_flight": None}))
    result = run(cli, "endpoints", "get", "ep_1")
    assert result.exit_code == 0
    lines = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines() if line.strip()}
    assert lines["max_per_sec"] == ["5.0"]
    assert "max_in_flight" in lines
