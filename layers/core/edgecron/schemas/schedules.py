"""Schedules, their Fires (run history), notifications and usage."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints

from edgecron.domain.cron import check_steps, check_zone_name
from edgecron.domain.jitter import JITTER_MAX_SEC
from edgecron.domain.schedules import PAUSE_REASON_MAX
from edgecron.domain.vocabulary import FireStatus, MissedPolicy, OverlapPolicy, RunStatus, ScheduleStatus
from edgecron.schemas.common import FromText, Id, Model, Name, NotNull, Page, Rfc3339, Strict, unchanged

CronExpr = Annotated[
    str, StringConstraints(min_length=1, max_length=256, strip_whitespace=True), AfterValidator(check_steps)
]
Zone = Annotated[str, StringConstraints(min_length=1, max_length=64), AfterValidator(check_zone_name)]
JitterSec = Annotated[int, Field(ge=0, le=JITTER_MAX_SEC)]
CRON_DOC = (
    "5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; or an "
    "EventBridge Scheduler expression: cron(minutes hours day-of-month month day-of-week year), "
    "rate(N minutes|hours|days) or at(yyyy-mm-ddThh:mm:ss) in the schedule's timezone. "
    "Stored as given; cron_equivalent shows how an EventBridge expression runs"
)
#: The statuses a client may set: ENDED is EdgeCron's, when the end_at passes.
SettableStatus = Literal["ACTIVE", "PAUSED"]
STATUS_DOC = "ACTIVE or PAUSED (ENDED is set by EdgeCron when end_at passes)"
JITTER_DOC = "each fire is delivered at a deterministic offset in [0, jitter_sec) seconds after its time"
OVERLAP_DOC = "what a fire does while the previous Fire still has open runs: ALLOW, SKIP or BUFFER_ONE"


class ScheduleCreate(Strict):
    name: Name | None = None
    cron: CronExpr | None = Field(default=None, description=CRON_DOC)
    at: Rfc3339 | None = Field(default=None, description="one-time fire time (RFC 3339)")
    timezone: Zone = "UTC"
    endpoint_ids: list[Id] = Field(
        default_factory=list,
        max_length=100,
        description="empty = every active Endpoint of the App at fire time",
    )
    payload: Any = None
    missed_policy: Annotated[MissedPolicy, FromText] = MissedPolicy.RUN_ONCE
    retry_policy_id: Id | None = Field(default=None, description="overrides the Endpoints' retry policy")
    status: SettableStatus = Field(default="ACTIVE", description=STATUS_DOC)
    start_at: Rfc3339 | None = Field(default=None, description="no fire before this time (RFC 3339)")
    end_at: Rfc3339 | None = Field(default=None, description="no fire after this time (RFC 3339)")
    jitter_sec: JitterSec = Field(default=0, description=JITTER_DOC)
    overlap_policy: Annotated[OverlapPolicy, FromText] = Field(
        default=OverlapPolicy.ALLOW, description=OVERLAP_DOC
    )


class ScheduleUpdate(Strict):
    """Only the fields given change. A schedule has either `cron` or `at`: give one, with the other
    null, to switch. `timezone`, `endpoint_ids` and `missed_policy` cannot be null."""

    name: Name | None = Field(default=None, description="null clears the name")
    cron: CronExpr | None = Field(
        default=None, description=CRON_DOC + "; null with an `at` makes it one-time"
    )
    at: Rfc3339 | None = Field(
        default=None, description="one-time fire time; null with a `cron` makes it recurring"
    )
    timezone: Zone | NotNull = unchanged()
    endpoint_ids: Annotated[list[Id], Field(max_length=100)] | NotNull = unchanged(
        "replaces the bound Endpoints; [] = every active Endpoint of the App at fire time"
    )
    payload: Any = Field(default=None, description="any JSON value (null included) replaces the payload")
    missed_policy: Annotated[MissedPolicy, FromText] | NotNull = unchanged()
    retry_policy_id: Id | None = Field(default=None, description="null: the Endpoints' own retry policies")
    status: SettableStatus | None = Field(default=None, description=STATUS_DOC + "; null leaves it as it is")
    start_at: Rfc3339 | None = Field(default=None, description="null removes the start")
    end_at: Rfc3339 | None = Field(default=None, description="null removes the end")
    jitter_sec: JitterSec | None = Field(default=None, description=JITTER_DOC + "; null = 0 (no jitter)")
    overlap_policy: Annotated[OverlapPolicy, FromText] | None = Field(
        default=None, description=OVERLAP_DOC + "; null = ALLOW"
    )


class PauseRequest(Strict):
    reason: Annotated[str, StringConstraints(max_length=PAUSE_REASON_MAX)] | None = Field(
        default=None, description="why the schedule is paused (shown as pause_reason until resumed)"
    )


class ScheduleOut(Model):
    id: str
    name: str | None
    cron: str | None
    cron_equivalent: str | None = Field(
        description=(
            "for an EventBridge Scheduler expression, the cron it runs as (and the years it is "
            "limited to), e.g. '0 9 * * MON-FRI' for cron(0 9 ? * MON-FRI *); null otherwise"
        ),
    )
    at: str | None
    timezone: str
    endpoint_ids: list[str]
    payload: Any = None
    missed_policy: MissedPolicy
    retry_policy_id: str | None
    status: ScheduleStatus
    pause_reason: str | None = Field(description="why it is paused; null when it is not")
    consecutive_failures: int
    next_fire_time: str | None
    last_fire_time: str | None
    start_at: str | None
    end_at: str | None
    jitter_sec: int = Field(description=JITTER_DOC)
    overlap_policy: OverlapPolicy = Field(description=OVERLAP_DOC)
    finished: bool
    missed_left_out: int
    created_at: str
    updated_at: str
    preview: list[str] | None = Field(
        default=None,
        exclude_if=lambda preview: preview is None,
        description="the next fire times, when asked for with ?preview=N",
    )


class SchedulePage(Page[ScheduleOut]):
    pass


class FireRunOut(Model):
    id: str
    endpoint_id: str
    status: RunStatus
    attempt_count: int
    last_status_code: int | None
    last_error: str | None


class FireOut(Model):
    fire_time: str
    manual: bool = Field(description="triggered by hand (POST .../trigger), not at a cron time")
    due_at: str = Field(description="when its runs are due: fire_time plus the jitter offset")
    status: FireStatus
    started_at: str | None
    finished_at: str | None
    duration_ms: int | None
    error: str | None
    runs: list[FireRunOut]


class FireList(Page[FireOut]):
    pass


class NotificationOut(Model):
    id: str
    kind: str
    title: str
    message: str
    data: Any = None
    created_at: str


class NotificationPage(Page[NotificationOut]):
    pass


class UsageOut(Model):
    month: str
    schedule: int
    event: int
    direct: int
    total: int
    monthly_quota: int | None
