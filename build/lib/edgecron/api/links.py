"""OpenAPI links: the id a create answers names the item in every operation on that item, so a
client (or schemathesis' stateful phase) can chain POST → GET/PATCH/DELETE/… on what it made."""

from __future__ import annotations

from typing import Any

#: create operation (path, success status) → (where its id is in the answer, item paths it names)
CREATES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "/v1/apps": ("201", "$response.body#/app/id", ("/v1/apps/{app_id}",)),
    "/v1/endpoints": ("201", "$response.body#/id", ("/v1/endpoints/{endpoint_id}",)),
    "/v1/retry-policies": ("201", "$response.body#/id", ("/v1/retry-policies/{policy_id}",)),
    "/v1/schedules": ("201", "$response.body#/id", ("/v1/schedules/{schedule_id}",)),
    "/v1/task-runs": ("201", "$response.body#/id", ("/v1/task-runs/{run_id}", "/v1/dead-letters/{run_id}")),
    "/v1/events": ("202", "$response.body#/id", ("/v1/events/{event_id}",)),
}


def _name(operation_id: str) -> str:
    """A link's name: the operation's function name (Powertools appends the path and method)."""
    return operation_id.split("_v1_")[0]


def add_links(document: dict[str, Any]) -> None:
    """Give each create's success response a link to every operation under the items it names."""
    paths: dict[str, dict[str, Any]] = document.get("paths", {})
    for collection, (status, pointer, item_paths) in CREATES.items():
        response = paths.get(collection, {}).get("post", {}).get("responses", {}).get(status)
        if response is None:
            continue
        links: dict[str, Any] = {}
        for item in item_paths:
            parameter = item.rsplit("{", 1)[1].rstrip("}")
            for path, operations in paths.items():
                if path != item and not path.startswith(item + "/"):
                    continue
                for operation in operations.values():
                    links[_name(operation["operationId"])] = {
                        "operationId": operation["operationId"],
                        "parameters": {f"path.{parameter}": pointer},
                    }
        response["links"] = links
