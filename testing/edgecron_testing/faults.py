"""Fault injection at the AWS call layer of the in-process harness.

Every AWS call the handlers make (botocore clients and pynamodb alike) goes through botocore's
`BaseClient._make_api_call`. While a `Faults` block is open, each call a handler makes (a call inside
`harness.invoke`, the way the harness runs functions/<name>) is matched against the block's rules; the
first rule that matches and still has shots left makes the call fail in one of four ways:

    BEFORE      the call has no effect and raises a throttling ClientError (a throttle, a 500: the
                SDK gave up). The caller can tell nothing was done only if it trusts the code.
    AFTER       the call takes effect, then raises `AnswerLost` (a read timeout: the caller cannot
                tell whether it took effect).
    KILL        the call has no effect and the invocation dies: `InvocationKilled` derives from
                BaseException, so no `except Exception` catches it, and every later call of the same
                invocation (its other threads) dies too. The harness's caller sees the exception;
                `Pump` leaves the batch's messages undeleted, so SQS gives them again after their
                visibility timeout (`return_in_flight()` makes that timeout pass now).
    KILL_AFTER  the call takes effect, then the invocation dies as with KILL.

Calls the test makes itself (outside `invoke`) are never faulted. Typical use:

    from edgecron_testing import faults

    with faults.Faults() as f:
        f.on("dynamodb", "PutItem", kind=faults.AFTER, function="api", table="TaskRunsTable")
        resp = call_api("POST", "/v1/task-runs", ...)     # the run is stored, the API is not told
    assert f.injected                                     # the fault did happen (else the test lies)

    with faults.Faults() as f:
        f.on("sqs", "SendMessage", kind=faults.KILL, nth=2)
        with pytest.raises(faults.InvocationKilled):
            call_api(...)

A rule matches on service ("dynamodb", "sqs", "sns", "kms"), operation (botocore's name, e.g.
"TransactWriteItems"), the handler (`function`, the functions/<name> folder), the table (logical id
from template.yaml, e.g. "RunsTable", or a physical name), and any predicate on the `Call` (its
parameters are botocore's). It fires on its `nth` matching call (1 = the first) and `times` times in a
row from there (default once). `Faults.random(rng, rate, ...)` instead faults a seeded share of calls,
for simulations: each call's draw depends on the seed, the call's kind (handler, service, operation,
tables) and how many calls of that kind came before it, so the same seed gives the same faults.
`let_sqs_time_pass()` and `return_in_flight()` stand for SQS delays and visibility timeouts running
out (moto keeps real time; the handlers read the injected clock).
"""

from __future__ import annotations

import random as random_module
import threading
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import botocore.client
from botocore.exceptions import ClientError, ReadTimeoutError

BEFORE = "before"
AFTER = "after"
KILL = "kill"
KILL_AFTER = "kill_after"
KINDS = (BEFORE, AFTER, KILL, KILL_AFTER)


class InvocationKilled(BaseException):
    """The function was stopped mid-invocation (its timeout, out of memory): nothing after runs."""


class AnswerLost(ReadTimeoutError):
    """The call took effect but its answer never came back (what botocore raises on a read timeout)."""

    def __init__(self, service: str, operation: str) -> None:
        super().__init__(endpoint_url=f"https://{service}.us-east-1.amazonaws.com ({operation})")


def throttled(service: str, operation: str) -> ClientError:
    """The error a throttled call ends with once the SDK's retries gave up."""
    code = "ProvisionedThroughputExceededException" if service == "dynamodb" else "ThrottlingException"
    error = {"Error": {"Code": code, "Message": "Rate exceeded (injected)"}, "ResponseMetadata": {}}
    return ClientError(error, operation)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Call:
    """One AWS call a handler made: `function` is its functions/<name> folder."""

    service: str
    operation: str
    params: dict[str, Any]
    function: str
    invocation: str

    @property
    def table(self) -> str:
        return str(self.params.get("TableName", ""))

    def tables(self) -> set[str]:
        """Every table the call names (a transaction or batch names several)."""
        names = {self.table} if self.table else set()
        for item in self.params.get("TransactItems", []) + self.params.get("TransactStatements", []):
            for part in item.values():
                if isinstance(part, dict) and "TableName" in part:
                    names.add(str(part["TableName"]))
        names.update(self.params.get("RequestItems", {}).keys())
        return names


