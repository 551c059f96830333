"""Inputs as operators hold them: one Prometheus query per metric in its own file, the
workload's labels as a Prometheus that scraped dcgm-exporter renames them, nvidia-smi logs
named after their node in any way, and a folder of job logs named by the scheduler."""

from __future__ import annotations

import json
from pathlib import Path

from failclass.waste.allocation import JobAllocation, find_node, node_names
from failclass.waste.formats import read_signals
from failclass.waste.joblogs import find_logs

GPU = {"gpu": "0", "UUID": "GPU-1", "Hostname": "gpu01", "modelName": "NVIDIA A100-SXM4-80GB"}


def answer(metric: str, values: list[tuple[float, float]], **labels: str) -> dict:
    series = {"metric": {"__name__": metric, **GPU, **labels}, "values": [[t, str(v)] for t, v in values]}
    return {"status": "success", "data": {"resultType": "matrix", "result": [series]}}


def test_one_query_per_metric_in_its_own_file_reads_as_one_series(tmp_path: Path) -> None:
    times = [1714521600.0 + 15 * i for i in range(3)]
    files = {
        "util.json": answer("DCGM_FI_DEV_GPU_UTIL", [(t, 90) for t in times], hpc_job="4476430"),
        "used.json": answer("DCGM_FI_DEV_FB_USED", [(t, 30000) for t in times], hpc_job="4476430"),
        "free.json": answer("DCGM_FI_DEV_FB_FREE", [(t, 51000) for t in times], hpc_job="4476430"),
    }
    for name, document in files.items():
        (tmp_path / name).write_text(json.dumps(document))
    samples = read_signals(sorted(tmp_path.iterdir()))
    assert len(samples) == 3
    assert samples.util.tolist() == [90.0] * 3 and samples.mem_used.tolist() == [30000.0] * 3
    assert samples.mem_total.tolist() == [81000.0] * 3  # used + free
    assert samples.jobs[samples.job[0]] == "4476430"


def test_the_workload_pod_is_the_exported_one_and_the_exporter_itself_is_no_job(tmp_path: Path) -> None:
    exporter = {"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-626j5", "container": "nvidia-dcgm-exporter"}
    held = answer("DCGM_FI_DEV_GPU_UTIL", [(1.0, 80)], exported_namespace="team-nlp", exported_pod="bert-0", **exporter)
    free = answer("DCGM_FI_DEV_GPU_UTIL", [(16.0, 0)], **exporter)
    (tmp_path / "q.json").write_text(json.dumps([held, free]))
    samples = read_signals([tmp_path / "q.json"])
    assert [samples.jobs[code] for code in samples.job] == ["team-nlp/bert-0", ""]


def test_a_reading_node_named_after_its_file_finds_the_jobs_node() -> None:
    known = node_names(["nvidia-smi_gpu01", "nvidia-smi_gpu02", "gpu03.cluster.local"])
    assert [find_node(name, known) for name in ("gpu01", "gpu02", "gpu03", "nvidia-smi")] == [0, 1, 2, None]


def test_each_jobs_log_is_found_by_its_name_in_the_files_name(tmp_path: Path) -> None:
    for name in ("slurm-4476430.out", "slurm-4476431_2.out", "team-nlp_bert-0.log", "prep.log", "slurm-44764300.out"):
        (tmp_path / name).write_text("x\n")
    jobs = [
        JobAllocation("4476430"),
        JobAllocation("4476431_2"),
        JobAllocation("team-nlp/bert", aliases=("team-nlp/bert-0",)),
        JobAllocation("prep"),
        JobAllocation("447643"),  # a prefix of another job's id is no match
    ]
    found = {job: path.name for job, path in find_logs(tmp_path, jobs).items()}
    assert found == {
        "4476430": "slurm-4476430.out",
        "4476431_2": "slurm-4476431_2.out",
        "team-nlp/bert": "team-nlp_bert-0.log",
        "prep": "prep.log",
    }


def test_a_gres_column_gives_the_gpu_count(tmp_path: Path) -> None:
    """Slurm's GRES syntax (``gpu:h200:1``, as ``sbatch --gres`` and sacct's ReqGRES write it)."""
    from failclass.waste.jobfiles import load_jobs

    table = tmp_path / "jobs.csv"
    table.write_text(
        "JobId,UserName,Partition,StartTime,EndTime,NodeList,Gres\n"
        "11,ana,gpu,2024-05-22T00:15:15,2024-05-22T08:21:45,node-gpu-001,gpu:h200:2\n"
        "12,ana,interactive,2024-05-22T00:15:15,2024-05-22T08:21:45,node-gpu-002,gpu:4\n"
    )
    jobs = load_jobs(table).jobs
    assert [dict(job.counts) for job in jobs] == [{"node-gpu-001": 2}, {"node-gpu-002": 4}]
    assert [job.kind for job in jobs] == ["batch", "interactive"]  # no kind column: the partition's name says


def test_a_batch_script_on_an_interactive_partition_is_an_interactive_job(tmp_path: Path) -> None:
    """A notebook server started with sbatch has a batch step; the partition it runs on says
    what the job is for (the recorded sacct --json, one job moved to such a partition)."""
    from failclass.waste.jobfiles import load_jobs

    recorded = Path(__file__).resolve().parents[2] / "corpora" / "slurm_jobs" / "sacct_json--22.05-gres-jobs.json"
    document = json.loads(recorded.read_text())
    before = {job.job: job.kind for job in load_jobs(recorded).jobs}
    moved = document["jobs"][0]
    moved["partition"] = "interactive"
    (tmp_path / "sacct.json").write_text(json.dumps(document))
    after = {job.job: job.kind for job in load_jobs(tmp_path / "sacct.json").jobs}
    assert after[str(moved["job_id"])] == "interactive" != before[str(moved["job_id"])]
    assert {job: kind for job, kind in after.items() if job != str(moved["job_id"])} == {
        job: kind for job, kind in before.items() if job != str(moved["job_id"])
    }


def test_a_logs_folder_over_the_limit_is_refused_in_one_line(tmp_path: Path, monkeypatch) -> None:
    from dataclasses import replace

    import pytest

    from failclass.errors import InputError
    from failclass.limits import LIMITS
    from failclass.waste import joblogs

    for name in ("a.log", "b.log", "c.log"):
        (tmp_path / name).write_text("x\n")
    monkeypatch.setattr(joblogs, "LIMITS", replace(LIMITS, waste_log_files=2))
    with pytest.raises(InputError, match=r"3 files; at most 2 logs are searched"):
        find_logs(tmp_path, [JobAllocation("a")])


def test_a_jobs_table_with_its_header_alone_holds_no_jobs(tmp_path: Path) -> None:
    from failclass.waste.jobfiles import load_jobs

    (tmp_path / "jobs.csv").write_text("job,user,gpus,start,end\n")
    assert load_jobs(tmp_path / "jobs.csv").jobs == []
