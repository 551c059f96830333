"""`failclass waste` through the real command: the README's demo on the bundled sample,
JSON for machines, and the exit codes of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "gpu"


def test_the_demo_reports_the_bundled_trace_with_causes_and_evidence():
    done = run_cli("waste", "report", str(SAMPLE / "samples.parquet"), "--jobs", str(SAMPLE / "jobs.csv"), "--time-limit", "8")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GPU time held but not used: 16 jobs")
    assert "Interactive job (notebook or shell left idle)" in done.stdout
    assert "      | " in done.stdout  # evidence lines under the longest intervals
    assert "Early termination" in done.stdout


def test_json_gives_every_planted_cause_of_the_sample(tmp_path):
    done = run_cli("waste", "report", str(SAMPLE / "samples.parquet"), "--jobs", str(SAMPLE / "jobs.csv"), "--format", "json")
    report = json.loads(done.stdout)
    planted = json.loads((SAMPLE / "planted.json").read_text())["jobs"]
    found = {(row["job"], row["cause"]) for row in report["intervals"]}
    assert {(job["job"], cause) for job in planted for cause in job["causes"]} <= found
    assert set(report) == {"headline", "causes", "jobs", "users", "clusters", "intervals", "convergence", "inputs", "rightsizing"}
    assert report["inputs"]["warnings"] == [] and report["inputs"]["memory_total"]["missing"] == []


def test_generate_then_report_round_trips_through_files(tmp_path):
    assert run_cli("waste", "generate", str(tmp_path), "--jobs", "12", "--seed", "5").returncode == 0
    assert {p.name for p in tmp_path.iterdir()} == {"samples.parquet", "jobs.csv", "logs", "planted.json"}
    done = run_cli("waste", "report", str(tmp_path / "samples.parquet"), "--jobs", str(tmp_path / "jobs.csv"), "--format", "json")
    assert json.loads(done.stdout)["headline"]["jobs"] == 12


def test_a_real_nvidia_smi_log_with_a_jobs_file_is_placed_on_its_job(tmp_path):
    log = ROOT / "corpora" / "gpu_signals" / "nvidia_smi--xuesongtap_a10_lms.csv"
    node_log = tmp_path / "gpu-node-7.csv"
    node_log.write_bytes(log.read_bytes())
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job,user,gpus,start,end\nnotebook-42,ana,gpu-node-7:0,2024-01-16T14:44:00Z,2024-01-16T15:00:00Z\n")
    done = run_cli("waste", "report", str(node_log), "--jobs", str(jobs), "--format", "json")
    assert done.returncode == 0, done.stderr
    (job,) = json.loads(done.stdout)["jobs"]
    assert (job["job"], job["user"], job["util"], job["gpus"]) == ("notebook-42", "ana", 0.0, 1)


def test_bad_signal_files_exit_1_with_the_reason_and_usage_errors_exit_2(tmp_path):
    bad = tmp_path / "node.csv"
    bad.write_bytes(b"timestamp, utilization.gpu [%]\n2024/01/01 00:00:00.000, 250 %\n")
    done = run_cli("waste", "report", str(bad))
    assert done.returncode == 1 and "utilisation outside 0-100" in done.stderr and "Traceback" not in done.stderr
    causes = tmp_path / "causes.yaml"
    causes.write_text(
        "causes: [{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot], log: {where: during, patterns: ['(a*)*b']}}]"
    )
    good = ROOT / "corpora" / "gpu_signals" / "nvidia_smi--xuesongtap_a10_lms.csv"
    done = run_cli("waste", "report", str(good), "--causes", str(causes))
    assert done.returncode == 2 and "catastrophic" in done.stderr


def test_readings_of_no_known_job_say_what_is_missing(tmp_path):
    good = ROOT / "corpora" / "gpu_signals" / "nvidia_smi--xuesongtap_a10_lms.csv"
    done = run_cli("waste", "report", str(good))
    assert done.returncode == 1 and "no readings belong to a job" in done.stderr


def test_the_html_report_is_one_page_with_a_heat_map_and_a_timeline_per_job(tmp_path):
    done = run_cli(
        "waste", "report", str(SAMPLE / "samples.parquet"), "--jobs", str(SAMPLE / "jobs.csv"), "--format", "html", "--top", "3"
    )
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert str(SAMPLE / "samples.parquet") in page and "Generated " in page
    assert page.count("<svg") == 1 + 3  # the heat map and three timelines
    assert "Mean GPU utilisation per node and hour" in page
    assert "Interactive job (notebook or shell left idle)" in page and ">interactive_job<" not in page  # names, not ids
    assert "<script" not in page and "<link" not in page and 'src="http' not in page  # nothing to fetch
    assert "{{" not in page and "{%" not in page


def test_watch_takes_its_jobs_from_a_file_or_from_slurm_and_says_when_slurm_cannot_answer(tmp_path):
    signals = str(ROOT / "corpora" / "gpu_signals" / "nvidia_smi--xuesongtap_a10_lms.csv")
    assert run_cli("waste", "watch", signals).returncode == 2  # neither
    no_slurm = {**os.environ, "PATH": str(tmp_path)}  # no scontrol on it
    done = subprocess.run(
        [sys.executable, "-m", "failclass.cli", "waste", "watch", signals, "--jobs-from-slurm"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=no_slurm,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and "cannot run scontrol show job -d" in done.stderr and "Traceback" not in done.stderr


def test_watch_over_a_finished_trace_watches_no_job_and_says_so_in_one_line():
    done = run_cli("waste", "watch", str(SAMPLE / "samples.parquet"), "--jobs", str(SAMPLE / "jobs.csv"))
    assert done.returncode == 0 and done.stdout == "", done.stdout
    assert done.stderr.startswith("16 of 16 jobs had ended by ") and done.stderr.count("\n") == 1
    assert done.stderr.endswith("(the last at 2024-05-07T05:55+00:00): not watched\n")
    during = run_cli(
        "waste", "watch", str(SAMPLE / "samples.parquet"), "--jobs", str(SAMPLE / "jobs.csv"), "--now", "2024-05-02T03:00:00"
    )
    assert during.stdout.startswith("release job000001: no GPU work for 116 min")
    assert during.stderr == "1 of 16 jobs had ended by 2024-05-02T03:00+00:00 (the last at 2024-05-01T20:58+00:00): not watched\n"
