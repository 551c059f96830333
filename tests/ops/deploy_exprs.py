"""The PromQL of what deploy/ ships: the alerting rules and the Grafana dashboard's
queries, and the metric names they read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy/prometheus/alerts.yml"
DASHBOARD = ROOT / "deploy/grafana/dashboards/failclass.json"
# Grafana's own variables, as Grafana replaces them before it queries
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
METRIC = re.compile(r"\b(?:failclass|process)_[a-z_]+\b|\bup\b(?=\s*\{)")


def alert_exprs() -> dict[str, str]:
    """alert name -> expression."""
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return {rule["alert"]: rule["expr"] for group in groups for rule in group["rules"]}


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())  # type: ignore[no-any-return]


def panels() -> list[dict[str, Any]]:
    """Every panel that queries (rows left out)."""
    return [panel for panel in dashboard()["panels"] if panel["type"] != "row"]


def dashboard_exprs() -> dict[str, str]:
    """'panel title / refId' -> the query as Grafana sends it."""
    found = {}
    for panel in panels():
        for target in panel["targets"]:
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            found[f"{panel['title']} / {target['refId']}"] = expr
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names an expression reads (label values in quotes left out)."""
    return set(METRIC.findall(QUOTED.sub('""', expr)))
