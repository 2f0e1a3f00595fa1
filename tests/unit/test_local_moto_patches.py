"""Each emulator work-around on moto's internals checks the moto release (and what it touches) before
it installs, and when it no longer applies leaves moto as it is and warns once, naming itself."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import botocore.client
import pytest
from moto.dynamodb import models as dynamodb_models

from edgecron_cli.local import fidelity, moto_patches, moto_transactions


@pytest.fixture
def other_moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Pretend a different moto release is installed."""
    monkeypatch.setattr(moto_patches, "found_version", lambda: "5.3.0")
    moto_patches.forget_warnings()
    yield "5.3.0"
    moto_patches.forget_warnings()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_the_pinned_release_is_the_installed_one() -> None:
    assert moto_patches.installed_moto_version() == moto_patches.MOTO_VERSION
    assert moto_patches.applies("a work-around", [(dynamodb_models.DynamoDBBackend, "transact_write_items")])


def test_another_release_warns_once_with_the_name_and_both_versions(
    other_moto: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="edgecron_cli.local")
    assert not moto_patches.applies("faster receives")
    assert not moto_patches.applies("faster receives")
    (message,) = _warnings(caplog)
    assert "'faster receives'" in message
    assert f"written for moto {moto_patches.MOTO_VERSION}" in message
    assert f"found moto {other_moto}" in message
    assert "unpatched" in message


def test_a_missing_attribute_is_named(caplog: pytest.LogCaptureFixture) -> None:
    moto_patches.forget_warnings()
    caplog.set_level(logging.WARNING, logger="edgecron_cli.local")

    class Backend:
        pass

    assert not moto_patches.applies("items-only backups", [(Backend, "transact_write_items")])
    (message,) = _warnings(caplog)
    assert "expects Backend.transact_write_items, which moto" in message
    moto_patches.forget_warnings()


def test_transactions_under_another_release_leave_moto_unpatched(
    other_moto: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="edgecron_cli.local")
    monkeypatch.setattr(moto_transactions, "_installed", [])
    backend = dynamodb_models.DynamoDBBackend
    before: Any = (backend.__dict__["transact_write_items"], dynamodb_models.copy)
    assert moto_transactions.install() is False
    assert (backend.__dict__["transact_write_items"], dynamodb_models.copy) == before
    (message,) = _warnings(caplog)
    assert moto_transactions.PATCH in message and other_moto in message


def test_the_botocore_hook_is_not_installed_when_botocore_moved_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    moto_patches.forget_warnings()
    caplog.set_level(logging.WARNING, logger="edgecron_cli.local")
    original = botocore.client.BaseClient._make_api_call
    monkeypatch.delattr(botocore.client.BaseClient, "_make_api_call")
    hook = fidelity.AwsFidelity().install()
    assert "_make_api_call" not in botocore.client.BaseClient.__dict__
    hook.uninstall()
    monkeypatch.undo()
    assert botocore.client.BaseClient._make_api_call is original
    (message,) = _warnings(caplog)
    assert fidelity.PATCH in message and "BaseClient._make_api_call" in message
    moto_patches.forget_warnings()


def test_the_botocore_hook_does_not_depend_on_the_moto_release(other_moto: str) -> None:
    hook = fidelity.AwsFidelity()
    try:
        hook.install()
        assert botocore.client.BaseClient.__dict__["_make_api_call"] is not None
        assert hook._installed is botocore.client.BaseClient.__dict__["_make_api_call"]
    finally:
        hook.uninstall()
