"""A Fire: one fire time of a Schedule, and the Task Runs it created (listed on the Fire for a
schedule bound to listed Endpoints; in fan-out pages for a broadcast one, `paged`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import FireStatus, RunStatus

OPEN = frozenset({FireStatus.SCHEDULED, FireStatus.RUNNING, FireStatus.BUFFERED})


@dataclass(frozen=True)
class Fire:
    schedule_id: str
    fire_at: int
    app_id: str
    status: FireStatus
    created_at: int
    endpoint_ids: tuple[str, ...] = ()
    run_ids: tuple[str, ...] = ()
    paged: bool = False
    run_count: int | None = None  # runs created so far (all of them once started_at is set)
    page_count: int | None = None  # fan-out pages recorded so far (a broadcast Fire)
    settled_runs: int | None = None  # a broadcast Fire's runs counted final (once each)
    progress_at: int | None = None  # when its last fan-out page was recorded
    started_at: int | None = None  # dispatched: its runs sent (a broadcast Fire: its last page recorded)
    finished_at: int | None = None
    error: str | None = None
    manual: bool = False  # triggered by hand: its fire time is the trigger's, not a cron time
    due_at: int | None = None  # when its runs are due (fire_at plus the jitter offset); None: fire_at
    overlap: str | None = None  # the overlap policy it was created under (None: ALLOW)
    admitted_at: int | None = None  # when its overlap policy let it start
    listed_open: bool = False  # findable among the open Fires however old it gets (until it settles)
    # billed by the write that creates its deliveries (services/usage.py); False: an earlier release
    # billed it when it wrote the Fire
    billed_with_runs: bool = False

    @property
    def is_open(self) -> bool:
        return self.status in OPEN

    @property
    def due_ms(self) -> int:
        """When its runs are due: the fire time plus the jitter offset, and for a Fire its overlap
        policy admitted after that (a buffered one), the admission."""
        due = self.fire_at if self.due_at is None else self.due_at
        return due if self.admitted_at is None else max(due, self.admitted_at)

    @property
    def waits_for_admission(self) -> bool:
        """An open Fire under an overlap policy that has not been let start yet (due later, or buffered)."""
        return self.overlap is not None and self.admitted_at is None and self.is_open

    @property
    def settled_by_its_run(self) -> bool:
        """One run at a listed Endpoint and no overlap policy: its status is its run's, so the run's
        worker settles it without reading it first."""
        return not self.paged and self.overlap is None and len(self.run_ids) == 1

    def as_run_left_it(self, run: TaskRun | None) -> Fire:
        """The Fire as its only run left it. A Fire its run settles keeps its dispatched item when
        that run completes at its first attempt (nothing else changes, so nothing is written): its
        status and its end are the run's."""
        if not (self.is_open and self.settled_by_its_run and run is not None):
            return self
        if run.run_id != self.run_ids[0] or run.status != RunStatus.SUCCESS:
            return self
        return replace(self, status=FireStatus.COMPLETED, finished_at=run.finished_at or run.updated_at)

    @property
    def all_counted(self) -> bool:
        """A broadcast Fire fully fanned out whose runs were each counted final."""
        return self.started_at is not None and (self.settled_runs or 0) >= (self.run_count or 0)

    def shown_status(self, now_ms: int) -> FireStatus:
        """The status a reader sees: a SCHEDULED Fire already dispatched and due is RUNNING."""
        if self.status == FireStatus.SCHEDULED and self.started_at is not None and now_ms >= self.due_ms:
            return FireStatus.RUNNING
        return self.status

    def began_at(self, attempted: bool) -> int | None:
        """When its delivery began, as a reader is told: its due time once its runs were dispatched
        (a Fire dispatched ahead begins at its time, not at its dispatch), or its dispatch if that
        came later; None for one never dispatched, or ended before any request was made
        (`attempted`: whether a run of it made one), as a Fire cancelled while it waited."""
        if self.started_at is None:
            return None
        if self.status in (FireStatus.CANCELLED, FireStatus.MISSED, FireStatus.SKIPPED) and not attempted:
            return None
        return max(self.started_at, self.due_ms)

    def duration_ms(self, attempted: bool) -> int | None:
        """From its beginning (began_at) to its end; None while it has not both."""
        began = self.began_at(attempted)
        if self.finished_at is None or began is None:
            return None
        return max(0, self.finished_at - began)
