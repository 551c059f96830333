"""Right-sizing advice (failclass/waste/rightsize.py) on a trace whose every figure is
planted: nvidia-smi logs as `nvidia-smi --query-gpu=... --format=csv` writes them, a jobs
table with Slurm's time limits, through `failclass waste report` and on into the per-user
`failclass report --waste`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import run_cli
from pyarrow import parquet

from failclass.errors import ConfigError
from failclass.waste.jobfiles import read_jobs
from failclass.waste.mig import mig_models
from failclass.waste.rightsize import FEWER_GPUS, SHORTER_LIMIT, SMALLER_GPU

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "corpora" / "slurm_jobs"
A100_80GB = "NVIDIA A100-SXM4-80GB"  # the name nvidia-smi prints for it
START = datetime(2026, 11, 10, 8, tzinfo=UTC)
HEADER = "timestamp, name, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"


def nvidia_smi(folder: Path, node: str, model: str, hours: float, gpus: list[tuple[str, str]]) -> Path:
    """A node's log, one reading a minute; ``gpus``: each GPU's (utilisation, memory used) cells."""
    path = folder / f"{node}.csv"
    lines = [
        f"{(START + timedelta(minutes=minute)).strftime('%Y/%m/%d %H:%M:%S.000')}, {model}, {index}, {util} %, {used}, 81920 MiB\n"
        for minute in range(round(hours * 60))
        for index, (util, used) in enumerate(gpus)
    ]
    path.write_text(HEADER + "".join(lines))
    return path


def at(hours: float) -> str:
    return (START + timedelta(hours=hours)).isoformat()


def planted(folder: Path) -> tuple[list[Path], Path]:
    """ann's "small": 1 A100 80GB, 10 % busy, 7 GiB at most, 2 h of a 3 h limit.
    bob's "spare": 4 GPUs, 2 never used, 2 h of 3 h; bob's "short": 1 GPU busy, 1 h of 8 h.
    cy's "fine": 1 GPU busy with 70 GiB, 2 h of 3 h: nothing to advise."""
    busy = ("90", "71680 MiB")
    signals = [
        nvidia_smi(folder, "gpu01", A100_80GB, 2, [("10", "7168 MiB")]),
        nvidia_smi(folder, "gpu02", A100_80GB, 2, [busy, busy, ("0", "0 MiB"), ("0", "0 MiB")]),
        nvidia_smi(folder, "gpu03", A100_80GB, 1, [busy]),
        nvidia_smi(folder, "gpu04", A100_80GB, 2, [busy]),
    ]
    jobs = folder / "jobs.csv"
    jobs.write_text(
        "job,user,gpus,start,end,Timelimit\n"
        f"small,ann,gpu01:0,{at(0)},{at(2)},03:00:00\n"
        f"spare,bob,gpu02:0-3,{at(0)},{at(2)},03:00:00\n"
        f"short,bob,gpu03:0,{at(0)},{at(1)},08:00:00\n"
        f"fine,cy,gpu04:0,{at(0)},{at(2)},03:00:00\n"
    )
    return signals, jobs


def waste_report(signals: list[Path], jobs: Path) -> str:
    done = run_cli("waste", "report", *map(str, signals), "--jobs", str(jobs), "--format", "json")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_each_planted_job_gets_the_advice_its_figures_call_for(tmp_path: Path) -> None:
    sizing = json.loads(waste_report(*planted(tmp_path)))["rightsizing"]
    advice = {(a["job"], a["kind"]): a for a in sizing["advice"]}
    assert set(advice) == {("small", SMALLER_GPU), ("spare", FEWER_GPUS), ("short", SHORTER_LIMIT)}
    small = advice["small", SMALLER_GPU]
    assert small["advice"] == "a MIG 1g.10gb slice of the NVIDIA A100 80GB"  # 7 GiB + 10 % fits 10 GB; 10 % busy fits 1/7
    assert small["basis"] == "peak 7.0 GiB of 80 GiB, utilisation 10%"
    assert small["frees_gpu_h"] == 1.714  # 2 h x (1 - 1/7)
    spare = advice["spare", FEWER_GPUS]
    assert (spare["advice"], spare["basis"], spare["frees_gpu_h"]) == ("ask for 2 GPUs", "2 of 4 GPUs never used", 4.0)
    short = advice["short", SHORTER_LIMIT]
    assert (short["advice"], short["basis"]) == ("a time limit of 2 h", "ran 1.0 h of the 8 h asked")
    assert short["frees_gpu_h"] == 6.0  # (8 - 2) h x 1 GPU, reserved
    users = {u["user"]: u for u in sizing["users"]}
    assert set(users) == {"ann", "bob"}  # cy's job needs nothing
    assert (users["ann"]["jobs"], users["ann"]["smaller_gpu_h"], users["ann"]["fewer_gpus_h"]) == (1, 1.714, 0.0)
    assert (users["bob"]["jobs"], users["bob"]["fewer_gpus_h"], users["bob"]["shorter_limit_h"]) == (2, 4.0, 6.0)
    assert users["bob"]["top"] == "short: a time limit of 2 h (ran 1.0 h of the 8 h asked)"


