"""The queue consumers' process: the functions SQS invokes (the delivery worker, the retry worker, the
fan-out and the dead-letter consumers), with their pollers, in a child of the stack's process.

On AWS each Lambda container is a process of its own. Run as threads of the stack's process, the API's
invocations and the consumers' took turns on one GIL while the machine's other core waited. Here they
run side by side: the stack's process keeps the API, the scan and the other schedules, the custom
resources and the snapshots; this one polls the queues and invokes their consumers. Both reach moto's
process over its socket (moto_process.py), and each checks IAM and AWS limits for its own calls.

What the two do not share: the index lag (consistency.py) hides a write from index reads of the
process that wrote it, so a consumer's write reaches the scan's index reads at once.

The stack starts it with `ConsumersProcess.start`, hands it what it needs (`Setup`, pickled on its stdin)
and stops it by closing that stdin: the pollers stop taking messages, invocations under way finish (up
to SHUTDOWN_WAIT_SEC), and the process exits. A stack killed outright closes the stdin too. If this
process dies on its own, the stack is told (`on_exit`) and stops: nothing would consume the queues.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import boto3
from botocore.config import Config

from edgecron_cli.local import fidelity
from edgecron_cli.local.event_sources import SqsPoller
from edgecron_cli.local.iam import Denial, IamCheck
from edgecron_cli.local.intrinsics import REGION
from edgecron_cli.local.lambda_runtime import Container, add_layers_to_path, isolate_powertools_request_state
from edgecron_cli.local.moto_process import MotoProcess, read_ready_line
from edgecron_cli.local.provision import Provisioned
from edgecron_cli.local.template import Function

log = logging.getLogger("edgecron_cli.local")

MODULE = "edgecron_cli.local.consumers_process"
START_TIMEOUT_SEC = 60.0
SHUTDOWN_WAIT_SEC = 30.0  # what an invocation under way gets to finish when the stack stops


@dataclass(frozen=True)
class Setup:
    """What the consumers' process needs from the stack's: everything the stack provisioned, and how to
    reach moto."""

    provisioned: Provisioned
    root: Path
    environment: dict[str, str]
    moto_socket: str
    moto_endpoint: str
    concurrency: int
    denials_path: Path
    verbose: bool


# shared by both processes ------------------------------------------------------------------------------


def container_for(provisioned: Provisioned, root: Path, function: Function, index: int = 0) -> Container:
    return Container(
        function,
        root,
        provisioned.function_name(function.logical_id),
        provisioned.function_arn(function.logical_id),
        index,
    )


def install_iam(provisioned: Provisioned, denials_path: Path) -> IamCheck:
    """Each function's calls are allowed or refused by its role in the template, as on AWS; every refusal
    is appended to `denials_path` as one JSON line (both processes append to the same file)."""
    from edgecron.data.aws import calling_function

    lock = threading.Lock()

    def record(denial: Denial) -> None:
        line = json.dumps(denial.as_json()) + "\n"
        with lock:
            denials_path.parent.mkdir(parents=True, exist_ok=True)
            with denials_path.open("a", encoding="utf-8") as out:
                out.write(line)  # one write of one line in append mode: the processes' lines do not mix

    check = IamCheck(provisioned, calling_function.get, on_denial=record)
    check.install()
    return check


def queue_pollers(
    provisioned: Provisioned,
    root: Path,
    moto: MotoProcess,
    concurrency: int,
    stop: threading.Event,
) -> list[SqsPoller]:
    """`concurrency` pollers per SQS event source, each with a container of its own (Lambda polls a
    queue in parallel at any BatchSize)."""
    template = provisioned.template
    plans = [(function, event) for function in template.functions.values() for event in function.sqs]
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    sqs = session.client(
        "sqs",
        region_name=REGION,
        endpoint_url=moto.endpoint_url,
        config=Config(max_pool_connections=len(plans) * concurrency + 2),
    )
    pollers: list[SqsPoller] = []
    loaded: dict[str, int] = {}
    for function, event in plans:
        queue = provisioned.queues[event.queue]
        waiter = moto.waiter(queue.url)
        for _ in range(concurrency):
            index = loaded[function.logical_id] = loaded.get(function.logical_id, -1) + 1
            container = container_for(provisioned, root, function, index)
            pollers.append(SqsPoller(container, event, queue.url, queue.arn, sqs, stop, waiter=waiter))
        log.info(
            "%s polls %s (batch %d, %d pollers)",
            function.logical_id,
            event.queue,
            event.batch_size,
            concurrency,
        )
    return pollers


# the stack's end ---------------------------------------------------------------------------------------


class ConsumersProcess:
    """The consumers' process, seen from the stack: started by `start`, stopped by `stop`, and watched in
    between: if it exits on its own, `on_exit` is told its status."""

    def __init__(self, on_exit: Callable[[int], None] | None = None) -> None:
        self._on_exit = on_exit
        self._process: subprocess.Popen[bytes] | None = None
        self._watcher: threading.Thread | None = None
        self._stopping = False
        self.pollers = 0

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self, setup: Setup) -> None:
        """Start the process and wait until its pollers run; RuntimeError if it does not get there."""
        ready_read, ready_write = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", MODULE, "--ready-fd", str(ready_write)],
                stdin=subprocess.PIPE,
                pass_fds=(ready_write,),
            )
        finally:
            os.close(ready_write)
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(pickle.dumps(setup))
            self._process.stdin.flush()
        except OSError:
            pass  # it died at once: the ready line says so
        with os.fdopen(ready_read, "rb") as ready:
            answer = read_ready_line(ready, self._process, START_TIMEOUT_SEC, "the queue consumers' process")
        if "pollers" not in answer:
            self.stop()
            raise RuntimeError(str(answer.get("error") or "the queue consumers' process did not start"))
        self.pollers = int(answer["pollers"])
        self._watcher = threading.Thread(target=self._watch, name="consumers-process", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        assert self._process is not None
        status = self._process.wait()
        if not self._stopping:
            log.error("the queue consumers' process exited unexpectedly (status %d)", status)
            if self._on_exit is not None:
                self._on_exit(status)

    def stop(self) -> None:
        """Close its stdin, wait for the invocations under way, kill it if it does not exit by then."""
        self._stopping = True
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(SHUTDOWN_WAIT_SEC + 5)
        except subprocess.TimeoutExpired:
            log.warning("the queue consumers' process did not exit: killed")
            process.kill()
            process.wait()
        if self._watcher is not None:
            self._watcher.join(5)


# the consumers' end ------------------------------------------------------------------------------------


def serve(ready_fd: int) -> int:
    """Read the Setup, start the pollers, say so on `ready_fd`, run until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the stack decides
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with os.fdopen(ready_fd, "w") as ready:
        try:
            setup: Setup = pickle.load(sys.stdin.buffer)  # noqa: S301 - the stack's own pickle, on our stdin
        except (EOFError, pickle.UnpicklingError) as exc:
            ready.write(json.dumps({"error": f"no setup from the stack ({exc})"}) + "\n")
            return 1
        _configure_logging(setup.verbose)
        # Powertools warns on every invocation that records no metric; on a console that is only noise.
        warnings.filterwarnings("ignore", message="No application metrics to publish")
        stop = threading.Event()
        try:
            threads = _start(setup, stop)
        except Exception as exc:
            log.exception("the queue consumers could not start")
            ready.write(json.dumps({"error": f"the queue consumers could not start: {exc}"}) + "\n")
            return 1
        ready.write(json.dumps({"pollers": len(threads)}) + "\n")
    sys.stdin.buffer.read()  # until the stack closes it, or exits
    stop.set()
    deadline = time.monotonic() + SHUTDOWN_WAIT_SEC
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    still_running = [thread.name for thread in threads if thread.is_alive()]
    if still_running:
        log.warning("left running (an invocation did not finish): %s", ", ".join(still_running))
    logging.shutdown()
    sys.stdout.flush()  # the handlers' last log lines
    os._exit(0)  # pollers' daemon threads may still wait on moto: nothing else to keep


def _start(setup: Setup, stop: threading.Event) -> list[threading.Thread]:
    os.environ.update(setup.environment)
    moto = MotoProcess.attached(setup.moto_socket, setup.moto_endpoint)
    moto.serve_botocore()
    fidelity.install_for_local_stack()
    install_iam(setup.provisioned, setup.denials_path)
    add_layers_to_path(setup.provisioned.template)
    isolate_powertools_request_state()
    pollers = queue_pollers(setup.provisioned, setup.root, moto, setup.concurrency, stop)
    threads = [threading.Thread(target=poller.run, name=poller.name, daemon=True) for poller in pollers]
    for thread in threads:
        thread.start()
    return threads


def _configure_logging(verbose: bool) -> None:
    """As in the stack's process: its messages on stderr, the handlers' Powertools logs on stdout."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.propagate = False
    log.setLevel(logging.DEBUG if verbose else logging.INFO)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog=MODULE, description="the queue consumers' process of the local stack"
    )
    parser.add_argument("--ready-fd", type=int, required=True)
    args = parser.parse_args(argv)
    return serve(args.ready_fd)


if __name__ == "__main__":
    sys.exit(main())
