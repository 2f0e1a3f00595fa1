"""EventBridge Scheduler expressions: each accepted form, what it is shown as and its next fire
times; each refused form and the reason given."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edgecron.domain import cron
from edgecron.domain.cron import CronError

NOW = datetime(2026, 12, 5, 6, 0, 0, tzinfo=UTC)  # a Saturday


def iso(values: list[datetime]) -> list[str]:
    return [v.strftime("%Y-%m-%dT%H:%M:%SZ") for v in values]


# expression, zone, equivalent shown, the next three fire times after NOW (UTC)
ACCEPTED = [
    (
        "cron(0 9 ? * MON-FRI *)",
        "UTC",
        "0 9 * * MON-FRI",
        ["2026-12-07T09:00:00Z", "2026-12-08T09:00:00Z", "2026-12-09T09:00:00Z"],
    ),
    (  # EventBridge numbers days 1 = SUN ... 7 = SAT
        "cron(0 9 ? * 2-6 *)",
        "Europe/Paris",
        "0 9 * * 1-5",
        ["2026-12-07T08:00:00Z", "2026-12-08T08:00:00Z", "2026-12-09T08:00:00Z"],
    ),
    (
        "cron(0/15 * * * ? *)",
        "UTC",
        "0/15 * * * *",
        ["2026-12-05T06:15:00Z", "2026-12-05T06:30:00Z", "2026-12-05T06:45:00Z"],
    ),
    (
        "cron(30 18 L * ? *)",
        "UTC",
        "30 18 L * *",
        ["2026-12-31T18:30:00Z", "2027-01-31T18:30:00Z", "2027-02-28T18:30:00Z"],
    ),
    (  # Jan 15 2027 is a Friday, May 15 a Saturday (-> Friday 14th)
        "cron(0 12 15W 1,5,8 ? *)",
        "UTC",
        "0 12 15W 1,5,8 *",
        ["2027-01-15T12:00:00Z", "2027-05-14T12:00:00Z", "2027-08-16T12:00:00Z"],
    ),
    (  # the third Friday of the month
        "cron(0 12 ? * 6#3 *)",
        "UTC",
        "0 12 * * 5#3",
        ["2026-12-18T12:00:00Z", "2027-01-15T12:00:00Z", "2027-02-19T12:00:00Z"],
    ),
    (  # the last Friday of the month
        "cron(0 12 ? * 6L *)",
        "UTC",
        "0 12 * * L5",
        ["2026-12-25T12:00:00Z", "2027-01-29T12:00:00Z", "2027-02-26T12:00:00Z"],
    ),
    (  # L alone in day-of-week: the last day of the week, Saturday
        "cron(0 12 ? * L *)",
        "UTC",
        "0 12 * * 6",
        ["2026-12-05T12:00:00Z", "2026-12-12T12:00:00Z", "2026-12-19T12:00:00Z"],
    ),
    (
        "cron(0 8 1 JAN ? 2027-2028)",
        "UTC",
        "0 8 1 JAN * (years 2027-2028)",
        ["2027-01-01T08:00:00Z", "2028-01-01T08:00:00Z"],
    ),
    (
        "cron(0 8 ? * SUN 2027)",
        "America/New_York",
        "0 8 * * SUN (year 2027)",
        ["2027-01-03T13:00:00Z", "2027-01-10T13:00:00Z", "2027-01-17T13:00:00Z"],
    ),
    (
        "rate(1 minute)",
        "UTC",
        "* * * * *",
        ["2026-12-05T06:01:00Z", "2026-12-05T06:02:00Z", "2026-12-05T06:03:00Z"],
    ),
    (
        "rate(5 minutes)",
        "UTC",
        "*/5 * * * *",
        ["2026-12-05T06:05:00Z", "2026-12-05T06:10:00Z", "2026-12-05T06:15:00Z"],
    ),
    (
        "rate(1 hour)",
        "UTC",
        "0 * * * *",
        ["2026-12-05T07:00:00Z", "2026-12-05T08:00:00Z", "2026-12-05T09:00:00Z"],
    ),
    (
        "rate(120 minutes)",
        "UTC",
        "0 */2 * * *",
        ["2026-12-05T08:00:00Z", "2026-12-05T10:00:00Z", "2026-12-05T12:00:00Z"],
    ),
    (
        "rate(6 hours)",
        "UTC",
        "0 */6 * * *",
        ["2026-12-05T12:00:00Z", "2026-12-05T18:00:00Z", "2026-12-06T00:00:00Z"],
    ),
    (  # aligned to midnight in the schedule's zone
        "rate(1 day)",
        "America/New_York",
        "0 0 * * *",
        ["2026-12-06T05:00:00Z", "2026-12-07T05:00:00Z", "2026-12-08T05:00:00Z"],
    ),
    ("at(2027-01-01T09:00:00)", "Europe/Paris", "0 0 9 1 1 * (year 2027)", ["2027-01-01T08:00:00Z"]),
    (  # a wall time in the spring-forward gap fires right after the gap (the DST rule)
        "at(2027-03-14T02:30:00)",
        "America/New_York",
        "0 30 2 14 3 * (year 2027)",
        ["2027-03-14T07:00:00Z"],
    ),
]


@pytest.mark.parametrize(("expression", "zone", "shown", "fires"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_an_accepted_form_is_shown_and_fires(
    expression: str, zone: str, shown: str, fires: list[str]
) -> None:
    spec = cron.parse_cron(expression, zone)
    assert cron.equivalent(expression) == shown
    assert cron.check_steps(expression) == expression
    assert iso(cron.next_fires(spec, NOW, 3)) == fires
    cron.check_not_over(spec, NOW)


REFUSED = [
    ("cron(0 9 ? * MON-FRI)", "has 5 fields; EventBridge cron has 6"),
    ("cron(0 9 * * MON-FRI *)", "needs '?' in exactly one of day-of-month and day-of-week"),
    ("cron(0 9 ? * ? *)", "needs '?' in exactly one of day-of-month and day-of-week"),
    ("cron(0 9 ? * 0 *)", "'0' is not a day; use 1 (SUN) to 7 (SAT)"),
    ("cron(0 9 ? * MON/2 *)", "day-of-week field 'MON/2': use values with , - * ? L #"),
    ("cron(0 9 ? * 2#6 *)", "needs a week from 1 to 5 after '#'"),
    ("cron(0 9 ? * MON 2026,2028)", "year field '2026,2028' cannot be represented"),
    ("cron(0 9 ? * MON 2027/2)", "year field '2027/2' cannot be represented"),
    ("cron(0 9 ? * MON 2300)", "years run from 1970 to 2199"),
    ("cron(61 9 ? * MON *)", "cron(61 9 ? * MON *): invalid minute field '61'"),
    ("cron(0 9 LW * ? *)", "'LW' and 'L-n' are not supported"),
    ("cron(0 9 30 2 ? *)", "never fires"),
    ("cron(0 9 ? * MON *", "must end with ')'"),
    ("rate(7 minutes)", "rate(7 minutes) cannot be represented: EdgeCron aligns a rate to the clock"),
    ("rate(90 minutes)", "cannot be represented"),
    ("rate(5 hours)", "cannot be represented"),
    ("rate(2 days)", "cannot be represented"),
    ("rate(5 minute)", "write rate(5 minutes)"),
    ("rate(1 hours)", "write rate(1 hour)"),
    ("rate(0 minutes)", "the value must be at least 1"),
    ("rate(5 weeks)", "unit 'weeks': use minute(s), hour(s) or day(s)"),
    ("rate(five minutes)", "must be rate(value unit)"),
    ("at(2027-02-30T09:00:00)", "is not a date and time"),
    ("at(2027-01-01T09:00:00Z)", "must be at(yyyy-mm-ddThh:mm:ss)"),
    ("at(2027-01-01 09:00)", "must be at(yyyy-mm-ddThh:mm:ss)"),
]


@pytest.mark.parametrize(("expression", "reason"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_refused_form_says_why(expression: str, reason: str) -> None:
    with pytest.raises(CronError) as caught:
        cron.parse_cron(expression, "UTC")
    assert reason in caught.value.message and caught.value.field == "cron", caught.value.message


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("at(2026-12-05T05:59:59)", "at(2026-12-05T05:59:59) has no fire time left"),
        ("cron(0 9 ? * MON 2020-2025)", "its time in 2020-2025 has passed"),
    ],
)
def test_a_time_that_has_passed_is_refused(expression: str, reason: str) -> None:
    spec = cron.parse_cron(expression, "UTC")
    with pytest.raises(CronError) as caught:
        cron.check_not_over(spec, NOW)
    assert reason in caught.value.message


def test_a_step_beyond_the_field_is_refused_in_eventbridge_form_too() -> None:
    with pytest.raises(CronError, match="step 61 is larger than the field's range"):
        cron.check_steps("cron(*/61 * ? * MON *)")


def test_years_bound_every_fire_computation() -> None:
    spec = cron.parse_cron("cron(0 9 1 * ? 2027)", "Asia/Tokyo")
    start, end = datetime(2020, 1, 1, tzinfo=UTC), datetime(2035, 1, 1, tzinfo=UTC)
    assert cron.count_fires_between(spec, start, end) == 12
    assert iso(cron.latest_fires_between(spec, start, end, 2)) == [
        "2027-11-01T00:00:00Z",
        "2027-12-01T00:00:00Z",
    ]
    assert iso(cron.fires_between(spec, start, end, 1)) == ["2027-01-01T00:00:00Z"]  # 09:00 in Tokyo
    assert cron.prev_fire(spec, end) == datetime(2027, 12, 1, 0, 0, tzinfo=UTC)
    assert cron.prev_fire(spec, datetime(2027, 1, 1, tzinfo=UTC)) is None
    assert cron.next_fire(spec, datetime(2027, 12, 2, tzinfo=UTC)) is None
    assert cron.fire_shape(spec).every_month_day is False  # kept off the daily wheels


def test_a_plain_cron_has_no_equivalent_and_keeps_its_spec() -> None:
    assert cron.equivalent("0 9 * * 1-5") is None
    assert cron.parse_cron("0 9 * * 1-5") == cron.CronSpec("0 9 * * 1-5", "UTC", has_seconds=False)
