"""Provisioning from template.yaml under moto: what the local stack and the integration tests stand on.

Each test provisions under its own name prefix, so it never touches the resources other integration
tests share (their conftest keeps one moto mock open for the whole session).
"""

from __future__ import annotations

import json
import string
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from edgecron_cli.local.provision import AwsClients, Provisioned, provision, provision_from_template
from edgecron_cli.local.template import Template, load_template

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


@pytest.fixture
def aws() -> Iterator[AwsClients]:
    with mock_aws():
        yield AwsClients.from_session(boto3.session.Session(region_name="us-east-1"))


@pytest.fixture
def prefix() -> str:
    return f"provtest-{uuid.uuid4().hex[:8]}-"


@pytest.fixture(scope="module")
def template() -> Template:
    return load_template(TEMPLATE)


@pytest.fixture
def provisioned(template: Template, aws: AwsClients, prefix: str) -> Provisioned:
    return provision(template, aws, name_prefix=prefix)


def _get_att_target(value: Any) -> str:
    assert isinstance(value, dict) and "Fn::GetAtt" in value, value
    return str(value["Fn::GetAtt"][0])


def _by_name(items: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {item[key]: item for item in items}


def test_every_table_exists_with_its_key_schema_and_indexes(
    template: Template, provisioned: Provisioned, aws: AwsClients
) -> None:
    assert template.tables, "the template declares no table"
    assert set(provisioned.tables) == set(template.tables)
    for logical_id, properties in template.tables.items():
        table = aws.dynamodb.describe_table(TableName=provisioned.tables[logical_id])["Table"]
        assert table["KeySchema"] == properties["KeySchema"], logical_id
        assert _by_name(table["AttributeDefinitions"], "AttributeName") == _by_name(
            properties["AttributeDefinitions"], "AttributeName"
        ), logical_id
        if "BillingMode" in properties:
            assert table["BillingModeSummary"]["BillingMode"] == properties["BillingMode"], logical_id
        expected = _by_name(properties.get("GlobalSecondaryIndexes", []), "IndexName")
        actual = _by_name(table.get("GlobalSecondaryIndexes", []), "IndexName")
        assert set(actual) == set(expected), logical_id
        for name, index in expected.items():
            assert actual[name]["KeySchema"] == index["KeySchema"], f"{logical_id}.{name}"
            assert actual[name]["Projection"] == index["Projection"], f"{logical_id}.{name}"


def test_ttl_is_enabled_where_the_template_asks(
    template: Template, provisioned: Provisioned, aws: AwsClients
) -> None:
    with_ttl = {
        logical_id: properties["TimeToLiveSpecification"]["AttributeName"]
        for logical_id, properties in template.tables.items()
        if (properties.get("TimeToLiveSpecification") or {}).get("Enabled")
    }
    assert with_ttl, "no table of the template has TTL; the history tables should"
    for logical_id in template.tables:
        ttl = aws.dynamodb.describe_time_to_live(TableName=provisioned.tables[logical_id])
        description = ttl["TimeToLiveDescription"]
        if logical_id in with_ttl:
            assert description["TimeToLiveStatus"] == "ENABLED", logical_id
            assert description["AttributeName"] == with_ttl[logical_id], logical_id
        else:
            assert description.get("TimeToLiveStatus") != "ENABLED", logical_id


def test_every_queue_exists_with_its_attributes_and_redrive_policy(
    template: Template, provisioned: Provisioned, aws: AwsClients
) -> None:
    assert set(provisioned.queues) == set(template.queues)
    redriven = 0
    for logical_id, properties in template.queues.items():
        queue = provisioned.queues[logical_id]
        attributes = aws.sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["All"])["Attributes"]
        assert attributes["QueueArn"] == queue.arn
        for name in ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds"):
            if name in properties:
                assert attributes[name] == str(properties[name]), f"{logical_id}.{name}"
        if "RedrivePolicy" in properties:
            redriven += 1
            policy = json.loads(attributes["RedrivePolicy"])
            dlq = _get_att_target(properties["RedrivePolicy"]["deadLetterTargetArn"])
            assert policy["deadLetterTargetArn"] == provisioned.queues[dlq].arn, logical_id
            assert int(policy["maxReceiveCount"]) == int(properties["RedrivePolicy"]["maxReceiveCount"])
        else:
            assert "RedrivePolicy" not in attributes, logical_id
    assert redriven, "no queue of the template has a RedrivePolicy"


def test_a_message_received_too_often_moves_to_the_dead_letter_queue(
    template: Template, provisioned: Provisioned, aws: AwsClients
) -> None:
    logical_id, properties = next((q, p) for q, p in template.queues.items() if "RedrivePolicy" in p)
    source = provisioned.queues[logical_id]
    dlq = provisioned.queues[_get_att_target(properties["RedrivePolicy"]["deadLetterTargetArn"])]
    aws.sqs.send_message(QueueUrl=source.url, MessageBody='{"run_id": "run_x"}')
    for _ in range(int(properties["RedrivePolicy"]["maxReceiveCount"])):
        received = aws.sqs.receive_message(QueueUrl=source.url, VisibilityTimeout=0)
        assert len(received.get("Messages", [])) == 1
    assert aws.sqs.receive_message(QueueUrl=source.url).get("Messages", []) == []
    moved = aws.sqs.receive_message(QueueUrl=dlq.url)["Messages"]
    assert [message["Body"] for message in moved] == ['{"run_id": "run_x"}']


