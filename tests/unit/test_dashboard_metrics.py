"""Every EdgeCron metric the dashboard plots or an alarm watches is emitted by the code."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from edgecron import observability
from edgecron_cli.local.template import load_template

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "core" / "edgecron"


def _metric_constants() -> dict[str, str]:
    """NAME → metric name for the constants of the observability module."""
    return {k: v for k, v in vars(observability).items() if k.isupper() and isinstance(v, str)}


def _emitted() -> set[str]:
    """Metric names passed (as observability constants) to count()/millis() anywhere in the core."""
    constants = _metric_constants()
    names: set[str] = set()
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) in {"count", "millis"}
                and node.args
            ):
                for sub in ast.walk(node.args[0]):
                    if isinstance(sub, ast.Name) and sub.id in constants:
                        names.add(constants[sub.id])
    return names


def _plotted() -> set[str]:
    template = load_template(ROOT / "template.yaml")
    resources = template.resources
    body = resources["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    text = body if isinstance(body, str) else body[0]
    dashboard = json.loads(re.sub(r"\$\{[^}]+\}", "x", text))
    names = set()
    for widget in dashboard["widgets"]:
        for metric in widget.get("properties", {}).get("metrics", []):
            if metric and metric[0] == "EdgeCron":
                names.add(metric[1])
    for resource in resources.values():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::CloudWatch::Alarm" and props.get("Namespace") == "EdgeCron":
            names.add(props["MetricName"])
    return names


def test_every_plotted_metric_is_emitted() -> None:
    plotted = _plotted()
    assert {"DeliverySucceeded", "FireLagMs", "ScanDurationMs", "BillableTriggers"} <= plotted
    missing = plotted - _emitted()
    assert not missing, f"the dashboard or alarms use metrics no code emits: {sorted(missing)}"
