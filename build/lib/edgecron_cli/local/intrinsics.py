"""Evaluate CloudFormation intrinsic functions, so template values resolve locally as on a deploy."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any

REGION = "us-east-1"
ACCOUNT_ID = "123456789012"  # moto's default account
STACK_NAME = "edgecron-local"
STACK_ID = (
    f"arn:aws:cloudformation:{REGION}:{ACCOUNT_ID}:stack/{STACK_NAME}/00000000-0000-0000-0000-000000000000"
)
PSEUDO_PARAMETERS: dict[str, Any] = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT_ID,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": STACK_NAME,
    "AWS::StackId": STACK_ID,
    "AWS::NotificationARNs": [],
}


class TemplateError(ValueError):
    """The template uses something the local stack cannot reproduce; the message says what."""


class _NoValue:
    """`!Ref AWS::NoValue`: the property is removed, as CloudFormation does."""


NO_VALUE = _NoValue()
_SUB_VARIABLE = re.compile(r"\$\{([^}]+)\}")


def _text(value: Any) -> str:
    """CloudFormation compares and passes scalars as strings; YAML booleans become "true"/"false"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Resolver:
    """Resolves intrinsics given how to answer `Ref` and `Fn::GetAtt` for the template's resources."""

    def __init__(
        self,
        ref: Callable[[str], Any],
        get_att: Callable[[str, str], Any],
        conditions: Mapping[str, Any],
        mappings: Mapping[str, Any],
    ) -> None:
        self._ref = ref
        self._get_att = get_att
        self._conditions = conditions
        self._mappings = mappings
        self._condition_values: dict[str, bool] = {}

    def condition(self, name: str) -> bool:
        """The value of a named condition, evaluated once."""
        if name not in self._condition_values:
            if name not in self._conditions:
                raise TemplateError(f"unknown condition {name!r}")
            self._condition_values[name] = bool(self.resolve(self._conditions[name]))
        return self._condition_values[name]

    def resolve(self, value: Any) -> Any:
        """Return `value` with every intrinsic function replaced by its result."""
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref" or key == "Condition" or key.startswith("Fn::"):
                return self._intrinsic(key, arg)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}

    def resolve_str(self, value: Any, what: str) -> str:
        """Resolve a value that must end up a string (environment variables, names)."""
        result = self.resolve(value)
        if isinstance(result, bool | int | float | str):
            return _text(result)
        raise TemplateError(f"{what} does not resolve to a string: {result!r}")

    def _intrinsic(self, key: str, arg: Any) -> Any:
        match key:
            case "Ref":
                return NO_VALUE if arg == "AWS::NoValue" else self._ref(str(arg))
            case "Condition":
                return self.condition(str(arg))
            case "Fn::GetAtt":
                logical_id, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
                return self._get_att(str(logical_id), str(self.resolve(attribute)))
            case "Fn::Sub":
                return self._sub(arg)
            case "Fn::Join":
                separator, items = arg
                return str(separator).join(str(item) for item in self.resolve(items))
            case "Fn::Select":
                index, items = self.resolve(arg)
                return items[int(index)]
            case "Fn::Split":
                separator, text = self.resolve(arg)
                return str(text).split(str(separator))
            case "Fn::If":
                name, when_true, when_false = arg
                return self.resolve(when_true if self.condition(str(name)) else when_false)
            case "Fn::Equals":
                left, right = self.resolve(arg)
                return _text(left) == _text(right)
            case "Fn::Not":
                return not self.resolve(arg[0])
            case "Fn::And":
                return all(self.resolve(item) for item in arg)
            case "Fn::Or":
                return any(self.resolve(item) for item in arg)
            case "Fn::FindInMap":
                map_name, top, second = (str(part) for part in self.resolve(arg))
                try:
                    return self._mappings[map_name][top][second]
                except KeyError as exc:
                    raise TemplateError(f"Fn::FindInMap {map_name}/{top}/{second} not found") from exc
            case "Fn::Base64":
                return base64.b64encode(str(self.resolve(arg)).encode()).decode()
            case "Fn::GetAZs":
                return [f"{REGION}{zone}" for zone in "abc"]
        raise TemplateError(f"{key} is not supported by the local stack")

    def _sub(self, arg: Any) -> str:
        template, variables = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return str(self._get_att(logical_id, attribute))
            return str(self._ref(name))

        return _SUB_VARIABLE.sub(replace, str(template))
