"""EdgeCron's words: every status, kind and policy a client can read or send, defined once.

Schemas, data models, services and docs/api.md all take their lists from here; a test compares the
documented lists with these enums. Each is a `StrEnum`, so a member is also the plain string stored
in DynamoDB and sent in JSON."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """Where a Task Run is in its life."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    RETRY_SCHEDULED = "retry_scheduled"
    DEAD_LETTER = "dead_letter"
    CANCELLED = "cancelled"


class Source(StrEnum):
    """What created a Task Run."""

    DIRECT = "direct"
    SCHEDULE = "schedule"
    EVENT = "event"


class ErrorKind(StrEnum):
    """Why an attempt (or a run that never reached an attempt) failed."""

    TIMEOUT = "timeout"
    NETWORK = "network"
    HTTP_4XX = "http_4xx"
    HTTP_5XX = "http_5xx"
    HTTP_429 = "http_429"
    REDIRECT = "redirect"
    ENDPOINT_INACTIVE = "endpoint_inactive"
    ENDPOINT_DELETED = "endpoint_deleted"
    REFUSED = "refused"
    INVALID_REQUEST = "invalid_request"
    INVALID_RESPONSE = "invalid_response"
    POISON = "poison"
    WORKER_LOST = "worker_lost"
    RECEIVER_STOPPED = "receiver_stopped"
    ENDPOINT_DISABLED = "endpoint_disabled"


class FireStatus(StrEnum):
    """Where one fire time of a Schedule is: open (SCHEDULED, RUNNING) or settled."""

    SCHEDULED = "SCHEDULED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    MISSED = "MISSED"
    SKIPPED = "SKIPPED"
    BUFFERED = "BUFFERED"


class ScheduleStatus(StrEnum):
    """Whether a Schedule fires."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    ENDED = "ENDED"


class MissedPolicy(StrEnum):
    """What a Schedule does with fire times that passed while nothing could fire them."""

    RUN_ONCE = "RUN_ONCE"
    SKIP = "SKIP"


class OverlapPolicy(StrEnum):
    """What a Schedule does with a fire time while its previous Fire still has open runs."""

    ALLOW = "ALLOW"
    SKIP = "SKIP"
    BUFFER_ONE = "BUFFER_ONE"


class FanoutStatus(StrEnum):
    """How far an Event's fan-out to its subscribed Endpoints has got."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class RetryStrategy(StrEnum):
    """How the delay between attempts grows."""

    FIXED = "fixed"
    LINEAR = "linear"
    EXPONENTIAL = "exponential"


class HttpMethod(StrEnum):
    """The HTTP methods an Endpoint may be called with."""

    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    GET = "GET"
    DELETE = "DELETE"


class KeyRole(StrEnum):
    """Which kind of API key made a request."""

    ADMIN = "admin"
    APP = "app"


class HealthState(StrEnum):
    """How an Endpoint's recent deliveries went."""

    HEALTHY = "healthy"
    FAILING = "failing"
    DISABLED = "disabled"


class DisabledReason(StrEnum):
    """Why EdgeCron, not a user, turned an Endpoint off."""

    FAILING = "failing"


class NotificationKind(StrEnum):
    """What an App notification (and its alert) is about."""

    SCHEDULE_AUTO_PAUSED = "SCHEDULE_AUTO_PAUSED"
    ENDPOINT_FAILING = "ENDPOINT_FAILING"
    ENDPOINT_DISABLED = "ENDPOINT_DISABLED"
    API_KEY_CREATED = "API_KEY_CREATED"
    API_KEY_ROTATED = "API_KEY_ROTATED"
    API_KEY_REVOKED = "API_KEY_REVOKED"


class OperationalEvent(StrEnum):
    """The events EdgeCron publishes into an App about its own work (matched by `edgecron.*`)."""

    ENDPOINT_DISABLED = "edgecron.endpoint.disabled"
    ENDPOINT_FAILING = "edgecron.endpoint.failing"
    RUN_DEAD_LETTERED = "edgecron.run.dead_lettered"
    SCHEDULE_PAUSED = "edgecron.schedule.paused"
    FIRE_MISSED = "edgecron.fire.missed"
