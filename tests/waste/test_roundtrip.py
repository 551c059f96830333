"""The calibrated generator round trip: a trace with planted waste in the studies'
proportions goes through the whole pipeline (Parquet, jobs file, logs on disk), and the
report gives back the planted causes and the studies' headline figures.

What this proves: the measures and the explanations find what the generator planted, as
the studies defined it. It does not prove accuracy on real jobs: the generator's shapes
are ours (its log lines are real)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from failclass.waste.analyse import WasteOptions, analyse
from failclass.waste.generate import TraceSpec, write_trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    write_trace(TraceSpec(jobs=400, seed=7), folder, jobs_per_row_group=16)
    report = analyse([folder / "samples.parquet"], WasteOptions(jobs_file=folder / "jobs.csv", time_limit_s=8 * 3600))
    return json.loads((folder / "planted.json").read_text())["jobs"], report


def test_every_planted_cause_is_found_in_its_job_and_nothing_else_is(trace):
    planted, report = trace
    found: dict[str, set[str]] = {}
    for row in report.intervals:
        if row.cause != "unexplained":
            found.setdefault(row.job, set()).add(row.cause)
    missed = Counter(c for job in planted for c in job["causes"] if c not in found.get(job["job"], set()))
    extra = Counter(c for job in planted for c in found.get(job["job"], set()) - set(job["causes"]))
    total = sum(len(job["causes"]) for job in planted)
    assert total > 250
    assert sum(missed.values()) <= 0.02 * total, missed
    assert sum(extra.values()) <= 0.02 * total, extra
    assert not [row for row in report.intervals if row.cause == "unexplained"]


def test_the_studies_headline_figures_come_back(trace):
    planted, report = trace
    h = report.headline
    assert h.jobs == 400
    assert h.interactive_idle_pct == pytest.approx(41.62, abs=0.5)  # CloudBrain-I: debugging jobs' idle slots
    assert h.multi_gpu_never_used_pct == pytest.approx(24.01, abs=1.0)  # quota rounding over ~220 multi-GPU jobs
    assert h.several_stable_phases_pct == pytest.approx(38.05, abs=0.3)
    assert h.interactive_at_limit_pct == pytest.approx(40.41, abs=1.0)
    several = {job["job"] for job in planted if job["several_stable_phases"]}
    assert {j.job for j in report.jobs if j.stable_phases > 1} == several


def test_the_data_and_model_dimensions_carry_gao_et_al_s_shares_of_the_low_jobs(trace):
    planted, report = trace
    dimension = {c.cause: c.dimension for c in report.causes}
    low_causes = [
        c for job in planted for c in job["causes"] if c not in ("interactive_job", "gpu_oversubscription", "non_dl_job")
    ]
    shares = Counter(dimension[c] for c in low_causes)
    assert shares["data"] / len(low_causes) == pytest.approx(0.4603, abs=0.07)  # sampling noise over ~130 jobs
    assert shares["model"] / len(low_causes) == pytest.approx(0.4518, abs=0.07)


def test_early_termination_advice_sees_the_planted_convergence_points(trace):
    planted, report = trace
    planted_at = {job["job"]: job["converged_by"] for job in planted if job["converged_by"] is not None}
    measured = {row.job: row.within_at_pct / 100 for row in report.convergence}
    assert set(measured) == set(planted_at)
    worst = max(abs(measured[job] - planted_at[job]) for job in planted_at)
    assert worst < 0.002  # the report reads the printed losses and their times back
    early = sum(value <= 0.40 for value in measured.values()) / len(measured)
    assert early == pytest.approx(0.75, abs=0.07)  # Philly: 75 % of jobs within 0.1 % by 40 % of their epochs
