"""The HTML report in a real headless browser (Debian's chromium over the DevTools
protocol): what a person sees, read from the rendered DOM and its layout, and a
screenshot. The page is opened as a file written by `failclass report` and as served by
GET /v1/report?format=html."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from chromium_page import PAGE_FACTS, Browser, chromium
from conftest import ROOT, run_cli
from report_weeks import ATTEMPTS, write_manifest

from failclass.matching.taxonomy import builtin_taxonomy

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        chromium() is None, reason="chromium is not installed (the Makefile's test target installs Debian's chromium)"
    ),
]
THIS_WEEK = ("--since", "2026-11-09", "--until", "2026-11-16")
REASON_IDS = set(builtin_taxonomy().reasons)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    executable = chromium()
    assert executable is not None
    opened = Browser(executable, tmp_path_factory.mktemp("chromium-profile"))
    yield opened
    opened.close()


def page(browser: Browser, url: str) -> dict[str, Any]:
    browser.open(url)
    return browser.evaluate(PAGE_FACTS)  # type: ignore[no-any-return]


def html_file(tmp_path: Path, *options: str) -> Path:
    done = run_cli("report", str(write_manifest(tmp_path / "weeks.jsonl")), *options, "--format", "html")
    assert done.returncode == 0, done.stderr
    (tmp_path / "report.html").write_text(done.stdout)
    return tmp_path / "report.html"


def assert_not_blank(png: Path) -> None:
    from PIL import Image

    image = Image.open(io.BytesIO(png.read_bytes())).convert("L")
    assert image.width >= 1000 and image.height >= 1500
    low, high = image.getextrema()
    assert high - low > 200  # dark text and plot lines on a white page
    assert len(set(image.resize((64, 64)).tobytes())) > 20


def test_the_report_page_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    facts = page(browser, html_file(tmp_path, *THIS_WEEK, "--compare-to", "previous").as_uri())
    assert facts["title"] == "failclass: failure report"
    scope = facts["scope"]
    assert "weeks.jsonl" in scope and "Selection: 2026-11-09 to 2026-11-16" in scope and "Generated 20" in scope
    assert "Attempts from 2026-11-10T09:01+00:00 to 2026-11-13T00:10+00:00" in scope
    figures = {f["id"]: f for f in facts["figures"]}
    assert list(figures) == ["rtf", "gpu-time", "repeats-per-user"]
    for figure in figures.values():
        assert facts["scopeTop"] < figure["svg"]["top"]  # the data's range and source come first
        assert figure["svg"]["width"] > 400 and figure["svg"]["height"] > 200
        assert not REASON_IDS & set(figure["texts"]), "reasons by name, never by id"
    assert {"MPI runtime failure (2)", "Syntax error (1)", "Job preempted (1)"} <= set(figures["rtf"]["texts"])
    assert {"MPI runtime failure", "GPU out of memory"} <= set(figures["repeats-per-user"]["texts"])
    gpu = set(figures["gpu-time"]["texts"])
    # Values on the bars: per reason, and per category (Infrastructure 88 + 2, User 0.33 + 0.02).
    assert {"88.0", "2.00", "0.33", "0.02", "90.0", "0.35"} <= gpu and "GPU-h lost (RTF x GPUs)" in gpu
    assert "Infrastructure errors latest" in figures["rtf"]["caption"]
    assert "MPI runtime failure lost most (88.00 GPU-h" in figures["gpu-time"]["caption"]
    tables = facts["tables"]
    assert [row[0] for row in tables["table7"][1:]] == [
        "MPI runtime failure",
        "GPU out of memory",
        "Job preempted",
        "Syntax error",
    ]
    assert tables["table7"][0][12] == "RTF x GPUs (GPU-h)" and tables["table7"][1][12] == "88.00"
    assert [row[0] for row in tables["repeats"][1:]] == [row[0] for row in tables["table7"][1:]]
    assert tables["comparison-totals"][1] == ["attempts", "6", "4", "+2", "+50.0%"]
    assert "GPU-min" not in facts["bodyText"] and "GPU hours" not in facts["bodyText"]
    assert not REASON_IDS & set(facts["bodyText"].split())
    assert_not_blank(browser.screenshot(tmp_path / "report.png"))


def test_an_empty_selection_says_so(browser: Browser, tmp_path: Path) -> None:
    facts = page(browser, html_file(tmp_path, "--user", "nobody").as_uri())
    assert facts["figures"] == [] and facts["tables"] == {}
    assert facts["empty"] == "No attempt matches this selection: nothing to count or draw." and facts["emptyVisible"]
    passed_only = page(browser, html_file(tmp_path, "--status", "passed").as_uri())
    assert passed_only["figures"] == [] and "No failed attempt in this selection" in passed_only["empty"]
    assert passed_only["tables"]["table6"][1][:2] == ["passed", "2"]


def test_the_served_report_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    from service_server import running_service
    from test_report_store import LOGS

    with running_service(f"sqlite:///{tmp_path / 'f.db'}", tmp_path) as base:
        for job, attempt, user, vc, status, start, minutes, gpus, reason in ATTEMPTS:
            body = {
                "job_id": job,
                "attempt": attempt,
                "user": user,
                "vc": vc,
                "status": status,
                "gpus": gpus,
                "start_time": start.isoformat(),
                "end_time": (start + timedelta(minutes=minutes)).isoformat(),
                "log": (ROOT / LOGS[reason]).read_text(errors="replace"),
            }
            response = httpx.post(f"{base}/v1/attempts", json=body, timeout=60)
            assert response.status_code == 201, response.text
        facts = page(browser, f"{base}/v1/report?format=html&vc=long&since=2026-11-09&compare_to=previous")
        json_answer = httpx.get(f"{base}/v1/report", params={"vc": "long", "since": "2026-11-09"}, timeout=30).json()
    assert "Source: store sqlite:///" in facts["scope"] and "virtual clusters long" in facts["scope"]
    assert [row[0] for row in facts["tables"]["table7"][1:]] == ["MPI runtime failure", "Job preempted"]
    assert facts["tables"]["comparison-reasons"][1][:4] == ["MPI runtime failure", "2", "1", "+1"]
    assert [f["id"] for f in facts["figures"]] == ["rtf", "gpu-time", "repeats-per-user"]
    assert [r["trials"] for r in json_answer["table7"]] == [2, 1]
    assert json.dumps(json_answer).count("mpi_runtime_failure") >= 1  # ids stay in the JSON, names on the page
    assert_not_blank(browser.screenshot(tmp_path / "served.png"))
