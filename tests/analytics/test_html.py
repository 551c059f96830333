"""The HTML page's words come from the data: captions that follow what the attempts show
(and turn when the data turns), names where ids were, and an empty selection said."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from failclass.analytics.analysis import analyse
from failclass.analytics.captions import gpu_caption, repeats_caption, rtf_caption
from failclass.analytics.columns import Attempts, Failed
from failclass.analytics.html import to_html
from failclass.analytics.records import table_of
from failclass.analytics.render import to_markdown
from failclass.analytics.report import build_report
from failclass.analytics.selection import Selection
from failclass.matching.taxonomy import builtin_taxonomy

T0 = datetime(2026, 11, 2, 9, tzinfo=UTC)
TAXONOMY = builtin_taxonomy()


Row = dict[str, Any]


class Listed:
    """Attempts held in memory, as a report source."""

    label = "listed in the test"

    def __init__(self, rows: Sequence[Row]) -> None:
        self.all = Attempts(table_of(rows))

    def attempts(self, selection: Selection) -> Attempts:
        return selection.apply(self.all)


def attempt(job: str, user: str, reason: str | None, minutes: float | None, gpus: int = 1, status: str = "failed") -> Row:
    end = None if minutes is None else T0 + timedelta(minutes=minutes)
    start = None if minutes is None else T0
    return {
        "job_id": job,
        "attempt": 1,
        "user": user,
        "vc": "default",
        "status": status,
        "start_time": start,
        "end_time": end,
        "gpus": gpus,
        "reason": reason,
    }


def failed(rows: Sequence[Row]) -> Failed:
    return Attempts(table_of(rows)).failed(TAXONOMY)


# gpu_oom is a User error only, mpi_runtime_failure an Infrastructure one only.
USER_FAST = [
    attempt("u1", "ann", "gpu_oom", 2),
    attempt("u2", "ann", "gpu_oom", 4),
    attempt("i1", "bob", "mpi_runtime_failure", 300),
]
USER_SLOW = [
    attempt("u1", "ann", "gpu_oom", 600),
    attempt("u2", "ann", "gpu_oom", 900),
    attempt("i1", "bob", "mpi_runtime_failure", 3),
]


def test_the_runtime_caption_follows_the_data() -> None:
    fast = rtf_caption(failed(USER_FAST), TAXONOMY)
    assert "User 3 min (2 trials), Infrastructure 5.0 h (1 trial)" in fast
    assert "User errors fail soonest, Infrastructure errors latest" in fast
    slow = rtf_caption(failed(USER_SLOW), TAXONOMY)
    assert "Infrastructure 3 min (1 trial), User 12.5 h (2 trials)" in slow
    assert "Infrastructure errors fail soonest, User errors latest" in slow
    same = rtf_caption(failed([attempt("u", "a", "gpu_oom", 60), attempt("i", "b", "mpi_runtime_failure", 62)]), TAXONOMY)
    assert "about as soon as each other" in same
    timeless = attempt("x", "a", "gpu_oom", None)
    assert rtf_caption(failed([timeless]), TAXONOMY).startswith("No failed attempt has a start and end time")


def test_the_gpu_and_repeats_captions_follow_the_data() -> None:
    records = [*USER_SLOW, attempt("i2", "cid", "mpi_runtime_failure", 60, gpus=8)]
    report = build_report(Attempts(table_of(records)), TAXONOMY)
    caption = gpu_caption(report, TAXONOMY)
    # GPU out of memory: (600 + 900) x 1 = 25 GPU-h; MPI runtime failure: 3 x 1 + 60 x 8 = 8.05 GPU-h.
    assert "33.05 GPU-h" in caption and "GPU out of memory lost most (25.00 GPU-h, 75.6%)" in caption
    assert "By category, User leads with 25.00 GPU-h" in caption
    assert repeats_caption(failed(records)).endswith("ann alone has 2 (50.0%).")


def test_the_page_has_no_fixed_claim_and_no_ids() -> None:
    page = to_html(analyse(Listed(USER_SLOW), Selection(), TAXONOMY), TAXONOMY)
    assert "user errors fail in minutes" not in page.lower()
    assert "Infrastructure errors fail soonest, User errors latest" in page
    assert ">gpu_oom<" not in page and ">mpi_runtime_failure<" not in page
    assert ">GPU out of memory<" in page and "GPU-min" not in page
    assert 'Source: <span id="source">listed in the test</span>' in page
    assert '<p class="note">cat.: IF Infrastructure, AE AI Engine, U User</p>' in page  # marks spelt out


@pytest.mark.parametrize(
    ("selection", "says"),
    [
        (Selection(users=("nobody",)), "No attempt matches this selection"),
        (Selection(statuses=("passed",)), "No failed attempt in this selection"),
    ],
)
def test_an_empty_selection_draws_no_blank_axes(selection: Selection, says: str) -> None:
    records = [*USER_FAST, attempt("p1", "dee", None, 50, status="passed")]
    page = to_html(analyse(Listed(records), selection, TAXONOMY), TAXONOMY)
    assert says in page and "<svg" not in page


def test_attempts_without_times_say_so_instead_of_drawing_or_sharing_zero() -> None:
    """Batch results have no start and end times: no GPU time, so no GPU plot on empty
    axes, no "lost most (0.00 GPU-h)", and no percentage of zero (Table 6's total included)."""
    reasons = ["gpu_oom", "gpu_oom", "import_error"]
    records = [attempt(f"j{n}", "unknown", r, None) for n, r in enumerate(reasons)]
    analysis = analyse(Listed(records), Selection(), TAXONOMY)
    page = to_html(analysis, TAXONOMY)
    assert page.count("<svg") == 1 and '<figure id="repeats-per-user">' in page  # who fails again still draws
    assert '<p class="empty" id="gpu-time">No failed attempt has a start and end time' in page
    assert '<p class="empty" id="rtf">No failed attempt has a start and end time' in page
    assert "3 failed; none has a start and end time, so the GPU time they lost is not counted." in page
    assert "lost most" not in page and "0.00 GPU-h" not in page
    markdown = to_markdown(analysis)
    assert "| total | 3 | 100.00 | 0.00 | - |" in markdown and "| unsuccessful | 3 | 100.00 | 0.00 | - |" in markdown
    assert "| GPU out of memory | U | 2 | 2 | 1 | - | - | - | - | 2 | 0 | 0 | 0.00 | - |" in markdown
    assert "No job has a start and end time: no runtime or GPU time to count, and no share of it (-)." in markdown
    assert (
        {row.rtf_total_pct for row in analysis.report.table7}
        == {row.rtf_x_demand_pct for row in analysis.report.table7}
        == {None}
    )
