"""The HTML report in a real headless browser (Debian's chromium over the DevTools
protocol): what a person sees, read from the rendered DOM and its layout, and a
screenshot. The page is opened as a file written by `failclass report`; the page served by
GET /v1/report?format=html is opened by tests/service/test_report_service.py."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium_page import PAGE_FACTS, Browser, chromium
from conftest import run_cli
from report_weeks import write_manifest

from failclass.analytics.analysis import FileSource, analyse
from failclass.analytics.html import to_html
from failclass.analytics.selection import Selection
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


def rendered(tmp_path: Path, selection: Selection) -> Path:
    """The page for a selection, rendered in this process (faster than the CLI)."""
    taxonomy = builtin_taxonomy()
    source = FileSource([write_manifest(tmp_path / "weeks.jsonl")])
    path = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.html"
    path.write_text(to_html(analyse(source, selection, taxonomy), taxonomy))
    return path


def test_an_empty_selection_says_so(browser: Browser, tmp_path: Path) -> None:
    facts = page(browser, rendered(tmp_path, Selection(users=("nobody",))).as_uri())
    assert facts["figures"] == [] and facts["tables"] == {}
    assert "Selection: all time; users nobody. No attempt has a time." in facts["scope"]
    assert facts["empty"] == "No attempt matches this selection: nothing to count or draw." and facts["emptyVisible"]
    passed_only = page(browser, rendered(tmp_path, Selection(statuses=("passed",))).as_uri())
    assert passed_only["figures"] == [] and "No failed attempt in this selection" in passed_only["empty"]
    assert passed_only["tables"]["table6"][1][:2] == ["passed", "2"]
