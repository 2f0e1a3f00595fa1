"""The local IAM check: policy evaluation, which (action, resource) each call needs, and the roles
expanded from a SAM template."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from edgecron_cli.local.iam import (
    ArnBook,
    FunctionPolicy,
    IamCheck,
    Statement,
    access_class,
    function_policies,
    requests_of,
    unused_grants,
)
from edgecron_cli.local.provision import KeyInfo, Provisioned, QueueInfo, SecretInfo
from edgecron_cli.local.template import load_template

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/t"


def policy(*statements: Statement) -> FunctionPolicy:
    return FunctionPolicy("Fn", "local-Fn", "arn:aws:iam::123456789012:role/r", list(statements))


def allow(actions: tuple[str, ...], resources: tuple[str, ...], effect: str = "Allow") -> Statement:
    return Statement(effect, actions, resources, "test")


def test_an_allow_matches_with_wildcards_and_case_insensitive_actions() -> None:
    p = policy(allow(("DynamoDB:Get*", "sqs:SendMessage?atch"), (f"{TABLE}*", "arn:aws:sqs:*:*:q")))
    assert p.allows("dynamodb:GetItem", TABLE)
    assert p.allows("dynamodb:getitem", f"{TABLE}/index/due")
    assert p.allows("sqs:SendMessageBatch", "arn:aws:sqs:us-east-1:123456789012:q")
    assert not p.allows("dynamodb:PutItem", TABLE)
    assert not p.allows("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:q")  # ? is one character


def test_resources_are_case_sensitive_and_nothing_is_allowed_by_default() -> None:
    p = policy(allow(("dynamodb:GetItem",), (TABLE,)))
    assert not p.allows("dynamodb:GetItem", TABLE.upper())
    assert not policy().allows("dynamodb:GetItem", TABLE)


def test_an_explicit_deny_wins_over_any_allow() -> None:
    p = policy(allow(("dynamodb:*",), ("*",)), allow(("dynamodb:DeleteItem",), (TABLE,), effect="Deny"))
    assert p.allows("dynamodb:PutItem", TABLE)
    assert not p.allows("dynamodb:DeleteItem", TABLE)


BOOK = ArnBook(
    secrets_by_name={"admin": "arn:aws:secretsmanager:us-east-1:123456789012:secret:admin-AbC123"},
    keys_by_alias={"alias/k": "arn:aws:kms:us-east-1:123456789012:key/kid"},
)


def test_query_on_an_index_needs_the_index_arn() -> None:
    assert requests_of("dynamodb", "Query", {"TableName": "t", "IndexName": "due"}, BOOK) == [
        ("dynamodb:Query", f"{TABLE}/index/due")
    ]
    assert requests_of("dynamodb", "Query", {"TableName": "t"}, BOOK) == [("dynamodb:Query", TABLE)]


def test_transactions_and_batches_need_each_item_s_action_on_its_table() -> None:
    items = [
        {"ConditionCheck": {"TableName": "a"}},
        {"Put": {"TableName": "b"}},
        {"Update": {"TableName": "a"}},
        {"Delete": {"TableName": "c"}},
    ]
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/"
    assert requests_of("dynamodb", "TransactWriteItems", {"TransactItems": items}, BOOK) == [
        ("dynamodb:ConditionCheckItem", arn + "a"),
        ("dynamodb:PutItem", arn + "b"),
        ("dynamodb:UpdateItem", arn + "a"),
        ("dynamodb:DeleteItem", arn + "c"),
    ]
    assert requests_of("dynamodb", "BatchGetItem", {"RequestItems": {"a": {}, "b": {}}}, BOOK) == [
        ("dynamodb:BatchGetItem", arn + "a"),
        ("dynamodb:BatchGetItem", arn + "b"),
    ]


def test_queues_topics_keys_and_secrets_resolve_to_arns() -> None:
    url = "http://127.0.0.1:4567/123456789012/q"
    assert requests_of("sqs", "SendMessageBatch", {"QueueUrl": url}, BOOK) == [
        ("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:q")
    ]
    assert requests_of("sns", "Publish", {"TopicArn": "arn:t"}, BOOK) == [("sns:Publish", "arn:t")]
    assert requests_of("kms", "Encrypt", {"KeyId": "alias/k"}, BOOK) == [
        ("kms:Encrypt", "arn:aws:kms:us-east-1:123456789012:key/kid")
    ]
    assert requests_of("secretsmanager", "GetSecretValue", {"SecretId": "admin"}, BOOK) == [
        ("secretsmanager:GetSecretValue", "arn:aws:secretsmanager:us-east-1:123456789012:secret:admin-AbC123")
    ]


@pytest.mark.parametrize(
    ("service", "operation", "params"),
    [
        ("dynamodb", "ExecuteStatement", {"Statement": "SELECT * FROM t"}),
        ("sqs", "CreateQueue", {"QueueName": "x"}),
        ("sns", "Subscribe", {"TopicArn": "arn:t"}),
        ("kms", "Encrypt", {"KeyId": "alias/unknown"}),
        ("s3", "GetObject", {"Bucket": "b", "Key": "k"}),
    ],
)
def test_a_call_without_a_known_resource_is_not_mapped(
    service: str, operation: str, params: dict[str, str]
) -> None:
    assert requests_of(service, operation, params, BOOK) is None


def test_reads_and_writes() -> None:
    assert [access_class(a) for a in ("dynamodb:Query", "dynamodb:BatchGetItem", "kms:Decrypt")] == [
        "read",
        "read",
        "write",
    ]


SAM = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn/
      Handler: app.handler
      Runtime: python3.12
      Policies:
        - DynamoDBReadPolicy: {TableName: !Ref Things}
        - SQSSendMessagePolicy: {QueueName: !GetAtt Work.QueueName}
        - Statement:
            - Effect: Allow
              Action: kms:Decrypt
              Resource: !GetAtt Key.Arn
  Things:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
  Work:
    Type: AWS::SQS::Queue
  Key:
    Type: AWS::KMS::Key
"""


