"""Benchmark 6: what the design does past one account's defaults (docs/scaling.md).

Measured here, in-process against moto: what one scan tick costs per due schedule and per fire
(requests, read and write units, and the Lambda time modelled as in bench/cost.py), and what one delivery
costs by trigger kind (the cost benchmark's scenarios, taken from the same `python -m bench` run when it
ran first). Derived from those inputs and from template.yaml: the scan's time budget, the write rate of
every hot key against DynamoDB's per-partition limits, the worker concurrency and SQS traffic each
delivery rate needs, and the monthly bill on on-demand and on provisioned capacity, at 1 k to 10 M
schedules and 1 M to 100 M deliveries a day. The derived figures follow the assumptions stated in
ASSUMPTIONS (results.json repeats them); no figure is held against a target."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import prices
from bench.inproc import Env
from bench.meter import Invocation, OpStats, Usage
from bench.prices import PRICES
from bench.report import Row

SCHEDULE_STEPS = (1_000, 100_000, 1_000_000, 10_000_000)
DELIVERY_STEPS = (1_000_000, 10_000_000, 100_000_000)
DAY_S = 86_400
MONTH_DAYS = 30
TICK_S = 60  # the EventBridge rule: rate(1 minute)

# DynamoDB's documented throughput of one partition; a partition key value never gets more.
PARTITION_WCU = 1_000
PARTITION_RCU = 3_000
TABLE_QUOTA_UNITS = 40_000  # default per-table read and write quota (on-demand and provisioned)
ACCOUNT_CONCURRENCY = 1_000  # default Lambda concurrency per account and region
SQS_INFLIGHT_LIMIT = 120_000  # received but not deleted, per standard queue
SQS_MAX_DELAY_S = 900
# us-east-1 provisioned capacity, per unit-hour (not in bench/prices.py: the formula prices on-demand)
PROVISIONED_WCU_HOUR = 0.00065
PROVISIONED_RCU_HOUR = 0.00013


@dataclass(frozen=True)
class Assumptions:
    """What the derived figures take as given; each one is a knob of `derive`."""

    fires_per_schedule_day: float = 10.0  # 10 M schedules x 10 = 100 M deliveries a day
    endpoints_per_fire: int = 1
    peak_minute_factor: float = 10.0  # busiest minute vs the mean (crons cluster on the hour)
    peak_second_factor: float = 3.0  # busiest second of deliveries vs the day's mean
    receiver_latency_s: float = 0.3  # a receiver's answer time, waited once per batch (concurrent)
    partition_headroom: float = 0.5  # plan a hot key at this share of the partition limit
    provisioned_utilisation: float = 0.7  # auto scaling's target: paid capacity used on average
    apps: int = 1  # tenants sharing the load (per-App keys take load / apps)
    shards_max: int = 64  # what config.Settings accepts for SHARDS


ASSUMPTIONS = Assumptions()


# -- measuring ------------------------------------------------------------------------------------------


def seconds_at(invocation: Invocation, memory_mb: int) -> float:
    """bench.cost.modelled_seconds at another memory size: CPU slowed to that vCPU share, each AWS
    call at regional latency (calls of a batch's records overlap). Here the CPU term is an upper
    bound: it includes botocore's work and the meter's own bookkeeping on a shared machine."""
    own = max(0.0, invocation.wall_s - invocation.aws_s)
    scale = max(1.0, prices.LAMBDA_VCPU_MB / memory_mb)
    return (own + invocation.client_s) * scale + io_seconds(invocation)


def io_seconds(invocation: Invocation) -> float:
    """The AWS calls alone, one after the other, at regional latency: the floor of a tick's time."""
    latency = sum(
        count * prices.LATENCY_S.get(service, prices.DEFAULT_LATENCY_S)
        for service, count in invocation.calls_by_service.items()
    )
    return latency / max(1, invocation.records)


@dataclass
class Tick:
    """One measured scan tick."""

    shape: str
    schedules: int
    due_schedules: int
    fires: int
    dynamodb_requests: int
    sqs_requests: int
    rru: float
    wru_table: float
    wru_index_by_table: dict[str, float]
    wall_s_moto: float
    io_s: float
    modelled_s_1vcpu: float


def _tick(env: Env, shape: str, schedules: int, at: datetime) -> Tick:
    from edgecron import clock
    from edgecron_testing.inprocess import due_walk_left_at

    env.conftest.drain_queues()  # what the creates dispatched is not this tick's work
    clock.set_clock(clock.FixedClock(at))
    due_walk_left_at(clock.to_ms(at) - 60_000)  # a tick ran a minute before: its window ends there
    try:
        with env.window() as usage:
            result = env.invoke(
                "scan", {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}
            )
    finally:
        clock.set_clock(clock.SystemClock())
        env.conftest.drain_queues()  # the dispatched runs are not delivered here
    return _tick_of(shape, schedules, result or {}, usage)


def _tick_of(shape: str, schedules: int, result: dict[str, Any], usage: Usage) -> Tick:
    ddb = usage.total("dynamodb")
    sqs = usage.total("sqs")
    by_table: dict[str, OpStats] = {}
    for (_, service, _, resource), stats in usage.ops.items():
        if service == "dynamodb":
            by_table.setdefault(resource, OpStats()).add(stats)
    scan = next(i for i in usage.invocations if i.function == "scan")
    return Tick(
        shape=shape,
        schedules=schedules,
        due_schedules=int(result.get("due_schedules", 0)),
        fires=int(result.get("fires_dispatched", 0)),
        dynamodb_requests=ddb.requests,
        sqs_requests=sqs.sqs_chunks,
        rru=ddb.rru,
        wru_table=ddb.wru_table,
        wru_index_by_table={t: s.wru_index for t, s in by_table.items() if s.wru_index},
        wall_s_moto=round(scan.wall_s, 3),
        io_s=io_seconds(scan),
        modelled_s_1vcpu=seconds_at(scan, prices.LAMBDA_VCPU_MB),
    )


def _create_schedules(env: Env, app_id: str, endpoint_id: str, cron: str, n: int, now: datetime) -> int:
    """n schedules created through the service layer at `now`; returns their (common) next fire time."""
    from edgecron import clock
    from edgecron.schemas.schedules import ScheduleCreate
    from edgecron.services import schedules as schedule_service

    clock.set_clock(clock.FixedClock(now))
    try:
        made = [
            schedule_service.create(
                app_id,
                ScheduleCreate(
                    cron=cron, endpoint_ids=[endpoint_id], payload={"kind": "bench"}, name=f"scale {i}"
                ),
                now,
            )
            for i in range(n)
        ]
    finally:
        clock.set_clock(clock.SystemClock())
    return min(int(s.next_fire_at) for s in made if s.next_fire_at is not None)


def measure_scan(env: Env, due: int) -> dict[str, Any]:
    """Three ticks: nothing due; `due` daily schedules with one fire each; a tenth as many
    every-5-seconds schedules (a dozen fires each in the look-ahead). Each tick runs at its schedules' next fire time,
    so none is lagging and no catch-up runs; every earlier schedule is out of the due index first."""
    app_id, key = env.new_app("bench-scaling")
    resp = env.api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/never"})
    if resp.status != 201:
        raise RuntimeError(f"endpoint create failed: {resp.status} {resp.body}")
    endpoint_id = str(resp.body["id"])
    base = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=10)
    ticks: list[Tick] = []
    env.reset()
    try:
        ticks.append(_tick(env, "nothing due", 0, base))
        fire = base + timedelta(minutes=5)
        daily = f"{fire.second} {fire.minute} {fire.hour} * * *"
        # created 3 minutes before: beyond any look-ahead, so the create dispatches nothing
        first = _create_schedules(env, app_id, endpoint_id, daily, due, fire - timedelta(minutes=3))
        ticks.append(_tick(env, "daily, one fire each", due, _from_ms(first)))
        env.reset()
        start = base + timedelta(minutes=30)
        many = max(2, due // 10)
        first = _create_schedules(env, app_id, endpoint_id, "*/5 * * * * *", many, start)
        ticks.append(_tick(env, "every 5 s, a dozen fires each", many, _from_ms(first)))
    finally:
        env.reset()
    return {"ticks": [asdict(t) for t in ticks], "per": split_costs(ticks[0], ticks[1], ticks[2])}


def _from_ms(ms: int) -> datetime:
    from edgecron import clock

    return clock.from_ms(ms)


def split_costs(empty: Tick, one_fire: Tick, many_fires: Tick) -> dict[str, dict[str, float]]:
    """Per due schedule and per fire, from two ticks over the same number of schedules with one and
    with many fires each (above the empty tick): a tick costs base + schedules x s + fires x f."""

    def figures(t: Tick) -> dict[str, float]:
        return {
            "io_s": t.io_s - empty.io_s,
            "modelled_s_1vcpu": t.modelled_s_1vcpu - empty.modelled_s_1vcpu,
            "dynamodb_requests": float(t.dynamodb_requests - empty.dynamodb_requests),
            "sqs_requests": float(t.sqs_requests - empty.sqs_requests),
            "rru": t.rru - empty.rru,
            "wru": t.wru_table + sum(t.wru_index_by_table.values()) - empty.wru_table,
            "wru_index": sum(t.wru_index_by_table.values()),
        }

    a, b = figures(one_fire), figures(many_fires)
    n_a, f_a = max(1, one_fire.due_schedules), max(1, one_fire.fires)
    n_b, f_b = max(1, many_fires.due_schedules), max(1, many_fires.fires)
    per_schedule: dict[str, float] = {}
    per_fire: dict[str, float] = {}
    for name in a:
        # a = n_a*s + f_a*f ; b = n_b*s + f_b*f
        det = n_a * f_b - n_b * f_a
        if det == 0:
            s, f = 0.0, a[name] / f_a
        else:
            s = (a[name] * f_b - b[name] * f_a) / det
            f = (n_a * b[name] - n_b * a[name]) / det
        if s < 0 or f < 0:  # noise: put it all on the fire
            s, f = 0.0, max(0.0, a[name] / f_a)
        per_schedule[name] = round(s, 5)
        per_fire[name] = round(f, 5)
    base = {
        "io_s": round(empty.io_s, 4),
        "modelled_s_1vcpu": round(empty.modelled_s_1vcpu, 4),
        "dynamodb_requests": float(empty.dynamodb_requests),
        "rru": empty.rru,
    }
    return {"tick_base": base, "due_schedule": per_schedule, "fire": per_fire}


def delivery_inputs(cost_data: dict[str, Any], a: Assumptions = ASSUMPTIONS) -> dict[str, dict[str, Any]]:
    """What the derivation takes from each cost scenario: requests and units per delivery, the
    records per worker batch, the price per million, and per-table writes. The price keeps every
    counted request and unit of the cost benchmark but replaces its Lambda GB-s (timed on this shared
    machine, against moto) with the AWS calls at regional latency plus the receiver's answer time."""
    out: dict[str, dict[str, Any]] = {}
    for scenario in cost_data.get("scenarios", []):
        per = scenario["per_delivery"]
        index_by_table: dict[str, float] = {}
        table_by_table: dict[str, float] = {}
        requests_by_table: dict[str, float] = {}
        for line in scenario["breakdown"]:
            if line["service"] != "dynamodb":
                continue
            res = line["resource"]
            index_by_table[res] = index_by_table.get(res, 0.0) + line["wru_index_per_delivery"]
            table_by_table[res] = table_by_table.get(res, 0.0) + (
                line["wru_per_delivery"] - line["wru_index_per_delivery"]
            )
            requests_by_table[res] = requests_by_table.get(res, 0.0) + line["requests_per_delivery"]
        worker = scenario["functions"].get("worker", {})
        batches = max(1.0, float(worker.get("invocations", 1)))
        records = float(worker.get("records", 0)) / batches
        usd = scenario["usd_per_million"]
        chain = delivery_chain_s(per)
        gb_s = (
            (chain + a.receiver_latency_s) / max(1.0, records) * prices.functions()["worker"].memory_mb / 1024
        )
        lambda_usd = gb_s * prices.functions()["worker"].gb_s_price * 1e6
        counted = usd["total"] - usd["lambda_gb_s"] + lambda_usd
        out[scenario["kind"]] = {
            "deliveries_measured": scenario["deliveries"],
            "records_per_worker_batch": round(records, 2),
            "worker_s_per_batch_modelled": round(
                float(worker.get("gb_s_modelled", 0.0))
                / batches
                / (prices.functions()["worker"].memory_mb / 1024),
                4,
            ),
            "aws_requests": per["aws_requests"],
            "dynamodb_requests": per["dynamodb_requests"],
            "sqs_requests": per["sqs_requests"],
            "lambda_invocations": per["lambda_invocations"],
            "wru": per["wru"],
            "wru_of_indexes": per["wru_of_indexes"],
            "rru": per["rru"],
            "stored_bytes": per["stored_bytes"],
            "usd_per_million_measured": usd["total"],
            "usd_per_million": round(counted, 3),
            "usd_per_million_all_in": round(scenario["usd_per_million_all_in"] - usd["total"] + counted, 3),
            "lambda_gb_s_usd_per_million_modelled": round(lambda_usd, 3),
            "usd_dynamodb_per_million": scenario["usd_per_million"]["dynamodb_write"]
            + scenario["usd_per_million"]["dynamodb_read"],
            "wru_index_by_table": {k: round(v, 3) for k, v in index_by_table.items() if v},
            "wru_table_by_table": {k: round(v, 3) for k, v in table_by_table.items() if v},
            "requests_by_table": {k: round(v, 3) for k, v in requests_by_table.items() if v},
        }
    return out


# -- the template's settings ----------------------------------------------------------------------------


def template_settings() -> dict[str, Any]:
    """The knobs of template.yaml the derivation reads (and an operator changes)."""
    from edgecron_cli.local.template import load_template

    template = load_template(prices.TEMPLATE)
    res = template.resources
    env = (template.globals_function.get("Environment") or {}).get("Variables") or {}

    def props(logical_id: str) -> dict[str, Any]:
        return dict(res[logical_id].get("Properties") or {})

    worker = props("WorkerFunction")
    esm = {
        name: (event.get("Properties") or {})
        for name, event in (worker.get("Events") or {}).items()
        if event.get("Type") == "SQS"
    }
    reserved = {
        logical: props(logical).get("ReservedConcurrentExecutions")
        for logical in prices.FUNCTION_IDS.values()
        if props(logical).get("ReservedConcurrentExecutions") is not None
    }
    indexes = []
    for table, spec in template.tables.items():
        for index in spec.get("GlobalSecondaryIndexes") or []:
            indexes.append(
                {
                    "table": table,
                    "index": index["IndexName"],
                    "key": [k["AttributeName"] for k in index["KeySchema"]],
                    "projection": index["Projection"]["ProjectionType"],
                }
            )
    return {
        "shards": int(template.parameters["Shards"]),
        "lookahead_s": int(env.get("LOOKAHEAD_SEC", 70)),
        "scan_timeout_s": template.functions["ScanFunction"].timeout,
        "scan_memory_mb": template.functions["ScanFunction"].memory_size,
        "worker_timeout_s": template.functions["WorkerFunction"].timeout,
        "worker_memory_mb": template.functions["WorkerFunction"].memory_size,
        "worker_batch_size": {n: int(p.get("BatchSize", 10)) for n, p in esm.items()},
        "worker_maximum_concurrency": {
            n: int((p.get("ScalingConfig") or {}).get("MaximumConcurrency", ACCOUNT_CONCURRENCY))
            for n, p in esm.items()
        },
        "reserved_concurrency": reserved,
        "delivery_visibility_s": int(props("DeliveryQueue").get("VisibilityTimeout", 30)),
        "billing_modes": sorted({str(s.get("BillingMode", "PROVISIONED")) for s in template.tables.values()}),
        "indexes": indexes,
    }


# -- deriving -------------------------------------------------------------------------------------------


def _shards_for(units_per_s: float, a: Assumptions) -> int:
    return max(1, math.ceil(units_per_s / (PARTITION_WCU * a.partition_headroom)))


def schedule_steps(
    scan: dict[str, Any], kinds: dict[str, dict[str, Any]], settings: dict[str, Any], a: Assumptions
) -> list[dict[str, Any]]:
    """Per schedule count: the peak minute's scan work against one tick's budget, and the write rate
    of the keys a fire touches against the partition limit."""
    from edgecron.services.scan_work import RESERVE_MS

    per_s, per_f, base = scan["per"]["due_schedule"], scan["per"]["fire"], scan["per"]["tick_base"]
    budget_s = settings["scan_timeout_s"] - RESERVE_MS / 1000
    scheduled = kinds.get("scheduled", {})
    fire_index = scheduled.get("wru_index_by_table", {})
    out = []
    for schedules in SCHEDULE_STEPS:
        fires_day = schedules * a.fires_per_schedule_day
        mean_minute = fires_day / 1440
        peak_minute = mean_minute * a.peak_minute_factor
        due_peak = min(schedules, peak_minute)  # one fire per due schedule in a minute at most
        per_io = per_s["io_s"] + per_f["io_s"]
        per_cpu = per_s["modelled_s_1vcpu"] + per_f["modelled_s_1vcpu"]
        tick_io = base["io_s"] + due_peak * per_io
        tick_cpu = base["modelled_s_1vcpu"] + due_peak * per_cpu
        capacity_io = (budget_s - base["io_s"]) / max(1e-6, per_io)
        capacity_cpu = (budget_s - base["modelled_s_1vcpu"]) / max(1e-6, per_cpu)
        peak_fires_s = peak_minute / TICK_S
        deliveries_peak_s = peak_fires_s * a.endpoints_per_fire
        # the write rate on each sharded index at the peak, from the scheduled path's index writes
        due_wcu = peak_fires_s * fire_index.get("SchedulesTable", 0.0) / a.endpoints_per_fire
        open_wcu = peak_fires_s * fire_index.get("FiresTable", 0.0) / a.endpoints_per_fire
        wake_wcu = deliveries_peak_s * fire_index.get("RunsTable", 0.0)  # its only index is `wake`
        busiest = max(due_wcu, open_wcu, wake_wcu)
        app_share = 1 / max(1, a.apps)
        out.append(
            {
                "schedules": schedules,
                "fires_per_day": fires_day,
                "due_per_minute_mean": round(mean_minute),
                "due_per_minute_peak": round(due_peak),
                "scan_tick_s_peak_io": round(tick_io, 1),
                "scan_tick_s_peak_1vcpu": round(tick_cpu, 1),
                "scan_budget_s": budget_s,
                "due_per_tick_capacity_io": round(capacity_io),
                "due_per_tick_capacity_1vcpu": round(capacity_cpu),
                "scan_ticks_of_work_io": max(1, math.ceil(tick_io / budget_s)),
                "scan_ticks_of_work_1vcpu": max(1, math.ceil(tick_cpu / budget_s)),
                "scan_rru_per_tick_peak": round(base["rru"] + due_peak * (per_s["rru"] + per_f["rru"])),
                "index_wcu_per_s_peak": {
                    "due": round(due_wcu),
                    "open_fires": round(open_wcu),
                    "wake": round(wake_wcu),
                },
                "index_wcu_per_shard_peak": round(busiest / settings["shards"], 1),
                "shards_needed": _shards_for(busiest, a),
                "schedules_table_wcu_per_app_peak": round(
                    peak_fires_s
                    * app_share
                    * scheduled.get("wru_table_by_table", {}).get("SchedulesTable", 0.0)
                ),
            }
        )
    return out


def scan_sustains(scan: dict[str, Any], settings: dict[str, Any], a: Assumptions) -> dict[str, float]:
    """How many fires a minute one scan dispatches at the AWS-call floor, and the schedules that
    allows at the assumed mix: with the busiest minute due within one tick, and with a look-ahead long
    enough to spread that minute over the ticks before it (LOOKAHEAD_SEC / 60 ticks of slack)."""
    from edgecron.services.scan_work import RESERVE_MS

    per, base = scan["per"], scan["per"]["tick_base"]
    budget_s = settings["scan_timeout_s"] - RESERVE_MS / 1000
    fires_per_tick = (budget_s - base["io_s"]) / max(1e-6, per["due_schedule"]["io_s"] + per["fire"]["io_s"])
    mean_limit = fires_per_tick * 1440 / a.fires_per_schedule_day
    slack = max(1.0, settings["lookahead_s"] / TICK_S)
    return {
        "fires_per_tick": round(fires_per_tick),
        "fires_per_day": round(fires_per_tick * 1440),
        "schedules_busiest_minute_in_one_tick": round(mean_limit / a.peak_minute_factor),
        "schedules_with_template_lookahead": round(mean_limit * min(1.0, slack / a.peak_minute_factor)),
        "schedules_with_600_s_lookahead": round(mean_limit * min(1.0, 10 / a.peak_minute_factor)),
    }


def delivery_steps(
    kinds: dict[str, dict[str, Any]], settings: dict[str, Any], a: Assumptions
) -> list[dict[str, Any]]:
    """Per delivery rate: worker concurrency and SQS traffic at the busiest second, DynamoDB units
    against the table quota and the hot per-App keys, and the monthly bill."""
    direct = kinds.get("direct") or next(iter(kinds.values()))
    batch = max(1.0, direct["records_per_worker_batch"])
    batch_s = delivery_chain_s(direct) + a.receiver_latency_s
    max_conc = sum(settings["worker_maximum_concurrency"].values())
    app_share = 1 / max(1, a.apps)
    out = []
    for per_day in DELIVERY_STEPS:
        mean_s = per_day / DAY_S
        peak_s = mean_s * a.peak_second_factor
        full_batch = settings["worker_batch_size"].get("Delivery", 10)
        # at a high rate the poller fills batches; at a low one they hold what the measurement saw
        records = full_batch if peak_s >= 10 * full_batch else batch
        concurrency = peak_s / records * batch_s
        monthly = per_day * MONTH_DAYS / 1e6
        wru_s = peak_s * direct["wru"]
        runs_table_wcu = peak_s * direct["wru_table_by_table"].get("RunsTable", 0.0)
        from edgecron.data.keys import RUN_PARTITIONS

        row: dict[str, Any] = {
            "deliveries_per_day": per_day,
            "mean_per_s": round(mean_s, 1),
            "peak_per_s": round(peak_s, 1),
            "worker_batch_s": round(batch_s, 3),
            "worker_concurrency_peak": math.ceil(concurrency),
            "worker_maximum_concurrency": max_conc,
            "account_concurrency_default": ACCOUNT_CONCURRENCY,
            "messages_in_flight_peak": math.ceil(concurrency * records),
            "sqs_requests_per_s_peak": round(peak_s * direct["sqs_requests"]),
            "dynamodb_requests_per_s_peak": round(peak_s * direct["dynamodb_requests"]),
            "wru_per_s_peak": round(wru_s),
            "task_runs_table_wcu_per_s_peak": round(runs_table_wcu),
            # an App's runs are spread evenly over its RUN_PARTITIONS keys of the Task Runs table
            "runs_partition_wcu_per_app_peak": round(
                peak_s * app_share * direct["wru_table_by_table"].get("RunsTable", 0.0) / RUN_PARTITIONS
            ),
            "usage_item_wcu_per_app_peak": round(
                peak_s * app_share * direct["wru_table_by_table"].get("UsageTable", 0.0)
            ),
            "endpoint_reads_per_app_peak": round(
                peak_s * app_share * direct["requests_by_table"].get("EndpointsTable", 0.0)
            ),
            "stored_tb_90d": round(per_day * 90 * direct["stored_bytes"] / 1e12, 2),
            "usd_month": {},
        }
        for kind, k in kinds.items():
            on_demand = monthly * k["usd_per_million"]
            ddb = monthly * k["usd_dynamodb_per_million"]
            row["usd_month"][kind] = {
                "on_demand": round(on_demand),
                "all_in": round(monthly * k["usd_per_million_all_in"]),
                "with_provisioned_dynamodb": round(on_demand - ddb + monthly * provisioned_usd_per_m(k, a)),
            }
        out.append(row)
    return out


def delivery_chain_s(k: dict[str, Any]) -> float:
    """One delivery's AWS calls one after the other at regional latency (the records of a batch run
    side by side, so this is also a batch's time without the receiver and the CPU)."""
    ddb, sqs = float(k["dynamodb_requests"]), float(k["sqs_requests"])
    other = max(0.0, float(k["aws_requests"]) - ddb - sqs)
    return (
        ddb * prices.LATENCY_S["dynamodb"] + sqs * prices.LATENCY_S["sqs"] + other * prices.DEFAULT_LATENCY_S
    )


def provisioned_usd_per_m(k: dict[str, Any], a: Assumptions) -> float:
    """DynamoDB per million deliveries on provisioned capacity used at `provisioned_utilisation`."""
    per_wru = PROVISIONED_WCU_HOUR / 3600 / a.provisioned_utilisation
    per_rru = PROVISIONED_RCU_HOUR / 3600 / a.provisioned_utilisation
    return 1e6 * (float(k["wru"]) * per_wru + float(k["rru"]) * per_rru)


def derive(scan: dict[str, Any], cost_data: dict[str, Any], a: Assumptions = ASSUMPTIONS) -> dict[str, Any]:
    settings = template_settings()
    kinds = delivery_inputs(cost_data, a)
    if not kinds:
        raise RuntimeError(f"the cost benchmark measured no scenario: {cost_data.get('not_measured')}")
    return {
        "assumptions": asdict(a),
        "template": settings,
        "per_delivery_inputs": kinds,
        "on_demand_vs_provisioned_per_million_units": {
            "on_demand_wru": PRICES.dynamodb_wru * 1e6,
            "provisioned_wru_at_utilisation": round(
                PROVISIONED_WCU_HOUR / 3600 / a.provisioned_utilisation * 1e6, 4
            ),
            "on_demand_rru": PRICES.dynamodb_rru * 1e6,
            "provisioned_rru_at_utilisation": round(
                PROVISIONED_RCU_HOUR / 3600 / a.provisioned_utilisation * 1e6, 4
            ),
            "break_even_utilisation_writes": round(PROVISIONED_WCU_HOUR / 3600 / PRICES.dynamodb_wru, 3),
        },
        "scan_sustains": scan_sustains(scan, settings, a),
        "schedule_steps": schedule_steps(scan, kinds, settings, a),
        "delivery_steps": delivery_steps(kinds, settings, a),
    }


# -- the benchmark --------------------------------------------------------------------------------------


def run(
    env: Env, *, due: int, runs: int, cost_data: dict[str, Any] | None = None
) -> tuple[list[Row], dict[str, Any]]:
    """`cost_data`: the cost benchmark's results of this run (measured here with `runs` per kind if
    not given)."""
    measured_cost = cost_data is None or not cost_data.get("scenarios")
    if measured_cost:
        from bench import cost

        _, cost_data = cost.run(env, runs=runs)
    assert cost_data is not None
    scan = measure_scan(env, due)
    derived = derive(scan, cost_data)
    per = scan["per"]
    steps = {s["schedules"]: s for s in derived["schedule_steps"]}
    deliveries = {d["deliveries_per_day"]: d for d in derived["delivery_steps"]}
    top_s, top_d = steps[SCHEDULE_STEPS[-1]], deliveries[DELIVERY_STEPS[-1]]
    direct = derived["per_delivery_inputs"].get("direct") or next(
        iter(derived["per_delivery_inputs"].values())
    )
    both = {k: per["due_schedule"][k] + per["fire"][k] for k in per["fire"]}
    rows = [
        Row(
            "scaling",
            f"scan cost per due schedule and its fire (measured, {due} due)",
            f"{both['dynamodb_requests']:.1f} DynamoDB + {both['sqs_requests']:.1f} SQS requests, "
            f"{both['wru']:.1f} WRU ({both['wru_index']:.1f} in indexes), {both['rru']:.1f} RRU; "
            f"{both['io_s'] * 1000:.0f} ms of AWS calls at regional latency",
            "report",
            "n/a",
        ),
        Row(
            "scaling",
            "due schedules one scan tick dispatches (derived)",
            f"at most {top_s['due_per_tick_capacity_io']:,} in {top_s['scan_budget_s']:.0f} s "
            f"(its AWS calls alone, one after the other)",
            "report",
            "n/a",
        ),
        Row(
            "scaling",
            f"{SCHEDULE_STEPS[-1]:,} schedules, busiest minute (derived)",
            f"{top_s['due_per_minute_peak']:,} due: {top_s['scan_ticks_of_work_io']} ticks of scan work "
            f"in one minute; SHARDS >= {top_s['shards_needed']}",
            "report",
            "n/a",
        ),
        Row(
            "scaling",
            f"{DELIVERY_STEPS[-1]:,} deliveries a day, busiest second (derived)",
            f"{top_d['peak_per_s']:,.0f}/s: worker concurrency {top_d['worker_concurrency_peak']:,} "
            f"(template cap {top_d['worker_maximum_concurrency']}), {top_d['wru_per_s_peak']:,} WRU/s; "
            f"direct ${top_d['usd_month'].get('direct', {}).get('on_demand', 0):,}/month on-demand "
            f"({direct['wru']:.1f} WRU per delivery)",
            "report",
            "n/a",
        ),
    ]
    return rows, {
        "due": due,
        "cost_runs": runs if measured_cost else cost_data.get("runs"),
        "cost_measured_here": measured_cost,
        "scan": scan,
        **derived,
    }


# -- the tables of docs/scaling.md ---------------------------------------------------------------------


def _n(value: float) -> str:
    """1,000 -> 1 k, 10,000,000 -> 10 M."""
    for size, unit in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:,.0f} {unit}" if value % size == 0 else f"{value / size:,.1f} {unit}"
    return f"{value:,.0f}"


