"""Write the OpenAPI document the API serves at GET /openapi.json to a file (default: the TypeScript
SDK's copy, clients/typescript/openapi.json, from which its types are generated)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "clients" / "typescript" / "openapi.json"


def document() -> str:
    sys.path[:0] = [str(ROOT / "layers" / "core")]
    from edgecron.api.resolver import build_api, openapi_json

    return json.dumps(json.loads(openapi_json(build_api())), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(document(), encoding="utf-8")
    print(f"wrote {out}")
