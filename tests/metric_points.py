"""Test helper: the data points an SDK ``InMemoryMetricReader`` holds."""

from __future__ import annotations

from typing import Any


def metric_points(reader: Any, name: str | None = None) -> list:
    """Every data point of the metric ``name`` (every metric's when None) ``reader`` collects now;
    empty when nothing was recorded."""
    data = reader.get_metrics_data()
    return [
        point
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if name is None or metric.name == name
        for point in metric.data.data_points
    ]
