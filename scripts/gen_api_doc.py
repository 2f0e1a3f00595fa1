"""Write docs/api.md from the OpenAPI document the API serves (run after changing a route)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def render() -> str:
    sys.path[:0] = [str(ROOT / "layers" / "core")]
    from edgecron.api.resolver import build_api, openapi_json

    document = json.loads(openapi_json(build_api()))
    lines = [
        "# API reference",
        "",
        "Generated from the OpenAPI document (`python scripts/gen_api_doc.py`); the live document is served",
        "at `GET /openapi.json` and browsable at `GET /docs`. Every `/v1` route needs",
        "`Authorization: Bearer <key>` (an App key; the admin key for `/v1/apps`, and either for `/v1/account`). Errors are",
        '`{"error": {"code": "PARAM_INVALID", "message": "…", "field": "…"}}`; lists take `?limit=&cursor=` and',
        "answer `next_cursor`; creates accept an `Idempotency-Key` header (24 h).",
        "",
        "| method | path | what | success | errors |",
        "|---|---|---|---|---|",
    ]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            statuses = sorted(operation.get("responses", {}))
            ok = ", ".join(s for s in statuses if s.startswith("2"))
            errors = ", ".join(s for s in statuses if not s.startswith("2"))
            lines.append(
                f"| {method.upper()} | `{path}` | {operation.get('summary', '')} | {ok} | {errors} |"
            )
    lines += ["", *_limits(), "", "Schemas: see the `components.schemas` section of `/openapi.json`.", ""]
    return "\n".join(lines)


def _limits() -> list[str]:
    """The input limits, from the constants the API enforces."""
    from edgecron.domain.flow_control import MAX_IN_FLIGHT, MAX_PER_SEC, MIN_PER_SEC
    from edgecron.schemas.common import MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_PAYLOAD_BYTES
    from edgecron.schemas.endpoints import MAX_HEADER_BYTES, MAX_HEADER_NAME, MAX_HEADER_VALUE, MAX_HEADERS
    from edgecron.schemas.task_runs import MAX_RUN_DELAY_SEC

    return [
        "## Limits",
        "",
        f"- A request body is at most {MAX_BODY_BYTES // 1024} KiB (413 `PAYLOAD_TOO_LARGE`, field `body`) and",
        f"  nests at most {MAX_JSON_DEPTH} levels (400, the field is the top-level one, e.g. `payload`); a",
        f"  payload is at most {MAX_PAYLOAD_BYTES // 1024} KiB (413, field `payload`).",
        "- A body is a JSON object: a list, a string, a number, `true`/`false` or `null` is a 400",
        "  `PARAM_INVALID` with field `body` on every route, and nothing is stored or changed.",
        "- Bulk routes (`POST /v1/dead-letters/replay`, `POST /v1/endpoints/{endpoint_id}/recover`,",
        "  `GET /v1/stats/deliveries`) stop starting work after 5 s (a third of the time the API",
        "  function has left, if less), whatever is stored: the first two answer `has_more` and a",
        "  `next_cursor` to send back as `cursor`; the statistics answer `truncated: true`.",
        "- An App with a request rate of its own (`PUT /v1/apps/{app_id}/rate-limit`) gets 429",
        "  `RATE_LIMITED` with `Retry-After` (seconds) on any route beyond it; the HTTP API stage's",
        "  throttle answers 429 beyond its own limits (docs/operations.md#limits).",
        '- Types are strict: `true` is not the integer 1, and `"5"` or `5.0` is not the integer 5.',
        f"- Endpoint headers: at most {MAX_HEADERS} and {MAX_HEADER_BYTES} bytes together, names up to",
        f"  {MAX_HEADER_NAME} and values up to {MAX_HEADER_VALUE} characters. A name is an RFC 9110 token; a value",
        "  is visible ASCII with spaces or tabs only between characters (no leading or trailing whitespace,",
        "  control characters, NUL, CR, LF or non-ASCII). `webhook-id`, `webhook-timestamp`,",
        "  `webhook-signature`, `content-length`, `host` and `transfer-encoding` are set by EdgeCron. The",
        "  error names the header: field `headers.X-Team`.",
        f"- Endpoint flow control: `max_per_sec` a number from {MIN_PER_SEC:g} to {MAX_PER_SEC:g}, `max_in_flight`",
        f"  an integer from 1 to {MAX_IN_FLIGHT}; `null` (the default) is unlimited and a PATCH with `null`",
        "  removes the limit ([controls.md](controls.md#flow-control-per-endpoint)).",
        f"- A direct run is due at most {MAX_RUN_DELAY_SEC // 86_400} days ahead (`delay_sec` or `deliver_at`).",
        "- A schedule's `timezone` is a name of the IANA zone database or `UTC` (not `localtime`, `Factory`,",
        "  `posixrules` or the `posix/` and `right/` copies); a cron step is at most its field's range",
        "  (`*/60` seconds, `*/24` hours; `*/1000` is refused).",
        "- A schedule's `jitter_sec` is an integer from 0 to 3600 (each fire is due at a fixed offset in",
        "  `[0, jitter_sec)` after its `fire_time`, shown as the Fire's `due_at`); its `overlap_policy` is",
        "  `ALLOW`, `SKIP` or `BUFFER_ONE` (see docs/controls.md); a PATCH with `null` sets them back to",
        "  `0` and `ALLOW`.",
        "- A PATCH changes only the fields it gives. `null` is accepted where the OpenAPI document marks a",
        "  field nullable, with the meaning its description gives: it clears a `name` or `description`,",
        "  removes a limit (`max_per_sec`, `max_in_flight`), a window end (`start_at`, `end_at`) or a retry",
        "  policy override (`retry_policy_id`: the default policy), and leaves a schedule's `status` as it is;",
        "  `cron: null` with an `at` (or `at: null` with a `cron`) switches a schedule's form. Any other",
        "  field with `null` is a 400 `<field> cannot be null` (give `headers: {}` or `filter_events: []` to",
        "  empty them).",
        "- A schedule is created or set `ACTIVE` or `PAUSED`; `ENDED` is EdgeCron's, when `end_at` passes.",
        "- An event `name` matches `^(?!edgecron\\.)[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$`, at most 128",
        "  characters (`edgecron.*` names are EdgeCron's own operational events).",
        "- `Idempotency-Key` is 1 to 255 characters, not only spaces. A repeat within 24 h answers the",
        "  first response (`idempotent-replayed: true`)",
        "  without its `secret`, which is shown once; while the first request runs, 409",
        "  `IDEMPOTENCY_IN_PROGRESS`, until the API function's timeout has passed; the same key with",
        "  another body, 409 `IDEMPOTENCY_KEY_REUSED`.",
        "- A PATCH or rotation that keeps meeting concurrent changes of the same item answers 409",
        "  `CONCURRENT_UPDATE` (it is re-applied on top of each one first; see docs/security.md).",
        "- A Task Run stored in a form this release cannot read (a value a newer release wrote, before a",
        "  rollback) is left out of lists and answers 500 `STORED_ITEM_UNREADABLE`, naming it, where it",
        "  alone was asked for (see docs/operations.md, `StoredItemsUnreadableAlarm`).",
    ]


if __name__ == "__main__":
    (ROOT / "docs" / "api.md").write_text(render())
    print("wrote docs/api.md")
