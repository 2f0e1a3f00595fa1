"""The idle floor's model follows template.yaml, and the one KMS key stays closed to the alerts path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bench import prices
from edgecron_cli.local.template import CfnLoader, load_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


def _raw() -> dict[str, Any]:
    document = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=CfnLoader)
    assert isinstance(document, dict)
    return document


def test_every_sqs_event_source_of_every_function_is_priced() -> None:
    raw_sources = sum(
        1
        for resource in _raw()["Resources"].values()
        if resource.get("Type") == "AWS::Serverless::Function"
        for event in (resource.get("Properties", {}).get("Events") or {}).values()
        if event.get("Type") == "SQS"
    )
    assert raw_sources >= 4  # the worker's, the fan-out's and both dead-letter consumers'
    assert prices.template_counts()["sqs_event_sources"] == raw_sources


def test_the_dashboard_is_priced_only_when_the_stack_creates_it() -> None:
    assert prices.template_counts(True)["dashboards"] == 1
    assert prices.template_counts(False)["dashboards"] == 0
    assert "Dashboard" not in load_template(TEMPLATE, {"DashboardEnabled": "false"}).resources
    assert prices.template_counts()["dashboards"] == 1  # on unless the operator turns it off


def test_an_alarm_is_priced_by_the_metrics_it_reads() -> None:
    assert prices._alarm_metrics({"MetricName": "Errors", "Namespace": "AWS/Lambda"}) == 1
    math = {
        "Metrics": [
            {"Id": "a", "MetricStat": {"Metric": {"MetricName": "Errors"}}},
            {"Id": "b", "MetricStat": {"Metric": {"MetricName": "Throttles"}}},
            {"Id": "e", "Expression": "a + b", "ReturnData": True},
        ]
    }
    assert prices._alarm_metrics(math) == 2
    counts = prices.template_counts()
    assert counts["alarm_metrics"] >= counts["alarms"] > 0


def test_only_the_account_can_use_the_key_outside_the_alerts_topic() -> None:
    """The key that seals signing secrets also encrypts the alerts topic: every grant beyond the
    account's own administration is bound to SNS's encryption context of this stack's topic, so
    neither CloudWatch nor a principal going through SNS can open a signing secret with it."""
    resources = _raw()["Resources"]
    keys = {k: r for k, r in resources.items() if r.get("Type") == "AWS::KMS::Key"}
    assert list(keys) == ["SecretsKey"]
    assert resources["AlertsTopic"]["Properties"]["KmsMasterKeyId"] == {"Ref": "SecretsKey"}
    statements = keys["SecretsKey"]["Properties"]["KeyPolicy"]["Statement"]
    for statement in statements:
        principal = statement["Principal"]
        if principal.get("AWS") == {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}:
            continue
        condition = statement.get("Condition", {})
        topic = condition.get("StringLike", {}).get("kms:EncryptionContext:aws:sns:topicArn")
        assert topic == {
            "Fn::Sub": "arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:${AWS::StackName}-AlertsTopic-*"
        }, statement["Sid"]
        assert set(statement["Action"]) <= {"kms:Decrypt", "kms:GenerateDataKey*"}, statement["Sid"]


def test_every_alarm_tells_the_alerts_topic_when_it_fires_and_when_it_clears() -> None:
    alarms = {
        logical_id: resource["Properties"]
        for logical_id, resource in _raw()["Resources"].items()
        if resource.get("Type") in {"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"}
    }
    assert alarms
    for logical_id, properties in alarms.items():
        assert properties.get("AlarmActions") == [{"Ref": "AlertsTopic"}], logical_id
        assert properties.get("OKActions") == [{"Ref": "AlertsTopic"}], logical_id
        assert properties.get("AlarmDescription"), logical_id
