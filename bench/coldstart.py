"""Cold starts: what each function pays before and during its first invocation in a new container.

For every function of template.yaml, in fresh interpreters laid out as Lambda lays them out (the
function's directory, then the core layer's python/ directory, then the runtime's boto3):
- the import time of its handler module (median and max of `runs` interpreters) and the resident
  memory (RSS) right after it;
- one first invocation with a representative event against moto (a moto server in its own process,
  so the function's process holds only what Lambda's would): its wall time and the RSS after it;
- the same import with tracing on (as a deployed function with `Tracing: Active` runs it);
- in the same run, a bare `import boto3` (which no function imports: their clients are botocore's)
  and the functions' floor: botocore, pynamodb, pydantic with one model built and Powertools' Logger
  and Metrics, which every function imports whatever its own code.

The code is loaded from the built artifacts (.aws-sam/build) when they exist and run on this machine,
else from the source tree (the row says which). The unzipped sizes of the layer and of each function
are the built artifacts' (without a build, the functions' source directories and no layer figure).

Figures never fail the run: a missed target is a row that says MISSES.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import Row, verdict

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".aws-sam" / "build"
ADMIN_KEY = "bench-admin-key-0123456789abcdef"
MB = 1_000_000

# Import-time targets (median, ms, this machine) by function directory; the layer's, unzipped.
IMPORT_TARGET_MS = {"api": 300.0}
DEFAULT_IMPORT_TARGET_MS = 200.0
LAYER_TARGET_BYTES = 30 * MB

# What every function imports whatever its own code: the SDK its clients and pynamodb are built on,
# pydantic with a first model built (which loads most of pydantic's internals), Powertools' Logger and
# Metrics. A module of its own, imported as a handler module is.
FUNCTIONS_FLOOR = """
import botocore.config
import botocore.session
import pynamodb.models
from aws_lambda_powertools import Logger, Metrics
from pydantic import BaseModel


class First(BaseModel):
    value: int
"""

# Run in each fresh interpreter: import the handler module, then (with an event) invoke it once.
PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
spec = json.load(open(sys.argv[1]))

def rss_kb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

started, cpu = time.perf_counter(), time.process_time()
module = __import__(spec["module"])
out = {
    "import_ms": (time.perf_counter() - started) * 1000,
    "import_cpu_ms": (time.process_time() - cpu) * 1000,
    "rss_import_kb": rss_kb(),
}
if spec.get("modules"):
    out["modules"] = sorted(sys.modules)
if spec.get("event") is not None:
    class Context:
        function_name = spec["function_name"]
        memory_limit_in_mb = 256
        function_version = "$LATEST"
        aws_request_id = "00000000-0000-4000-8000-000000000001"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:" + function_name
        log_group_name = "/aws/lambda/" + function_name
        log_stream_name = "cold"

        @staticmethod
        def get_remaining_time_in_millis():
            return 30000

    started, cpu = time.perf_counter(), time.process_time()
    result = module.lambda_handler(spec["event"], Context())
    out["invoke_ms"] = (time.perf_counter() - started) * 1000
    out["invoke_cpu_ms"] = (time.process_time() - cpu) * 1000
    out["rss_invoke_kb"] = rss_kb()
    out["result"] = json.loads(json.dumps(result, default=str))
with open(spec["out"], "w") as answer:
    json.dump(out, answer)
"""


@dataclass(frozen=True)
class Function:
    logical_id: str
    name: str  # its directory under functions/


@dataclass(frozen=True)
class Layout:
    """Where the code is loaded from: the built artifacts, or the source tree (and why)."""

    source: str
    layer_dir: Path
    function_dirs: dict[str, Path]


def functions() -> list[Function]:
    """Every function of template.yaml, in template order."""
    from edgecron_cli.local.template import load_template

    specs = load_template(ROOT / "template.yaml").functions
    return [
        Function(logical_id, spec.code_uri.rstrip("/").removeprefix("functions/"))
        for logical_id, spec in specs.items()
    ]


def _native_machine(layer: Path) -> str | None:
    """The machine the layer's native extensions were built for (None when it has none)."""
    for path in layer.rglob("*.so"):
        header = path.read_bytes()[:20]
        if header[:4] == b"\x7fELF":
            machine = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
            return {183: "aarch64", 62: "x86_64"}.get(machine, str(machine))
    return None