@dataclass(frozen=True)
class Injected:
    call: Call
    kind: str


@dataclass
class Rule:
    kind: str
    service: str | None = None
    operation: str | None = None
    function: str | None = None
    table: str | None = None
    when: Callable[[Call], bool] | None = None
    nth: int = 1
    times: int = 1
    seen: int = 0
    fired: int = 0

    def matches(self, call: Call) -> bool:
        if self.service is not None and call.service != self.service:
            return False
        if self.operation is not None and call.operation != self.operation:
            return False
        if self.function is not None and call.function != self.function:
            return False
        if self.table is not None and _physical_table(self.table) not in call.tables():
            return False
        return self.when is None or self.when(call)

    def take(self, call: Call) -> bool:
        """Whether this call is one the rule fails (counting it among the rule's matches)."""
        if self.fired >= self.times or not self.matches(call):
            return False
        self.seen += 1
        if self.seen < self.nth:
            return False
        self.fired += 1
        return True


@dataclass
class RandomFaults:
    """Seeded random faults. Whether a call fails is drawn from the seed, the call's kind (handler,
    service, operation, tables) and how many calls of that kind came before it: calls that come in
    another order across kinds (threads, a scan sharing its time between kinds of work by the
    clock) still meet the same faults."""

    base: int
    rate: float
    kinds: tuple[str, ...]
    services: tuple[str, ...] | None
    functions: tuple[str, ...] | None
    limit: int | None
    rates: dict[str, float] = field(default_factory=dict)  # a function's own rate, in place of `rate`
    fired: int = 0
    seen: dict[str, int] = field(default_factory=dict)

    def pick(self, call: Call) -> str | None:
        if self.limit is not None and self.fired >= self.limit:
            return None
        if self.services is not None and call.service not in self.services:
            return None
        if self.functions is not None and call.function not in self.functions:
            return None
        key = f"{call.function}|{call.service}|{call.operation}|{','.join(sorted(call.tables()))}"
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        draw = random_module.Random(f"{self.base}|{key}|{n}")
        roll, which = draw.random(), draw.randrange(len(self.kinds))
        if roll >= self.rates.get(call.function, self.rate):
            return None
        self.fired += 1
        return self.kinds[which]


# --- the invocation a call belongs to (set by harness.invoke) ---------------------------------------
_invocation: ContextVar[tuple[str, str]] = ContextVar("edgecron_invocation", default=("", ""))


def invocation_started(function: str, request_id: str) -> Any:
    """Called by the harness around each handler run: (functions/<name>, a unique id)."""
    return _invocation.set((function, request_id))


def invocation_ended(token: Any) -> None:
    _invocation.reset(token)


