"""`edgecron local`: the whole template running against moto, with no Docker and no account: the API and
the schedules' handlers in the stack's process, the queue consumers in a child process
(consumers_process.py), moto in another (moto_process.py)."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import boto3

from edgecron_cli.local import fidelity, journal, ttl
from edgecron_cli.local.consumers_process import ConsumersProcess, Setup, container_for, install_iam
from edgecron_cli.local.event_sources import ScheduleSource
from edgecron_cli.local.gateway import CFN_RESPONSE_PATH, Gateway
from edgecron_cli.local.iam import IamCheck
from edgecron_cli.local.intrinsics import REGION, STACK_ID
from edgecron_cli.local.lambda_runtime import Container, add_layers_to_path, isolate_powertools_request_state
from edgecron_cli.local.moto_process import MotoProcess
from edgecron_cli.local.moto_server import HOST, LOCAL_OVERRIDES, handler_environment
from edgecron_cli.local.provision import DEFAULT_PREFIX, AwsClients, Provisioned, provision
from edgecron_cli.local.snapshot import (
    Snapshot,
    read_snapshot,
    replay_journal,
    restore_kms_keys,
    restore_tables,
    save,
)
from edgecron_cli.local.template import Function, Template, load_template

log = logging.getLogger("edgecron_cli.local")

TEMPLATE_NAME = "template.yaml"
STATE_FILE = "state.json"
JOURNAL_DIR = journal.DIRECTORY  # beside it: the writes since the last snapshot
LOCAL_FILE = "local.json"
DENIALS_FILE = "iam-denials.jsonl"  # one JSON line per call IAM refused (tests fail on any)
SNAPSHOT_INTERVAL_SEC = 5.0
SNAPSHOT_MAX_SHARE = 0.2  # a large state is snapshotted less often, so it never takes over the process
SHUTDOWN_WAIT_SEC = 30.0
CFN_ANSWER_WAIT_SEC = 5.0
REBUILD_EVENT = {"source": "edgecron.local", "detail-type": "Rebuild Queues", "detail": {"rebuild": True}}


class StartupError(RuntimeError):
    """The stack cannot start; the message says why and what to do."""


@dataclass(frozen=True)
class StackOptions:
    root: Path
    state_dir: Path
    port: int = 3000
    aws_port: int = 4567
    concurrency: int = 4
    verbose: bool = False


def default_root() -> Path:
    """The nearest directory holding template.yaml from the cwd upwards, else this checkout's root."""
    cwd = Path.cwd().resolve()
    for directory in (cwd, *cwd.parents):
        if (directory / TEMPLATE_NAME).is_file():
            return directory
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / TEMPLATE_NAME).is_file():
        return checkout
    raise StartupError(f"no {TEMPLATE_NAME} in {cwd} or above; pass --root")


