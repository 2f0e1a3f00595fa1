"""Create the template's tables, queues, topics, secrets and KMS keys on an AWS endpoint (moto, locally).

Everything is read from template.yaml: there is no second list of resources. Provisioning is idempotent,
so the local stack can run it on every start and the integration tests inside `moto.mock_aws`.
"""

from __future__ import annotations

import json
import secrets
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from edgecron_cli.local.intrinsics import ACCOUNT_ID, PSEUDO_PARAMETERS, REGION, Resolver, TemplateError
from edgecron_cli.local.template import Template, load_template

DEFAULT_PREFIX = "edgecron-local-"

_TABLE_REQUEST_KEYS = (
    "KeySchema",
    "AttributeDefinitions",
    "BillingMode",
    "ProvisionedThroughput",
    "LocalSecondaryIndexes",
)
_INDEX_REQUEST_KEYS = ("IndexName", "KeySchema", "Projection", "ProvisionedThroughput", "OnDemandThroughput")
_QUEUE_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "RedrivePolicy",
    "RedriveAllowPolicy",
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
)
_TOPIC_ATTRIBUTES = ("DisplayName", "FifoTopic", "ContentBasedDeduplication")


@dataclass(frozen=True)
class AwsClients:
    """The boto3 clients provisioning needs, all pointed at the same endpoint."""

    dynamodb: Any
    sqs: Any
    sns: Any
    secretsmanager: Any
    kms: Any

    @classmethod
    def from_session(cls, session: boto3.session.Session, endpoint_url: str | None = None) -> AwsClients:
        def make(service: str) -> Any:
            return session.client(service, region_name=REGION, endpoint_url=endpoint_url)

        return cls(make("dynamodb"), make("sqs"), make("sns"), make("secretsmanager"), make("kms"))


@dataclass(frozen=True)
class QueueInfo:
    name: str
    url: str
    arn: str


@dataclass(frozen=True)
class SecretInfo:
    name: str
    arn: str
    value: str


@dataclass(frozen=True)
class KeyInfo:
    key_id: str
    arn: str


@dataclass
class Provisioned:
    """Physical names, URLs and ARNs per logical id, and the environment the functions get."""

    template: Template
    name_prefix: str
    tables: dict[str, str] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, SecretInfo] = field(default_factory=dict)
    kms_keys: dict[str, KeyInfo] = field(default_factory=dict)

    def function_name(self, logical_id: str) -> str:
        return f"{self.name_prefix}{logical_id}"

    def function_arn(self, logical_id: str) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.function_name(logical_id)}"

    def ref(self, name: str) -> Any:
        """What `!Ref name` returns once deployed."""
        if name in self.template.parameters:
            return self.template.parameters[name]
        if name in PSEUDO_PARAMETERS:
            return PSEUDO_PARAMETERS[name]
        if name in self.tables:
            return self.tables[name]
        if name in self.queues:
            return self.queues[name].url
        if name in self.topics:
            return self.topics[name]
        if name in self.secrets:
            return self.secrets[name].arn
        if name in self.kms_keys:
            return self.kms_keys[name].key_id
        if name in self.template.functions:
            return self.function_name(name)
        function, _, attribute = name.partition(".")
        if function in self.template.functions and attribute in ("Version", "Alias"):
            # AutoPublishAlias: the published version (locally always the code on disk) or the alias
            return f"{self.function_arn(function)}:{'$LATEST' if attribute == 'Version' else 'live'}"
        if name in self.template.layers:
            return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:layer:{self.name_prefix}{name}:1"
        raise TemplateError(f"!Ref {name}: not a parameter or a resource the local stack provisions")

    def get_att(self, logical_id: str, attribute: str) -> Any:
        """What `!GetAtt logical_id.attribute` returns once deployed."""
        attributes: dict[str, Any] = {}
        if logical_id in self.tables:
            attributes = {"Arn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{self.tables[logical_id]}"}
        elif logical_id in self.queues:
            queue = self.queues[logical_id]
            attributes = {"Arn": queue.arn, "QueueName": queue.name, "QueueUrl": queue.url}
        elif logical_id in self.topics:
            arn = self.topics[logical_id]
            attributes = {"TopicArn": arn, "TopicName": arn.rsplit(":", 1)[1]}
        elif logical_id in self.kms_keys:
            key = self.kms_keys[logical_id]
            attributes = {"Arn": key.arn, "KeyId": key.key_id}
        elif logical_id in self.template.functions:
            attributes = {"Arn": self.function_arn(logical_id)}
        if attribute not in attributes:
            raise TemplateError(f"!GetAtt {logical_id}.{attribute} is not available on the local stack")
        return attributes[attribute]

    def resolver(self) -> Resolver:
        return self.template.resolver(self.ref, self.get_att)

    def environment(self) -> dict[str, str]:
        """Globals.Function.Environment.Variables with every `!Ref` replaced by its physical value."""
        return self._resolve_variables(self.template.globals_environment)

    def function_environment(self, logical_id: str) -> dict[str, str]:
        """One function's variables: Globals merged with its own, as SAM does."""
        return self._resolve_variables(self.template.functions[logical_id].environment)

    def _resolve_variables(self, variables: dict[str, Any]) -> dict[str, str]:
        resolver = self.resolver()
        return {
            name: resolver.resolve_str(value, f"environment variable {name}")
            for name, value in variables.items()
        }