def layout(fns: list[Function], root: Path = ROOT) -> Layout:
    """The built artifacts when they exist and their native code runs here, else the source tree."""
    build = root / ".aws-sam" / "build"
    layer = build / "CoreLayer" / "python"
    built = {f.name: build / f.logical_id for f in fns}
    if layer.is_dir() and all((d / "app.py").is_file() for d in built.values()):
        machine = _native_machine(layer)
        if machine in (None, platform.machine()):
            return Layout("built (.aws-sam/build)", layer, built)
        why = f"source tree (the built layer is {machine}, this machine {platform.machine()})"
    else:
        why = "source tree (no .aws-sam/build)"
    return Layout(why, root / "layers" / "core", {f.name: root / "functions" / f.name for f in fns})


def tree_size(path: Path) -> int:
    """Bytes of every file under `path`, bytecode caches left out (Lambda unzips no __pycache__)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def sizes(fns: list[Function], build: Path = BUILD) -> dict[str, Any]:
    layer = build / "CoreLayer" / "python"
    found: dict[str, Any] = {"source": "built" if layer.is_dir() else "not built (make build)"}
    if layer.is_dir():
        found["layer_bytes"] = tree_size(layer)
        found["layer_top"] = dict(
            sorted(
                ((p.name, tree_size(p) if p.is_dir() else p.stat().st_size) for p in layer.iterdir()),
                key=lambda item: -item[1],
            )[:8]
        )
        found["functions_bytes"] = {
            f.name: tree_size(build / f.logical_id) for f in fns if (build / f.logical_id).is_dir()
        }
    else:
        found["functions_bytes"] = {f.name: tree_size(ROOT / "functions" / f.name) for f in fns}
    return found


def lambda_environment(function: Function, extra: dict[str, str], *, tracing: bool) -> dict[str, str]:
    """A Lambda-like process environment: the runtime's variables, the template's, nothing of ours."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TZ": ":UTC",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": f"edgecron-{function.logical_id}",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "LAMBDA_TASK_ROOT": "/var/task",
        "POWERTOOLS_SERVICE_NAME": "edgecron",
        "POWERTOOLS_METRICS_NAMESPACE": "EdgeCron",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        **extra,
    }
    if tracing:
        env.pop("POWERTOOLS_TRACE_DISABLED", None)
        env["AWS_XRAY_CONTEXT_MISSING"] = "IGNORE_ERROR"
    else:
        env["POWERTOOLS_TRACE_DISABLED"] = "true"
    return env