def provisioned(tmp_path: Path) -> Provisioned:
    path = tmp_path / "template.yaml"
    path.write_text(textwrap.dedent(SAM))
    template = load_template(path)
    return Provisioned(
        template=template,
        name_prefix="p-",
        tables={"Things": "p-Things"},
        queues={
            "Work": QueueInfo(
                "p-Work", "http://x/123456789012/p-Work", "arn:aws:sqs:us-east-1:123456789012:p-Work"
            )
        },
        secrets={"S": SecretInfo("p-S", "arn:aws:secretsmanager:us-east-1:123456789012:secret:p-S-x", "v")},
        kms_keys={"Key": KeyInfo("kid", "arn:aws:kms:us-east-1:123456789012:key/kid")},
    )


def test_sam_policy_templates_expand_into_the_function_s_statements(tmp_path: Path) -> None:
    [fn] = function_policies(provisioned(tmp_path)).values()
    table = "arn:aws:dynamodb:us-east-1:123456789012:table/p-Things"
    assert fn.allows("dynamodb:Query", f"{table}/index/any")
    assert fn.allows("dynamodb:GetItem", table)
    assert not fn.allows("dynamodb:PutItem", table)
    assert fn.allows("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:p-Work")
    assert fn.allows("kms:Decrypt", "arn:aws:kms:us-east-1:123456789012:key/kid")
    assert not fn.allows("kms:Encrypt", "arn:aws:kms:us-east-1:123456789012:key/kid")
    assert {s.source for s in fn.statements} == {
        "Fn Policies[0] DynamoDBReadPolicy {TableName: Things}",
        "Fn Policies[1] SQSSendMessagePolicy {QueueName: Work.QueueName}",
        "Fn Policies[2] (inline statements)",
    }


def test_a_grant_no_listed_call_uses_is_reported(tmp_path: Path) -> None:
    p = provisioned(tmp_path)
    policies = function_policies(p)
    book = ArnBook.of(p)
    matrix = {"Fn": ["dynamodb:GetItem Things", "kms:Decrypt Key"]}
    assert unused_grants(policies, matrix, book) == [
        "Fn Policies[1] SQSSendMessagePolicy {QueueName: Work.QueueName}: unused grant, "
        "no listed call of Fn needs it"
    ]


@pytest.mark.parametrize(
    ("service", "call", "code"),
    [
        (
            "dynamodb",
            lambda c: c.put_item(TableName="p-Things", Item={"id": {"S": "1"}}),
            "AccessDeniedException",
        ),
        (
            "sqs",
            lambda c: c.send_message(QueueUrl="http://x/123456789012/other", MessageBody="b"),
            "AccessDenied",
        ),
        (
            "sns",
            lambda c: c.publish(TopicArn="arn:aws:sns:us-east-1:123456789012:t", Message="m"),
            "AuthorizationError",
        ),
        ("kms", lambda c: c.encrypt(KeyId="kid", Plaintext=b"x"), "AccessDeniedException"),
        ("secretsmanager", lambda c: c.get_secret_value(SecretId="p-S"), "AccessDeniedException"),
    ],
)
def test_a_refused_call_fails_with_the_service_s_access_denied_code(
    tmp_path: Path, service: str, call: Any, code: str
) -> None:
    check = IamCheck(provisioned(tmp_path), lambda: "p-Fn")
    check.install()
    try:
        session = boto3.session.Session(
            aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1"
        )
        client = session.client(service, endpoint_url="http://127.0.0.1:9")  # never reached
        with pytest.raises(ClientError) as refused:
            call(client)
    finally:
        check.uninstall()
    error = refused.value.response["Error"]
    assert error["Code"] == code
    assert (
        "p-Fn is not authorized to perform" in error["Message"] and "Fn in template.yaml" in error["Message"]
    )
    [denial] = check.denials
    assert denial.function == "Fn"
