"""PynamoDB models of the tables declared in template.yaml (docs/data-model.md)."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from edgecron.config import get_settings
from edgecron.domain.vocabulary import ScheduleStatus


class _FromSettings:
    """A Meta attribute read from the settings when PynamoDB opens the table's connection, not when the
    model class is defined: importing the models reads no environment. PynamoDB also probes `region`
    while it defines the class; before the settings are read that probe sees None."""

    def __init__(self, field: str, *, probed: bool = False) -> None:
        self.field = field
        self.probed = probed

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if self.probed and get_settings.cache_info().currsize == 0:
            return None
        return getattr(get_settings(), self.field)


def _table(field: str) -> Any:
    return _FromSettings(field)


_REGION: Any = _FromSettings("region", probed=True)


class AppModel(Model):
    class Meta:
        table_name = _table("apps_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute()
    monthly_quota = NumberAttribute(null=True)
    requests_per_sec = NumberAttribute(null=True)  # the App's request rate; None = the default
    created_at = NumberAttribute()
    operational_subscriptions = ListAttribute[str](of=UnicodeAttribute, null=True)  # type: ignore[arg-type]


class AppKeysIndex(GlobalSecondaryIndex["ApiKeyModel"]):
    """An App's keys, by creation time (what the operator lists)."""

    class Meta:
        index_name = "app_keys"
        projection = AllProjection()

    app_id = UnicodeAttribute(hash_key=True)
    created_at = NumberAttribute(range_key=True)


class ApiKeyModel(Model):
    """Keys are stored as SHA-256 hashes; the lookup by hash is one GetItem."""

    class Meta:
        table_name = _table("api_keys_table")
        region = _REGION

    key_hash = UnicodeAttribute(hash_key=True)
    app_id = UnicodeAttribute()
    prefix = UnicodeAttribute()
    created_at = NumberAttribute()
    name = UnicodeAttribute(null=True)
    last_used_at = NumberAttribute(null=True)
    expires_at = NumberAttribute(null=True)  # epoch s: a rotated key works until then (and TTL)
    replaced_by = UnicodeAttribute(null=True)  # the id of the key that replaced it
    app_keys = AppKeysIndex()


class SigningSecret(MapAttribute[str, Any]):
    secret = UnicodeAttribute()  # encrypted when a KMS key is configured (prefix "kms:")
    created_at = NumberAttribute()
    expires_at = NumberAttribute(null=True)  # set on the previous secret after a rotation