def probe(
    code_dirs: list[Path],
    env: dict[str, str],
    *,
    module: str = "app",
    event: Any = None,
    function_name: str = "",
    modules: bool = False,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Import `module` (and invoke its handler with `event`) in a fresh interpreter whose path starts
    with `code_dirs`; what it measured."""
    with tempfile.TemporaryDirectory(prefix="edgecron-cold-") as tmp:
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec = {"module": module, "event": event, "function_name": function_name, "modules": modules}
        spec_path.write_text(json.dumps({**spec, "out": str(out_path)}))
        full_env = {**env, "PYTHONPATH": os.pathsep.join(str(d) for d in code_dirs)}
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(spec_path)],
            cwd=tmp,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0 or not out_path.exists():
            raise RuntimeError(f"{module} in {code_dirs[0]}: exit {done.returncode}: {done.stderr[-2000:]}")
        answer: dict[str, Any] = json.loads(out_path.read_text())
        return answer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto server in its own process on 127.0.0.1; its endpoint URL."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the moto server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def prepare(endpoint_url: str, receiver_url: str) -> dict[str, Any]:
    """Run in its own process (`python -m bench.coldstart prepare`): provision the template on the moto
    server, then, through the API handler, an App with an Endpoint on the receiver, direct runs and
    Events; answer the handlers' environment and one representative event per function."""
    credentials = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    os.environ.update(credentials | {"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1"})
    from edgecron_cli.local.moto_server import handler_environment
    from edgecron_cli.local.provision import provision_from_template

    provisioned = provision_from_template(
        ROOT / "template.yaml", endpoint_url, secret_values={"AdminKeySecret": ADMIN_KEY}
    )
    env = handler_environment(endpoint_url, provisioned.environment(), verbose=False)
    env["POWERTOOLS_METRICS_DISABLED"] = "false"  # as deployed: the EMF lines are part of the work
    os.environ.update(env)

    import boto3

    from edgecron_testing.harness import call_api, given_up_message, load_event, sqs_event

    def created(path: str, key: str, body: dict[str, Any], status: int = 201) -> dict[str, Any]:
        answer = call_api("POST", path, key=key, body=body)
        if answer.status != status:
            raise RuntimeError(f"POST {path}: {answer.status} {answer.body}")
        return dict(answer.body)

    sqs = boto3.session.Session(region_name="us-east-1").client("sqs", endpoint_url=endpoint_url)

    def received(logical_id: str) -> dict[str, Any]:
        url = provisioned.queues[logical_id].url
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=2, AttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            raise RuntimeError(f"nothing arrived in {logical_id}")
        message: dict[str, Any] = messages[0]
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return message

    def arn(logical_id: str) -> str:
        return str(provisioned.queues[logical_id].arn)

    made = created("/v1/apps", ADMIN_KEY, {"name": "cold-start"})
    app_id, key = made["app"]["id"], made["api_key"]
    endpoint_id = created("/v1/endpoints", key, {"url": receiver_url})["id"]
    created("/v1/task-runs", key, {"endpoint_id": endpoint_id, "payload": {"n": 1}})
    worker = sqs_event([received("DeliveryQueue")], arn("DeliveryQueue"))
    given_up = created("/v1/task-runs", key, {"endpoint_id": endpoint_id})
    received("DeliveryQueue")
    dlq = sqs_event([given_up_message(given_up["id"], app_id)], arn("DeliveryDLQ"))
    created("/v1/events", key, {"name": "cold.start", "payload": {"n": 1}}, 202)
    fanout = sqs_event([received("FanoutQueue")], arn("FanoutQueue"))
    created("/v1/events", key, {"name": "cold.start.failed"}, 202)
    failed_page = received("FanoutQueue")
    failed_page["Attributes"] = {**failed_page.get("Attributes", {}), "ApproximateReceiveCount": "5"}
    fanout_dlq = sqs_event([failed_page], arn("FanoutDLQ"))
    from edgecron_testing.harness import api_event

    cfn = load_event("cfn-delete.json") | {"ResponseURL": receiver_url.rsplit("/", 1)[0] + "/cfn-response"}
    events = {
        "api": api_event("GET", "/v1/endpoints", key=key),
        "scan": load_event("scan.json"),
        "worker": worker,
        "fanout": fanout,
        "dlq": dlq,
        "fanout_dlq": fanout_dlq,
        "compensation": cfn,
    }
    return {"environment": env, "events": events}


def _prepare_in_a_process(endpoint_url: str, receiver_url: str) -> dict[str, Any]:
    paths = [ROOT / "layers" / "core", ROOT / "cli", ROOT / "testing", ROOT]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_"))},
        "PYTHONPATH": os.pathsep.join(str(p) for p in paths),
    }
    with tempfile.TemporaryDirectory(prefix="edgecron-cold-") as tmp:
        out = Path(tmp) / "prepared.json"
        done = subprocess.run(
            [sys.executable, "-m", "bench.coldstart", "prepare", endpoint_url, receiver_url, str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"preparing the first invocations failed: {done.stderr[-3000:]}")
        prepared: dict[str, Any] = json.loads(out.read_text())
        return prepared


def _ms(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "max": round(max(values), 1)}


def _summary(got: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "import_ms": _ms([g["import_ms"] for g in got]),
        "import_cpu_ms": _ms([g["import_cpu_ms"] for g in got]),
        "rss_import_mb": round(statistics.median(g["rss_import_kb"] for g in got) / 1024, 1),
        "runs": len(got),
    }


def _first(answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "import_ms": round(answer["import_ms"], 1),
        "invoke_ms": round(answer["invoke_ms"], 1),
        "invoke_cpu_ms": round(answer["invoke_cpu_ms"], 1),
        "rss_import_mb": round(answer["rss_import_kb"] / 1024, 1),
        "rss_invoke_mb": round(answer["rss_invoke_kb"] / 1024, 1),
        "result": answer["result"],
    }


def run(
    runs: int = 7, *, invoke: bool = True, baseline: Path | None = None
) -> tuple[list[Row], dict[str, Any]]:
    """Import every handler `runs` times in fresh interpreters; with `invoke`, one first invocation
    each. With `baseline` (another checkout, e.g. the code before a change), the same figures for it,
    measured in turns with this checkout's so that both see the same machine."""
    fns = functions()
    trees = {"this": layout(fns)}
    if baseline is not None:
        trees["baseline"] = layout(fns, baseline.resolve())
    data: dict[str, Any] = {
        "loaded_from": {label: tree.source for label, tree in trees.items()},
        "runs": runs,
        "sizes": sizes(fns),
        "functions": {label: {} for label in trees},
    }
    floor_env = lambda_environment(Function("Floor", "floor"), {}, tracing=False)
    floor = [probe([trees["this"].layer_dir], floor_env, module="boto3") for _ in range(runs)]
    data["boto3_floor"] = _summary(floor)
    with tempfile.TemporaryDirectory(prefix="edgecron-floor-") as tmp:
        (Path(tmp) / "functions_floor.py").write_text(FUNCTIONS_FLOOR)
        dirs = [Path(tmp), trees["this"].layer_dir]
        data["functions_floor"] = _summary(
            [probe(dirs, floor_env, module="functions_floor") for _ in range(runs)]
        )
    with _services(invoke) as (endpoint_url, receiver):
        prepared = {
            label: _prepare_in_a_process(endpoint_url, receiver.url("/cold"))
            if invoke
            else {"environment": {}, "events": {}}
            for label in trees
        }
        for fn in fns:
            got: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
            traced: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
            for turn in range(runs):
                for label, tree in trees.items():
                    dirs = [tree.function_dirs[fn.name], tree.layer_dir]
                    env = lambda_environment(fn, prepared[label]["environment"], tracing=False)
                    got[label].append(probe(dirs, env))
                    if turn % 2 == 0:
                        traced_env = lambda_environment(fn, prepared[label]["environment"], tracing=True)
                        traced[label].append(probe(dirs, traced_env))
            for label, tree in trees.items():
                figures = _summary(got[label])
                figures["tracing_on"] = _summary(traced[label])
                event = prepared[label]["events"].get(fn.name)
                if event is not None:
                    dirs = [tree.function_dirs[fn.name], tree.layer_dir]
                    env = lambda_environment(fn, prepared[label]["environment"], tracing=False)
                    answer = probe(dirs, env, event=event, function_name=f"edgecron-{fn.logical_id}")
                    figures["first_invocation"] = _first(answer)
                data["functions"][label][fn.name] = figures
        if receiver is not None:
            data["receiver_requests"] = len(receiver.received("/cold"))
    return rows(data), data


@contextmanager
def _services(invoke: bool) -> Iterator[tuple[str, Any]]:
    """The moto server and the receiver the first invocations need (nothing when not invoking)."""
    if not invoke:
        yield "", None
        return
    from edgecron_testing.receiver import Receiver

    receiver = Receiver()
    try:
        with moto_server() as url:
            yield url, receiver
    finally:
        receiver.server.shutdown()


def _figure(figures: dict[str, Any]) -> str:
    ms, cpu = figures["import_ms"], figures["import_cpu_ms"]
    text = (
        f"{ms['median']:.0f} ms (max {ms['max']:.0f}; CPU {cpu['median']:.0f}), {figures['rss_import_mb']} MB"
    )
    first = figures.get("first_invocation")
    if first:
        text += f"; 1st call {first['invoke_ms']:.0f} ms, {first['rss_invoke_mb']} MB"
    return text


def rows(data: dict[str, Any]) -> list[Row]:
    found: list[Row] = []
    for key, case in (
        ("boto3_floor", "import boto3 (no function does)"),
        ("functions_floor", "botocore, pynamodb, pydantic, Powertools (the floor)"),
    ):
        floor = data.get(key)
        if floor is None:
            continue
        found.append(
            Row(
                "coldstart",
                case,
                f"{floor['import_ms']['median']:.0f} ms (max {floor['import_ms']['max']:.0f}; "
                f"CPU {floor['import_cpu_ms']['median']:.0f}), {floor['rss_import_mb']} MB",
            )
        )
    for label, by_function in data["functions"].items():
        source = "built" if data["loaded_from"][label].startswith("built") else "source"
        for name, figures in by_function.items():
            target = IMPORT_TARGET_MS.get(name, DEFAULT_IMPORT_TARGET_MS)
            case = f"{name} import ({source})" if label == "this" else f"{name} import (baseline)"
            ok = figures["import_ms"]["median"] <= target
            found.append(
                Row(
                    "coldstart",
                    case,
                    _figure(figures),
                    f"<= {target:.0f} ms median" if label == "this" else "",
                    verdict(ok) if label == "this" else "",
                )
            )
    size = data["sizes"]
    functions_kb = [b / 1000 for b in size["functions_bytes"].values()] or [0.0]
    if "layer_bytes" in size:
        found.append(
            Row(
                "coldstart",
                "core layer, unzipped",
                f"{size['layer_bytes'] / MB:.1f} MB (each function {min(functions_kb):.1f}–"
                f"{max(functions_kb):.1f} KB)",
                f"<= {LAYER_TARGET_BYTES / MB:.0f} MB",
                verdict(size["layer_bytes"] <= LAYER_TARGET_BYTES),
            )
        )
    else:
        found.append(Row("coldstart", "core layer, unzipped", "not built (make build)", "", "n/a"))
    return found


if __name__ == "__main__" and sys.argv[1:2] == ["prepare"]:
    endpoint, receiver_url, out_file = sys.argv[2:5]
    Path(out_file).write_text(json.dumps(prepare(endpoint, receiver_url)))
