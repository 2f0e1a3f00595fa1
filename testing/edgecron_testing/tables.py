"""Throwaway DynamoDB tables for the emulator's own tests."""

from __future__ import annotations

import uuid
from typing import Any


def id_table(ddb: Any) -> str:
    """A new on-demand table keyed by the string `id` alone, under a fresh name; its name."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name
