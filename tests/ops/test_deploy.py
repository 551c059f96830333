"""What deploy/ ships for operators passes the tools made to check it: promtool for the
Prometheus configuration and alerting rules (with unit tests of the alerts), and for the
Grafana dashboard a check of its structure and of every query with promtool."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from deploy_exprs import ALERTS, ROOT, alert_exprs, dashboard, dashboard_exprs, metric_names, panels
from grafana_schema import TSC, compile_errors

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool missing (Debian's prometheus; `make test` installs it)")


def promtool(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@needs_promtool
def test_the_prometheus_configuration_and_its_rules_pass_promtool() -> None:
    checked = promtool("check", "config", "deploy/prometheus/prometheus.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(alert_exprs())} rules found" in checked.stdout + checked.stderr
    rules = promtool("check", "rules", str(ALERTS.relative_to(ROOT)))
    assert rules.returncode == 0, rules.stdout + rules.stderr


@needs_promtool
def test_the_alerts_fire_when_they_should_and_not_before() -> None:
    tested = promtool("test", "rules", "alerts_test.yml", cwd=Path(__file__).parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    unit = yaml.safe_load((Path(__file__).parent / "alerts_test.yml").read_text())
    covered = {case["alertname"] for test in unit["tests"] for case in test["alert_rule_test"]}
    assert {
        "FailclassErrors",
        "FailclassSlowDecisions",
        "FailclassSuspectNodes",
        "FailclassFailureSurge",
        "FailclassStoreReadOnly",
    } <= covered


@needs_promtool
def test_every_dashboard_query_is_valid_promql(tmp_path: Path) -> None:
    """Each query as a recording rule: `promtool check rules` parses it."""
    exprs = dashboard_exprs()
    rules = [{"record": f"failclass:dashboard:{n}", "expr": expr} for n, expr in enumerate(exprs.values())]
    (tmp_path / "queries.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = promtool("check", "rules", str(tmp_path / "queries.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(exprs)} rules found" in checked.stdout + checked.stderr


@pytest.mark.skipif(
    not TSC.exists(), reason="TypeScript and @grafana/schema missing under .venv/node (`make test` installs them)"
)
def test_the_dashboard_fits_grafanas_own_schema(tmp_path: Path) -> None:
    def broken(mistake: str, value: object) -> dict[str, object]:
        board = copy.deepcopy(dashboard())
        timeseries = next(panel for panel in board["panels"] if panel["type"] == "timeseries")
        place = {"key": board, "enum": timeseries["options"]["legend"], "type": timeseries["gridPos"]}[mistake]
        place[{"key": "refesh", "enum": "displayMode", "type": "h"}[mistake]] = value
        return board

    errors = compile_errors(
        {"shipped": dashboard(), "key": broken("key", "1m"), "enum": broken("enum", "tabel"), "type": broken("type", "8")},
        tmp_path,
    )
    assert errors["shipped"] == [], "\n".join(errors["shipped"])
    assert "'\"refesh\"' does not exist" in "".join(errors["key"]), errors["key"]
    assert "'\"tabel\"' is not assignable" in "".join(errors["enum"]), errors["enum"]
    assert "'string' is not assignable to type 'number'" in "".join(errors["type"]), errors["type"]


def test_the_dashboard_is_well_formed() -> None:
    board = dashboard()
    assert board["uid"] and board["title"] and isinstance(board["schemaVersion"], int)
    (variable,) = board["templating"]["list"]
    assert (variable["name"], variable["type"], variable["query"]) == ("datasource", "datasource", "prometheus")
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: set[tuple[int, int]] = set()
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
        mine = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not cells & mine, f"{panel['title']} overlaps another panel"
        cells |= mine
    for panel in panels():
        assert panel["type"] in {"timeseries", "stat", "table", "bargauge"}, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["description"], panel["title"]
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert ref_ids and len(ref_ids) == len(set(ref_ids)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"] and target["expr"].strip(), panel["title"]
            assert not re.search(r"\$(?!__rate_interval\b)", target["expr"]), f"{panel['title']}: an unknown variable"


def test_the_dashboard_shows_what_the_issue_asks_for() -> None:
    read = set().union(*(metric_names(expr) for expr in dashboard_exprs().values()))
    wanted = {
        "failclass_failed_attempts_total",  # failure rate by reason
        "failclass_gpu_hours_lost_total",  # GPU-hours lost
        "failclass_holds_active",
        "failclass_blacklist_entries",
        "failclass_suspect_nodes",
        "failclass_request_seconds_bucket",  # decision latency
        "failclass_request_seconds_count",  # error rate
        "failclass_waste_gpu_hours",
        "failclass_waste_signals_total",
    }
    assert wanted <= read, wanted - read


def test_provisioning_points_grafana_at_the_dashboard() -> None:
    provisioning = ROOT / "deploy/grafana/provisioning"
    (provider,) = yaml.safe_load((provisioning / "dashboards/failclass.yaml").read_text())["providers"]
    assert provider["type"] == "file" and provider["options"]["path"].startswith("/")
    (source,) = yaml.safe_load((provisioning / "datasources/prometheus.yaml").read_text())["datasources"]
    assert source["type"] == "prometheus" and source["isDefault"] is True


def test_metric_names_are_read_out_of_expressions() -> None:
    expr = 'sum(rate(failclass_request_seconds_count{route="/v1/failclass_fake",status=~"5.."}[5m])) / up{job="x"}'
    assert metric_names(expr) == {"failclass_request_seconds_count", "up"}
