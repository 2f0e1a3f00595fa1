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
        "`Authorization: Bearer <key>` (an App key; the admin key for `/v1/apps`). Errors are",
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
    lines += ["", "Schemas: see the `components.schemas` section of `/openapi.json`.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    (ROOT / "docs" / "api.md").write_text(render())
    print("wrote docs/api.md")
