"""The deploy catch-up runs on every deploy that changes a function: the custom resource lists every
function's published version, and a change of code or configuration publishes a new one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgecron_cli.local.iam import _translated
from edgecron_cli.local.template import FUNCTION, load_template

ROOT = Path(__file__).resolve().parents[2]


def catch_up_properties(path: Path) -> dict[str, Any]:
    translated = _translated(str(path), path.stat().st_mtime_ns, "{}")
    properties: dict[str, Any] = translated["Resources"]["DeployCompensation"]["Properties"]
    return properties


def test_every_function_publishes_versions_and_the_catch_up_lists_them() -> None:
    template = load_template(ROOT / "template.yaml")
    listed = template.resources["DeployCompensation"]["Properties"]["FunctionVersions"]
    functions = [i for i, r in template.resources.items() if r["Type"] == FUNCTION]
    assert sorted(ref["Ref"] for ref in listed) == sorted(f"{f}.Version" for f in functions)
    for logical_id in functions:
        properties = template.resources[logical_id]["Properties"]
        assert properties.get("AutoPublishAlias"), logical_id
        assert properties.get("AutoPublishAliasAllProperties"), logical_id


def test_a_change_of_code_or_configuration_changes_the_catch_up_resource(tmp_path: Path) -> None:
    original = (ROOT / "template.yaml").read_text()
    variants = {
        "same": original,
        "code": original.replace("CodeUri: functions/worker/", "CodeUri: s3://bucket/new-build", 1),
        "config": original.replace("Timeout: 120", "Timeout: 121", 1),
    }
    seen = {}
    for name, text in variants.items():
        path = tmp_path / name / "template.yaml"
        path.parent.mkdir()
        path.write_text(text)
        seen[name] = catch_up_properties(path)
    assert seen["code"] != seen["same"] and seen["config"] != seen["same"]
    # redeploying the same functions leaves it as it was (only DeployNonce forces a run then)
    assert seen["same"] == catch_up_properties(ROOT / "template.yaml")
