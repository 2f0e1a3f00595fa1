"""A tiny run of the scaling simulation (bench/scaling.py), so CI notices when it breaks.

Like test_bench_smoke.py it asserts only that figures are produced and hang together: never a time, a
price or a limit (docs/scaling.md reads them)."""

from __future__ import annotations

import math

import pytest

from bench.inproc import environment


@pytest.mark.slow
def test_scaling_simulation_produces_figures_at_every_step() -> None:
    from bench import scaling

    rows, data = scaling.run(environment(), due=2, runs=3)
    ticks = {t["shape"]: t for t in data["scan"]["ticks"]}
    assert ticks["nothing due"]["due_schedules"] == 0
    assert ticks["daily, one fire each"]["due_schedules"] == 2 == ticks["daily, one fire each"]["fires"]
    many = ticks["every 5 s, a dozen fires each"]
    assert many["due_schedules"] == 2 and many["fires"] > 2 * 2
    per = data["scan"]["per"]
    for part in ("due_schedule", "fire"):
        assert all(math.isfinite(v) and v >= 0 for v in per[part].values())
    assert per["due_schedule"]["dynamodb_requests"] + per["fire"]["dynamodb_requests"] > 0
    assert {"direct", "scheduled"} <= set(data["per_delivery_inputs"])
    steps = data["schedule_steps"]
    assert [s["schedules"] for s in steps] == list(scaling.SCHEDULE_STEPS)
    assert all(s["due_per_tick_capacity_io"] > 0 and s["shards_needed"] >= 1 for s in steps)
    assert steps[0]["scan_tick_s_peak_io"] <= steps[-1]["scan_tick_s_peak_io"]  # more schedules, more work
    deliveries = data["delivery_steps"]
    assert [d["deliveries_per_day"] for d in deliveries] == list(scaling.DELIVERY_STEPS)
    assert all(
        d["worker_concurrency_peak"] >= 1 and d["usd_month"]["direct"]["on_demand"] >= 0 for d in deliveries
    )
    assert deliveries[0]["wru_per_s_peak"] <= deliveries[-1]["wru_per_s_peak"]
    assert len(rows) == 4 and all(r.bench == "scaling" and r.figure for r in rows)
