"""`python -m bench`: run the benchmarks of docs/benchmarks.md, print a table, write bench/results.json.

Benchmarks never fail on a figure: a missed target is a row that says MISSES. The exit status is 1 only
when a benchmark could not run at all (its row then says ERROR and results.json has the reason)."""

from __future__ import annotations

import argparse
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.report import RESULTS, Row, machine, table, write

# Run order: the scan benchmark leaves up to 200,000 schedules behind, so nothing in-process runs after it;
# the cold starts run first, in processes of their own, before this one holds moto and its tables.
ALL = ("coldstart", "cost", "sizing", "catchup", "throughput", "scaling", "scan", "precision")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", default=",".join(ALL), help=f"comma-separated subset of {', '.join(ALL)}")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check that everything runs")
    parser.add_argument("--runs", type=int, help="deliveries per cost scenario (default 1000; smoke 5)")
    parser.add_argument(
        "--precision-seconds", type=float, help="how long the schedules run (default 60; smoke 5)"
    )
    parser.add_argument(
        "--precision-schedules",
        type=_ints,
        help="schedule counts, one measurement each (default 20,1: the target load, then one the "
        "local stack can carry; smoke 1)",
    )
    parser.add_argument("--precision-cron", help="the schedules' cron (default every second; smoke */5)")
    parser.add_argument("--scan-sizes", type=_ints, help="small,large schedule counts (default 1000,100000)")
    parser.add_argument("--scan-due", type=int, help="schedules due in each scan (default 100; smoke 2)")
    parser.add_argument(
        "--scan-variants", default="paused,future", help="paused and/or future (see bench/scan.py)"
    )
    parser.add_argument("--catchup-repeats", type=int, help="plans timed per case (default 200; smoke 20)")
    parser.add_argument(
        "--throughput-runs", type=int, help="direct runs on the local stack (default 500; smoke 10)"
    )
    parser.add_argument(
        "--scan-interval", default="60", help="the local stack's scan interval, s (deployed: 60)"
    )
    parser.add_argument(
        "--stack-root",
        type=Path,
        help="run the local stack from another checkout (to measure a proposed fix); default: this one",
    )
    parser.add_argument(
        "--scaling-size",
        type=int,
        help="schedules per measured scan tick, and deliveries per cost scenario when cost is not run "
        "too (default 50; smoke 3)",
    )
    parser.add_argument(
        "--coldstart-runs", type=int, help="fresh interpreters per handler import (default 7; smoke 2)"
    )
    parser.add_argument(
        "--coldstart-baseline",
        type=Path,
        help="also measure another checkout's cold starts in the same run (e.g. the code before a change)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results.json")
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(ALL)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    smoke = args.smoke
    args.runs = args.runs or (5 if smoke else 1000)
    args.precision_seconds = args.precision_seconds or (5.0 if smoke else 60.0)
    args.precision_schedules = args.precision_schedules or ((1,) if smoke else (20, 1))
    args.precision_cron = args.precision_cron or ("*/5 * * * * *" if smoke else "* * * * * *")
    args.scan_sizes = args.scan_sizes or ((20, 60) if smoke else (1_000, 100_000))
    args.scan_due = args.scan_due or (2 if smoke else 100)
    args.catchup_repeats = args.catchup_repeats or (20 if smoke else 200)
    args.throughput_runs = args.throughput_runs or (10 if smoke else 500)
    args.scaling_size = args.scaling_size or (3 if smoke else 50)
    args.coldstart_runs = args.coldstart_runs or (2 if smoke else 7)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    selected = [name for name in ALL if name in args.only.split(",")]
    env: Any = None
    if {"cost", "sizing", "catchup", "throughput", "scaling", "scan"} & set(selected):
        from bench.inproc import environment

        env = environment()  # before anything imports the core package (it reads table names at import)

    def coldstart() -> tuple[list[Row], dict[str, Any]]:
        from bench import coldstart

        return coldstart.run(args.coldstart_runs, baseline=args.coldstart_baseline)

    def cost() -> tuple[list[Row], dict[str, Any]]:
        from bench import cost

        return cost.run(env, runs=args.runs, smoke=args.smoke)

    def sizing() -> tuple[list[Row], dict[str, Any]]:
        from bench import sizing

        return sizing.run(env, runs=args.runs)

    def catchup() -> tuple[list[Row], dict[str, Any]]:
        from bench import catchup

        apply = catchup.APPLY_OUTAGES[1:2] if args.smoke else catchup.APPLY_OUTAGES
        return catchup.run(env, repeats=args.catchup_repeats, apply=apply)

    def throughput() -> tuple[list[Row], dict[str, Any]]:
        from bench import throughput

        rows, batch = throughput.batch_concurrency(env)
        more, stack = throughput.stack_throughput(stacks.get(), runs=args.throughput_runs)
        return rows + more, {"batch": batch, "local_stack": stack, "scan_interval_s": args.scan_interval}

    def scan() -> tuple[list[Row], dict[str, Any]]:
        from bench import scan

        variants = tuple(v for v in args.scan_variants.split(",") if v)
        return scan.run(
            env, sizes=(args.scan_sizes[0], args.scan_sizes[1]), variants=variants, due=args.scan_due
        )

    def scaling() -> tuple[list[Row], dict[str, Any]]:
        from bench import scaling

        cost_data = document["benchmarks"].get("cost")  # this run's, when cost ran first
        return scaling.run(env, due=args.scaling_size, runs=args.scaling_size, cost_data=cost_data)

    def precision() -> tuple[list[Row], dict[str, Any]]:
        from bench import precision

        rows, data = precision.run(
            stacks.get(),
            duration_s=args.precision_seconds,
            schedule_counts=args.precision_schedules,
            cron=args.precision_cron,
        )
        return rows, data | {"scan_interval_s": args.scan_interval}

    runners: dict[str, Callable[[], tuple[list[Row], dict[str, Any]]]] = {
        "coldstart": coldstart,
        "cost": cost,
        "sizing": sizing,
        "catchup": catchup,
        "throughput": throughput,
        "scaling": scaling,
        "scan": scan,
        "precision": precision,
    }
    rows: list[Row] = []
    document: dict[str, Any] = {"machine": machine(), "arguments": _arguments(args), "benchmarks": {}}
    failed = False
    with ExitStack() as exits:
        stacks = SharedStack(exits, args.scan_interval, args.stack_root)
        failed = _run_all(selected, runners, rows, document)
    print(table(rows))
    path = write(document, rows, args.output)
    print(f"\nwrote {path}")
    return 1 if failed else 0


