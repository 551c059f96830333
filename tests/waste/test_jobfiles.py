"""Jobs files in every shape, told by content: real output of a Slurm run here
(corpora/slurm_jobs/*--22.05-gres-jobs.*, recorded by record_accounting.py), real
``scontrol`` output copied from public pages, a real Kubernetes pod, and tables under the
column names operators use; and their one-line refusals."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from failclass.errors import InputError
from failclass.waste.jobfiles import load_jobs, read_jobs

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "corpora" / "slurm_jobs"
SACCT_JSON = SLURM / "sacct_json--22.05-gres-jobs.json"
SACCT_P = SLURM / "sacct_parsable--22.05-gres-jobs.txt"
SCONTROL = SLURM / "scontrol_show_job_d--22.05-gres-jobs.txt"
POD = ROOT / "tests" / "data" / "kubernetes" / "verrazzano_install_job_pod.json"


def by_name(path: Path) -> dict[str, Any]:
    return {job.job: job for job in read_jobs(path)}


def test_sacct_json_gives_every_job_that_ran_with_its_gpus_per_node():
    jobs = by_name(SACCT_JSON)
    assert load_jobs(SACCT_JSON).shape == "sacct --json"
    assert sorted(jobs, key=int) == ["1", "2", "3", "4", "5", "7", "8"]  # 6 was held pending: sacct leaves it out
    assert jobs["1"].counts == (("node1", 2),) and jobs["1"].gpus == ()  # accounting keeps the count, not the indices
    assert jobs["2"].counts == (("node1", 2), ("node2", 2))  # 4 GPUs over node[1-2]
    assert (jobs["8"].aliases, jobs["3"].aliases) == (("3_0",), ("3_1",))  # array tasks: raw id, and job_task
    assert jobs["7"].kind == "interactive" and jobs["1"].kind == "batch"  # srun: no batch step
    assert math.isinf(jobs["5"].end) and not math.isinf(jobs["5"].start)  # still running
    assert {j.user for j in jobs.values()} == {"root"} and {j.cluster for j in jobs.values()} == {"gpu"}


def newer_sacct(document: dict[str, Any]) -> dict[str, Any]:
    """The recorded answer in the shape of Slurm 23.02+ (data_parser v0.0.39 onwards, as
    SchedMD/slurm src/plugins/data_parser/v0.0.44/parsers.c defines it): the state a list,
    unset-able numbers as {set, infinite, number}, a step's id "<job>.<step>"."""
    newer = copy.deepcopy(document)
    for job in newer["jobs"]:
        job["state"]["current"] = [job["state"]["current"]]
        task = job["array"]["task_id"]
        job["array"]["task_id"] = {"set": task is not None, "infinite": False, "number": task or 0}
        for step in job["steps"]:
            step["step"]["id"] = f"{job['job_id']}.{step['step']['id']}"
        job["stdout_expanded"] = f"/home/ana/{job['name']}-{job['job_id']}.out"
    return newer


def test_sacct_json_of_newer_slurm_reads_the_same(tmp_path):
    newer = tmp_path / "sacct.json"
    newer.write_text(json.dumps(newer_sacct(json.loads(SACCT_JSON.read_text()))))
    old, new = by_name(SACCT_JSON), by_name(newer)
    assert [(j.job, j.kind, j.counts, j.aliases, j.start, j.end) for j in old.values()] == [
        (j.job, j.kind, j.counts, j.aliases, j.start, j.end) for j in new.values()
    ]
    assert new["1"].log == Path("/home/ana/train-1.out")


def test_sacct_parsable_reads_as_sacct_json_and_its_steps_are_not_jobs():
    table, document = by_name(SACCT_P), by_name(SACCT_JSON)
    assert load_jobs(SACCT_P).shape == "sacct -P (|-separated)"
    assert set(table) == set(document)  # 1.batch, 2.0, 7.0 ... are steps
    for name, job in document.items():
        assert (table[name].kind, table[name].counts, table[name].aliases) == (job.kind, job.counts, job.aliases)
        assert (table[name].start, table[name].end) == (job.start, job.end)  # this host's local time is UTC


def test_scontrol_gives_indices_while_a_job_runs_and_the_count_after():
    jobs = by_name(SCONTROL)
    assert jobs["5"].gpus == (("node1", 0), ("node1", 1), ("node2", 1), ("node2", 2))  # running: IDX per node
    assert jobs["1"].gpus == () and jobs["1"].counts == (("node1", 2),)  # ended: "GRES=" is empty
    assert "6" not in jobs and "1 jobs that never ran" in load_jobs(SCONTROL).notes[0]
    assert jobs["7"].kind == "interactive" and jobs["8"].aliases == ("3_0",)
    assert jobs["1"].log is not None and jobs["1"].log.name == "train-1.out"


