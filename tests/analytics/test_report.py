"""`failclass report` over attempt manifests and over the store: Table 7, Table 6 and
repeats, checked against figures computed here by hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from conftest import run_cli

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
# (job, attempt, user, status, minutes run, gpus, reason)
ATTEMPTS = [
    ("j1", 1, "ann", "failed", 1, 1, "syntax_error"),
    ("j1", 2, "ann", "failed", 2, 1, "syntax_error"),
    ("j2", 1, "ann", "failed", 3, 1, "syntax_error"),
    ("j3", 1, "bob", "failed", 600, 8, "mpi_runtime_failure"),
    ("j3", 2, "bob", "passed", 900, 8, None),
    ("j4", 1, "cid", "failed", 120, 4, "mpi_runtime_failure"),
    ("j4", 2, "cid", "killed", 30, 4, "job_preempted"),
    ("j5", 1, "cid", "failed", 5, 2, "no_signature"),
    ("j6", 1, "dee", "passed", 50, 1, None),
]


def manifest(path: Path) -> Path:
    with path.open("w") as out:
        for job, attempt, user, status, minutes, gpus, reason in ATTEMPTS:
            row = {
                "job_id": job,
                "attempt": attempt,
                "user": user,
                "status": status,
                "gpus": gpus,
                "reason": reason,
                "start_time": T0.isoformat(),
                "end_time": (T0 + timedelta(minutes=minutes)).isoformat(),
            }
            out.write(json.dumps(row) + "\n")
    return path


def test_report_tables_match_a_hand_count(tmp_path: Path) -> None:
    done = run_cli("report", str(manifest(tmp_path / "attempts.jsonl")), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["attempts"], report["failed_attempts"]) == (9, 7)
    rows = {r["reason_id"]: r for r in report["table7"]}
    assert [r["reason_id"] for r in report["table7"]] == ["syntax_error", "mpi_runtime_failure", "job_preempted", "no_signature"]
    mpi = rows["mpi_runtime_failure"]
    assert (mpi["trials"], mpi["jobs"], mpi["users"]) == (2, 2, 2)
    assert mpi["rtf_p50_min"] == float(np.percentile([600, 120], 50)) == 360.0
    total_rtf = 1 + 2 + 3 + 600 + 120 + 30 + 5
    assert mpi["rtf_total_pct"] == round(100 * 720 / total_rtf, 2)
    weighted = 1 + 2 + 3 + 600 * 8 + 120 * 4 + 30 * 4 + 5 * 2
    assert mpi["rtf_x_demand_gpu_min"] == 600 * 8 + 120 * 4 and mpi["rtf_x_demand_pct"] == round(100 * 5280 / weighted, 2)
    assert (mpi["demand_1"], mpi["demand_2_4"], mpi["demand_gt4"]) == (0, 1, 1)
    assert rows["syntax_error"]["categories"] == "AE;U"
    # Table 6: jobs by the status of their last attempt.
    table6 = {r["status"]: r for r in report["table6"]}
    assert (table6["passed"]["jobs"], table6["killed"]["jobs"], table6["unsuccessful"]["jobs"]) == (2, 1, 3)
    gpu_passed = 600 * 8 + 900 * 8 + 50  # j3 (both attempts) and j6
    gpu_total = gpu_passed + (120 * 4 + 30 * 4) + (1 + 2 + 3 + 5 * 2)
    assert table6["passed"]["gpu_time_pct"] == round(100 * gpu_passed / gpu_total, 2)
    syntax = next(r for r in report["repetition"] if r["reason_id"] == "syntax_error")
    assert (syntax["trials_per_job"], syntax["trials_per_user"], syntax["top_users"]) == (1.5, 3.0, [["ann", 3]])


def test_markdown_and_csv(tmp_path: Path) -> None:
    path = manifest(tmp_path / "attempts.jsonl")
    markdown = run_cli("report", str(path)).stdout
    assert markdown.startswith("# Failure report: 9 attempts, 7 failed")
    assert "| Syntax error | AE;U | 3 | 2 | 1 |" in markdown
    assert "cat.: IF Infrastructure, AE AI Engine, U User" in markdown
    rows = run_cli("report", str(path), "--format", "csv").stdout.splitlines()
    assert rows[0].startswith("reason_id,reason_name,categories,trials") and len(rows) == 5


def test_bad_manifests_are_refused(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"job_id": "j", "user": "u", "status": "failed"}\n{not json\n')
    done = run_cli("report", str(broken))
    assert done.returncode == 1 and "line 2" in done.stderr
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"job_id": "j", "user": "u", "status": "failed", "reason": "gpu_on_fire"}\n')
    assert run_cli("report", str(unknown)).returncode == 2
    assert run_cli("report").returncode == 2


def test_report_over_the_store(tmp_path: Path) -> None:
    from failures import examination

    from failclass.attempts import Attempt
    from failclass.policy.config import load_policy
    from failclass.store.repository import Store
    from failclass.usecases import report_attempt

    url = f"sqlite:///{tmp_path / 'f.db'}"
    store = Store.open(url)
    examined = examination("nccl_timeout")
    for n in (1, 2):
        attempt = Attempt("job-9", n, "eve", gpus=8, start_time=T0, end_time=T0 + timedelta(minutes=90))
        report_attempt(store, attempt, examined, load_policy())
    done = run_cli("report", "--database-url", url, "--format", "json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["table7"]
    assert (row["reason_id"], row["trials"], row["jobs"], row["rtf_p50_min"], row["demand_gt4"]) == (
        "mpi_runtime_failure",
        2,
        1,
        90.0,
        2,
    )


def test_parquet_manifest_reads_like_jsonl(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl = manifest(tmp_path / "attempts.jsonl")
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "attempts.parquet")
    from_parquet = run_cli("report", str(tmp_path / "attempts.parquet"), "--format", "json")
    assert from_parquet.returncode == 0, from_parquet.stderr
    from_jsonl = json.loads(run_cli("report", str(jsonl), "--format", "json").stdout)
    assert {**json.loads(from_parquet.stdout), "scope": None} == {**from_jsonl, "scope": None}  # the scope names the file
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    broken = run_cli("report", str(tmp_path / "broken.parquet"))
    assert broken.returncode == 1 and "not a readable Parquet file" in broken.stderr


def test_html_report_is_one_self_contained_page(tmp_path: Path) -> None:
    done = run_cli("report", str(manifest(tmp_path / "attempts.jsonl")), "--format", "html")
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.lower().startswith("<!doctype html>") and page.count("<svg") == 3 and page.count("<table id=") == 4
    assert "<script" not in page and " src=" not in page and "<link" not in page  # nothing to fetch
    assert "Syntax error" in page and "runtime to failure" in page


def test_records_carry_every_attempt_fact(tmp_path: Path) -> None:
    from failclass.analytics.records import read_attempts

    csv_manifest = tmp_path / "attempts.csv"
    csv_manifest.write_text(
        "job_id,attempt,user,vc,status,submit_time,start_time,end_time,gpus,nodes,exit_code,inputs,logs,reason\n"
        "j1,2,ann,vc3,failed,2026-11-02T08:00:00+00:00,2026-11-02T09:00:00+00:00,2026-11-02T09:30:00+00:00,8,gpu-1;gpu-2,1,/data/a;/data/b,/logs/j1.out,mpi_error\n"
    )
    (record,) = read_attempts([csv_manifest]).to_pylist()
    assert (record["job_id"], record["attempt"], record["vc"], record["gpus"], record["exit_code"]) == ("j1", 2, "vc3", 8, 1)
    assert record["nodes"] == ["gpu-1", "gpu-2"] and record["inputs"] == ["/data/a", "/data/b"]
    assert record["logs"] == ["/logs/j1.out"] and record["submit_time"] is not None
    assert record["end_time"] - record["start_time"] == timedelta(minutes=30)
