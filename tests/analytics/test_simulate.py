"""The simulator follows the Philly tables, is repeatable, and survives the round trip:
simulate, classify the logs, report; the report matches the truth where the
classification is right, and the classification error is measured beside it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from failclass.analytics.columns import Attempts
from failclass.analytics.records import read_attempts
from failclass.analytics.report import build_report
from failclass.analytics.simulate import read_table6, read_table7, scaled, simulate
from failclass.classifier import Classifier
from failclass.matching.taxonomy import builtin_taxonomy

FRACTION = 0.01


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sim")
    simulate(FRACTION, 11, out)
    return out


def read(path: Path) -> Attempts:
    return Attempts(read_attempts([path]))


def test_counts_follow_tables_7_and_6(simulated: Path) -> None:
    attempts = read(simulated / "attempts.jsonl")
    failed = attempts.failed(builtin_taxonomy())
    trials = Counter(failed.reason.names[code] for code in failed.reason.codes)
    for stats in read_table7():
        assert trials[stats.reason_id] == scaled(stats.trials, FRACTION), stats.reason_id
    jobs = {row["job_id"]: row["status"] for row in attempts.table.select(["job_id", "status"]).to_pylist()}
    table6 = read_table6()
    assert sum(s == "passed" for s in jobs.values()) == scaled(table6["passed"], FRACTION)
    assert sum(s == "killed" for s in jobs.values()) == scaled(table6["killed"], FRACTION)


def test_runtime_to_failure_follows_the_quantiles(simulated: Path) -> None:
    failed = read(simulated / "attempts.jsonl").failed(builtin_taxonomy())
    reasons = np.array(failed.reason.names)[failed.reason.codes]
    checked = 0
    for stats in read_table7():
        rtf = failed.rtf_minutes[reasons == stats.reason_id]
        if len(rtf) < 50:
            continue
        checked += 1
        for level, quantile in zip((0.5, 0.9), stats.quantiles[:2], strict=False):
            share = float((rtf <= quantile).mean())  # should be `level`, within sampling noise
            noise = 4 * (level * (1 - level) / len(rtf)) ** 0.5
            assert abs(share - level) <= noise, (stats.reason_id, level, share)
    assert checked >= 2


def test_seeded_and_repeatable(tmp_path: Path) -> None:
    first = run_cli("simulate", "--fraction", "0.002", "--seed", "5", "--no-logs", "--out", str(tmp_path / "a"))
    second = run_cli("simulate", "--fraction", "0.002", "--seed", "5", "--no-logs", "--out", str(tmp_path / "b"))
    assert first.returncode == second.returncode == 0, first.stderr
    assert (tmp_path / "a" / "attempts.jsonl").read_text() == (tmp_path / "b" / "attempts.jsonl").read_text()
    other = run_cli("simulate", "--fraction", "0.002", "--seed", "6", "--no-logs", "--out", str(tmp_path / "c"))
    assert (
        other.returncode == 0
        and (tmp_path / "c" / "attempts.jsonl").read_text() != (tmp_path / "a" / "attempts.jsonl").read_text()
    )


def test_round_trip_simulate_classify_report(simulated: Path, classifier: Classifier) -> None:
    truth = [json.loads(line) for line in (simulated / "attempts.jsonl").read_text().splitlines()]
    classified = []
    right = total = 0
    for row in truth:
        if row["status"] == "passed" or (row["status"] == "killed" and row["reason"] is None):
            classified.append(row)
            continue
        predicted = classifier.classify_path(Path(row["log"])).reason
        total += 1
        right += predicted == row["reason"]
        classified.append({**row, "reason": predicted})
    accuracy = right / total
    assert accuracy >= 0.9, accuracy  # the logs' excerpts come from the corpus
    manifest = simulated / "classified.jsonl"
    manifest.write_text("".join(json.dumps(row) + "\n" for row in classified))
    taxonomy = builtin_taxonomy()
    expected = {r.reason_id: r for r in build_report(read(simulated / "attempts.jsonl"), taxonomy).table7}
    got = {r.reason_id: r for r in build_report(read(manifest), taxonomy).table7}
    for reason, row in expected.items():
        if row.trials >= 20:
            assert abs(got[reason].trials - row.trials) <= 0.1 * row.trials + 1, reason
            assert got[reason].jobs <= row.jobs + 0.1 * row.jobs + 1, reason
    print(f"round trip: {total} failed attempts classified, accuracy {accuracy:.3f}")
