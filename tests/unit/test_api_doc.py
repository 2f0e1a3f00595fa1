"""docs/api.md is the OpenAPI document rendered (regenerate it when a route changes); the document links
each create to the operations on what it made."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_api_reference_is_up_to_date() -> None:
    render = runpy.run_path(str(ROOT / "scripts" / "gen_api_doc.py"))["render"]
    assert (ROOT / "docs" / "api.md").read_text() == render(), "run: python scripts/gen_api_doc.py"


def _document() -> dict[str, Any]:
    sys.path[:0] = [str(ROOT / "layers" / "core")]
    from edgecron.api.resolver import build_api, openapi_json

    return dict(json.loads(openapi_json(build_api())))


def test_each_create_links_to_every_operation_on_what_it_made() -> None:
    document = _document()
    by_id = {op["operationId"]: (path, op) for path, ops in document["paths"].items() for op in ops.values()}
    expected = {
        ("/v1/apps", "201"): "/v1/apps/{app_id}",
        ("/v1/endpoints", "201"): "/v1/endpoints/{endpoint_id}",
        ("/v1/retry-policies", "201"): "/v1/retry-policies/{policy_id}",
        ("/v1/schedules", "201"): "/v1/schedules/{schedule_id}",
        ("/v1/task-runs", "201"): "/v1/task-runs/{run_id}",
        ("/v1/events", "202"): "/v1/events/{event_id}",
    }
    for (collection, status), item in expected.items():
        links = document["paths"][collection]["post"]["responses"][status]["links"]
        targets = {by_id[link["operationId"]][0] for link in links.values()}
        under_item = {path for path in document["paths"] if path == item or path.startswith(item + "/")}
        assert under_item <= targets, collection
        for link in links.values():
            path, operation = by_id[link["operationId"]]
            (name, value), *rest = link["parameters"].items()
            assert not rest
            location, _, parameter = name.partition(".")
            assert location == "path"
            assert {"in": "path", "name": parameter} in [
                {"in": p["in"], "name": p["name"]} for p in operation.get("parameters", [])
            ], (collection, path)
            assert value.startswith("$response.body#/")


def test_schemathesis_builds_its_stateful_phase_from_the_document() -> None:
    import schemathesis

    schema = schemathesis.openapi.from_dict(_document())
    assert schema.as_state_machine() is not None


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_every_reference_in_the_document_resolves() -> None:
    """Code generators (openapi-typescript for the TypeScript SDK) refuse a document with a dangling $ref."""
    document = _document()
    schemas = document["components"]["schemas"]
    dangling = sorted(
        {ref for ref in _refs(document) if ref.removeprefix("#/components/schemas/") not in schemas}
    )
    assert dangling == []


def test_the_typescript_sdk_is_generated_from_the_current_document() -> None:
    write = runpy.run_path(str(ROOT / "scripts" / "gen_openapi.py"))["document"]
    committed = (ROOT / "clients" / "typescript" / "openapi.json").read_text(encoding="utf-8")
    assert committed == write(), "run: make sdk-types"
