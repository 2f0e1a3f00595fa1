"""Read template.yaml into typed views: the template is the only list of what the local stack runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from edgecron_cli.local.intrinsics import PSEUDO_PARAMETERS, Resolver, TemplateError

TABLE = "AWS::DynamoDB::Table"
QUEUE = "AWS::SQS::Queue"
TOPIC = "AWS::SNS::Topic"
SECRET = "AWS::SecretsManager::Secret"
KMS_KEY = "AWS::KMS::Key"
FUNCTION = "AWS::Serverless::Function"
LAYER = "AWS::Serverless::LayerVersion"

_SHORT_TAGS = {
    "Ref": "Ref",
    "Condition": "Condition",
    "GetAtt": "Fn::GetAtt",
    "Sub": "Fn::Sub",
    "If": "Fn::If",
    "Equals": "Fn::Equals",
    "Join": "Fn::Join",
    "Select": "Fn::Select",
    "Split": "Fn::Split",
    "Not": "Fn::Not",
    "And": "Fn::And",
    "Or": "Fn::Or",
    "FindInMap": "Fn::FindInMap",
    "ImportValue": "Fn::ImportValue",
    "GetAZs": "Fn::GetAZs",
    "Base64": "Fn::Base64",
    "Cidr": "Fn::Cidr",
}


class CfnLoader(yaml.SafeLoader):
    """A safe YAML loader that turns CloudFormation short tags (`!Ref X`) into their long form."""


def _intrinsic_constructor(tag: str) -> Callable[[yaml.SafeLoader, yaml.Node], dict[str, Any]]:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        return _construct_intrinsic(loader, _SHORT_TAGS[tag], node)

    return construct


def _construct_intrinsic(loader: yaml.SafeLoader, key: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if key == "Fn::GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {key: value}


for _tag in _SHORT_TAGS:
    CfnLoader.add_constructor(f"!{_tag}", _intrinsic_constructor(_tag))


@dataclass(frozen=True)
class HttpApiEvent:
    name: str


@dataclass(frozen=True)
class ScheduleEvent:
    """An EventBridge schedule; `input` replaces the Scheduled Event payload when the template sets it."""

    name: str
    expression: str
    input: dict[str, Any] | None


@dataclass(frozen=True)
class SqsEvent:
    name: str
    queue: str  # logical id of the queue
    batch_size: int
    report_batch_item_failures: bool


@dataclass(frozen=True)
class Function:
    """A function with Globals.Function already merged in, as SAM does."""

    logical_id: str
    code_uri: str
    handler: str
    timeout: int
    memory_size: int
    environment: dict[str, Any]
    http_api: list[HttpApiEvent] = field(default_factory=list)
    schedules: list[ScheduleEvent] = field(default_factory=list)
    sqs: list[SqsEvent] = field(default_factory=list)


@dataclass(frozen=True)
class CustomResource:
    logical_id: str
    type: str
    function: str  # logical id of the function behind ServiceToken
    properties: dict[str, Any]


@dataclass
class Template:
    """The resources that survive the template's Conditions, grouped by what the local stack does with them."""

    path: Path
    parameters: dict[str, Any]
    resources: dict[str, dict[str, Any]]
    conditions: dict[str, Any]
    mappings: dict[str, Any]
    globals_function: dict[str, Any]

    @property
    def root(self) -> Path:
        return self.path.parent

    def resolver(self, ref: Any = None, get_att: Any = None) -> Resolver:
        """A resolver for this template; without callbacks it knows parameters and pseudo parameters only."""

        def parameter_ref(name: str) -> Any:
            if name in self.parameters:
                return self.parameters[name]
            if name in PSEUDO_PARAMETERS:
                return PSEUDO_PARAMETERS[name]
            raise TemplateError(f"!Ref {name} cannot be resolved before provisioning")

        def no_get_att(logical_id: str, attribute: str) -> Any:
            raise TemplateError(f"!GetAtt {logical_id}.{attribute} cannot be resolved before provisioning")

        return Resolver(ref or parameter_ref, get_att or no_get_att, self.conditions, self.mappings)

    def _properties_of(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {
            logical_id: resource.get("Properties") or {}
            for logical_id, resource in self.resources.items()
            if resource.get("Type") == resource_type
        }

    @property
    def tables(self) -> dict[str, dict[str, Any]]:
        return self._properties_of(TABLE)

    @property
    def queues(self) -> dict[str, dict[str, Any]]:
        return self._properties_of(QUEUE)

    @property
    def topics(self) -> dict[str, dict[str, Any]]:
        return self._properties_of(TOPIC)

    @property
    def secrets(self) -> dict[str, dict[str, Any]]:
        return self._properties_of(SECRET)

    @property
    def kms_keys(self) -> dict[str, dict[str, Any]]:
        return self._properties_of(KMS_KEY)

    @property
    def layers(self) -> dict[str, dict[str, Any]]:
        return self._properties_of(LAYER)

    @property
    def globals_environment(self) -> dict[str, Any]:
        return dict((self.globals_function.get("Environment") or {}).get("Variables") or {})

    @property
    def functions(self) -> dict[str, Function]:
        return {
            logical_id: self._function(logical_id, properties)
            for logical_id, properties in self._properties_of(FUNCTION).items()
        }

    @property
    def custom_resources(self) -> dict[str, CustomResource]:
        """Custom resources backed by one of the template's functions (others cannot run locally)."""
        functions = self._properties_of(FUNCTION)
        found: dict[str, CustomResource] = {}
        for logical_id, resource in self.resources.items():
            kind = str(resource.get("Type", ""))
            if not (kind.startswith("Custom::") or kind == "AWS::CloudFormation::CustomResource"):
                continue
            properties = resource.get("Properties") or {}
            target = _get_att_target(properties.get("ServiceToken"), "Arn")
            if target in functions:
                found[logical_id] = CustomResource(logical_id, kind, target, properties)
        return found

    def _function(self, logical_id: str, properties: dict[str, Any]) -> Function:
        merged = {**self.globals_function, **properties}
        environment = {
            **self.globals_environment,
            **((properties.get("Environment") or {}).get("Variables") or {}),
        }
        resolver = self.resolver()
        function = Function(
            logical_id=logical_id,
            code_uri=str(merged.get("CodeUri", ".")),
            handler=str(merged.get("Handler", "app.lambda_handler")),
            timeout=int(resolver.resolve(merged.get("Timeout", 3))),
            memory_size=int(resolver.resolve(merged.get("MemorySize", 128))),
            environment=environment,
        )
        for name, event in (properties.get("Events") or {}).items():
            event_properties = event.get("Properties") or {}
            if event_properties.get("Enabled") is False or event_properties.get("State") == "DISABLED":
                continue
            match event.get("Type"):
                case "HttpApi":
                    function.http_api.append(HttpApiEvent(name))
                case "Schedule":
                    raw_input = event_properties.get("Input")
                    function.schedules.append(
                        ScheduleEvent(
                            name=name,
                            expression=str(resolver.resolve(event_properties["Schedule"])),
                            input=json.loads(resolver.resolve(raw_input)) if raw_input else None,
                        )
                    )
                case "SQS":
                    queue = _get_att_target(event_properties.get("Queue"), "Arn")
                    if queue is None:
                        raise TemplateError(f"{logical_id}.{name}: Queue must be !GetAtt <Queue>.Arn")
                    function.sqs.append(
                        SqsEvent(
                            name=name,
                            queue=queue,
                            batch_size=int(resolver.resolve(event_properties.get("BatchSize", 10))),
                            report_batch_item_failures="ReportBatchItemFailures"
                            in (event_properties.get("FunctionResponseTypes") or []),
                        )
                    )
        return function


def _get_att_target(value: Any, attribute: str) -> str | None:
    """The logical id in `!GetAtt X.<attribute>`, or None for anything else."""
    if isinstance(value, dict) and list(value) == ["Fn::GetAtt"]:
        logical_id, attr = value["Fn::GetAtt"]
        if attr == attribute:
            return str(logical_id)
    return None


def _parameter_value(name: str, spec: dict[str, Any], overrides: dict[str, Any]) -> Any:
    if name in overrides:
        value = overrides[name]
    elif "Default" in spec:
        value = spec["Default"]
    else:
        raise TemplateError(f"parameter {name} has no Default; pass it as an override")
    if str(spec.get("Type", "")).startswith("List<") or spec.get("Type") == "CommaDelimitedList":
        return value if isinstance(value, list) else [part.strip() for part in str(value).split(",")]
    return str(value)


def load_template(path: Path, parameter_overrides: dict[str, Any] | None = None) -> Template:
    """Parse the template, apply parameter overrides and drop resources whose Condition is false."""
    document = yaml.load(path.read_text(encoding="utf-8"), Loader=CfnLoader)  # noqa: S506 - CfnLoader is a SafeLoader
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise TemplateError(f"{path} has no Resources section")
    overrides = parameter_overrides or {}
    template = Template(
        path=path.resolve(),
        parameters={
            name: _parameter_value(name, spec or {}, overrides)
            for name, spec in (document.get("Parameters") or {}).items()
        },
        resources=document["Resources"],
        conditions=document.get("Conditions") or {},
        mappings=document.get("Mappings") or {},
        globals_function=(document.get("Globals") or {}).get("Function") or {},
    )
    resolver = template.resolver()
    template.resources = {
        logical_id: resource
        for logical_id, resource in document["Resources"].items()
        if "Condition" not in resource or resolver.condition(str(resource["Condition"]))
    }
    return template