def test_topics_secrets_and_kms_keys_exist(
    template: Template, provisioned: Provisioned, aws: AwsClients
) -> None:
    assert set(provisioned.topics) == set(template.topics)
    for arn in provisioned.topics.values():
        aws.sns.get_topic_attributes(TopicArn=arn)
    assert set(provisioned.secrets) == set(template.secrets)
    for logical_id, secret in provisioned.secrets.items():
        assert aws.secretsmanager.get_secret_value(SecretId=secret.arn)["SecretString"] == secret.value
        spec = template.secrets[logical_id].get("GenerateSecretString") or {}
        if "PasswordLength" in spec and "GenerateStringKey" not in spec:
            assert len(secret.value) == int(spec["PasswordLength"])
        if spec.get("ExcludePunctuation"):
            assert not set(secret.value) & set(string.punctuation)
    assert set(provisioned.kms_keys) == set(template.kms_keys)
    for key in provisioned.kms_keys.values():
        metadata = aws.kms.describe_key(KeyId=key.key_id)["KeyMetadata"]
        assert metadata["Enabled"] and metadata["Arn"] == key.arn
        blob = aws.kms.encrypt(KeyId=key.key_id, Plaintext=b"whsec_x")["CiphertextBlob"]
        assert aws.kms.decrypt(CiphertextBlob=blob)["Plaintext"] == b"whsec_x"


def test_environment_covers_every_globals_variable(
    template: Template, provisioned: Provisioned, aws: AwsClients
) -> None:
    environment = provisioned.environment()
    assert set(environment) == set(template.globals_environment)
    for name, raw in template.globals_environment.items():
        value = environment[name]
        target = raw.get("Ref") if isinstance(raw, dict) else None
        if target is None:
            assert value == (str(raw).lower() if isinstance(raw, bool) else str(raw)), name
        elif target in template.tables:
            assert value == provisioned.tables[target]
            aws.dynamodb.describe_table(TableName=value)
        elif target in template.queues:
            assert value == provisioned.queues[target].url
            aws.sqs.get_queue_attributes(QueueUrl=value, AttributeNames=["QueueArn"])
        elif target in template.topics:
            assert value == provisioned.topics[target]
            aws.sns.get_topic_attributes(TopicArn=value)
        elif target in template.secrets:
            assert value == provisioned.secrets[target].arn
            aws.secretsmanager.describe_secret(SecretId=value)
        elif target in template.kms_keys:
            assert value == provisioned.kms_keys[target].key_id
            aws.kms.describe_key(KeyId=value)
        else:
            assert target in template.parameters, (
                f"{name}: !Ref {target} is neither a resource nor a parameter"
            )
            assert value == str(template.parameters[target]), name


def test_parameter_overrides_reach_the_environment(template: Template, aws: AwsClients, prefix: str) -> None:
    referenced = {
        name: raw["Ref"]
        for name, raw in template.globals_environment.items()
        if isinstance(raw, dict) and raw.get("Ref") in template.parameters
    }
    if not referenced:
        pytest.skip("no Globals variable takes its value from a parameter")
    variable, parameter = next(iter(referenced.items()))
    provisioned = provision_from_template(TEMPLATE, parameter_overrides={parameter: "7"}, name_prefix=prefix)
    assert provisioned.environment()[variable] == "7"


def test_provisioning_twice_is_idempotent(
    template: Template, provisioned: Provisioned, aws: AwsClients, prefix: str
) -> None:
    counts = (
        len(aws.dynamodb.list_tables()["TableNames"]),
        len(aws.sqs.list_queues().get("QueueUrls", [])),
        len(aws.kms.list_keys()["Keys"]),
        len(aws.secretsmanager.list_secrets()["SecretList"]),
    )
    again = provision(template, aws, name_prefix=prefix)
    assert again.tables == provisioned.tables
    assert again.queues == provisioned.queues
    assert again.topics == provisioned.topics
    assert again.secrets == provisioned.secrets  # the generated secret value is kept, not regenerated
    assert again.kms_keys == provisioned.kms_keys
    assert again.environment() == provisioned.environment()
    assert counts == (
        len(aws.dynamodb.list_tables()["TableNames"]),
        len(aws.sqs.list_queues().get("QueueUrls", [])),
        len(aws.kms.list_keys()["Keys"]),
        len(aws.secretsmanager.list_secrets()["SecretList"]),
    )


def test_a_fixed_secret_value_is_used_when_the_secret_is_created(
    template: Template, aws: AwsClients, prefix: str
) -> None:
    if not template.secrets:
        pytest.skip("the template declares no secret")
    logical_id = next(iter(template.secrets))
    first = provision(template, aws, name_prefix=prefix, secret_values={logical_id: "admin-key-kept"})
    assert first.secrets[logical_id].value == "admin-key-kept"
    again = provision(template, aws, name_prefix=prefix, secret_values={logical_id: "another"})
    assert again.secrets[logical_id].value == "admin-key-kept"


def test_event_sources_and_custom_resources_point_at_template_resources(template: Template) -> None:
    functions = template.functions
    assert functions, "the template declares no function"
    for function in functions.values():
        code = TEMPLATE.parent / function.code_uri
        assert code.is_dir(), f"{function.logical_id}: CodeUri {function.code_uri} does not exist"
        for event in function.sqs:
            assert event.queue in template.queues, f"{function.logical_id}.{event.name}"
            assert event.batch_size >= 1
    assert sum(len(function.http_api) > 0 for function in functions.values()) == 1
    for resource in template.custom_resources.values():
        assert resource.function in functions