def test_the_per_user_report_shows_each_users_advice_beside_the_gpu_time_lost(tmp_path: Path) -> None:
    (tmp_path / "waste.json").write_text(waste_report(*planted(tmp_path)))
    rows = [
        {"job_id": job, "attempt": 1, "user": user, "status": "passed", "gpus": 1, "start_time": at(0), "end_time": at(2)}
        for job, user in (("small", "ann"), ("short", "bob"), ("fine", "cy"))
    ]
    manifest = tmp_path / "attempts.jsonl"
    manifest.write_text("".join(json.dumps(row) + "\n" for row in rows))
    waste = str(tmp_path / "waste.json")
    done = run_cli("report", str(manifest), "--waste", waste, "--format", "json", "--export", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    sized = json.loads(done.stdout)["rightsizing"]
    assert parquet.read_table(tmp_path / "out" / "rightsizing_users.parquet").to_pylist() == sized
    got = {row["user"]: row for row in sized}
    assert set(got) == {"ann", "bob"}
    assert (got["ann"]["smaller_gpu_h"], got["bob"]["fewer_gpus_h"], got["bob"]["shorter_limit_h"]) == (1.714, 4.0, 6.0)
    markdown = run_cli("report", str(manifest), "--waste", waste).stdout
    table = markdown.split("## Right-sizing per user", 1)[1]
    ann = next(line for line in table.splitlines() if line.startswith("| ann |"))
    assert ann.split(" | ")[1:5] == ["1", "1.71", "0.00", "0.00"]
    assert "a MIG 1g.10gb slice of the NVIDIA A100 80GB" in ann
    assert "## Right-sizing per user" not in run_cli("report", str(manifest)).stdout  # no waste report, no table


def test_bad_readings_give_no_advice_rather_than_wrong_advice(tmp_path: Path) -> None:
    """An unknown model gets no MIG profile and no GPU-hours, only the memory it needs;
    memory nvidia-smi could not read gets no memory advice, and a GPU idle with its memory
    unread is not called never used."""
    signals = [
        nvidia_smi(tmp_path, "gpu01", "NVIDIA Foo 9000", 2, [("10", "7168 MiB")]),
        nvidia_smi(tmp_path, "gpu02", A100_80GB, 2, [("10", "[N/A]")]),
        nvidia_smi(tmp_path, "gpu03", A100_80GB, 2, [("90", "71680 MiB"), ("0", "[N/A]")]),
    ]
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(
        "job,user,gpus,start,end,Timelimit\n"
        f"unknown,ann,gpu01:0,{at(0)},{at(2)},UNLIMITED\n"
        f"unread,bob,gpu02:0,{at(0)},{at(2)},\n"
        f"unread2,bob,gpu03:0-1,{at(0)},{at(2)},Partition_Limit\n"
    )
    sizing = json.loads(waste_report(signals, jobs))["rightsizing"]
    assert [(a["job"], a["advice"], a["frees_gpu_h"]) for a in sizing["advice"]] == [
        ("unknown", "a GPU or MIG slice with 8 GiB (not priced)", 0.0)
    ]


def test_a_parquet_table_with_a_model_column_gets_the_same_slice(tmp_path: Path) -> None:
    """failclass's Parquet carries the model where the table has the optional column (a null
    is a GPU without one)."""
    import pyarrow as pa

    from failclass.waste.formats import read_signals
    from failclass.waste.formats.parquet import to_arrow

    signals, jobs = planted(tmp_path)
    samples = read_signals(signals[:2])
    models = [A100_80GB if samples.nodes[n] == "gpu01" else None for n in samples.node.tolist()]
    parquet.write_table(to_arrow(samples).append_column("model", pa.array(models, pa.string())), tmp_path / "s.parquet")
    sizing = json.loads(waste_report([tmp_path / "s.parquet"], jobs))["rightsizing"]
    assert [(a["job"], a["advice"]) for a in sizing["advice"]] == [
        ("spare", "ask for 2 GPUs"),
        ("small", "a MIG 1g.10gb slice of the NVIDIA A100 80GB"),
    ]


def test_time_limits_are_read_from_slurms_jobs_files() -> None:
    by_name = {job.job: job for job in read_jobs(SLURM / "sacct_json--22.05-gres-jobs.json")}
    assert by_name["1"].time_limit_s == 365 * 86400  # time.limit 525600 minutes
    (array,) = read_jobs(SLURM / "scontrol_show_job_d--huji-1gpu-array-batch.txt")
    assert array.time_limit_s == 2 * 86400  # TimeLimit=2-00:00:00
    (interactive,) = read_jobs(SLURM / "scontrol_show_job_d--huji-interactive-gpu-batchflag0.txt")
    assert interactive.time_limit_s == 2 * 3600  # TimeLimit=02:00:00


def test_the_mig_table_names_known_models_and_refuses_a_profile_its_name_contradicts(tmp_path: Path) -> None:
    models = mig_models()
    assert {"NVIDIA A100 80GB", "NVIDIA A100 40GB", "NVIDIA H100 (SXM5 and PCIe)", "NVIDIA H200"} <= set(models)
    assert all(m.source.startswith(("https://docs.nvidia.com/", "https://github.com/NVIDIA/")) for m in models.values())
    bad = tmp_path / "mig.yaml"
    bad.write_text(
        "models:\n  - model: NVIDIA A30\n    slices: 4\n    source: https://docs.nvidia.com/x\n    profiles:\n"
        "      - {name: 1g.6gb, memory_gb: 12, compute_slices: 1}\n      - {name: 4g.24gb, memory_gb: 24, compute_slices: 4}\n"
    )
    with pytest.raises(ConfigError, match=r"mig.yaml: models\[0\]\.profiles\[0\]: 1g.6gb says 1 compute slices and 6 GB"):
        mig_models(bad)


def test_each_advised_user_is_told_once_a_day_by_the_policys_route(tmp_path: Path) -> None:
    from receivers import receiver

    signals, jobs = planted(tmp_path)
    store = f"sqlite:///{tmp_path / 'notices.db'}"
    with receiver() as hook:
        (tmp_path / "policy.yaml").write_text(
            json.dumps(
                {
                    "notifications": {
                        "channels": {"users": {"type": "webhook", "url": hook.url}},
                        "routes": {"rightsizing": ["users"]},
                    }
                }
            )
        )
        command = [
            "waste",
            "report",
            *map(str, signals),
            "--jobs",
            str(jobs),
            "--notify",
            "--policy",
            str(tmp_path / "policy.yaml"),
        ]
        first = run_cli(*command, "--database-url", store)
        again = run_cli(*command, "--database-url", store)
    assert first.returncode == 0 and "right-sizing notices: 2 queued, 2 sent" in first.stderr, first.stderr
    assert "right-sizing notices: 0 queued, 0 sent" in again.stderr  # the same day: not twice
    posted = {body["user"]: body for body in (json.loads(raw) for _, raw in hook.requests)}
    assert set(posted) == {"ann", "bob"} and {body["kind"] for body in posted.values()} == {"rightsizing"}
    assert posted["bob"]["message"] == (
        "bob: 2 jobs could ask for less: 4.0 GPU-hours held and 6.0 reserved could be freed;"
        " the largest, short: a time limit of 2 h (ran 1.0 h of the 8 h asked)"
    )