def test_scontrol_of_other_clusters_old_and_new_gres_forms():
    (old,) = read_jobs(SLURM / "scontrol_show_job_d--huji-gres-idx-noncontig-4gpu.txt")
    assert old.gpus == (("node-06", 0), ("node-06", 2), ("node-06", 3), ("node-06", 5))
    assert (old.user, old.cluster, old.kind) == ("user3", "medium", "batch")
    (interactive,) = read_jobs(SLURM / "scontrol_show_job_d--huji-interactive-gpu-batchflag0.txt")
    assert (interactive.kind, interactive.gpus) == ("interactive", (("node-005", 3),))


def pods(*items: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {"resourceVersion": ""}})


def gpu_pod(gpus: int, **labels: str) -> dict[str, Any]:
    """The real pod (a Job's, from a verrazzano cluster dump) asking for ``gpus`` GPUs."""
    pod = json.loads(POD.read_text())
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    pod["metadata"]["labels"].update(labels)
    return pod


def test_kubernetes_pods_of_a_job_are_one_job_with_their_gpus_on_their_node(tmp_path):
    path = tmp_path / "pods.json"
    path.write_text(pods(gpu_pod(2)))
    (job,) = read_jobs(path)
    assert load_jobs(path).shape == "Kubernetes pods"
    assert job.job == "verrazzano-install/verrazzano-install-my-verrazzano"  # its job-name label
    assert job.aliases == ("verrazzano-install/verrazzano-install-my-verrazzano-p7mqx",)  # what DCGM's pod labels say
    assert job.counts == (("verrazzano-control-plane", 2),) and job.cluster == "verrazzano-install"
    assert (job.end - job.start) == 615  # startTime 19:50:30 to the container's finishedAt 20:00:45


def retried(pod: dict[str, Any], name: str, start: str, end: str, uid: str | None) -> dict[str, Any]:
    """The real pod under another name and lifetime, its owner's uid ``uid`` (None: not said)."""
    pod = copy.deepcopy(pod)
    pod["metadata"]["name"] = name
    pod["status"]["startTime"] = start
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = end
    if uid is None:
        del pod["metadata"]["labels"]["controller-uid"]
        del pod["metadata"]["ownerReferences"]
    else:
        pod["metadata"]["labels"]["controller-uid"] = uid
        pod["metadata"]["ownerReferences"][0]["uid"] = uid
    return pod


def test_pods_under_one_job_name_are_one_job_only_while_it_exists(tmp_path):
    """A Job's name is unique while the Job exists: pods of one owner (its uid) are one job;
    without a uid, pods under one name that ran one after the other were jobs of their own."""
    pod = gpu_pod(1)
    first, later = ("2021-09-01T19:50:30Z", "2021-09-01T20:00:45Z"), ("2021-09-01T21:00:00Z", "2021-09-01T21:10:00Z")
    path = tmp_path / "pods.json"
    path.write_text(pods(retried(pod, "a-1", *first, None), retried(pod, "a-2", *later, None)))
    assert sorted(by_name(path)) == ["verrazzano-install/a-1", "verrazzano-install/a-2"]
    path.write_text(pods(retried(pod, "a-1", *first, "u-1"), retried(pod, "a-2", *later, "u-1")))
    (one,) = read_jobs(path)
    assert one.job == "verrazzano-install/verrazzano-install-my-verrazzano" and len(one.aliases) == 2
    path.write_text(pods(retried(pod, "a-1", *first, "u-1"), retried(pod, "a-2", *later, "u-2")))
    assert len(read_jobs(path)) == 2
    overlapping = ("2021-09-01T19:55:00Z", "2021-09-01T20:05:00Z")  # a worker beside the master, as a training job's
    path.write_text(pods(retried(pod, "a-1", *first, None), retried(pod, "a-2", *overlapping, None)))
    (together,) = read_jobs(path)
    assert together.job == "verrazzano-install/verrazzano-install-my-verrazzano" and together.counts == (
        ("verrazzano-control-plane", 2),
    )


def test_pods_under_one_name_without_a_uid_are_one_job_only_if_they_started_together(tmp_path):
    """Parallel pods or replicas are created together; a pod that started an hour after the
    first, while it still ran, is another Job that reused the name."""
    pod = gpu_pod(1)
    first, hour_later = ("2021-09-01T19:50:30Z", "2021-09-01T22:00:00Z"), ("2021-09-01T20:50:30Z", "2021-09-01T21:10:00Z")
    path = tmp_path / "pods.json"
    path.write_text(pods(retried(pod, "a-1", *first, None), retried(pod, "a-2", *hour_later, None)))
    assert sorted(by_name(path)) == ["verrazzano-install/a-1", "verrazzano-install/a-2"]
    path.write_text(pods(retried(pod, "a-1", *first, "u-1"), retried(pod, "a-2", *hour_later, "u-1")))
    (one,) = read_jobs(path)  # one owner: one job, each pod's GPUs over its own lifetime
    assert [(p.job, p.end - p.start) for p in one.parts] == [
        ("verrazzano-install/a-1", 7770.0),
        ("verrazzano-install/a-2", 1170.0),
    ]