class LocalStack:
    """Starts the pieces in deploy order and stops them in reverse; `run()` is the whole lifecycle."""

    def __init__(self, options: StackOptions) -> None:
        self.options = options
        self.stop_requested = threading.Event()
        self._state_path = options.state_dir / STATE_FILE
        self._journal_dir = options.state_dir / JOURNAL_DIR
        self._moto: MotoProcess | None = None
        self._moto_lost = threading.Event()
        self._consumers: ConsumersProcess | None = None
        self._consumers_lost = threading.Event()
        self._gateway: Gateway | None = None
        self._threads: list[threading.Thread] = []
        self._provisioned: Provisioned | None = None
        self._custom_resources: dict[str, dict[str, Any]] = {}
        self._saved_changes = -1
        self._fidelity: fidelity.AwsFidelity | None = None
        self._iam: IamCheck | None = None
        self._consumers_error: Exception | None = None

    def run(self) -> int:
        """Start, snapshot every few seconds until asked to stop, shut down; the exit status."""
        started = time.monotonic()
        try:
            self._start()
        except Exception as exc:
            log.error("edgecron local could not start: %s", exc, exc_info=not isinstance(exc, StartupError))
            self._shutdown(save=False)
            return 1
        log.info("started in %.1f s", time.monotonic() - started)
        assert self._gateway is not None
        log.info("EdgeCron local stack ready on %s", self._gateway.url)
        interval = SNAPSHOT_INTERVAL_SEC
        while not self.stop_requested.wait(interval):
            started = time.monotonic()
            self._save_if_changed()
            interval = max(SNAPSHOT_INTERVAL_SEC, (time.monotonic() - started) / SNAPSHOT_MAX_SHARE)
        if self._moto_lost.is_set():  # the last snapshot stays as it was: moto's state is gone
            self._shutdown(save=False)
            return 1
        self._shutdown(save=True)
        return 1 if self._consumers_lost.is_set() else 0

    def _on_moto_exit(self, status: int) -> None:
        """moto's process died: nothing can work without it, so the stack stops and exits non-zero."""
        self._moto_lost.set()
        self.stop_requested.set()

    def _on_consumers_exit(self, status: int) -> None:
        """The queue consumers' process died: no queue would be consumed, so the stack stops (exit 1)."""
        self._consumers_lost.set()
        self.stop_requested.set()

    def _start(self) -> None:
        options = self.options
        template_path = options.root / TEMPLATE_NAME
        log.info("EdgeCron local stack from %s", template_path)
        if not template_path.is_file():
            raise StartupError(f"{template_path} does not exist; pass --root")
        template = load_template(template_path)
        self._moto = MotoProcess(
            options.aws_port,
            verbose=options.verbose,
            on_exit=self._on_moto_exit,
            journal=str(self._journal_dir),
        )
        try:
            self._moto.start()
        except OSError as exc:
            raise StartupError(
                f"moto cannot listen on {HOST}:{options.aws_port} ({exc.strerror}); pass --aws-port"
            ) from exc
        self._moto.serve_botocore()
        endpoint = self._moto.endpoint_url
        log.info("moto (AWS APIs) on %s, in its own process (pid %s)", endpoint, self._moto.pid)
        self._fidelity = fidelity.install_for_local_stack()
        log.info(
            "AWS limits enforced; index reads lag %.0f ms (EDGECRON_LOCAL_GSI_LAG_MS)",
            self._fidelity.lag.lag_ms if self._fidelity.lag else 0,
        )
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        clients = AwsClients.from_session(session, endpoint)
        snapshot = read_snapshot(self._state_path)
        if snapshot:
            restore_kms_keys(snapshot, template, clients.kms, DEFAULT_PREFIX, self._moto)
        provisioned = provision(template, clients, secret_values=snapshot.secrets if snapshot else None)
        self._provisioned = provisioned
        log.info(
            "provisioned %d tables, %d queues, %d topics, %d secrets, %d KMS keys",
            len(provisioned.tables),
            len(provisioned.queues),
            len(provisioned.topics),
            len(provisioned.secrets),
            len(provisioned.kms_keys),
        )
        self._install_iam(provisioned)
        if snapshot:
            restore_tables(provisioned, snapshot, self._moto)
            self._custom_resources = dict(snapshot.custom_resources)
            log.info("restored %d items from %s", snapshot.item_count, self._state_path)
        replay_journal(self._moto)
        self._save()  # before any handler runs: the KMS keys and secrets they will use are on disk

        environment = handler_environment(endpoint, _all_function_variables(provisioned), options.verbose)
        os.environ.update(environment)
        log.info(
            "the local stack delivers to loopback addresses only, plain http allowed (ALLOWED_CIDRS=%s)",
            LOCAL_OVERRIDES["ALLOWED_CIDRS"],
        )
        add_layers_to_path(template)
        isolate_powertools_request_state()
        self._consumers = ConsumersProcess(on_exit=self._on_consumers_exit)
        consumers_setup = Setup(
            provisioned=provisioned,
            root=options.root,
            environment=environment,
            moto_socket=self._moto.socket_path,
            moto_endpoint=endpoint,
            concurrency=options.concurrency,
            denials_path=options.state_dir / DENIALS_FILE,
            verbose=options.verbose,
        )
        consumers_started = threading.Thread(
            target=self._start_consumers, args=(consumers_setup,), name="consumers-start", daemon=True
        )
        consumers_started.start()  # its imports run beside the API's

        containers = self._containers(_api_function(template), options.concurrency)
        try:
            self._gateway = Gateway(HOST, options.port, containers)
        except OSError as exc:
            raise StartupError(
                f"the API cannot listen on {HOST}:{options.port} ({exc.strerror}); pass --port"
            ) from exc
        self._gateway.start()
        log.info("API (HTTP API, payload format 2.0) on %s", self._gateway.url)

        self._run_custom_resources(template)
        schedules = [
            ScheduleSource(self._container(function), event, self.stop_requested)
            for function in template.functions.values()
            for event in function.schedules
        ]
        if snapshot:
            for source in schedules:
                source.container.invoke(REBUILD_EVENT)
            log.info("asked the scan to re-enqueue non-terminal runs from DynamoDB")
        consumers_started.join()
        if self._consumers_error is not None:
            raise StartupError(str(self._consumers_error))
        log.info(
            "the queue consumers run in their own process (pid %s, %d pollers)",
            self._consumers.pid,
            self._consumers.pollers,
        )
        self._threads = [threading.Thread(target=s.run, name=s.name, daemon=True) for s in schedules]
        sweep_sec = ttl.local_sweep_interval()
        if sweep_sec > 0:
            sweeper = ttl.TtlSweeper(clients.dynamodb, self._moto.table_items)
            self._threads.append(
                threading.Thread(
                    target=ttl.run_sweeps,
                    args=(sweeper, sweep_sec, self.stop_requested),
                    name="ttl",
                    daemon=True,
                )
            )
            log.info("expired items are deleted every %.0f s (EDGECRON_LOCAL_TTL_SWEEP_SEC)", sweep_sec)
        for thread in self._threads:
            thread.start()
        self._write_local_json(self._default_app(snapshot))

    def _install_iam(self, provisioned: Provisioned) -> None:
        """Each function's calls are allowed or refused by its role in the template, as on AWS."""
        self._iam = install_iam(provisioned, self.options.state_dir / DENIALS_FILE)
        log.info(
            "IAM: each function's calls are checked against its role (%d functions)", len(self._iam.policies)
        )

    def _start_consumers(self, setup: Setup) -> None:
        assert self._consumers is not None
        try:
            self._consumers.start(setup)
        except Exception as exc:  # reported by _start, in the stack's main thread
            self._consumers_error = exc

    def _container(self, function: Function, index: int = 0) -> Container:
        assert self._provisioned is not None
        return container_for(self._provisioned, self.options.root, function, index)

    def _containers(self, function: Function, count: int) -> list[Container]:
        return [self._container(function, index) for index in range(count)]

    def _run_custom_resources(self, template: Template) -> None:
        """Send each custom resource the request a deploy would: Create the first time, Update afterwards."""
        assert self._provisioned is not None and self._gateway is not None
        resolver = self._provisioned.resolver()
        for logical_id, resource in template.custom_resources.items():
            properties = _as_cfn_strings(resolver.resolve(resource.properties))
            previous = self._custom_resources.get(logical_id)
            request_id = str(uuid.uuid4())
            event: dict[str, Any] = {
                "RequestType": "Update" if previous else "Create",
                "ServiceToken": properties.get("ServiceToken"),
                "ResponseURL": f"{self._gateway.url}{CFN_RESPONSE_PATH}{request_id}",
                "StackId": STACK_ID,
                "RequestId": request_id,
                "LogicalResourceId": logical_id,
                "ResourceType": resource.type,
                "ResourceProperties": properties,
            }
            if previous:
                event["PhysicalResourceId"] = previous["physical_id"]
                event["OldResourceProperties"] = previous["properties"]
            self._container(template.functions[resource.function]).invoke(event)
            answer = self._gateway.cfn_responses.wait(request_id, CFN_ANSWER_WAIT_SEC)
            if answer is None:
                log.warning(
                    "custom resource %s (%s) %s: no answer", logical_id, resource.type, event["RequestType"]
                )
                continue
            status = answer.get("Status")
            reason = f" ({answer['Reason']})" if status != "SUCCESS" and answer.get("Reason") else ""
            log.info(
                "custom resource %s (%s) %s: %s%s",
                logical_id,
                resource.type,
                event["RequestType"],
                status,
                reason,
            )
            if status == "SUCCESS":
                physical_id = answer.get("PhysicalResourceId") or request_id
                self._custom_resources[logical_id] = {"physical_id": physical_id, "properties": properties}

    def _default_app(self, snapshot: Snapshot | None) -> dict[str, str]:
        """Reuse the saved App after a restore (its key hash came back with the tables); else create one."""
        assert self._provisioned is not None and self._gateway is not None
        admin_key = _admin_key(self._provisioned)
        saved = _read_json(self.options.state_dir / LOCAL_FILE)
        if snapshot and saved.get("api_key") and saved.get("app_id"):
            log.info("reusing App %s", saved["app_id"])
            return {"api_key": saved["api_key"], "app_id": saved["app_id"], "admin_key": admin_key}
        request = urllib.request.Request(  # noqa: S310 - our own gateway, http only
            f"{self._gateway.url}/v1/apps",
            data=json.dumps({"name": "default"}).encode(),
            headers={"Authorization": f"Bearer {admin_key}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - our own gateway, http only
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise StartupError(
                f"POST /v1/apps answered {exc.code}: {exc.read().decode(errors='replace')}"
            ) from exc
        log.info("created the default App %s", body["app"]["id"])
        return {"api_key": body["api_key"], "app_id": body["app"]["id"], "admin_key": admin_key}

    def _write_local_json(self, app: dict[str, str]) -> None:
        assert self._gateway is not None and self._moto is not None
        local = {
            "api_url": self._gateway.url,
            "api_key": app["api_key"],
            "admin_key": app["admin_key"],
            "aws_endpoint_url": self._moto.endpoint_url,
            "app_id": app["app_id"],
        }
        path = self.options.state_dir / LOCAL_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text(json.dumps(local, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)
        log.info("local dev stack: these keys are printed on purpose (never do this with real keys)")
        for name, value in local.items():
            log.info("  %-17s %s", name, value)
        log.info("  (saved in %s)", path)

    def _save_if_changed(self) -> None:
        assert self._moto is not None
        if self._moto_lost.is_set():
            return
        try:
            changes = self._moto.changes()
            if changes == self._saved_changes:
                return
            self._save()
        except Exception:
            log.exception("snapshot failed; the next one is in a few seconds")
            return
        self._saved_changes = changes

    def _save(self) -> None:
        assert self._provisioned is not None and self._moto is not None
        save(self._state_path, self._journal_dir, self._provisioned, self._custom_resources, self._moto)

    def _shutdown(self, save: bool) -> None:
        self.stop_requested.set()
        if self._threads:
            log.info("stopping %d schedule threads", len(self._threads))
            deadline = time.monotonic() + SHUTDOWN_WAIT_SEC
            for thread in self._threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            still_running = [thread.name for thread in self._threads if thread.is_alive()]
            if still_running:
                log.warning("left running (an invocation did not finish): %s", ", ".join(still_running))
        if self._consumers is not None:
            log.info("stopping the queue consumers")
            self._consumers.stop()
        if save and self._provisioned is not None:
            log.info("saving %s", self._state_path)
            try:
                self._save()
            except Exception:
                log.exception("the last snapshot failed; the previous one is kept")
        if self._gateway is not None:
            log.info("stopping the API")
            self._gateway.stop()
        if self._iam is not None:
            self._iam.uninstall()
        if self._moto is not None:
            log.info("stopping moto")
            self._moto.stop()
        if self._fidelity is not None:
            self._fidelity.uninstall()
        log.info("stopped")


def _api_function(template: Template) -> Function:
    functions = [function for function in template.functions.values() if function.http_api]
    if len(functions) != 1:
        names = ", ".join(function.logical_id for function in functions) or "none"
        raise StartupError(f"expected one function with an HttpApi event, found {names}")
    return functions[0]


def _all_function_variables(provisioned: Provisioned) -> dict[str, str]:
    """Every function's variables in one environment (one process); a conflicting value is reported."""
    merged: dict[str, str] = {}
    for logical_id in provisioned.template.functions:
        for name, value in provisioned.function_environment(logical_id).items():
            if merged.setdefault(name, value) != value:
                log.warning(
                    "%s sets %s=%s, but another function uses %s; keeping that",
                    logical_id,
                    name,
                    value,
                    merged[name],
                )
    return merged


def _as_cfn_strings(value: Any) -> Any:
    """CloudFormation hands a custom resource every scalar property as a string."""
    if isinstance(value, dict):
        return {key: _as_cfn_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_cfn_strings(item) for item in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _admin_key(provisioned: Provisioned) -> str:
    """The value of the secret ADMIN_KEY_SECRET_ARN points at."""
    arn = provisioned.environment().get("ADMIN_KEY_SECRET_ARN")
    for secret in provisioned.secrets.values():
        if secret.arn == arn:
            return secret.value
    raise StartupError("ADMIN_KEY_SECRET_ARN in Globals must be !Ref of a secret in the template")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def _configure_logging(verbose: bool) -> None:
    """Stack messages go to stderr, plain; the handlers' Powertools JSON logs stay on stdout."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    log.propagate = False


def run_local_stack(options: StackOptions) -> int:
    """Run until Ctrl-C or SIGTERM; a second signal exits at once."""
    _configure_logging(options.verbose)
    # Powertools warns on every invocation that records no metric; on a console that is only noise.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    stack = LocalStack(options)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stack.stop_requested.is_set():
            log.warning("second %s: exiting without cleanup", signal.Signals(signum).name)
            os._exit(1)
        log.info("%s received: shutting down", signal.Signals(signum).name)
        stack.stop_requested.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return stack.run()
