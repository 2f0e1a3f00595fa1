"""A tiny run of the in-process benchmarks (bench/), so CI notices when the benchmark code breaks.

It reuses this directory's moto environment (bench.inproc imports conftest.py) and asserts only that
figures are produced and sane: never on a time, a price or a target (those are in docs/benchmarks.md)."""

from __future__ import annotations

import math

import pytest

from bench import dynamo
from bench.inproc import environment


def test_item_sizes_follow_the_dynamodb_rules() -> None:
    assert dynamo.item_size({"id": {"S": "abc"}}) == 5
    assert dynamo.number_size("12345") == 4  # 5 significant digits -> 3 bytes + 1
    assert dynamo.number_size("100.00") == 2
    assert dynamo.item_size({"m": {"M": {"k": {"BOOL": True}}}}) == 1 + 3 + 1 + 1 + 1
    assert dynamo.read_units(4097, consistent=False) == 1.0
    assert dynamo.read_units(100, consistent=True) == 1.0
    assert dynamo.write_units(1025) == 2


def test_index_writes_are_counted() -> None:
    schema = dynamo.TableSchema("T", "t", ("id",), (dynamo.IndexSchema("wake", ("shard", "at"), "ALL"),))
    old = {"id": {"S": "r1"}, "shard": {"S": "0"}, "at": {"N": "1"}, "status": {"S": "pending"}}
    moved = {**old, "at": {"N": "2"}}
    finished = {"id": {"S": "r1"}, "status": {"S": "success"}}
    assert dynamo.change_cost(schema, None, old).total == 2  # table + new index entry
    assert dynamo.change_cost(schema, old, moved).indexes == {"wake": 2}  # key change: delete + put
    assert dynamo.change_cost(schema, old, finished).indexes == {"wake": 1}  # leaves the sparse index
    assert dynamo.failed_condition_cost(old).total == 1


def _sane(value: float) -> bool:
    return math.isfinite(value) and value >= 0


@pytest.mark.slow
def test_cost_benchmark_produces_figures() -> None:
    from bench import cost

    rows, data = cost.run(environment(), runs=5, smoke=True)
    measured = {s["kind"]: s for s in data["scenarios"]}
    assert {"direct", "direct (trickle)", "direct, 20% retried", "scheduled"} <= set(measured), data[
        "not_measured"
    ]
    assert set(measured) | set(data["not_measured"]) >= {"event fan-out"}  # measured, or said why not
    for scenario in measured.values():
        assert scenario["verified"]
        per = scenario["per_delivery"]
        assert per["aws_requests"] > 0 and per["dynamodb_requests"] > 0 and per["lambda_invocations"] > 0
        assert per["wru"] >= 1 and per["rru"] > 0 and per["sqs_requests"] > 0
        usd = scenario["usd_per_million"]
        assert all(_sane(v) for v in usd.values()) and usd["total"] > 0
        assert scenario["usd_per_million_all_in"] >= usd["total"]
        assert scenario["breakdown"] and not scenario["unpriced_operations"]
    assert measured["direct, 20% retried"]["attempts"] > measured["direct, 20% retried"]["deliveries"]
    assert data["fixed_monthly"]["usd_per_month"]["total"] > 0
    assert any(r.bench == "cost" and r.figure.startswith("$") for r in rows)
    # runs that wait for a slot are priced, but no per-delivery target applies to waiting
    waiting = [r for r in rows if r.case.startswith(f"{cost.WAITING_SCENARIO} (")]
    assert waiting and all(r.target == "" and r.verdict == "n/a" for r in waiting)


@pytest.mark.slow
def test_sizing_benchmark_produces_figures() -> None:
    from bench import prices, sizing

    rows, data = sizing.run(environment(), runs=3)
    measured = data["functions"]
    assert set(sizing.MEASURED) <= set(measured)
    for name, figures in measured.items():
        function = name.split(" ")[0]
        assert figures["template_mb"] == prices.functions()[function].memory_mb
        assert figures["profile"]["invocations"] > 0 and figures["profile"]["cpu_s"] > 0, name
        assert 0 < figures["rss_mb"] < 1024 and figures["import_s"] > 0
        durations = [figures["sizes"][mb]["duration_ms"] for mb in sizing.SIZES_MB]
        assert durations == sorted(durations, reverse=True), name  # more memory, more CPU, less time
        assert all(
            _sane(s["usd_per_invocation"]) and s["usd_per_invocation"] > 0 for s in figures["sizes"].values()
        )
    assert len(rows) == len(measured) and all(r.bench == "sizing" for r in rows)
    assert sizing.provisioned_usd_month(1024) > sizing.provisioned_usd_month(512) > 0
    assert sizing.snapstart_usd_month(512, 0) > 0


@pytest.mark.slow
def test_catchup_benchmark_produces_figures() -> None:
    from bench import catchup

    rows, data = catchup.run(environment(), repeats=5, apply=("1 day",))
    plans = [c for c in data["cases"] if "plan_cpu_ms" in c]
    assert len(plans) == len(catchup.CRONS) * len(catchup.OUTAGES) * 2
    assert all(_sane(c["plan_cpu_ms"]) for c in plans)
    applied = [c["apply"] for c in data["cases"] if "apply" in c]
    assert applied and all(a["dynamodb_requests"] > 0 and a["missed_recorded"] > 0 for a in applied)
    assert len(rows) == 2 * len(catchup.CRONS)


@pytest.mark.slow
def test_scan_benchmark_produces_figures() -> None:
    from bench import scan

    rows, data = scan.run(environment(), sizes=(10, 30), variants=("paused", "future"), due=2)
    for variant in ("paused", "future"):
        result = data["variants"][variant]
        assert result["both_saw_all_due"]
        assert all(m["dynamodb_requests"] > 0 and m["rru"] > 0 for m in result["measurements"])
        assert _sane(result["ratio_requests"]) and _sane(result["ratio_rru"])
    assert len(rows) == 2


@pytest.mark.slow
def test_coldstart_benchmark_produces_figures() -> None:
    from bench import coldstart

    rows, data = coldstart.run(1)
    names = {f.name for f in coldstart.functions()}
    measured = data["functions"]["this"]
    assert set(measured) == names
    for figures in measured.values():
        assert figures["import_ms"]["median"] > 0 and figures["rss_import_mb"] > 0
        assert figures["tracing_on"]["import_ms"]["median"] > 0
        first = figures["first_invocation"]
        assert first["invoke_ms"] > 0 and first["rss_invoke_mb"] >= first["rss_import_mb"] > 0
    assert data["boto3_floor"]["import_ms"]["median"] > 0
    assert data["functions_floor"]["import_ms"]["median"] > 0
    # each first invocation did its work: the worker's run reached the receiver, the API answered
    assert measured["worker"]["first_invocation"]["result"] == {"batchItemFailures": []}
    assert data["receiver_requests"] >= 1
    assert measured["api"]["first_invocation"]["result"]["statusCode"] == 200
    assert measured["compensation"]["first_invocation"]["result"]["Status"] == "SUCCESS"
    assert len([r for r in rows if r.case.endswith(("(source)", "(built)"))]) == len(names)
