"""Running jobs and their GPUs from `scontrol show job -d` (corpora/slurm_jobs: output
copied from public pages, with their sources)."""

from __future__ import annotations

from pathlib import Path

import pytest

from failclass.adapters.slurm_jobs import hostnames, running_allocations

JOBS = Path(__file__).resolve().parents[2] / "corpora" / "slurm_jobs"


def read(name: str):
    return running_allocations((JOBS / f"scontrol_show_job_d--{name}.txt").read_text())


def test_the_pre_19_05_form_with_non_contiguous_indices():
    (job,) = read("huji-gres-idx-noncontig-4gpu")
    assert (job.job, job.user, job.cluster, job.kind) == ("153291", "user3", "medium", "batch")
    assert job.gpus == (("node-06", 0), ("node-06", 2), ("node-06", 3), ("node-06", 5))


def test_an_interactive_job_with_a_typed_gpu_and_another_gres():
    (job,) = read("huji-interactive-typed-rtx2080")
    assert (job.kind, job.cluster, job.gpus) == ("interactive", "interactive", (("node-001", 1),))


def test_the_19_05_form_of_a_one_gpu_batch_job():
    (job,) = read("huji-1gpu-array-batch")
    assert job.kind == "batch" and job.gpus == (("cortex-08", 5),)


@pytest.mark.parametrize(
    ("nodes", "names"),
    [("gpu01", ["gpu01"]), ("gpu[01-03]", ["gpu01", "gpu02", "gpu03"]), ("a[1,3],b[08-09]", ["a1", "a3", "b08", "b09"])],
)
def test_host_lists_expand_as_slurm_writes_them(nodes, names):
    assert hostnames(nodes) == names