def markdown(data: dict[str, Any]) -> str:
    """The derived tables of docs/scaling.md from a results.json's `scaling` entry, so the page can
    be refreshed after a re-run: `python -m bench.scaling [results.json]`."""
    lines = [
        "| schedules | fires a day | due in the busiest minute | scan work in that minute (AWS calls "
        "alone) | ticks of work | `due` / `open_fires` / `wake` WCU/s | SHARDS needed | Schedules WCU/s per App |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for step in data["schedule_steps"]:
        idx = step["index_wcu_per_s_peak"]
        lines.append(
            f"| {_n(step['schedules'])} | {_n(step['fires_per_day'])} | {step['due_per_minute_peak']:,} "
            f"| {step['scan_tick_s_peak_io']:,} s | {step['scan_ticks_of_work_io']} "
            f"| {idx['due']:,} / {idx['open_fires']:,} / {idx['wake']:,} | {step['shards_needed']} "
            f"| {step['schedules_table_wcu_per_app_peak']:,} |"
        )
    lines += [
        "",
        "| deliveries a day | busiest second | worker concurrency | messages in flight | SQS requests/s "
        "| DynamoDB WRU/s | TaskRuns table WCU/s | per App: runs partition / usage item WCU/s, Endpoint reads/s "
        "| 90-day history |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d in data["delivery_steps"]:
        lines.append(
            f"| {_n(d['deliveries_per_day'])} | {d['peak_per_s']:,.0f}/s | {d['worker_concurrency_peak']:,} "
            f"| {d['messages_in_flight_peak']:,} | {d['sqs_requests_per_s_peak']:,} | {d['wru_per_s_peak']:,} "
            f"| {d['task_runs_table_wcu_per_s_peak']:,} | {d['runs_partition_wcu_per_app_peak']:,} / "
            f"{d['usage_item_wcu_per_app_peak']:,}, {d['endpoint_reads_per_app_peak']:,} "
            f"| {d['stored_tb_90d']} TB |"
        )
    kinds = list(data["per_delivery_inputs"])
    lines += [
        "",
        "| deliveries a day | " + " | ".join(f"{k}: on-demand (provisioned) $/month" for k in kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    for d in data["delivery_steps"]:
        cost = " | ".join(
            f"{d['usd_month'][k]['on_demand']:,} ({d['usd_month'][k]['with_provisioned_dynamodb']:,})"
            for k in kinds
        )
        lines.append(f"| {_n(d['deliveries_per_day'])} | {cost} |")
    lines += [
        "",
        "| kind | DynamoDB requests | WRU (in indexes) | RRU | SQS requests | Lambda invocations | $/M | all-in $/M |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, k in data["per_delivery_inputs"].items():
        lines.append(
            f"| {kind} | {k['dynamodb_requests']} | {k['wru']} ({k['wru_of_indexes']}) | {k['rru']} "
            f"| {k['sqs_requests']} | {k['lambda_invocations']} | {k['usd_per_million']:.2f} "
            f"| {k['usd_per_million_all_in']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    import json
    import sys
    from pathlib import Path

    from bench.report import RESULTS

    path = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS
    print(markdown(json.loads(path.read_text())["benchmarks"]["scaling"]))
