"""A schedule's fires, from the due walk to the final status: the one package that moves a Fire.

- due_walk: the scan's walk of due schedules, in fire-time order; catch-up of a schedule that lagged
  past its fire times (its missed-fire policy); the fires a schedule about to be paused owes; Fires a
  crash left half dispatched; schedule runs whose messages were lost.
- dispatch: a schedule's Fires up to a horizon and their Task Runs (or a broadcast Fire's first
  fan-out page); a manual trigger.
- admission: at its due time, a Fire under an overlap policy starts, waits (BUFFERED) or is SKIPPED.
- turns: the Fire holding a schedule's turn hands it to the buffered one when it settles.
- settle: the only writer of a Fire's final status; always runs the after-settle step (failure
  count, auto-pause, the turn, notifications); cancels the open Fires of a paused or edited schedule.

Every late-fire and catch-up decision is a pure planner in `edgecron.domain.catchup`; these modules
apply them."""
