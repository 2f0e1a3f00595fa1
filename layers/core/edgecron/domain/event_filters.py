"""Event names and the `filter_events` patterns of Endpoints (pure).

Names: dotted segments of ``[A-Za-z0-9_-]+``, 1–128 characters in all (``invoice.paid``,
``user.created``, ``deploy``). Matching is case-sensitive.

Patterns (what an Endpoint lists in ``filter_events``):

* ``*`` alone matches every event, whatever its number of segments;
* otherwise a pattern has the same dotted shape as a name, where a ``*`` segment matches exactly
  ONE segment: ``invoice.*`` matches ``invoice.paid`` but not ``invoice`` nor ``invoice.paid.late``;
  ``*`` segments may appear mid-pattern (``a.*.c`` matches ``a.b.c``; ``invoice.*.*`` matches
  ``invoice.paid.late``). The first segment must be literal unless the pattern is ``*`` alone — the
  grammar of the Endpoint schema (schemas/endpoints.py ``_EVENT_PATTERN``), which refuses ``*.paid``;
  `matches` would treat such a leading ``*`` like any other ``*`` segment. There is no multi-segment
  wildcard (``**``) and no partial-segment wildcard (``inv*`` is not a pattern);
* a name without ``*`` matches only itself;
* an empty list matches nothing (the Endpoint receives schedule and direct runs only).

Operational events (names under ``edgecron.``, published by EdgeCron itself) are matched only by
patterns that name them: ``edgecron.*`` matches every one of them, whatever its number of segments,
and patterns such as ``edgecron.endpoint.*`` or ``edgecron.run.dead_lettered`` match as usual; a
plain ``*`` does not match them, so subscribing to everything never subscribes to EdgeCron's own
events by surprise. Users cannot publish names under ``edgecron.``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_NAME_LENGTH = 128
WILDCARD = "*"
OPERATIONAL_PREFIX = "edgecron."
ALL_OPERATIONAL = OPERATIONAL_PREFIX + WILDCARD
_NAME = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
#: An event name a client may publish, as one regular expression: the grammar of _NAME, outside
#: the operational prefix.
NAME_PATTERN = r"^(?!edgecron\.)[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$"
_PATTERN = re.compile(r"^(\*|[A-Za-z0-9_-]+(\.([A-Za-z0-9_-]+|\*))*)$")


def is_valid_name(name: object) -> bool:
    return isinstance(name, str) and 1 <= len(name) <= MAX_NAME_LENGTH and bool(_NAME.fullmatch(name))


def validate_name(name: str) -> str:
    """The name itself, or ValueError with a message fit for an API error."""
    if not isinstance(name, str) or not name:
        raise ValueError("event name must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"event name is longer than {MAX_NAME_LENGTH} characters")
    if not _NAME.fullmatch(name):
        raise ValueError(
            "event name must be dotted segments of letters, digits, '_' or '-' (e.g. invoice.paid)"
        )
    if is_operational(name):
        raise ValueError(f"event names under '{OPERATIONAL_PREFIX}' are EdgeCron's own operational events")
    return name


def is_operational_pattern(pattern: str) -> bool:
    """A pattern that can match operational events (plain `*` cannot)."""
    return pattern.startswith(OPERATIONAL_PREFIX)


def is_operational(name: str) -> bool:
    """An event EdgeCron publishes about itself (endpoint health, dead letters, paused schedules)."""
    return name.startswith(OPERATIONAL_PREFIX)


def is_valid_pattern(pattern: object) -> bool:
    """The grammar of schemas/endpoints.py `_EVENT_PATTERN`, with its length limit."""
    return (
        isinstance(pattern, str)
        and 1 <= len(pattern) <= MAX_NAME_LENGTH
        and bool(_PATTERN.fullmatch(pattern))
    )


def matches(pattern: str, name: str) -> bool:
    """Does one pattern match one event name?"""
    if is_operational(name):
        if pattern == WILDCARD:
            return False
        if pattern == ALL_OPERATIONAL:
            return True
    if pattern == WILDCARD:
        return True
    if WILDCARD not in pattern:
        return pattern == name
    want = pattern.split(".")
    got = name.split(".")
    if len(want) != len(got):
        return False
    return all(w in (WILDCARD, g) for w, g in zip(want, got, strict=True))


def matches_any(patterns: Iterable[str] | None, name: str) -> bool:
    """Does an Endpoint with these `filter_events` receive the event? Empty or None: never."""
    return any(matches(p, name) for p in patterns or ())