class EndpointModel(Model):
    class Meta:
        table_name = _table("endpoints_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    endpoint_id = UnicodeAttribute(range_key=True)
    url = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    method = UnicodeAttribute(default="POST")
    headers = JSONAttribute(default=dict)
    timeout_ms = NumberAttribute(default=10_000)
    secrets = ListAttribute(of=SigningSecret, default=list)
    retry_policy_id = UnicodeAttribute(null=True)
    filter_events = ListAttribute[str](of=UnicodeAttribute, default=list)  # type: ignore[arg-type]
    active = BooleanAttribute(default=True)
    version = NumberAttribute(null=True)  # moves on every save; None: written before versions
    created_at = NumberAttribute()
    updated_at = NumberAttribute()
    # None: written before Endpoints had health (the defaults apply)
    disable_after_failures = NumberAttribute(null=True)
    disable_after_sec = NumberAttribute(null=True)
    disabled_reason = UnicodeAttribute(null=True)
    # Health: written by atomic updates of the delivery path only, never by a user's save
    health_failures = NumberAttribute(null=True)
    health_failing_since = NumberAttribute(null=True)
    health_last_success_at = NumberAttribute(null=True)
    health_warned_at = NumberAttribute(null=True)  # the last ENDPOINT_FAILING warning
    # Flow control (None: unlimited); the shared state is a FlowControlModel item
    max_per_sec = NumberAttribute(null=True)
    max_in_flight = NumberAttribute(null=True)


class FlowControlModel(Model):
    """An Endpoint's shared flow-control state, in the Endpoints table under a partition of its own
    (FLOW_PARTITION + app_id), so reads of an App's Endpoints never meet it."""

    class Meta:
        table_name = _table("endpoints_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)  # FLOW_PARTITION + the App's id
    endpoint_id = UnicodeAttribute(range_key=True)
    tat = NumberAttribute(null=True)  # the rate's next free slot, microseconds since the epoch
    leases = MapAttribute[str, Any](null=True)  # run id -> lease expiry (ms): deliveries in flight


class RetryPolicyModel(Model):
    class Meta:
        table_name = _table("retry_policies_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    policy_id = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute(null=True)
    strategy = UnicodeAttribute()
    max_attempts = NumberAttribute()
    base_delay_sec = NumberAttribute()
    max_delay_sec = NumberAttribute()
    jitter = BooleanAttribute(default=False)
    version = NumberAttribute(null=True)  # moves on every save; None: written before versions
    created_at = NumberAttribute()
    updated_at = NumberAttribute()


class DueSlotIndex(GlobalSecondaryIndex["ScheduleModel"]):
    """Keys only, sorted by `due_slot` (domain/due_slots.py): a schedule that fires at one time of the
    day or of the hour, or many times a day, keeps its entry still while it fires; the scan reads the
    slots its window passes and fetches the schedules (data/schedules.py::due)."""

    class Meta:
        index_name = "due_slots"
        projection = KeysOnlyProjection()

    due_shard = UnicodeAttribute(hash_key=True)
    due_slot = NumberAttribute(range_key=True)


class ScheduleModel(Model):
    class Meta:
        table_name = _table("schedules_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    schedule_id = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute(null=True)
    cron = UnicodeAttribute(null=True)
    at = NumberAttribute(null=True)
    timezone = UnicodeAttribute(default="UTC")
    endpoint_ids = ListAttribute[str](of=UnicodeAttribute, default=list)  # type: ignore[arg-type]
    payload = JSONAttribute(null=True)
    status = UnicodeAttribute(default=ScheduleStatus.ACTIVE)
    missed_policy = UnicodeAttribute(default="RUN_ONCE")
    retry_policy_id = UnicodeAttribute(null=True)
    consecutive_failures = NumberAttribute(default=0)
    pause_reason = UnicodeAttribute(null=True)
    start_at = NumberAttribute(null=True)  # no fire before this time (ms)
    end_at = NumberAttribute(
        null=True
    )  # no fire after this time (ms); past it the schedule is ENDED  # why it was paused (by a user or by failures)
    jitter_sec = NumberAttribute(null=True)  # each fire is due at an offset in [0, jitter_sec)
    overlap_policy = UnicodeAttribute(null=True)  # null: ALLOW
    # the turn (SKIP, BUFFER_ONE): the Fire admitted last while open, and the one waiting for it
    turn_at = NumberAttribute(null=True, attr_name="overlap_running_at")  # the fire time holding the turn
    next_turn_at = NumberAttribute(null=True, attr_name="overlap_buffered_at")  # the Fire buffered behind it
    next_fire_at = NumberAttribute(null=True)
    due_shard = UnicodeAttribute(null=True)
    due_slot = NumberAttribute(null=True)
    finished = BooleanAttribute(default=False)
    missed_left_out = NumberAttribute(default=0)
    last_fire_at = NumberAttribute(null=True)
    timing_since = NumberAttribute(null=True)  # when its current timing took effect (a timing edit)
    paused_since = NumberAttribute(null=True)  # when its current pause began
    # its latest ended pauses, flat: began, resumed, began, resumed, ... (oldest first)
    pauses = ListAttribute[float](of=NumberAttribute, null=True)  # type: ignore[arg-type]
    version = NumberAttribute(default=1)
    created_at = NumberAttribute()
    updated_at = NumberAttribute()
    due_slots = DueSlotIndex()


class DueMarkModel(Model):
    """How far the scan's last tick got in the due walk, in the Schedules table under a partition
    no App has (so no list of an App's schedules meets it): the next tick reads the wheels' slots from
    there (data/schedules.py::due_mark)."""

    class Meta:
        table_name = _table("schedules_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    schedule_id = UnicodeAttribute(range_key=True)
    mark = NumberAttribute(null=True)  # up to when (ms) every wheel slot was met and dispatched
    backfilled_at = NumberAttribute(null=True)  # when every schedule had a due_slot
    backfill_from = JSONAttribute(null=True)  # the table key the backfill goes on from
    # when every pending Event stored without a fan-out wake time was given one (data/events.py),
    # and the Events table key that walk goes on from
    fanout_woken_at = NumberAttribute(null=True)
    fanout_wake_from = JSONAttribute(null=True)
    # while the walk does not advance schedules: when every schedule's next fire was stored, and the
    # table key the store goes on from
    timing_stored_at = NumberAttribute(null=True)
    timing_from = JSONAttribute(null=True)


class OpenFiresIndex(GlobalSecondaryIndex["FireModel"]):
    class Meta:
        index_name = "open_fire_keys"
        projection = KeysOnlyProjection()

    open_shard = UnicodeAttribute(hash_key=True)
    fire_at = NumberAttribute(range_key=True)


class FireModel(Model):
    class Meta:
        table_name = _table("fires_table")
        region = _REGION

    schedule_id = UnicodeAttribute(hash_key=True)
    fire_at = NumberAttribute(range_key=True)
    app_id = UnicodeAttribute()
    status = UnicodeAttribute()
    # a Fire bound to listed Endpoints (at most 100) keeps them and its runs here; a broadcast Fire
    # (every Endpoint of the App) keeps them in FanoutPagesTable, one item per page (`paged`)
    endpoint_ids = ListAttribute[str](of=UnicodeAttribute, default=list)  # type: ignore[arg-type]
    run_ids = ListAttribute[str](of=UnicodeAttribute, default=list)  # type: ignore[arg-type]
    paged = BooleanAttribute(default=False)
    run_count = NumberAttribute(null=True)  # runs created so far (all of them once started_at is set)
    page_count = NumberAttribute(null=True)  # fan-out pages recorded so far
    progress_at = NumberAttribute(null=True)  # when the last fan-out page was recorded
    settled_runs = NumberAttribute(null=True)  # a broadcast Fire's runs counted final (once each)
    open_shard = UnicodeAttribute(null=True)  # set until the Fire settles
    created_at = NumberAttribute()
    started_at = NumberAttribute(null=True)
    finished_at = NumberAttribute(null=True)
    error = UnicodeAttribute(null=True)
    manual = BooleanAttribute(null=True)  # triggered by hand, outside the cron times
    due_at = NumberAttribute(null=True)  # when its runs are due (fire_at + jitter); null: at fire_at
    overlap = UnicodeAttribute(null=True)  # the overlap policy it was created under (null: ALLOW)
    admitted_at = NumberAttribute(null=True)  # when the overlap policy let it start
    # billed by the write that creates its deliveries (null: billed when the Fire was written)
    billed_with_runs = BooleanAttribute(null=True)
    expires_at = NumberAttribute(null=True)
    open_fires = OpenFiresIndex()


class WakeIndex(GlobalSecondaryIndex["TaskRunModel"]):
    """Keys only: a claim or a result then never rewrites the entry (docs/data-model.md); readers
    fetch the items (data/runs.py::wake_due)."""

    class Meta:
        index_name = "wake"
        projection = KeysOnlyProjection()

    wake_shard = UnicodeAttribute(hash_key=True)
    wake_at = NumberAttribute(range_key=True)


class DeadLetterIndex(GlobalSecondaryIndex["TaskRunModel"]):
    class Meta:
        index_name = "dead_letters"
        projection = AllProjection()

    dl_app_id = UnicodeAttribute(hash_key=True)
    dead_key = UnicodeAttribute(range_key=True)


class AttemptRecord(MapAttribute[str, Any]):
    """A run's first Attempt, written into the run item by the same update that stores its result,
    so a delivery that succeeds at once writes no Attempt item (data/attempts.py)."""

    seq = NumberAttribute()
    attempt_no = NumberAttribute()
    series = NumberAttribute(default=1)
    request_id = UnicodeAttribute()
    status_code = NumberAttribute(null=True)
    latency_ms = NumberAttribute()
    response_summary = UnicodeAttribute(null=True)
    error = UnicodeAttribute(null=True)
    error_kind = UnicodeAttribute(null=True)
    error_detail = UnicodeAttribute(null=True)
    outcome = UnicodeAttribute()
    trace_id = UnicodeAttribute(null=True)
    started_at = NumberAttribute()


class TaskRunModel(Model):
    """Keyed by App partition (``<app_id>#<k>``, data/keys.py::run_partition), then by run id: run
    ids are time-ordered (ULID layout, edgecron.ids), so an App's runs are listed, newest first, by
    merging the queries of its partitions (data/runs.py::list_page)."""

    class Meta:
        table_name = _table("runs_table")
        region = _REGION

    app_part = UnicodeAttribute(hash_key=True)
    run_id = UnicodeAttribute(range_key=True)
    app_id = UnicodeAttribute()
    endpoint_id = UnicodeAttribute()
    source = UnicodeAttribute()  # direct | schedule | event
    source_id = UnicodeAttribute(null=True)  # schedule_id or event_id
    fire_at = NumberAttribute(null=True)
    payload = JSONAttribute(null=True)
    retry_policy_id = UnicodeAttribute(null=True)  # a schedule's override; else the endpoint's
    status = UnicodeAttribute()
    attempt_count = NumberAttribute(default=0)  # attempts in the current series
    total_attempts = NumberAttribute(default=0)  # across replays; the attempt sequence number
    series = NumberAttribute(default=1)
    deliver_at = NumberAttribute()
    next_retry_at = NumberAttribute(null=True)
    wake_shard = UnicodeAttribute(null=True)
    wake_at = NumberAttribute(null=True)
    enqueued_at = NumberAttribute(null=True)  # when the scan last sent the run's message
    claim_token = UnicodeAttribute(null=True)
    claim_expires_at = NumberAttribute(null=True)
    claimed_from = UnicodeAttribute(null=True)  # the status the last claim took the run from
    last_error = UnicodeAttribute(null=True)
    last_error_kind = UnicodeAttribute(null=True)
    last_status_code = NumberAttribute(null=True)
    created_at = NumberAttribute()
    updated_at = NumberAttribute()
    finished_at = NumberAttribute(null=True)
    created_key = UnicodeAttribute(null=True)  # only runs copied from the table of earlier releases
    dl_app_id = UnicodeAttribute(null=True)
    dead_key = UnicodeAttribute(null=True)
    expires_at = NumberAttribute(null=True)
    first_attempt = AttemptRecord(null=True)  # attempt seq 1 when it fits (data/attempts.py)
    uncounted = BooleanAttribute(null=True)  # a direct run its worker has yet to count (data/usage.py)
    counted_by_check = BooleanAttribute(null=True)  # the scan's check of recent runs counts it
    # the only run of a Fire bound to one Endpoint, without an overlap policy: its worker settles the
    # Fire from it without reading the Fire first (services/fires/settle.py)
    settles_fire = BooleanAttribute(null=True)
    # Flow control held it back (delivered late by design, never a missed fire), with the rate slot
    # it was granted (ms) while it waits for it
    flow_held = BooleanAttribute(null=True)
    flow_slot = NumberAttribute(null=True)
    wake = WakeIndex()
    dead_letters = DeadLetterIndex()


class AttemptModel(Model):
    class Meta:
        table_name = _table("attempts_table")
        region = _REGION

    run_id = UnicodeAttribute(hash_key=True)
    seq = NumberAttribute(range_key=True)
    app_id = UnicodeAttribute()
    attempt_no = NumberAttribute()
    series = NumberAttribute(default=1)
    request_id = UnicodeAttribute()
    status_code = NumberAttribute(null=True)
    latency_ms = NumberAttribute()
    response_summary = UnicodeAttribute(null=True)
    error = UnicodeAttribute(null=True)
    error_kind = UnicodeAttribute(null=True)
    error_detail = UnicodeAttribute(null=True)
    outcome = UnicodeAttribute()
    trace_id = UnicodeAttribute(null=True)
    started_at = NumberAttribute()
    expires_at = NumberAttribute(null=True)


class FanoutWakeIndex(GlobalSecondaryIndex["EventModel"]):
    """Events whose fan-out has not recorded its first page: the scan sends the fan-out message
    again for one still there after its `fanout_wake_at` (keys only; data/events.py)."""

    class Meta:
        index_name = "fanout_wake"
        projection = KeysOnlyProjection()

    fanout_shard = UnicodeAttribute(hash_key=True)
    fanout_wake_at = NumberAttribute(range_key=True)


class EventModel(Model):
    class Meta:
        table_name = _table("events_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    event_id = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute()
    payload = JSONAttribute(null=True)
    idempotency_key = UnicodeAttribute(null=True)
    fanout_status = UnicodeAttribute(default="pending")  # pending | running | done | failed
    fanout_error = UnicodeAttribute(null=True)  # why the fan-out stopped (status failed)
    # the matched Endpoints live in FanoutPagesTable (one item per page); only Events stored before
    # that layout list them here
    endpoint_ids = ListAttribute[str](of=UnicodeAttribute, null=True)  # type: ignore[arg-type]
    matched_count = NumberAttribute(null=True)
    page_count = NumberAttribute(null=True)  # fan-out pages recorded so far
    created_at = NumberAttribute()
    expires_at = NumberAttribute(null=True)
    # present until the fan-out records its first page (sparse index `fanout_wake`)
    fanout_shard = UnicodeAttribute(null=True)
    fanout_wake_at = NumberAttribute(null=True)
    fanout_wake = FanoutWakeIndex()


class FanoutPageModel(Model):
    """One page of a fan-out (an Event's, or a broadcast Fire's): the Endpoints it reached. Created
    once with a conditional write, so a page processed twice is recorded once."""

    class Meta:
        table_name = _table("fanout_pages_table")
        region = _REGION

    owner_id = UnicodeAttribute(hash_key=True)  # event_id, or schedule_id#fire_at
    page = NumberAttribute(range_key=True)  # 0, 1, 2 … in Endpoint id order
    app_id = UnicodeAttribute()
    after = UnicodeAttribute(null=True)  # the page covers the App's Endpoints after this id
    last_endpoint_id = UnicodeAttribute(null=True)  # where the next page starts
    endpoint_ids = ListAttribute[str](of=UnicodeAttribute, default=list)  # type: ignore[arg-type]
    more = BooleanAttribute(default=False)
    continued = BooleanAttribute(default=False)  # the next page's message was sent
    created_at = NumberAttribute()
    expires_at = NumberAttribute(null=True)


class UsageModel(Model):
    class Meta:
        table_name = _table("usage_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    month = UnicodeAttribute(range_key=True)
    schedule = NumberAttribute(default=0)
    event = NumberAttribute(default=0)
    direct = NumberAttribute(default=0)


RUNS_CHECKED_MONTH = "runs-checked"  # sort key of an App's check mark in UsageTable (never a month)


class RunsCheckedModel(Model):
    """How far the scan has checked an App's runs sent at creation (data/run_checks.py): one small
    item per App in UsageTable, under a sort key no month can take."""

    class Meta:
        table_name = _table("usage_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    month = UnicodeAttribute(range_key=True, default=RUNS_CHECKED_MONTH)
    checked_key = UnicodeAttribute(null=True)  # the id of the last run checked, or a time key
    # no run of the App sent at creation has an id time past this (data/run_checks.py::cover)
    created_until = NumberAttribute(null=True)
    # triggers of `counted_month` the check counted with its mark, not yet moved to that month's
    # counters (data/run_checks.py::mark_checked): direct runs, and schedule fires
    counted_month = UnicodeAttribute(null=True)
    counted = NumberAttribute(null=True)
    counted_fires = NumberAttribute(null=True)


class NotificationModel(Model):
    class Meta:
        table_name = _table("notifications_table")
        region = _REGION

    app_id = UnicodeAttribute(hash_key=True)
    notification_id = UnicodeAttribute(range_key=True)
    kind = UnicodeAttribute()
    title = UnicodeAttribute()
    message = UnicodeAttribute()
    data = JSONAttribute(null=True)
    created_at = NumberAttribute()
    expires_at = NumberAttribute(null=True)


class IdempotencyModel(Model):
    class Meta:
        table_name = _table("idempotency_table")
        region = _REGION

    idem_key = UnicodeAttribute(hash_key=True)
    request_hash = UnicodeAttribute()
    status = UnicodeAttribute()  # in_progress | done
    response_status = NumberAttribute(null=True)
    response_body = UnicodeAttribute(null=True)  # secrets removed (api/idempotency.py)
    created_at = NumberAttribute()
    lease_until = NumberAttribute(null=True)  # in progress: ms after which a retry takes it over
    expires_at = NumberAttribute()
    # an App's request-rate window ("rate#<app_id>#<second>"), not a key: requests granted so far
    # (data/rate_limits.py); such an item has no request_hash, status or created_at
    granted = NumberAttribute(null=True)
