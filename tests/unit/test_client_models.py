"""The client library's TypedDicts name exactly the fields the API's OpenAPI document gives each
resource, so a field added to a response is added to the client in the same change."""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from edgecron_client import models

ROOT = Path(__file__).resolve().parents[2]

# client model -> the response schema it mirrors (and keys the client adds on purpose)
MIRRORS: dict[str, tuple[str, frozenset[str]]] = {
    "App": ("AppOut", frozenset()),
    "Endpoint": ("EndpointOut", frozenset({"secret"})),
    "EndpointHealth": ("EndpointHealthOut", frozenset()),
    "RetryPolicy": ("RetryPolicyOut", frozenset()),
    "Schedule": ("ScheduleOut", frozenset()),
    "Fire": ("FireOut", frozenset()),
    "FireRun": ("FireRunOut", frozenset()),
    "EventDelivery": ("EventDelivery", frozenset()),
    "TaskRun": ("TaskRunOut", frozenset()),
    "Attempt": ("AttemptOut", frozenset()),
    "ReplayResult": ("ReplayResult", frozenset()),
    "RecoverResult": ("RecoverResult", frozenset()),
    "Notification": ("NotificationOut", frozenset()),
    "Usage": ("UsageOut", frozenset()),
}


def _schemas() -> dict[str, Any]:
    sys.path[:0] = [str(ROOT / "layers" / "core")]
    from edgecron.api.resolver import build_api, openapi_json

    return dict(json.loads(openapi_json(build_api()))["components"]["schemas"])


SCHEMAS = _schemas()


@pytest.mark.parametrize("name", sorted(MIRRORS))
def test_the_client_model_has_the_fields_of_the_response(name: str) -> None:
    schema, extra = MIRRORS[name]
    client_keys = set(typing.get_type_hints(getattr(models, name)))
    assert client_keys - extra == set(SCHEMAS[schema]["properties"])