def test_a_jupyterhub_pod_is_interactive_and_names_its_user(tmp_path):
    pod = gpu_pod(1, component="singleuser-server")
    del pod["metadata"]["labels"]["job-name"]
    pod["metadata"]["annotations"]["hub.jupyter.org/username"] = "ana"
    pod["status"]["phase"] = "Running"
    path = tmp_path / "pods.json"
    path.write_text(pods(pod))
    (job,) = read_jobs(path)
    assert (job.job, job.kind, job.user, math.isinf(job.end)) == (
        "verrazzano-install/verrazzano-install-my-verrazzano-p7mqx",
        "interactive",
        "ana",
        True,
    )


def test_a_gres_string_counts_per_node_and_a_tres_total_is_the_jobs(tmp_path):
    """Slurm's GRES (``--gres=gpu:h200:8``, ``TresPerNode``) is per node; TRES
    (``gres/gpu=16``) is the job's whole allocation."""
    csv = tmp_path / "jobs.csv"
    csv.write_text(
        "JobId,UserName,StartTime,EndTime,NodeList,Gres\n"
        '4,ana,2024-05-10T00:45:45,2024-05-10T03:42:30,"g[002,005]",gpu:h200:8\n'
        "5,ana,2024-05-10T00:45:45,2024-05-10T03:42:30,g007,gpu:2\n"
    )
    jobs = by_name(csv)
    assert (jobs["4"].counts, jobs["5"].counts) == ((("g002", 8), ("g005", 8)), (("g007", 2),))
    csv.write_text(
        "JobId,UserName,StartTime,EndTime,NodeList,AllocTRES\n"
        '4,ana,2024-05-10T00:45:45,2024-05-10T03:42:30,"g[002,005]","cpu=32,gres/gpu=16,mem=64G"\n'
    )
    assert by_name(csv)["4"].counts == (("g002", 8), ("g005", 8))


def test_tables_under_the_names_operators_use(tmp_path):
    csv = tmp_path / "jobs.csv"
    csv.write_text(
        "JobID,User,Partition,Start,End,NodeList,NGPUS,Kind\n"
        "17,ana,a100,2024-05-01T10:00:00Z,2024-05-01T12:00:00Z,gpu[01-02],8,Interactive\n"
    )
    (job,) = read_jobs(csv)
    assert (job.job, job.user, job.cluster, job.kind) == ("17", "ana", "a100", "interactive")
    assert job.counts == (("gpu01", 4), ("gpu02", 4)) and job.end - job.start == 7200
    lines = tmp_path / "jobs.jsonl"
    lines.write_text('{"job_id": "x1", "user": "bo", "cluster": "vc2", "gpus": "gpu01:0-1", "start": 1714557600}\n')
    (job,) = read_jobs(lines)
    assert (job.job, job.cluster, job.gpus, math.isinf(job.end)) == ("x1", "vc2", (("gpu01", 0), ("gpu01", 1)), True)
    listed = tmp_path / "jobs.json"
    listed.write_text('[{"pod": "trainer-0", "namespace": "ml", "node": "gpu03", "gpus": 1}]')
    (job,) = read_jobs(listed)
    assert (job.job, job.cluster, job.counts) == ("ml/trainer-0", "ml", (("gpu03", 1),))  # as DCGM's pod labels name it


def test_a_table_whose_names_match_nothing_says_what_every_job_lacks(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("id,owner_name,vc_name,when\n1,ana,vc1,2024-05-01\n2,bo,vc2,2024-05-02\n")
    (note,) = load_jobs(path).notes
    assert note == (
        f"{path}: none of the 2 jobs has a user, a cluster or partition, a kind, GPUs or nodes, a start and end: every job is"
        " user 'unknown', cluster 'default', batch, or interactive on a partition named so, placed only by the readings' job labels, held for all time"
        " (columns not read: owner_name, vc_name, when)"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("job,start\n1,yesterday\n", "row 1: time 'yesterday' is neither Unix seconds nor ISO 8601"),
        ("job,kind\n1,batch\n2,notebook\n", "row 2: kind 'notebook' is not one of batch, interactive"),
        ("job,gpus\n1,n1:0\n1,n1:1\n", "row 2: job '1' appears twice"),
        ("job,gpus\n1,n1:x\n", "row 1: GPU index 'x' is not a number or range"),
        ("job,start,end\n1,100,50\n", "row 1: job 1 ends before it starts"),
        ('{"job": "a"}\n[1]\n', "row 2: a job is a JSON object"),
        ("user,gpus\nana,n1:0\n", "no job column (looked for job, jobidraw, jobid, id, pod, podname); the columns: user, gpus"),
        (
            '{"jobs": [{"job_id": 1, "time": {"start": 5}, "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": "x"}]}}]}',
            "row 1: tres.allocated gres/gpu count is not a number",
        ),
        ('{"kind": "List", "items": [{"kind": "Node"}]}', "row 1: not a Pod (kind 'Node')"),
    ],
)
def test_a_bad_jobs_file_is_one_line_naming_the_file_and_row(tmp_path, text, problem):
    path = tmp_path / "jobs.txt"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_jobs(path)
    assert str(caught.value).startswith(f"{path}: ") and problem in str(caught.value) and "\n" not in str(caught.value)
