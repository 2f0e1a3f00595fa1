"""The DLQ consumer's use case: a message SQS gave up on makes its run a dead letter with the reason."""

from __future__ import annotations

from edgecron import clock
from edgecron.data import runs as run_data
from edgecron.domain import run_states as st
from edgecron.observability import DEAD_LETTERED, count, logger
from edgecron.services.delivery import after_run_finished, parse_message


def handle_poison(body: str, receive_count: int) -> str:
    """Returns what happened: dead_lettered | already_final | unknown_run | unparseable."""
    try:
        run_id, _ = parse_message(body)
    except ValueError:
        logger.error("unparseable message in the delivery DLQ", extra={"body_prefix": body[:200]})
        return "unparseable"
    run = run_data.get(run_id, consistent=True)
    if run is None:
        logger.warning("DLQ message for an unknown run", extra={"run_id": run_id})
        return "unknown_run"
    now_ms = clock.to_ms(clock.now())
    reason = f"poison message: delivery failed {receive_count} times without an answer from the worker"
    if run_data.poison(run, now_ms, reason):
        count(DEAD_LETTERED)
        after_run_finished(run, st.DEAD_LETTER, now_ms)
        return "dead_lettered"
    return "already_final"