class SharedStack:
    """One local stack for the benchmarks that need one, started on first use, stopped at the end."""

    def __init__(self, exits: ExitStack, scan_interval: str, root: Path | None) -> None:
        self._exits = exits
        self._scan_interval = scan_interval
        self._root = root
        self._stack: Any = None

    def get(self) -> Any:
        if self._stack is None:
            from bench.localstack import local_stack

            self._stack = self._exits.enter_context(local_stack(self._scan_interval, self._root))
        return self._stack


def _run_all(
    selected: list[str],
    runners: dict[str, Callable[[], tuple[list[Row], dict[str, Any]]]],
    rows: list[Row],
    document: dict[str, Any],
) -> bool:
    """Run each selected benchmark; a crash becomes an ERROR row. True if any crashed."""
    failed = False
    for name in selected:
        print(f"==> {name}", file=sys.stderr, flush=True)
        started = time.monotonic()
        try:
            got, data = runners[name]()
        except Exception as exc:
            failed = True
            got = [Row(name, "could not run", f"{type(exc).__name__}: {exc}", "", "ERROR")]
            data = {"error": traceback.format_exc()}
        data["benchmark_wall_s"] = round(time.monotonic() - started, 1)
        document["benchmarks"][name] = data
        rows.extend(got)
        print(table(got), file=sys.stderr, flush=True)
    return failed


def _arguments(args: argparse.Namespace) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}


if __name__ == "__main__":
    sys.exit(main())
