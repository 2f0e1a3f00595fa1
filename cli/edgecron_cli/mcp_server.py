"""`edgecron mcp`: an MCP server (Model Context Protocol, the `mcp` package) through which an AI agent
does what the CLI does with schedules and runs, with the one App key it is given: it can create,
inspect, pause and resume schedules (with their retry and missed policies), list fires and runs, send a
run and replay dead letters. Every tool goes through the typed client, so it sees exactly that App and
nothing else; an API error becomes a tool error whose text is the API's code and message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from edgecron_client import ApiError, EdgeCron, TransportError

INSTRUCTIONS = (
    "EdgeCron schedules and delivers webhooks for one App. Endpoints are where deliveries go; a schedule "
    "(cron or one-time `at`) fires runs to its endpoint_ids (an empty list means every active Endpoint of "
    "the App, those added later included); a run is one delivery with its attempts; a run whose attempts "
    "are exhausted is a dead letter that can be replayed. Times are ISO 8601 in UTC."
)
MAX_PAGE = 100


def _call[T](action: Callable[[], T]) -> T:
    try:
        return action()
    except ApiError as exc:
        raise ToolError(str(exc)) from exc
    except TransportError as exc:
        raise ToolError(str(exc)) from exc


def _page(page: Any) -> dict[str, Any]:
    return {"data": list(page["data"]), "next_cursor": page.get("next_cursor")}


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def build_server(client: EdgeCron) -> MCPServer:
    """The MCP server for the App whose key `client` holds."""
    server: MCPServer = MCPServer(name="edgecron", instructions=INSTRUCTIONS)

    @server.tool()
    def list_endpoints(limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """The App's Endpoints (id, url, active, health), one page; pass next_cursor for the next."""
        return _page(_call(lambda: client.endpoints.list(limit=min(limit, MAX_PAGE), cursor=cursor)))

    @server.tool()
    def create_retry_policy(
        max_attempts: int,
        base_delay_sec: int,
        strategy: Literal["fixed", "linear", "exponential"] = "fixed",
        max_delay_sec: int | None = None,
        jitter: bool | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """A Retry Policy: max_attempts counts the first try; delays in seconds. Use its id as a
        schedule's retry_policy_id."""
        body = _drop_none(
            {
                "strategy": strategy,
                "max_attempts": max_attempts,
                "base_delay_sec": base_delay_sec,
                "max_delay_sec": max_delay_sec,
                "jitter": jitter,
                "name": name,
            }
        )
        return dict(_call(lambda: client.retry_policies.create(body)))

    @server.tool()
    def create_schedule(
        endpoint_ids: list[str],
        cron: str | None = None,
        at: str | None = None,
        timezone: str = "UTC",
        payload: Any = None,
        missed_policy: Literal["RUN_ONCE", "SKIP"] | None = None,
        retry_policy_id: str | None = None,
        name: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """A schedule: `cron` (5 fields, or 6 with seconds first) or a one-time `at` (ISO 8601), in an
        IANA `timezone`. endpoint_ids lists the Endpoints it delivers to (empty: every active Endpoint
        of the App). missed_policy: after downtime RUN_ONCE runs the latest missed fire, SKIP none.
        retry_policy_id overrides the Endpoints' retry policies. The same idempotency_key on a retry
        answers the schedule first created."""
        body = _drop_none(
            {
                "cron": cron,
                "at": at,
                "timezone": timezone,
                "endpoint_ids": endpoint_ids,
                "payload": payload,
                "missed_policy": missed_policy,
                "retry_policy_id": retry_policy_id,
                "name": name,
            }
        )
        return dict(_call(lambda: client.schedules.create(body, idempotency_key=idempotency_key)))

    @server.tool()
    def get_schedule(schedule_id: str, preview: int = 5) -> dict[str, Any]:
        """A schedule: status, next and last fire time, consecutive failures, and its next `preview`
        fire times."""
        return dict(_call(lambda: client.schedules.get(schedule_id, preview=preview)))

    @server.tool()
    def list_schedules(limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """The App's schedules, one page; pass next_cursor for the next."""
        return _page(_call(lambda: client.schedules.list(limit=min(limit, MAX_PAGE), cursor=cursor)))

    @server.tool()
    def pause_schedule(schedule_id: str, reason: str | None = None) -> dict[str, Any]:
        """Pause: no fire after this moment is delivered, and pending retries are dropped."""
        return dict(_call(lambda: client.schedules.pause(schedule_id, reason=reason)))

    @server.tool()
    def resume_schedule(schedule_id: str) -> dict[str, Any]:
        """Resume a paused schedule (its failure count starts again from zero)."""
        return dict(_call(lambda: client.schedules.resume(schedule_id)))

    @server.tool()
    def list_fires(schedule_id: str, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        """A schedule's recent fires, newest first, each with its runs and their status."""
        return _page(
            _call(lambda: client.schedules.fires.list(schedule_id, limit=min(limit, 50), cursor=cursor))
        )

    @server.tool()
    def send_run(
        endpoint_id: str,
        payload: Any = None,
        delay_sec: int | None = None,
        deliver_at: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Deliver `payload` to one Endpoint now, after delay_sec, or at deliver_at (ISO 8601). The same
        idempotency_key on a retry answers the run first created."""
        body = _drop_none(
            {"endpoint_id": endpoint_id, "payload": payload, "delay_sec": delay_sec, "deliver_at": deliver_at}
        )
        return dict(_call(lambda: client.task_runs.create(body, idempotency_key=idempotency_key)))

    @server.tool()
    def list_runs(
        status: str | None = None,
        endpoint_id: str | None = None,
        source: Literal["schedule", "event", "direct"] | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Runs, newest first, filtered by status (pending, running, success, failed, retry_scheduled,
        dead_letter, cancelled), endpoint and source; one page."""
        return _page(
            _call(
                lambda: client.task_runs.list(
                    limit=min(limit, MAX_PAGE),
                    cursor=cursor,
                    status=status,
                    endpoint_id=endpoint_id,
                    source=source,
                )
            )
        )

    @server.tool()
    def get_run(run_id: str) -> dict[str, Any]:
        """A run and its delivery attempts (status code, latency, error, response summary)."""
        run = dict(_call(lambda: client.task_runs.get(run_id)))
        run["attempts"] = _call(lambda: list(client.task_runs.attempts.iter(run_id)))
        return run

    @server.tool()
    def list_dead_letters(
        endpoint_id: str | None = None, since: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> dict[str, Any]:
        """Runs whose attempts are exhausted, newest first; one page."""
        return _page(
            _call(
                lambda: client.dead_letters.list(
                    limit=min(limit, MAX_PAGE), cursor=cursor, endpoint_id=endpoint_id, since=since
                )
            )
        )

    @server.tool()
    def replay_dead_letter(run_id: str) -> dict[str, Any]:
        """Deliver one dead letter again (a new series of attempts)."""
        return dict(_call(lambda: client.dead_letters.replay(run_id)))

    @server.tool()
    def replay_dead_letters(
        endpoint_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        error_kind: str | None = None,
        limit: int = 100,
    ) -> dict[str, Any]:
        """Replay the dead letters that match, up to `limit`; call again while has_more is true."""
        filters = {
            "endpoint_id": endpoint_id,
            "since": since,
            "until": until,
            "error_kind": error_kind,
            "limit": limit,
        }
        return dict(_call(lambda: client.dead_letters.replay_bulk(filters)))

    return server
