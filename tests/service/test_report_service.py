"""GET /v1/report on a real `failclass serve` (SQLite and PostgreSQL): the same filters and
comparison as `failclass report` (one Selection), Markdown and HTML answers, and bad
filters refused with the service's error shape."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, postgres_schema_url, run_cli
from service_server import running_service

from failclass.analytics.selection import MAX_VALUES

# The attempts of tests/analytics/report_weeks.py, each with a real log of its reason, and
# the browser driver beside them.
WEEKS = ROOT / "tests" / "analytics"
sys.path.insert(0, str(WEEKS))
from chromium_page import PAGE_FACTS, Browser, chromium  # noqa: E402 (found through the sys.path entry above)
from report_weeks import LOGS, rows  # noqa: E402 (found through the sys.path entry above)

pytestmark = pytest.mark.e2e

sys.path.remove(str(WEEKS))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    workdir = tmp_path_factory.mktemp("report-service")
    urls = iter(postgres_schema_url()) if request.param == "postgresql" else iter([f"sqlite:///{workdir / 'failclass.db'}"])
    database_url = next(urls)
    with running_service(database_url, workdir) as base:
        for row in rows():  # the service classifies each from the log its reason names
            body = {key: value for key, value in row.items() if key != "reason"}
            body["log"] = (ROOT / LOGS[row["reason"]]).read_text(errors="replace")
            assert httpx.post(f"{base}/v1/attempts", json=body, timeout=60).status_code == 201
        yield {"base": base, "database_url": database_url, "database": request.param}
    next(urls, None)  # drops the PostgreSQL schema


def get(service: dict[str, str], **params: Any) -> httpx.Response:
    return httpx.get(f"{service['base']}/v1/report", params=params, timeout=60)


def test_filters_and_comparison_over_http(service: dict[str, str]) -> None:
    answer = get(service, since="2026-11-09", until="2026-11-16", compare_to="previous").json()
    assert (answer["attempts"], answer["failed_attempts"], answer["gpu_hours_lost"]) == (6, 5, round(5421 / 60, 2))
    totals = {t["measure"]: (t["now"], t["before"], t["delta"]) for t in answer["comparison"]["totals"]}
    assert totals["attempts"] == (6, 4, 2) and totals["GPU-h lost to failures"] == (90.35, 32.08, 58.27)
    bob = get(service, user="bob").json()
    assert [(r["reason_id"], r["trials"]) for r in bob["table7"]] == [("mpi_runtime_failure", 3)]
    several = get(service, user=["ann", "dee"], status=["failed"]).json()
    assert {r["reason_id"]: r["trials"] for r in several["table7"]} == {"syntax_error": 3, "gpu_oom": 1}
    assert get(service, vc="short", reason="gpu_oom").json()["attempts"] == 1


def test_the_service_and_the_cli_answer_alike(service: dict[str, str]) -> None:
    served = get(service, vc="long", since="2026-11-09", until="2026-11-16", compare_to="previous").json()
    done = run_cli(
        "report", "--database-url", service["database_url"], "--vc", "long", *("--since", "2026-11-09"),
        *("--until", "2026-11-16", "--compare-to", "previous", "--format", "json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    from_cli = json.loads(done.stdout)
    assert {**served, "scope": None} == {**from_cli, "scope": None}
    assert served["scope"]["selection"] == from_cli["scope"]["selection"]


def test_markdown_and_html_answers(service: dict[str, str]) -> None:
    markdown = get(service, format="markdown", user="ann")
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text.startswith("# Failure report: 3 attempts, 3 failed") and "users ann" in markdown.text
    page = get(service, format="html", user="nobody")
    assert page.headers["content-type"].startswith("text/html")
    assert "No attempt matches this selection" in page.text and "<svg" not in page.text


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"since": "yesterday-ish"}, "neither an ISO 8601 time nor a span"),
        ({"compare_to": "last week"}, "neither 'previous' nor START/END"),
        ({"since": "2026-11-16", "until": "2026-11-09"}, "must come before until"),
        ({"compare_to": "previous"}, "needs --since"),
        ({"reason": "gpu_on_fire"}, "unknown to the taxonomy"),
        ({"status": "exploded"}, "status: exploded unknown"),
        ({"user": [f"u{i}" for i in range(MAX_VALUES + 1)]}, f"at most {MAX_VALUES} values"),
    ],
)
def test_bad_filters_are_refused(service: dict[str, str], params: dict[str, Any], problem: str) -> None:
    response = get(service, **params)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    said = " ".join([error["message"], *(d["problem"] for d in error.get("details", []))])
    assert error["code"] == "invalid_request" and problem in said
    assert get(service, format="pdf").status_code == 422


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (the Makefile's test target installs it)")
def test_the_served_page_in_a_browser(service: dict[str, str], tmp_path: Path) -> None:
    if service["database"] != "sqlite":
        pytest.skip("the page does not depend on the database: opened once")
    executable = chromium()
    assert executable is not None
    browser = Browser(executable, tmp_path / "profile")
    try:
        browser.open(f"{service['base']}/v1/report?format=html&vc=long&since=2026-11-09&until=2026-11-16&compare_to=previous")
        facts = browser.evaluate(PAGE_FACTS)
        shot = browser.screenshot(tmp_path / "served.png")
    finally:
        browser.close()
    assert "Source: store sqlite:///" in facts["scope"] and "virtual clusters long" in facts["scope"]
    assert [row[0] for row in facts["tables"]["table7"][1:]] == ["MPI runtime failure", "Job preempted"]
    assert facts["tables"]["comparison-reasons"][1][:4] == ["MPI runtime failure", "2", "1", "+1"]
    assert [f["id"] for f in facts["figures"]] == ["rtf", "gpu-time", "repeats-per-user"]
    assert all(f["svg"]["width"] > 400 and f["svg"]["height"] > 200 for f in facts["figures"])
    assert shot.stat().st_size > 50_000
