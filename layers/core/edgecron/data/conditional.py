"""Conditional writes: the only concurrency control EdgeCron needs. A write whose condition fails is
a normal outcome (someone else won), returned as False; any other error propagates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pynamodb.exceptions import DeleteError, PutError, PynamoDBException, UpdateError
from pynamodb.models import Model

from edgecron.data.keys import at_version
from edgecron.errors import ConcurrentUpdate

SAVE_ATTEMPTS = 5  # read-modify-save rounds (save_if_unchanged) before a concurrent change is a 409


def error_code(exc: PynamoDBException) -> str | None:
    """The AWS error code of a failed call; None when no answer came (a timeout, a dropped
    connection: the call may have taken effect). pynamodb's own accessor fails on those."""
    response = getattr(exc.cause, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return code if isinstance(code, str) else None


def condition_failed(exc: UpdateError | PutError | DeleteError) -> bool:
    return error_code(exc) == "ConditionalCheckFailedException"


def update_if(item: Model, actions: list[Any], condition: Any) -> bool:
    """Apply `actions` if `condition` holds; the item is refreshed with the new values on success."""
    try:
        item.update(actions=actions, condition=condition)
        return True
    except UpdateError as exc:
        if condition_failed(exc):
            return False
        raise


def save_if(item: Model, condition: Any) -> bool:
    try:
        item.save(condition=condition)
        return True
    except PutError as exc:
        if condition_failed(exc):
            return False
        raise


def save_if_unchanged(item: Any, exists: Any) -> bool:
    """Optimistic locking for read-modify-save: write `item` whole only if its stored `version` is
    still the one read (None = written before items had versions), and move the version on."""
    read = item.version
    unchanged = at_version(type(item), read)
    item.version = int(read or 0) + 1
    if save_if(item, exists & unchanged):
        return True
    item.version = read
    return False


def compare_and_set[T, R](current: T, read: Callable[[], T], write: Callable[[T], R | None], what: str) -> R:
    """Read-modify-write under optimistic locking, the one loop every edit of a stored object uses:
    `write` applies the change to `current` and returns what it saved, or None when a concurrent
    change won; then the object is read again (`read`) and the change applied on top of it. After
    SAVE_ATTEMPTS lost races the edit is a 409 naming `what`."""
    for _ in range(SAVE_ATTEMPTS):
        saved = write(current)
        if saved is not None:
            return saved
        current = read()
    raise ConcurrentUpdate(f"the {what} is changing concurrently; try again", "id")
