"""Against a real Slurm with accounting (tests/slurm_accounting.py): the jobs of
corpora/slurm_jobs/record_accounting.py run again, and what ``sacct --json``, ``sacct -P``
and ``scontrol show job -d`` print now reads as the recorded files do."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from failclass.waste.allocation import JobAllocation
from failclass.waste.jobfiles import load_jobs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "corpora" / "slurm_jobs"))

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("slurm")]


def test_fresh_slurm_output_reads_as_the_recording(tmp_path):
    from record_accounting import record
    from slurm_accounting import ensure_accounting

    problem = ensure_accounting() if os.geteuid() == 0 else "Slurm with accounting needs root here"
    if problem:
        pytest.skip(f"no Slurm with accounting: {problem}")
    fresh = record(tmp_path)
    for kind, path in fresh.items():
        now, then = load_jobs(path), load_jobs(ROOT / "corpora" / "slurm_jobs" / path.name)
        assert (now.shape, shape(now.jobs)) == (then.shape, shape(then.jobs)), kind


def shape(jobs: list[JobAllocation]) -> list[tuple[object, ...]]:
    """What must not change between runs: ids, kinds, GPUs per node (the indices may), running or not."""
    return sorted((j.job, j.kind, j.counts, Counter(node for node, _ in j.gpus), j.aliases, j.end == float("inf")) for j in jobs)
