"""Status-level analytics on the real Philly and Helios trace slices, checked against
figures computed here independently (plain csv, no failclass code) and against the
facts measured once in ../shared/data/traces/README.md."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from failclass.analytics.status import table6, user_repetition
from failclass.analytics.traces import load_trace
from failclass.errors import InputError

TRACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"
SLICES = ["philly_last15k.csv", "helios_last15k.csv"]
pytestmark = pytest.mark.skipif(not TRACES.exists(), reason=f"the shared traces are not at {TRACES}")


def raw_rows(name: str) -> list[dict[str, str]]:
    with (TRACES / name).open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("name", SLICES)
def test_table6_matches_an_independent_count(name: str) -> None:
    rows = raw_rows(name)
    jobs = Counter(r["new_status"] for r in rows)
    gpu = Counter()
    for r in rows:
        gpu[r["new_status"]] += int(r["gpu_num"]) * int(r["run_time"])
    table = {row.status: row for row in table6(load_trace(TRACES / name))}
    for raw, status in (("Pass", "passed"), ("Killed", "killed"), ("Failed", "unsuccessful")):
        assert table[status].jobs == jobs[raw]
        assert table[status].jobs_pct == round(100 * jobs[raw] / len(rows), 2)
        assert table[status].gpu_time_pct == round(100 * gpu[raw] / sum(gpu.values()), 2)
    assert table["total"].jobs == len(rows) == 15000


def test_philly_repetition_per_user_is_what_was_measured() -> None:
    repetition = user_repetition(load_trace(TRACES / "philly_last15k.csv"))
    # ../shared/data/traces/README.md: 30.1% failed; 0.915 after a failure; 5 users hold 48.6%.
    assert round(repetition.failure_rate, 3) == 0.301
    assert round(repetition.next_fails_after_failure, 3) == 0.915
    assert round(repetition.top_share, 3) == 0.486
    assert repetition.next_fails_after_success < 0.05


@pytest.mark.parametrize("name", SLICES)
def test_repetition_matches_an_independent_count(name: str) -> None:
    last: dict[str, bool] = {}
    pairs = follows = 0
    for r in raw_rows(name):  # rows are in submission order
        failed = r["new_status"] == "Failed"
        if last.get(r["user"]):
            pairs += 1
            follows += failed
        last[r["user"]] = failed
    repetition = user_repetition(load_trace(TRACES / name))
    assert repetition.next_fails_after_failure == round(follows / pairs, 4)
    failures = Counter(r["user"] for r in raw_rows(name) if r["new_status"] == "Failed")
    assert repetition.top_users == failures.most_common(5)


def test_a_bad_trace_is_refused_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "trace.csv"
    bad.write_text(
        "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status\n0,1,1,0,1,0,10,0,Pass\n1,1,x,0,1,5,10,0,Pass\n"
    )
    with pytest.raises(InputError, match="line 3"):
        load_trace(bad)
    wrong = tmp_path / "other.csv"
    wrong.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="missing columns"):
        load_trace(wrong)
