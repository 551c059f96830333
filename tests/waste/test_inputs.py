"""Tying readings to jobs in every way a jobs file allows (indices, a count on a node, a
label or an alias, a node under another spelling), and the warnings, with counts, when
readings or jobs find nothing; through the real command on the Slurm output recorded here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from conftest import run_cli

from failclass.waste.allocation import JobAllocation, Matching, assign
from failclass.waste.formats.parquet import write_parquet
from failclass.waste.inputs import InputCheck
from failclass.waste.jobfiles import load_jobs
from failclass.waste.samples import GpuSamples

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "corpora" / "slurm_jobs"
RECORDED = ["sacct_json--22.05-gres-jobs.json", "sacct_parsable--22.05-gres-jobs.txt", "scontrol_show_job_d--22.05-gres-jobs.txt"]


def readings(slots: list[tuple[str, int]], times: range, job: str = "") -> list[tuple[str, int, float, float, float, float, str]]:
    return [(node, gpu, float(t), 40.0, 1000.0, 40960.0, job) for node, gpu in slots for t in times]


def placed(samples: GpuSamples) -> dict[str, set[tuple[str, int]]]:
    found: dict[str, set[tuple[str, int]]] = {}
    for job, node, gpu in zip(samples.job.tolist(), samples.node.tolist(), samples.gpu.tolist(), strict=False):
        found.setdefault(samples.jobs[job], set()).add((samples.nodes[node], gpu))
    return found


def test_a_count_on_a_node_takes_the_gpus_no_other_job_held_when_that_leaves_no_doubt():
    samples = GpuSamples.from_rows(readings([("gpu01", g) for g in range(4)], range(0, 100, 10)), "t")
    jobs = [
        JobAllocation("exact", gpus=(("gpu01", 0), ("gpu01", 1)), start=0, end=100),
        JobAllocation("counted", counts=(("gpu01", 2),), start=0, end=100),
    ]
    assert placed(assign(samples, jobs)) == {"exact": {("gpu01", 0), ("gpu01", 1)}, "counted": {("gpu01", 2), ("gpu01", 3)}}
    matching = Matching()
    assign(samples, [JobAllocation("counted", counts=(("gpu01", 2),), start=0, end=100)], matching)
    assert matching.ambiguous == {"counted": "2 GPUs on gpu01 without their indices, and 4 of its GPUs held by no other job then"}


def test_the_pods_of_one_job_hold_their_gpus_only_while_each_pod_ran():
    """A Job whose second pod started later on another node: its readings before that pod
    started belong to no one, not to the job."""
    samples = GpuSamples.from_rows(readings([("gpu01", 0), ("gpu02", 0)], range(0, 100, 10)), "t")
    first = JobAllocation("ns/train-a", counts=(("gpu01", 1),), start=0, end=90)
    later = JobAllocation("ns/train-b", counts=(("gpu02", 1),), start=50, end=90)
    job = JobAllocation("ns/train", counts=(("gpu01", 1), ("gpu02", 1)), start=0, end=90, parts=(first, later))
    tagged = assign(samples, [job])
    held = {(tagged.nodes[n], float(t)) for n, t in zip(tagged.node.tolist(), tagged.ts.tolist(), strict=False)}
    assert {t for node, t in held if node == "gpu02"} == {50.0, 60.0, 70.0, 80.0, 90.0}
    assert {t for node, t in held if node == "gpu01"} == {float(t) for t in range(0, 100, 10)}
    assert {tagged.jobs[code] for code in tagged.job.tolist()} == {"ns/train"}


def test_labels_find_their_job_under_an_alias_and_nodes_under_their_short_name():
    rows = readings([("gpu01.cluster.local", 0)], range(0, 50, 10), job="3_0") + readings(
        [("10.0.0.7:9400", 1)], range(0, 50, 10)
    )
    samples = GpuSamples.from_rows(rows, "t")
    jobs = [JobAllocation("8", aliases=("3_0",)), JobAllocation("9", gpus=(("10.0.0.7", 1),))]
    assert placed(assign(samples, jobs)) == {"8": {("gpu01.cluster.local", 0)}, "9": {("10.0.0.7:9400", 1)}}


def check_of(samples: GpuSamples, jobs: list[JobAllocation]) -> list[str]:
    check = InputCheck()
    assign(samples, jobs, check.matching)
    return check.report({job.job: job for job in jobs}).warnings


def test_readings_of_no_job_and_jobs_of_no_readings_are_counted_with_their_reasons():
    rows = readings([("gpu01", 0), ("gpu09", 3), ("gpu05", 0)], range(1000, 1100, 10))
    rows += readings([("gpu01", 1)], range(1000, 1100, 10), "x/pod")
    jobs = [
        JobAllocation("a", gpus=(("gpu01", 0),), start=1000, end=1100),
        JobAllocation("old", gpus=(("gpu01", 0),), start=0, end=500),
        JobAllocation("elsewhere", gpus=(("gpu77", 0),), start=1000, end=1100),
        JobAllocation("vague", counts=(("gpu09", 0),), start=1000, end=1100),
        JobAllocation("vague2", counts=(("gpu09", 1),), start=1000, end=1100),
    ]
    warnings = check_of(GpuSamples.from_rows(rows, "t"), jobs)
    assert warnings[0] == (
        "10 of 40 readings (1 GPUs on 1 nodes: gpu05) match no job: left out"
        " (no job in the jobs file names their nodes; it names gpu01, gpu09, gpu77)"
    )
    assert (
        warnings[1]
        == "1 jobs named by the readings' labels (hpc_job, pod) are not in the jobs file (x/pod): user 'unknown', cluster 'default', kind batch"
    )
    assert warnings[3].startswith("3 of 5 jobs in the jobs file match no readings: ")
    assert "1 ran outside the readings' time (1970-01-01T00:16Z to 1970-01-01T00:18Z) (old)" in warnings[3]
    assert "1 on nodes no reading has (gpu77; the readings' nodes: gpu01, gpu05, gpu09) (elsewhere)" in warnings[3]
    assert "1 no reading of their GPUs in their time (vague2)" in warnings[3]  # vague took gpu09's one GPU
    assert (
        warnings[2]
        == "1 jobs name nodes but no GPU count (vague): each was given every GPU of its nodes that no other job held in its time"
    )


def test_a_count_that_cannot_be_placed_is_named_as_such():
    samples = GpuSamples.from_rows(readings([("gpu01", g) for g in range(8)], range(0, 100, 10)), "t")
    (warning,) = [
        w
        for w in check_of(samples, [JobAllocation("half", counts=(("gpu01", 4),), start=0, end=100)])
        if "match no readings" in w
    ]
    assert warning == (
        "1 of 1 jobs in the jobs file match no readings: 1 GPU counts without indices on nodes where more GPUs were free"
        " (give indices, or DCGM hpc_job labels) (half)"
    )


def slurm_readings(path: Path, labelled: bool) -> Path:
    """Readings every 0.5 s over the recorded jobs, as failclass's own Parquet: of both
    nodes' 4 GPUs, or (``labelled``) of each job's GPUs named by its job as DCGM's hpc_job
    label does (an array task under its ``job_task`` name)."""
    jobs = load_jobs(SLURM / RECORDED[0]).jobs
    rows = []
    for job in jobs if labelled else [JobAllocation("", counts=(("node1", 4), ("node2", 4)))]:
        start = job.start if labelled else min(j.start for j in jobs) - 1
        label = (job.aliases or (job.job,))[0]
        for node, count in job.counts:
            rows += [
                (node, g, float(t), 30.0, 500.0, np.nan, label) for g in range(count) for t in np.arange(start, start + 60, 0.5)
            ]
    write_parquet(GpuSamples.from_rows(rows, "t"), path).close()
    return path


def test_every_recorded_slurm_shape_attaches_every_job_it_names(tmp_path):
    signals = slurm_readings(tmp_path / "samples.parquet", labelled=True)
    for name in RECORDED:
        done = run_cli("waste", "report", str(signals), "--jobs", str(SLURM / name), "--format", "json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        named = {job.job for job in load_jobs(SLURM / name).jobs}
        assert {job["job"] for job in report["jobs"]} == named, name  # 8 and 3 found under 3_0 and 3_1
        warnings = report["inputs"]["warnings"]
        assert [w for w in warnings if "logs are not there" not in w and "never ran" not in w] == [], name
        if name.startswith("scontrol"):  # StdOut= names the logs, in the recording's scratch folder, gone since
            assert any(w.startswith("6 of 6 jobs' logs are not there") for w in warnings)
        assert report["inputs"]["jobs_file"]["jobs"] == len(named)
        assert report["inputs"]["memory_total"]["missing"][0]["why"] == "the Parquet table's mem_total is empty (NaN)"


def test_counts_without_indices_or_labels_are_placed_only_where_they_leave_no_doubt(tmp_path):
    signals = slurm_readings(tmp_path / "samples.parquet", labelled=False)
    done = run_cli("waste", "report", str(signals), "--jobs", str(SLURM / RECORDED[2]), "--format", "json")
    report = json.loads(done.stdout)
    assert [job["job"] for job in report["jobs"]] == ["5"]  # the running job, whose indices scontrol printed
    (warning,) = [w for w in report["inputs"]["warnings"] if "match no readings" in w]
    assert warning.startswith("6 of 7 jobs in the jobs file match no readings: 6 GPU counts without indices")
    assert "warning: 6 of 7 jobs" in done.stderr  # JSON on stdout, warnings on stderr


def test_the_text_report_shows_the_warnings_under_the_headline(tmp_path):
    signals = slurm_readings(tmp_path / "samples.parquet", labelled=False)
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job,Who,gpus\ntrain,ana,node1:0\n")
    done = run_cli("waste", "report", str(signals), "--jobs", str(jobs))
    assert done.returncode == 0, done.stderr
    inputs = done.stdout.split("\nInputs:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert inputs[0].startswith(f"  warning: {jobs}: none of the 1 jobs has a user, a cluster or partition, a kind")
    assert inputs[0].endswith("(columns not read: Who)")
    each = 120  # readings of one GPU: every 0.5 s for a minute
    assert (
        inputs[1] == f"  warning: {7 * each:,} of {8 * each:,} readings (7 GPUs on 2 nodes: node1, node2) match no job: left out"
    )
    assert done.stderr == ""  # the text report carries them itself
    no_job = tmp_path / "none.csv"
    no_job.write_text("job,user\ntrain,ana\n")
    done = run_cli("waste", "report", str(signals), "--jobs", str(no_job))
    assert done.returncode == 1 and "match no job: left out" in done.stderr and "no readings belong to a job" in done.stderr


def test_a_dcgm_scrape_with_pod_labels_finds_its_pod_in_a_kubernetes_pod_list(tmp_path):
    scrape = tmp_path / "lke.prom"
    scrape.write_bytes((ROOT / "corpora" / "gpu_signals" / "dcgm_scrape--lke_rtx4000ada_pod_labels.prom").read_bytes())
    pod = json.loads((ROOT / "tests" / "data" / "kubernetes" / "verrazzano_install_job_pod.json").read_text())
    pod["metadata"].update(name="cuda-75454ffb9f-8ljq7", namespace="default", labels={"owner": "ana"})  # the scrape's pod
    pod["spec"].update(nodeName="lke529760-766837-0a634ab30000")
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    pod["status"]["phase"] = "Running"
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod]}))
    done = run_cli("waste", "report", str(scrape), "--jobs", str(pods), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(j["job"], j["user"], j["cluster"]) for j in report["jobs"]] == [("default/cuda-75454ffb9f-8ljq7", "ana", "default")]
    assert report["inputs"]["warnings"] == []
    assert report["inputs"]["memory_total"]["sources"] == {"DCGM FB_USED + FB_FREE + FB_RESERVED": 1}
