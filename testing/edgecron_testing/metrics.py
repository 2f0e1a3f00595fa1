"""What the handlers reported in EMF metrics: the lines Powertools prints on stdout, summed by name."""

from __future__ import annotations

import json

import pytest


def emitted(capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    """Flush the metrics and sum what the EMF lines on stdout since the last read report, by name."""
    from edgecron.observability import metrics

    metrics.flush_metrics(raise_on_empty_metrics=False)
    totals: dict[str, float] = {}
    for line in capsys.readouterr().out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if not isinstance(doc, dict) or "_aws" not in doc:
            continue
        for directive in doc["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                values = doc[metric["Name"]]
                totals[metric["Name"]] = totals.get(metric["Name"], 0.0) + sum(
                    values if isinstance(values, list) else [values]
                )
    return totals
