"""Each function's AWS calls allowed or refused by the role template.yaml gives it, as AWS would.

moto does not enforce IAM, so a missing grant would only show after a deploy. Here the SAM template
is expanded offline (aws-sam-translator turns every policy template into its IAM statements), the
statements are resolved against the provisioned resources, and a botocore hook refuses, in the calling
process, every call whose (action, resource) the calling function's statements do not allow, with
the error code the service returns. Only identity policies are evaluated: Allow and Deny, `*` and
`?` wildcards, actions case-insensitive, resources case-sensitive; conditions, resource policies,
key policies, SCPs and permission boundaries are not (docs/local-stack.md).
"""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.handlers
import yaml
from botocore.awsrequest import AWSResponse

from edgecron_cli.local.intrinsics import ACCOUNT_ID, REGION, STACK_NAME, TemplateError
from edgecron_cli.local.provision import Provisioned, kms_alias_name
from edgecron_cli.local.template import FUNCTION, CfnLoader

log = logging.getLogger("edgecron_cli.local")

Request = tuple[str, str]  # (IAM action, resource ARN)
READ_PREFIXES = ("Get", "BatchGet", "Describe", "List", "Query", "Scan")


# ------------------------------------------------------------------------------------------------
# Policies from the template
# ------------------------------------------------------------------------------------------------