def provision(
    template: Template,
    session_or_clients: boto3.session.Session | AwsClients,
    name_prefix: str = DEFAULT_PREFIX,
    secret_values: dict[str, str] | None = None,
) -> Provisioned:
    """Create what the template declares, keeping what already exists.

    `secret_values` fixes the value of a secret (by logical id) when it is created, so a restarted
    local stack keeps its admin key instead of generating a new one.
    """
    clients = (
        session_or_clients
        if isinstance(session_or_clients, AwsClients)
        else AwsClients.from_session(session_or_clients)
    )
    provisioned = Provisioned(template=template, name_prefix=name_prefix)
    resolver = provisioned.resolver()
    for logical_id, properties in template.kms_keys.items():
        alias = kms_alias_name(name_prefix, logical_id)
        provisioned.kms_keys[logical_id] = _kms_key(clients, alias, resolver.resolve(properties))
    for logical_id, properties in template.tables.items():
        provisioned.tables[logical_id] = _table(
            clients, name_prefix + logical_id, resolver.resolve(properties)
        )
    for logical_id in _queues_in_dependency_order(template):
        properties = resolver.resolve(template.queues[logical_id])
        provisioned.queues[logical_id] = _queue(clients, name_prefix + logical_id, properties)
    for logical_id, properties in template.topics.items():
        provisioned.topics[logical_id] = _topic(
            clients, name_prefix + logical_id, resolver.resolve(properties)
        )
    fixed = secret_values or {}
    for logical_id, properties in template.secrets.items():
        name = name_prefix + logical_id
        provisioned.secrets[logical_id] = _secret(
            clients, name, resolver.resolve(properties), fixed.get(logical_id)
        )
    return provisioned


def provision_from_template(
    path: Path,
    endpoint_url: str | None = None,
    parameter_overrides: dict[str, Any] | None = None,
    secret_values: dict[str, str] | None = None,
    name_prefix: str = DEFAULT_PREFIX,
) -> Provisioned:
    """Load `path` and provision it with a fresh session (inside `mock_aws`, leave endpoint_url None)."""
    template = load_template(path, parameter_overrides)
    session = boto3.session.Session(region_name=REGION)
    return provision(template, AwsClients.from_session(session, endpoint_url), name_prefix, secret_values)


def _is_error(exc: ClientError, *codes: str) -> bool:
    return exc.response.get("Error", {}).get("Code") in codes


def _table(clients: AwsClients, name: str, properties: dict[str, Any]) -> str:
    try:
        clients.dynamodb.describe_table(TableName=name)
    except ClientError as exc:
        if not _is_error(exc, "ResourceNotFoundException"):
            raise
        request: dict[str, Any] = {key: properties[key] for key in _TABLE_REQUEST_KEYS if key in properties}
        if properties.get("GlobalSecondaryIndexes"):
            request["GlobalSecondaryIndexes"] = [
                {key: index[key] for key in _INDEX_REQUEST_KEYS if key in index}
                for index in properties["GlobalSecondaryIndexes"]
            ]
        if "StreamViewType" in (properties.get("StreamSpecification") or {}):
            request["StreamSpecification"] = {
                "StreamEnabled": True,
                "StreamViewType": properties["StreamSpecification"]["StreamViewType"],
            }
        clients.dynamodb.create_table(TableName=name, **request)
    ttl = properties.get("TimeToLiveSpecification") or {}
    if ttl.get("Enabled"):
        status = clients.dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if status.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
            clients.dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
            )
    return name


