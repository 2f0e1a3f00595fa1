"""Benchmark 3: does a scan cost what is due, or what exists?

One scan (functions/scan/app.py) runs with the same number of schedules due (100 by default), first with a small schedule
table and then with a large one; the DynamoDB requests and read units of the two scans should be the
same (target: ratio <= 1.1). The schedules that are not due are written with pynamodb batch writes in
one of two shapes, because the `due` index holds only ACTIVE schedules:
- "paused": PAUSED, without `due_shard`, so they are not in the index at all;
- "future": ACTIVE, in the index: daily schedules at other times of the day (one to 22 hours after the
  due ones), so their slots lie outside the scan's window.
Both measurements of a variant happen at the same instant, so nothing but the table size changes; the
schedules a measurement dispatched are paused after it (advanced to the next day, they kept a slot in
the same window). The scan starts where a tick one window earlier would have stopped, with every
schedule's slot given."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.inproc import Env
from bench.report import Row, verdict

TARGET_RATIO = 1.1
DUE = 100
HOUR_MS = 3_600_000


@dataclass
class Table:
    """What the benchmark has written to the schedules table so far."""

    written: int = 0
    in_index: int = 0
    write_s: float = 0.0


def _schedules(
    app_id: str, endpoint_id: str, count: int, *, next_fire_at: int, active: bool, later: bool = False
) -> list[Any]:
    """Schedule items as services.schedules.create writes them: daily, at the time of day of
    `next_fire_at`, or (`later`) each at another time of day between one and 22 hours after it."""
    from edgecron import clock, ids
    from edgecron.data import schedules as schedule_data
    from edgecron.domain.schedules import Schedule
    from edgecron.domain.vocabulary import ScheduleStatus

    now_ms = clock.to_ms(clock.now())
    items = []
    for i in range(count):
        fire_ms = next_fire_at + (HOUR_MS + (i * 7_919_000) % (21 * HOUR_MS) if later else 0)
        fire = clock.from_ms(fire_ms)
        schedule = Schedule(
            app_id=app_id,
            schedule_id=ids.new_id("sch", now_ms),
            created_at=now_ms,
            updated_at=now_ms,
            name="bench scan",
            cron=f"{fire.second} {fire.minute} {fire.hour} * * *",
            endpoint_ids=(endpoint_id,),
            payload={"kind": "bench"},
            status=ScheduleStatus.ACTIVE if active else ScheduleStatus.PAUSED,
            next_fire_at=fire_ms,
        )
        items.append(schedule_data.stored_item(schedule))
    return items


def _retire(items: list[Any]) -> None:
    from edgecron.data.models import ScheduleModel as M

    for item in items:
        M(app_id=item.app_id, schedule_id=item.schedule_id).update(
            actions=[M.status.set("PAUSED"), M.due_shard.remove(), M.due_slot.remove()]
        )


def _write(items: list[Any], table: Table, *, in_index: bool) -> None:
    from edgecron.data.models import ScheduleModel

    started = time.perf_counter()
    with ScheduleModel.batch_write() as batch:
        for item in items:
            batch.save(item)
    table.write_s += time.perf_counter() - started
    table.written += len(items)
    table.in_index += len(items) if in_index else 0


def _scan(env: Env, at: datetime) -> dict[str, Any]:
    from edgecron import clock
    from edgecron_testing.inprocess import due_walk_left_at

    clock.set_clock(clock.FixedClock(at))
    due_walk_left_at(clock.to_ms(at) - 1)  # the tick before ended its window just before the due time
    try:
        with env.window() as usage:
            started = time.perf_counter()
            result = env.invoke(
                "scan", {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}
            )
            wall = time.perf_counter() - started
    finally:
        clock.set_clock(clock.SystemClock())
        env.conftest.drain_queues()  # the 100 dispatched runs are not delivered here
    ddb = usage.total("dynamodb")
    reads = sum(
        v.requests
        for (_, service, op, _), v in usage.ops.items()
        if service == "dynamodb" and op in ("Query", "Scan")
    )
    rru_by_call: dict[str, float] = {}
    for (_, service, op, resource), v in usage.ops.items():
        if service == "dynamodb" and v.rru:
            rru_by_call[f"{op} {resource}"] = rru_by_call.get(f"{op} {resource}", 0.0) + v.rru
    return {
        "rru_by_call": rru_by_call,
        "due_schedules": int((result or {}).get("due_schedules", 0)),
        "fires_dispatched": int((result or {}).get("fires_dispatched", 0)),
        "dynamodb_requests": ddb.requests,
        "index_queries": reads,
        "rru": ddb.rru,
        "wru": ddb.wru,
        "scan_wall_s_moto": round(wall, 2),
    }


def run(
    env: Env, *, sizes: tuple[int, int], variants: tuple[str, ...], due: int = DUE
) -> tuple[list[Row], dict[str, Any]]:
    small, large = sizes
    if not due < small < large:
        raise ValueError(f"need due < small < large, got {due}, {small}, {large}")
    # paused first: its schedules stay out of the index, so the future variant's sets do not skew it
    variants = tuple(sorted(variants, key=lambda v: v != "paused"))
    app_id, key = env.new_app("bench-scan")
    resp = env.api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/never"})
    endpoint_id = str(resp.body["id"])
    env.reset()
    at = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=10)
    from edgecron import clock

    due_ms = clock.to_ms(at)
    table = Table()
    rows: list[Row] = []
    out: dict[str, Any] = {"due": due, "sizes": [small, large], "target_ratio": TARGET_RATIO, "variants": {}}
    for variant in variants:
        active = variant == "future"
        measured: list[dict[str, Any]] = []
        for size in (small, large):
            before = table.written
            already = sum(m["schedules"] for m in measured)  # the previous phase's set stays
            due_now = _schedules(app_id, endpoint_id, due, next_fire_at=due_ms, active=True)
            _write(due_now, table, in_index=True)
            rest = max(0, size - due - already)
            not_due = _schedules(app_id, endpoint_id, rest, next_fire_at=due_ms, active=active, later=True)
            _write(not_due, table, in_index=active)
            scan = _scan(env, at)
            # dispatched and advanced to the next day, they keep their slot: the next measurement, at
            # the same instant, would read them again, which no tick does on a real day; they stay
            # in the table, paused
            _retire(due_now)
            scan |= {
                "schedules": table.written - before + already,
                "table_items": table.written,
                "index_items": table.in_index,
                "setup_write_s": round(table.write_s, 1),
            }
            measured.append(scan)
        ratio_requests = measured[1]["dynamodb_requests"] / max(1, measured[0]["dynamodb_requests"])
        ratio_rru = measured[1]["rru"] / max(0.5, measured[0]["rru"])
        ok = measured[0]["due_schedules"] == due == measured[1]["due_schedules"]
        out["variants"][variant] = {
            "measurements": measured,
            "ratio_requests": round(ratio_requests, 3),
            "ratio_rru": round(ratio_rru, 3),
            "both_saw_all_due": ok,
        }
        rows.append(
            Row(
                "scan",
                f"{variant}: {measured[0]['schedules']:,} vs {measured[1]['schedules']:,} schedules, {due} due",
                f"requests {measured[0]['dynamodb_requests']} vs {measured[1]['dynamodb_requests']} (x{ratio_requests:.2f}), "
                f"RRU {measured[0]['rru']:.1f} vs {measured[1]['rru']:.1f} (x{ratio_rru:.2f})",
                f"ratio <= {TARGET_RATIO}",
                verdict(ok and ratio_requests <= TARGET_RATIO and ratio_rru <= TARGET_RATIO),
            )
        )
    out["table_items_written"] = table.written
    out["setup_write_s"] = round(table.write_s, 1)
    return rows, out
