"""Run the template's handlers in this process the way Lambda runs them in warm containers.

Each `Container` loads its own copy of the handler module, because Powertools' resolver and batch
processor objects keep per-invocation state and are not thread-safe; Lambda never shares one between
two concurrent invocations, so neither does the local stack.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
import time
import uuid
from abc import ABCMeta
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

from edgecron.data.aws import calling_function
from edgecron_cli.local.template import Function, Template

log = logging.getLogger("edgecron_cli.local")

Handler = Callable[[Any, Any], Any]


class LambdaContext:
    """The context object a Lambda handler receives."""

    def __init__(self, function: Function, function_name: str, function_arn: str, container_id: str) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function_arn
        self.memory_limit_in_mb = function.memory_size
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"{datetime.now(UTC):%Y/%m/%d}/[$LATEST]{container_id}"
        self._deadline = time.monotonic() + function.timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass(frozen=True)
class Invocation:
    """The outcome of one invocation; `ok` is False when the handler raised (a Lambda function error)."""

    ok: bool
    result: Any
    request_id: str


class Container:
    """One warm execution environment: a private module instance, one invocation at a time."""

    def __init__(
        self, function: Function, root: Path, function_name: str, function_arn: str, index: int
    ) -> None:
        self.function = function
        self.name = f"{function.logical_id}#{index}"
        self._function_name = function_name
        self._function_arn = function_arn
        self._id = uuid.uuid4().hex
        self._lock = threading.Lock()
        self._handler = _load_handler(root, function, f"edgecron_local_{function.logical_id}_{index}")

    def invoke(self, event: Any) -> Invocation:
        """Call the handler; an exception is logged with its traceback and never escapes."""
        with self._lock:
            context = LambdaContext(self.function, self._function_name, self._function_arn, self._id)
            started = time.monotonic()
            identity = calling_function.set(self._function_name)  # its AWS calls are this function's
            try:
                result = self._handler(event, context)
            except Exception:
                log.exception("%s failed (request %s)", self.name, context.aws_request_id)
                return Invocation(ok=False, result=None, request_id=context.aws_request_id)
            finally:
                calling_function.reset(identity)
                elapsed = time.monotonic() - started
                if elapsed > self.function.timeout:
                    log.warning(
                        "%s ran %.1f s, beyond its Timeout of %d s: Lambda would have stopped it",
                        self.name,
                        elapsed,
                        self.function.timeout,
                    )
            return Invocation(ok=True, result=result, request_id=context.aws_request_id)


def _load_handler(root: Path, function: Function, module_name: str) -> Handler:
    module_path, _, attribute = function.handler.rpartition(".")
    code_dir = (root / function.code_uri).resolve()
    source = code_dir / (module_path.replace(".", "/") + ".py")
    if not source.is_file():
        raise FileNotFoundError(f"{function.logical_id}: handler {function.handler} not found at {source}")
    if str(code_dir) not in sys.path:
        sys.path.insert(0, str(code_dir))  # Lambda's task root: the handler may import modules beside it
    spec = importlib.util.spec_from_file_location(module_name, source)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    handler: Handler = getattr(module, attribute)
    return handler


def add_layers_to_path(template: Template) -> None:
    """Make the template's layers importable, as Lambda does under /opt (after the venv's packages)."""
    for properties in template.layers.values():
        content = (template.root / str(properties.get("ContentUri", ""))).resolve()
        if content.is_dir() and str(content) not in sys.path:
            sys.path.append(str(content))


class _PerThread:
    """A class attribute that holds one value per thread."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._local = threading.local()

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        try:
            return self._local.value
        except AttributeError:
            raise AttributeError(self._name) from None

    def __set__(self, instance: object, value: Any) -> None:
        self._local.value = value


class _PerThreadClassAttributes(ABCMeta):
    """Routes `Class.attr = value` to a `_PerThread` descriptor instead of replacing it."""

    def __setattr__(cls, name: str, value: Any) -> None:
        attribute = cls.__dict__.get(name)
        if isinstance(attribute, _PerThread):
            attribute.__set__(cls, value)
        else:
            super().__setattr__(name, value)


def isolate_powertools_request_state() -> None:
    """Make Powertools' current event and context per thread.

    `ApiGatewayResolver.resolve` stores the event on the class (`BaseRouter.current_event = ...`), which is
    safe in Lambda (one process per container) but lets concurrent requests in one process read each
    other's event, headers included. Called once, before the API containers are loaded.
    """
    if isinstance(BaseRouter, _PerThreadClassAttributes):
        return
    BaseRouter.__class__ = _PerThreadClassAttributes  # type: ignore[method-assign, assignment]
    for name in ("current_event", "lambda_context"):
        type.__setattr__(BaseRouter, name, _PerThread(name))