def _wildcard(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """IAM's `*` (any run of characters) and `?` (one character); everything else is literal."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


@dataclass(frozen=True)
class Statement:
    """One identity-policy statement; `source` names the template entry it came from."""

    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    source: str
    _action_patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _resource_patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_action_patterns", tuple(_wildcard(a, True) for a in self.actions))
        object.__setattr__(self, "_resource_patterns", tuple(_wildcard(r, False) for r in self.resources))

    def matches(self, action: str, resource: str) -> bool:
        return any(p.fullmatch(action) for p in self._action_patterns) and any(
            p.fullmatch(resource) for p in self._resource_patterns
        )

    def grants_action(self, action: str) -> bool:
        return any(p.fullmatch(action) for p in self._action_patterns)

    def grants_resource(self, resource: str) -> bool:
        return any(p.fullmatch(resource) for p in self._resource_patterns)


@dataclass
class FunctionPolicy:
    """What one function's role allows: an explicit Deny wins, then any Allow, else an implicit deny."""

    logical_id: str
    function_name: str
    role_arn: str
    statements: list[Statement]
    _decisions: dict[Request, bool] = field(default_factory=dict, repr=False)

    def allows(self, action: str, resource: str) -> bool:
        key = (action, resource)
        decision = self._decisions.get(key)
        if decision is None:
            matching = [s for s in self.statements if s.matches(action, resource)]
            decision = bool(matching) and all(s.effect == "Allow" for s in matching)
            self._decisions[key] = decision
        return decision

    @property
    def principal(self) -> str:
        role = self.role_arn.rpartition("/")[2]
        return f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/{role}/{self.function_name}"


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _short(value: Any) -> str:
    """A template value as a person writes it: `!Ref X` is X, `!GetAtt X.Y` is X.Y."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref":
            return str(arg)
        if key == "Fn::GetAtt":
            return ".".join(str(part) for part in _as_list(arg))
        if key == "Fn::Sub" and isinstance(arg, str):
            return arg
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return str(value)


def describe_entry(function: str, index: int, entry: Any) -> str:
    """`WorkerFunction Policies[3] SQSSendMessagePolicy {QueueName: FanoutQueue.QueueName}`."""
    if isinstance(entry, dict) and len(entry) == 1 and "Statement" not in entry:
        ((name, args),) = entry.items()
        return f"{function} Policies[{index}] {name} {_short(args)}"
    if isinstance(entry, dict):
        return f"{function} Policies[{index}] (inline statements)"
    return f"{function} Policies[{index}] {entry}"


def _local_code_uris(document: dict[str, Any]) -> dict[str, Any]:
    """SAM wants S3 locations; `sam build` would upload the local folders, so stand in for them."""
    document = copy.deepcopy(document)
    for resource in (document.get("Resources") or {}).values():
        properties = resource.get("Properties") if isinstance(resource, dict) else None
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties, dict) and isinstance(properties.get(key), str):
                properties[key] = f"s3://local-build/{properties[key].strip('/')}"
    function_globals = (document.get("Globals") or {}).get("Function") or {}
    if isinstance(function_globals.get("CodeUri"), str):
        function_globals["CodeUri"] = f"s3://local-build/{function_globals['CodeUri']}"
    return document


@lru_cache(maxsize=4)
def _translated(path: str, mtime_ns: int, parameters: str) -> dict[str, Any]:
    """The template as CloudFormation after the SAM transform (cached: it is the same for a session)."""
    from samtranslator.parser.parser import Parser  # type: ignore[import-untyped]
    from samtranslator.translator.translator import Translator  # type: ignore[import-untyped]

    document = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=CfnLoader)  # noqa: S506 - CfnLoader is a SafeLoader
    values = {**json.loads(parameters), "AWS::Region": REGION, "AWS::AccountId": ACCOUNT_ID}
    values.update({"AWS::Partition": "aws", "AWS::StackName": STACK_NAME})
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=REGION))
    result: dict[str, Any] = translator.translate(
        _local_code_uris(document), parameter_values=values, get_managed_policy_map=lambda: {}
    )
    return result


def function_policies(provisioned: Provisioned) -> dict[str, FunctionPolicy]:
    """Each function's policy by logical id, from its role in the expanded template."""
    template = provisioned.template
    path = template.path
    translated = _translated(
        str(path), path.stat().st_mtime_ns, json.dumps(template.parameters, sort_keys=True, default=str)
    )
    resources: dict[str, Any] = translated.get("Resources") or {}
    resolver = provisioned.resolver()
    sam_policies = {
        logical_id: _as_list((resource.get("Properties") or {}).get("Policies") or [])
        for logical_id, resource in template.resources.items()
        if resource.get("Type") == FUNCTION
    }
    attached: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for logical_id, resource in resources.items():
        if resource.get("Type") not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            continue
        properties = resource.get("Properties") or {}
        for role in _as_list(properties.get("Roles") or []):
            if isinstance(role, dict) and "Ref" in role:
                attached.setdefault(str(role["Ref"]), []).append(
                    (f"{logical_id} (AWS::IAM::Policy)", properties.get("PolicyDocument") or {})
                )
    policies: dict[str, FunctionPolicy] = {}
    for logical_id in template.functions:
        function = resources.get(logical_id) or {}
        role_ref = (function.get("Properties") or {}).get("Role")
        role_id = (
            str(_as_list(role_ref["Fn::GetAtt"])[0])
            if isinstance(role_ref, dict) and "Fn::GetAtt" in role_ref
            else None
        )
        statements: list[Statement] = []
        if role_id and role_id in resources:
            role = resources[role_id]
            documents: list[tuple[str, dict[str, Any]]] = []
            for policy in (role.get("Properties") or {}).get("Policies") or []:
                name = str(policy.get("PolicyName", ""))
                index = re.search(r"Policy(\d+)$", name)
                entries = sam_policies.get(logical_id, [])
                source = (
                    describe_entry(logical_id, int(index.group(1)), entries[int(index.group(1))])
                    if index and int(index.group(1)) < len(entries)
                    else f"{logical_id} {name}"
                )
                documents.append((source, policy.get("PolicyDocument") or {}))
            documents += attached.get(role_id, [])
            for source, document in documents:
                statements += _statements(resolver.resolve(document), source)
        else:
            log.warning("%s has no role in the template: every AWS call it makes is refused", logical_id)
        policies[logical_id] = FunctionPolicy(
            logical_id=logical_id,
            function_name=provisioned.function_name(logical_id),
            role_arn=f"arn:aws:iam::{ACCOUNT_ID}:role/{STACK_NAME}-{role_id or logical_id + 'Role'}",
            statements=statements,
        )
    return policies


def _statements(document: Mapping[str, Any], source: str) -> list[Statement]:
    found = []
    for raw in _as_list(document.get("Statement") or []):
        if "NotAction" in raw or "NotResource" in raw:
            raise TemplateError(f"{source}: NotAction / NotResource are not supported by the local IAM check")
        found.append(
            Statement(
                effect=str(raw.get("Effect", "Allow")),
                actions=tuple(str(a) for a in _as_list(raw.get("Action") or [])),
                resources=tuple(str(r) for r in _as_list(raw.get("Resource") or [])),
                source=source,
            )
        )
    return found


# ------------------------------------------------------------------------------------------------
# Calls -> (action, resource)
# ------------------------------------------------------------------------------------------------

_DYNAMODB_TABLE_OPERATIONS = {
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "DescribeTable",
    "DescribeTimeToLive",
    "Query",
    "Scan",
}
_TRANSACT_ACTIONS = {
    "ConditionCheck": "ConditionCheckItem",
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "Get": "GetItem",
}
_SQS_QUEUE_OPERATIONS = {
    "SendMessage": "SendMessage",
    "SendMessageBatch": "SendMessage",  # IAM authorizes the batch calls as their single-message action
    "ReceiveMessage": "ReceiveMessage",
    "DeleteMessage": "DeleteMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibility": "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
    "GetQueueAttributes": "GetQueueAttributes",
    "PurgeQueue": "PurgeQueue",
}
_KMS_OPERATIONS = {"Encrypt", "Decrypt", "GenerateDataKey", "GenerateDataKeyWithoutPlaintext", "DescribeKey"}
_SECRETS_OPERATIONS = {"GetSecretValue", "DescribeSecret", "PutSecretValue"}


@dataclass
class ArnBook:
    """Turns the names a call uses into ARNs, and ARNs into the template's logical ids (for people)."""

    secrets_by_name: dict[str, str] = field(default_factory=dict)
    keys_by_alias: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # ARN -> logical id

    @classmethod
    def of(cls, provisioned: Provisioned) -> ArnBook:
        book = cls()
        for logical_id, table in provisioned.tables.items():
            book.labels[dynamodb_table_arn(table)] = logical_id
        for logical_id, queue in provisioned.queues.items():
            book.labels[queue.arn] = logical_id
        for logical_id, topic in provisioned.topics.items():
            book.labels[topic] = logical_id
        for logical_id, secret in provisioned.secrets.items():
            book.secrets_by_name[secret.name] = secret.arn
            book.labels[secret.arn] = logical_id
        for logical_id, key in provisioned.kms_keys.items():
            book.keys_by_alias[kms_alias_name(provisioned.name_prefix, logical_id)] = key.arn
            book.labels[key.arn] = logical_id
        return book

    def label(self, arn: str) -> str:
        """`RunsTable/index/wake` for the wake index's ARN; an unknown ARN stays as it is."""
        if arn in self.labels:
            return self.labels[arn]
        table, sep, index = arn.partition("/index/")
        if sep and table in self.labels:
            return f"{self.labels[table]}/index/{index}"
        return arn

    def arn(self, label: str) -> str:
        """The inverse of `label`."""
        logical_id, sep, index = label.partition("/index/")
        for arn, known in self.labels.items():
            if known == logical_id:
                return f"{arn}/index/{index}" if sep else arn
        return label

    def kms_key_arn(self, key_id: str) -> str | None:
        if key_id.startswith("arn:"):
            if ":alias/" in key_id:
                return self.keys_by_alias.get("alias/" + key_id.partition(":alias/")[2])
            return key_id
        if key_id.startswith("alias/"):
            return self.keys_by_alias.get(key_id)
        return f"arn:aws:kms:{REGION}:{ACCOUNT_ID}:key/{key_id}"

    def secret_arn(self, secret_id: str) -> str | None:
        return secret_id if secret_id.startswith("arn:") else self.secrets_by_name.get(secret_id)


def dynamodb_table_arn(table: str, region: str = REGION) -> str:
    return table if table.startswith("arn:") else f"arn:aws:dynamodb:{region}:{ACCOUNT_ID}:table/{table}"


def _queue_arn(url: str, region: str) -> str:
    parts = urlsplit(url).path.strip("/").split("/")
    account, name = (parts[0], parts[1]) if len(parts) == 2 else (ACCOUNT_ID, parts[-1])
    return f"arn:aws:sqs:{region}:{account}:{name}"


def _ciphertext_reader() -> Callable[[bytes], Any] | None:
    """moto's reader of its ciphertext layout. Importing it imports moto (about a quarter of a second),
    so `IamCheck.install` does it, not the first Decrypt a handler makes."""
    try:
        from moto.kms.utils import _deserialize_ciphertext_blob
    except ImportError:
        return None
    return _deserialize_ciphertext_blob  # type: ignore[no-any-return]


def _ciphertext_key(blob: Any) -> str | None:
    """The key a ciphertext names (moto's ciphertext layout; KMS's is opaque but names its key too)."""
    read = _ciphertext_reader()
    if read is None:
        return None
    try:
        return str(read(bytes(blob)).key_id)
    except Exception:
        return None


def requests_of(
    service: str, operation: str, params: Mapping[str, Any], book: ArnBook, region: str = REGION
) -> list[Request] | None:
    """The (action, resource) pairs IAM authorizes for one call; None for a call this does not know."""
    if service == "dynamodb":
        return _dynamodb_requests(operation, params, region)
    if service == "sqs":
        if operation in _SQS_QUEUE_OPERATIONS and "QueueUrl" in params:
            return [(f"sqs:{_SQS_QUEUE_OPERATIONS[operation]}", _queue_arn(str(params["QueueUrl"]), region))]
        if operation == "GetQueueUrl":
            owner = str(params.get("QueueOwnerAWSAccountId") or ACCOUNT_ID)
            return [("sqs:GetQueueUrl", f"arn:aws:sqs:{region}:{owner}:{params['QueueName']}")]
        return None
    if service == "sns":
        if operation in ("Publish", "PublishBatch"):
            topic = params.get("TopicArn") or params.get("TargetArn")
            return [("sns:Publish", str(topic))] if topic else None
        return None
    if service == "kms":
        if operation not in _KMS_OPERATIONS:
            return None
        key = params.get("KeyId") or (
            _ciphertext_key(params.get("CiphertextBlob")) if operation == "Decrypt" else None
        )
        arn = book.kms_key_arn(str(key)) if key else None
        return [(f"kms:{operation}", arn)] if arn else None
    if service == "secretsmanager":
        if operation not in _SECRETS_OPERATIONS:
            return None
        arn = book.secret_arn(str(params.get("SecretId", "")))
        return [(f"secretsmanager:{operation}", arn)] if arn else None
    return None


def _dynamodb_requests(operation: str, params: Mapping[str, Any], region: str) -> list[Request] | None:
    if operation in _DYNAMODB_TABLE_OPERATIONS and "TableName" in params:
        arn = dynamodb_table_arn(str(params["TableName"]), region)
        if params.get("IndexName") and operation in ("Query", "Scan"):
            arn = f"{arn}/index/{params['IndexName']}"
        return [(f"dynamodb:{operation}", arn)]
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [
            (f"dynamodb:{operation}", dynamodb_table_arn(str(table), region))
            for table in params.get("RequestItems") or {}
        ]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found: list[Request] = []
        for item in params.get("TransactItems") or []:
            for kind, body in item.items():
                if kind not in _TRANSACT_ACTIONS or "TableName" not in body:
                    return None
                found.append(
                    (
                        f"dynamodb:{_TRANSACT_ACTIONS[kind]}",
                        dynamodb_table_arn(str(body["TableName"]), region),
                    )
                )
        return found
    return None


# ------------------------------------------------------------------------------------------------
# The check, as a botocore hook
# ------------------------------------------------------------------------------------------------

# What each service answers when IAM refuses a call: (error code, HTTP status).
DENIAL_ERRORS = {
    "dynamodb": ("AccessDeniedException", 400),
    "sqs": ("AccessDenied", 403),
    "sns": ("AuthorizationError", 403),
    "kms": ("AccessDeniedException", 400),
    "secretsmanager": ("AccessDeniedException", 400),
}
_CONTEXT_KEY = "edgecron_local_iam_denial"


@dataclass(frozen=True)
class Denial:
    """A refused call: which function, which (action, resource), and the message AWS would give."""

    function: str
    action: str
    resource: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {
            "function": self.function,
            "action": self.action,
            "resource": self.resource,
            "message": self.message,
        }


class _RawBody:
    """The body botocore may read from a refused call's response: empty."""

    def stream(self, **kwargs: Any) -> Iterable[bytes]:
        return iter(())


class IamCheck:
    """Allows or refuses each AWS call of the current function; records what it sees.

    `identity` returns the physical name of the function making the call ("" for calls of the test
    code or the emulator itself, which are not checked). With `enforce` False every call is allowed
    and only observed (to regenerate the permission matrix). `on_denial` is told of each refusal.
    """

    def __init__(
        self,
        provisioned: Provisioned,
        identity: Callable[[], str],
        *,
        enforce: bool = True,
        on_denial: Callable[[Denial], None] | None = None,
    ) -> None:
        policies = function_policies(provisioned)
        self.policies = {policy.function_name: policy for policy in policies.values()}
        self.book = ArnBook.of(provisioned)
        self.enforce = enforce
        self.denials: list[Denial] = []
        self.observed: set[tuple[str, str, str]] = set()  # (function logical id, action, resource ARN)
        self._identity = identity
        self._on_denial = on_denial
        self._lock = threading.Lock()
        self._installed = False

    def install(self) -> None:
        """Check every botocore client created in this process from now on."""
        _ciphertext_reader()
        if not self._installed:
            botocore.handlers.BUILTIN_HANDLERS.append(("before-parameter-build", self.before_parameter_build))
            botocore.handlers.BUILTIN_HANDLERS.append(("before-call", self.before_call))
            self._installed = True

    def uninstall(self) -> None:
        for entry in (
            ("before-parameter-build", self.before_parameter_build),
            ("before-call", self.before_call),
        ):
            if entry in botocore.handlers.BUILTIN_HANDLERS:
                botocore.handlers.BUILTIN_HANDLERS.remove(entry)
        self._installed = False

    def check(
        self, function_name: str, service: str, operation: str, params: Mapping[str, Any], region: str
    ) -> Denial | None:
        """The denial of this call, or None when the function's role allows every part of it."""
        policy = self.policies.get(function_name)
        requests = requests_of(service, operation, params, self.book, region)
        logical_id = policy.logical_id if policy else function_name
        if requests is None:
            return self._deny(
                logical_id,
                f"{service}:{operation}",
                "*",
                f"the local IAM check does not know which resource {service}:{operation} acts on; "
                "teach edgecron_cli/local/iam.py (requests_of) before using it",
            )
        for action, resource in requests if self.enforce else []:
            if policy is None or not policy.allows(action, resource):
                principal = policy.principal if policy else function_name
                return self._deny(
                    logical_id,
                    action,
                    resource,
                    f"User: {principal} is not authorized to perform: {action} on resource: {resource} "
                    f"because no identity-based policy allows the {action} action "
                    f"({logical_id} in template.yaml)",
                )
        with self._lock:  # what the function called (refused calls are denials, not observations)
            self.observed.update((logical_id, action, resource) for action, resource in requests)
        return None

    def _deny(self, function: str, action: str, resource: str, message: str) -> Denial:
        denial = Denial(function, action, resource, message)
        with self._lock:
            self.denials.append(denial)
        log.error("IAM denied %s: %s on %s", function, action, resource)
        if self._on_denial is not None:
            self._on_denial(denial)
        return denial

    def before_parameter_build(
        self, params: Mapping[str, Any], model: Any, context: dict[str, Any], **kwargs: Any
    ) -> None:
        function_name = self._identity()
        if not function_name:
            return
        service = str(model.service_model.signing_name or model.service_model.service_name)
        denial = self.check(
            function_name, service, str(model.name), params, str(context.get("client_region") or REGION)
        )
        if denial is not None:
            context[_CONTEXT_KEY] = (service, denial)

    def before_call(
        self, model: Any, context: dict[str, Any], **kwargs: Any
    ) -> tuple[AWSResponse, dict[str, Any]] | None:
        refused = context.get(_CONTEXT_KEY)
        if refused is None:
            return None
        service, denial = refused
        code, status = DENIAL_ERRORS.get(service, ("AccessDenied", 403))
        request_id = str(uuid.uuid4())
        headers = {"x-amzn-requestid": request_id}
        response = AWSResponse("https://iam.local/denied", status, headers, _RawBody())
        parsed = {
            "Error": {"Code": code, "Message": denial.message},
            "ResponseMetadata": {"RequestId": request_id, "HTTPStatusCode": status, "HTTPHeaders": headers},
        }
        return response, parsed


# ------------------------------------------------------------------------------------------------
# The permission matrix: what the code calls, per function, by logical id
# ------------------------------------------------------------------------------------------------


def matrix_entry(action: str, label: str) -> str:
    return f"{action} {label}"


def observed_matrix(check: IamCheck) -> dict[str, list[str]]:
    """{function: ["dynamodb:GetItem AppsTable", ...]} of what the check saw, sorted."""
    matrix: dict[str, set[str]] = {}
    for function, action, resource in check.observed:
        matrix.setdefault(function, set()).add(matrix_entry(action, check.book.label(resource)))
    return {function: sorted(entries) for function, entries in sorted(matrix.items())}


def access_class(action: str) -> str:
    """`read` for actions that only read, else `write` (a read-only use should get a read-only grant)."""
    name = action.partition(":")[2]
    return "read" if name.startswith(READ_PREFIXES) else "write"


def _granted_classes(action_pattern: str) -> set[str]:
    name = action_pattern.partition(":")[2] or action_pattern
    if name.startswith(READ_PREFIXES):
        return {"read"}
    return {"read", "write"} if name.startswith("*") else {"write"}


def unused_grants(
    policies: Mapping[str, FunctionPolicy], matrix: Mapping[str, Iterable[str]], book: ArnBook
) -> list[str]:
    """Template grants the matrix never uses: a policy entry no listed call needs, or one that grants
    writes where every listed call it allows only reads."""
    problems = []
    for logical_id, policy in sorted(policies.items()):
        calls = []
        for entry in matrix.get(logical_id, []):
            action, _, label = entry.partition(" ")
            calls.append((action, book.arn(label)))
        by_source: dict[str, list[Statement]] = {}
        for statement in policy.statements:
            if statement.effect == "Allow":
                by_source.setdefault(statement.source, []).append(statement)
        for source, statements in by_source.items():
            granted = {cls for s in statements for a in s.actions for cls in _granted_classes(a)}
            used = {access_class(a) for a, r in calls if any(s.matches(a, r) for s in statements)}
            if not used:
                problems.append(f"{source}: unused grant, no listed call of {logical_id} needs it")
            elif "write" in granted and "write" not in used:
                problems.append(
                    f"{source}: grants writes, but every listed call of {logical_id} it allows only "
                    "reads: grant read-only access"
                )
    return problems


def denied_entries(
    policies: Mapping[str, FunctionPolicy], matrix: Mapping[str, Iterable[str]], book: ArnBook
) -> list[str]:
    """Matrix entries the template does not allow (the code would be refused on AWS)."""
    problems = []
    for logical_id, entries in sorted(matrix.items()):
        policy = policies.get(logical_id)
        for entry in entries:
            action, _, label = entry.partition(" ")
            if policy is None or not policy.allows(action, book.arn(label)):
                problems.append(f"{logical_id}: template.yaml does not allow {entry}")
    return problems