@dataclass
class Faults:
    """A block in which the handlers' AWS calls fail as its rules say (see the module's text)."""

    rules: list[Rule] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)  # every handler call seen while open
    injected: list[Injected] = field(default_factory=list)  # the faults that happened, in order
    chaos: RandomFaults | None = None
    record_calls: bool = True
    _dead: set[str] = field(default_factory=set)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # --- what to inject ----------------------------------------------------------------------------
    def on(
        self,
        service: str | None = None,
        operation: str | None = None,
        *,
        kind: str = BEFORE,
        function: str | None = None,
        table: str | None = None,
        when: Callable[[Call], bool] | None = None,
        nth: int = 1,
        times: int = 1,
    ) -> Rule:
        """Fail the `nth` matching call (and `times` - 1 more matching calls after it) as `kind`."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        rule = Rule(kind, service, operation, function, table, when, nth, times)
        with self._lock:
            self.rules.append(rule)
        return rule

    def random(
        self,
        rng: random_module.Random,
        rate: float,
        *,
        kinds: Iterable[str] = KINDS,
        services: Iterable[str] | None = None,
        functions: Iterable[str] | None = None,
        limit: int | None = None,
        rates: dict[str, float] | None = None,
    ) -> None:
        """Fail each matching call with probability `rate` (`rates`: another one for the calls of
        some functions, e.g. one whose invocations make many calls), as one of `kinds` picked by
        `rng` (at most `limit` faults). `stop()` ends it; rules set with `on` take precedence."""
        self.chaos = RandomFaults(
            rng.getrandbits(64),
            rate,
            tuple(kinds),
            None if services is None else tuple(services),
            None if functions is None else tuple(functions),
            limit,
            dict(rates or {}),
        )

    def stop(self) -> None:
        """No further faults (the block stays open and keeps recording calls)."""
        with self._lock:
            self.rules.clear()
            self.chaos = None

    # --- what happened -----------------------------------------------------------------------------
    def count(self, kind: str | None = None) -> int:
        return sum(1 for fault in self.injected if kind is None or fault.kind == kind)

    def by_kind(self) -> dict[str, int]:
        return {kind: self.count(kind) for kind in KINDS}

    # --- the block ---------------------------------------------------------------------------------
    def __enter__(self) -> Faults:
        _push(self)
        return self

    def __exit__(self, *_: object) -> None:
        _pop(self)

    def _decide(self, call: Call) -> str | None:
        with self._lock:
            if self.record_calls:
                self.calls.append(call)
            if call.invocation in self._dead:
                return KILL
            kind = next((rule.kind for rule in self.rules if rule.take(call)), None)
            if kind is None and self.chaos is not None:
                kind = self.chaos.pick(call)
            if kind is not None:
                self.injected.append(Injected(call, kind))
                if kind in (KILL, KILL_AFTER):
                    self._dead.add(call.invocation)
            return kind


# --- the hook ------------------------------------------------------------------------------------
_active: list[Faults] = []
_original: Callable[..., Any] | None = None
_install_lock = threading.Lock()


def _push(faults: Faults) -> None:
    with _install_lock:
        _install()
        _active.append(faults)


def _pop(faults: Faults) -> None:
    with _install_lock:
        _active.remove(faults)


def _install() -> None:
    """Wrap botocore's call once (outermost, so a fault happens around the whole call)."""
    global _original
    if _original is not None:
        return
    original = botocore.client.BaseClient._make_api_call
    _original = original

    def faulted(client: Any, operation: str, params: Any) -> Any:
        function, invocation = _invocation.get()
        if not _active or not invocation:
            return original(client, operation, params)
        call = Call(client.meta.service_model.service_name, operation, dict(params), function, invocation)
        kind = _active[-1]._decide(call)
        if kind == BEFORE:
            raise throttled(call.service, operation)
        if kind == KILL:
            raise InvocationKilled(f"{function} killed before {call.service}.{operation}")
        result = original(client, operation, params)
        if kind == AFTER:
            raise AnswerLost(call.service, operation)
        if kind == KILL_AFTER:
            raise InvocationKilled(f"{function} killed after {call.service}.{operation}")
        return result

    botocore.client.BaseClient._make_api_call = faulted  # type: ignore[method-assign]


def _physical_table(name: str) -> str:
    """A table's physical name from its logical id in template.yaml (a physical name is kept)."""
    from edgecron_testing import inprocess

    return inprocess.PROVISIONED.tables.get(name, name)


# --- SQS redelivery --------------------------------------------------------------------------------
def let_sqs_time_pass(queue_names: Iterable[str] | None = None) -> int:
    """As if every delay and visibility timeout had run out (moto keeps real time; a test moves the
    injected clock past them first): every message of the queues is visible now. Returns how many
    were delayed or in flight."""
    return _release(queue_names, delayed=True)


def return_in_flight(queue_names: Iterable[str] | None = None) -> int:
    """Let the visibility timeout of every received, undeleted message pass now (moto keeps real
    time): SQS gives each again. Returns how many came back."""
    return _release(queue_names, delayed=False)


def _release(queue_names: Iterable[str] | None, *, delayed: bool) -> int:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    backend = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    wanted = None if queue_names is None else set(queue_names)
    back = 0
    for name, queue in backend.queues.items():
        if wanted is not None and name not in wanted:
            continue
        for message in list(queue._messages):
            if delayed and message.delayed:
                message.delayed_until = 0
                back += 1
            if not message.visible:
                message.visible_at = 0.0
                queue.pending_messages.discard(message)
                back += 1
    return back