def _attribute_text(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _queue(clients: AwsClients, name: str, properties: dict[str, Any]) -> QueueInfo:
    if properties.get("FifoQueue"):
        name += ".fifo"
    try:
        url = clients.sqs.get_queue_url(QueueName=name)["QueueUrl"]
    except ClientError as exc:
        if not _is_error(exc, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"):
            raise
        attributes = {key: _attribute_text(properties[key]) for key in _QUEUE_ATTRIBUTES if key in properties}
        url = clients.sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return QueueInfo(name=name, url=url, arn=arn)


def _queues_in_dependency_order(template: Template) -> list[str]:
    """Queues after the queues they reference (a RedrivePolicy needs its DLQ's ARN)."""
    queues = template.queues
    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(logical_id: str) -> None:
        if logical_id in ordered:
            return
        if logical_id in visiting:
            raise TemplateError(f"queue {logical_id} references itself through its RedrivePolicy chain")
        visiting.add(logical_id)
        for dependency in sorted(_references(queues[logical_id]) & queues.keys()):
            visit(dependency)
        visiting.discard(logical_id)
        ordered.append(logical_id)

    for logical_id in queues:
        visit(logical_id)
    return ordered


def _references(value: Any) -> set[str]:
    """Logical ids named by `Ref` / `Fn::GetAtt` anywhere inside `value`."""
    if isinstance(value, list):
        return set().union(*(_references(item) for item in value))
    if not isinstance(value, dict):
        return set()
    found: set[str] = set()
    for key, item in value.items():
        if key == "Ref":
            found.add(str(item))
        elif key == "Fn::GetAtt":
            found.add(str(item[0]))
        else:
            found |= _references(item)
    return found


def _topic(clients: AwsClients, name: str, properties: dict[str, Any]) -> str:
    if properties.get("FifoTopic"):
        name += ".fifo"
    attributes = {key: _attribute_text(properties[key]) for key in _TOPIC_ATTRIBUTES if key in properties}
    return str(clients.sns.create_topic(Name=name, Attributes=attributes)["TopicArn"])


def _secret(
    clients: AwsClients, name: str, properties: dict[str, Any], fixed_value: str | None
) -> SecretInfo:
    try:
        arn = clients.secretsmanager.describe_secret(SecretId=name)["ARN"]
        value = clients.secretsmanager.get_secret_value(SecretId=name)["SecretString"]
    except ClientError as exc:
        if not _is_error(exc, "ResourceNotFoundException"):
            raise
        if fixed_value is not None:
            value = fixed_value
        elif "SecretString" in properties:
            value = str(properties["SecretString"])
        else:
            value = generate_secret_string(properties.get("GenerateSecretString") or {})
        request = {"Name": name, "SecretString": value}
        if properties.get("Description"):
            request["Description"] = str(properties["Description"])
        arn = clients.secretsmanager.create_secret(**request)["ARN"]
    return SecretInfo(name=name, arn=arn, value=str(value))


def generate_secret_string(spec: dict[str, Any]) -> str:
    """What Secrets Manager's GenerateSecretString would produce, generated with `secrets`."""
    groups = [
        ("" if spec.get("ExcludeLowercase") else string.ascii_lowercase),
        ("" if spec.get("ExcludeUppercase") else string.ascii_uppercase),
        ("" if spec.get("ExcludeNumbers") else string.digits),
        ("" if spec.get("ExcludePunctuation") else string.punctuation),
        (" " if spec.get("IncludeSpace") else ""),
    ]
    excluded = set(str(spec.get("ExcludeCharacters", "")))
    groups = [kept for kept in ("".join(c for c in group if c not in excluded) for group in groups) if kept]
    if not groups:
        raise TemplateError("GenerateSecretString excludes every character")
    alphabet = "".join(groups)
    length = int(spec.get("PasswordLength", 32))
    require_each = spec.get("RequireEachIncludedType", True) and length >= len(groups)
    while True:
        password = "".join(secrets.choice(alphabet) for _ in range(length))
        if not require_each or all(any(c in group for c in password) for group in groups):
            break
    if "GenerateStringKey" in spec:
        document = json.loads(spec.get("SecretStringTemplate") or "{}")
        document[spec["GenerateStringKey"]] = password
        return json.dumps(document)
    return password


def kms_alias_name(name_prefix: str, logical_id: str) -> str:
    """KMS keys have no name: this alias is how provisioning finds the key it created before."""
    return f"alias/{name_prefix}{logical_id}"


def _kms_key(clients: AwsClients, alias_name: str, properties: dict[str, Any]) -> KeyInfo:
    try:
        metadata = clients.kms.describe_key(KeyId=alias_name)["KeyMetadata"]
    except ClientError as exc:
        if not _is_error(exc, "NotFoundException"):
            raise
        metadata = clients.kms.create_key(
            Description=str(properties.get("Description", alias_name)),
            KeyUsage=str(properties.get("KeyUsage", "ENCRYPT_DECRYPT")),
            KeySpec=str(properties.get("KeySpec", "SYMMETRIC_DEFAULT")),
        )["KeyMetadata"]
        clients.kms.create_alias(AliasName=alias_name, TargetKeyId=metadata["KeyId"])
    return KeyInfo(key_id=str(metadata["KeyId"]), arn=str(metadata["Arn"]))
