"""Where the scan's check of recent runs stands, per App. Runs whose message is sent when they are
created have no `wake` entry; the scan reads each App's runs created since its mark (the queries of
the App's partitions of the Task Runs table) and gives any still unfinished the entry it would have
had. The mark moves only past runs handled (a run whose check failed stops it there, so the next
tick checks that run again), so a tick that stops early re-reads that batch
(every write is conditional).

The mark also carries the check's count: the direct runs it counts (an App without a quota's) are
added to the mark item with the mark's move, one write per batch, and wait there under the newest
month counted until a later month's run is checked (or a quota is set): then they go to that month's
counter with one ADD. Usage reads add what the mark holds for their month (data/usage.py).

The same item says how far the App's runs may reach (`created_until`): before a container puts a run
sent at creation, it makes sure the item covers the run's time, writing `now + COVER_MS` when less
than RENEW_MS of its last cover is left (about one write per App and container every nine minutes).
An App whose runs cannot reach past its mark is not queried at all, so an idle App costs the check
nothing but its share of the marks' batch read. An App without `created_until` (one created by an
earlier release that has not created a run since) is queried every tick, as before."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError, UpdateError

from edgecron import ids
from edgecron.config import Settings
from edgecron.data import fanout_pages, usage
from edgecron.data.conditional import condition_failed, error_code, update_if
from edgecron.data.models import RUNS_CHECKED_MONTH, AppModel, RunsCheckedModel
from edgecron.data.remembered import Remembered

PAGE = 100  # Apps per batch read of their marks
COVER_MS = 600_000  # how far ahead a cover reaches
RENEW_MS = 60_000  # a container writes a new cover when less than this is left of its last one
_COVERED: Remembered[int] = Remembered()  # App id → the cover this container wrote
SETTLE_SEC = 150  # a create reads the clock before its put lands: longer than the fan-out's timeout
LANDED_MS = 60_000  # a write made this long before the check reads the run has landed


def check_lag_ms(settings: Settings) -> int:
    """How old a run sent at its creation is when the scan checks it: as old as it is when the wake
    time it would have had (due + REDISPATCH_AFTER_SEC) enters the look-ahead window, but at least
    SETTLE_SEC (unless REDISPATCH_AFTER_SEC itself is shorter), so its put has landed."""
    redispatch = settings.redispatch_after_sec
    return min(redispatch, max(redispatch - settings.lookahead_sec, SETTLE_SEC)) * 1000


def checked_later(run_id: str, now_ms: int, settings: Settings) -> bool:
    """Whether the check of recent runs is still to read this run (its id sorts after where the
    check can be by now, with time for a write made now to land): a run without a `wake` entry that
    waits for a short retry needs none, since the check finds it then if its message is lost."""
    id_ms = ids.ms_of(run_id)
    return id_ms is not None and id_ms + check_lag_ms(settings) - LANDED_MS > now_ms


COUNTED_KINDS = ("direct", "schedule")  # the triggers the check counts


@dataclass(frozen=True)
class CheckMark:
    """An App's check state: the last run checked (None before its first check), how far its runs
    sent at creation may reach (None: unknown, so every tick checks it), and the triggers of
    `counted_month` the check counted and holds here, by kind (not yet in that month's counters)."""

    checked_key: str | None
    created_until: int | None
    counted_month: str | None = None
    counted: Mapping[str, int] = field(default_factory=dict)

    def held(self, kind: str) -> int:
        return int(self.counted.get(kind, 0))


def _held_attribute(kind: str) -> Any:
    """Where the mark holds the counted triggers of a kind."""
    return {"direct": RunsCheckedModel.counted, "schedule": RunsCheckedModel.counted_fires}[kind]


def _mark_of(item: RunsCheckedModel) -> CheckMark:
    return CheckMark(
        checked_key=None if item.checked_key is None else str(item.checked_key),
        created_until=None if item.created_until is None else int(item.created_until),
        counted_month=item.counted_month,
        counted={"direct": int(item.counted or 0), "schedule": int(item.counted_fires or 0)},
    )


def cover(app_id: str, now_ms: int) -> None:
    """Before a run of the App sent at creation is put (its id time at most `now_ms`): the App's
    `created_until` reaches at least `now_ms`. A failed write raises, so the run is not put."""
    if (_COVERED.get(app_id, now_ms) or 0) - RENEW_MS >= now_ms:
        return
    until = now_ms + COVER_MS
    M = RunsCheckedModel
    try:
        M(app_id=app_id, month=RUNS_CHECKED_MONTH).update(
            actions=[M.created_until.set(until)],
            condition=M.created_until.does_not_exist() | (M.created_until < until),
        )
    except UpdateError as exc:
        if not condition_failed(exc):
            raise
        # another container covered further: its cover holds this run too
    _COVERED.put(app_id, until, now_ms)


def cover_none(app_id: str) -> None:
    """A new App has no runs yet: a cover of 0 lets the check skip it until it creates one."""
    RunsCheckedModel(app_id=app_id, month=RUNS_CHECKED_MONTH, created_until=0).save(
        condition=RunsCheckedModel.app_id.does_not_exist()
    )


def app_pages() -> Iterator[list[tuple[str, int]]]:
    """(app_id, created_at) of every App, 100 at a time (the scan reads the two attributes only)."""
    page: list[tuple[str, int]] = []
    for app in AppModel.scan(attributes_to_get=["app_id", "created_at"]):
        page.append((app.app_id, int(app.created_at)))
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def marks(app_ids: list[str]) -> dict[str, CheckMark]:
    """The marks of these Apps (at most 100), one consistent batch read; an App without one is left out."""
    keys = [(app_id, RUNS_CHECKED_MONTH) for app_id in app_ids]
    return {item.app_id: _mark_of(item) for item in RunsCheckedModel.batch_get(keys, consistent_read=True)}


def mark(app_id: str, *, consistent: bool = False) -> CheckMark | None:
    """One App's check state (None: the App has no mark item yet)."""
    try:
        return _mark_of(RunsCheckedModel.get(app_id, RUNS_CHECKED_MONTH, consistent_read=consistent))
    except DoesNotExist:
        return None


def mark_checked(
    app_id: str, key: str, counts: Mapping[tuple[str, str], int], seen: CheckMark | None
) -> CheckMark | None:
    """Move the App's mark from where `seen` (the mark as this check last read or wrote it) has it to
    `key`, past a batch the check has handled, and count the batch's triggers it counts (`counts`:
    by the month of the run's creation and kind, COUNTED_KINDS) in the same conditional write, so
    each is counted exactly once: with the one move of the mark past its run. The triggers of the
    month the mark holds (or of the first month) wait on the mark (one UpdateItem); a batch of a
    later month moves what the mark holds to that month's counters, and triggers of an older month
    go to their counters, in one transaction with the move. None: the mark is no longer where
    `seen` has it (another tick read the same runs and moved it first, or a quota moved its count):
    nothing was counted, and this check leaves the App to the mark's new position. A check that
    dies before this write neither moved its mark nor counted: the next tick reads the batch again."""
    M = RunsCheckedModel
    item = M(app_id=app_id, month=RUNS_CHECKED_MONTH)
    at = seen.checked_key if seen is not None else None
    condition: Any = M.checked_key.does_not_exist() if at is None else (M.checked_key == at)
    actions: list[Any] = [M.checked_key.set(key)]
    to_counters: dict[tuple[str, str], int] = {}
    counts = {month_kind: n for month_kind, n in counts.items() if n}
    if counts:
        newest = max(month for month, _ in counts)
        held_month = seen.counted_month if seen is not None else None
        if held_month is None or held_month == newest:
            actions.append(M.counted_month.set(newest))
            actions += [
                _held_attribute(k).add(counts[newest, k]) for k in COUNTED_KINDS if (newest, k) in counts
            ]
            condition &= M.counted_month.does_not_exist() | (M.counted_month == newest)
        elif held_month < newest:  # a later month: what the mark holds goes to its month's counters
            actions.append(M.counted_month.set(newest))
            condition &= M.counted_month == held_month
            for kind in COUNTED_KINDS:
                held = seen.held(kind) if seen is not None else 0
                if held:
                    to_counters[held_month, kind] = held
                attribute = _held_attribute(kind)
                actions.append(attribute.set(counts.get((newest, kind), 0)))
                condition &= (attribute == held) if held else (attribute.does_not_exist() | (attribute == 0))
        else:  # triggers older than the month the mark holds: their counters
            to_counters.update({mk: n for mk, n in counts.items() if mk[0] == newest})
        for (month, kind), n in counts.items():
            if month != newest:
                to_counters[month, kind] = to_counters.get((month, kind), 0) + n
    if not to_counters:
        return _mark_of(item) if update_if(item, actions, condition) else None
    try:
        with fanout_pages.transaction() as tx:
            tx.update(item, actions=actions, condition=condition)
            for month, kind_counts in _by_month(to_counters).items():
                tx.update(*usage.counted_kinds(app_id, month, kind_counts))
    except TransactWriteError as exc:
        reasons = [fanout_pages.reason_code(reason) for reason in exc.cancellation_reasons or []]
        if (
            error_code(exc) == "TransactionCanceledException"
            and reasons
            and reasons[0] == "ConditionalCheckFailed"
        ):
            return None
        raise
    return mark(app_id, consistent=True)


def _by_month(counts: Mapping[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    """{(month, kind): n} as {month: {kind: n}}: one counter update per month."""
    months: dict[str, dict[str, int]] = {}
    for (month, kind), n in sorted(counts.items()):
        months.setdefault(month, {})[kind] = n
    return months


def move_counted(app_id: str) -> None:
    """Move the triggers the App's mark holds to their month's counters (before a quota starts
    reading the counters: the quota check reads them alone): the counters' ADDs and the mark's
    decrements in one transaction, so each trigger is in exactly one of the two. A check that
    changed the mark meanwhile makes the move read it again."""
    M = RunsCheckedModel
    for _ in range(3):
        held = mark(app_id, consistent=True)
        if held is None or held.counted_month is None:
            return
        kinds = {kind: held.held(kind) for kind in COUNTED_KINDS if held.held(kind) > 0}
        if not kinds:
            return
        condition: Any = M.counted_month == held.counted_month
        for kind, n in kinds.items():
            condition &= _held_attribute(kind) >= n
        try:
            with fanout_pages.transaction() as tx:
                tx.update(
                    M(app_id=app_id, month=RUNS_CHECKED_MONTH),
                    actions=[_held_attribute(kind).add(-n) for kind, n in kinds.items()],
                    condition=condition,
                )
                tx.update(*usage.counted_kinds(app_id, held.counted_month, kinds))
            return
        except TransactWriteError as exc:
            reasons = [fanout_pages.reason_code(reason) for reason in exc.cancellation_reasons or []]
            if not (reasons and reasons[0] == "ConditionalCheckFailed"):
                raise
    raise RuntimeError(f"the check mark of {app_id} kept changing while its count was moved")


def held_for(app_id: str, month: str) -> dict[str, int]:
    """The triggers of `month` the App's mark holds (counted, not yet in the month's counters), by kind."""
    held = mark(app_id)
    if held is None or held.counted_month != month:
        return {}
    return {kind: held.held(kind) for kind in COUNTED_KINDS if held.held(kind)}


def set_checked_key(app_id: str, key: str) -> None:
    """Move the mark alone (the cover beside it is the creators') past runs the check counts none of,
    forward only: an overlapping tick never moves it back over runs already counted."""
    M = RunsCheckedModel
    update_if(
        M(app_id=app_id, month=RUNS_CHECKED_MONTH),
        [M.checked_key.set(key)],
        M.checked_key.does_not_exist() | (M.checked_key < key),
    )
