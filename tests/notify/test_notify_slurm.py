"""The Slurm channel against a real Slurm: a running job is told in its own output
(`scontrol notify`) and its comment carries the notice; a job Slurm does not know is a
failed delivery in scontrol's words."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from slurm_cluster import Slurm, slurm_for_tests

from failclass.contracts import Notice
from failclass.notify.channels import DeliveryFailed, SlurmSender
from failclass.notify.config import Channel

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("slurm")]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    with slurm_for_tests(tmp_path_factory.mktemp("slurm-notify"), short_backoff=False) as cluster:
        yield cluster


def test_a_running_job_hears_the_notice_and_keeps_it_in_its_comment(slurm: Slurm, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])
    submitted = slurm.sbatch("#!/bin/bash\n#SBATCH --job-name=notebook\necho notebook up\nsleep 300\n")
    job_id = submitted.stdout.strip()
    assert submitted.returncode == 0 and job_id, submitted.stderr
    output = slurm.base / "jobs" / f"notebook-{job_id}.out"
    deadline = time.monotonic() + 60
    while "notebook up" not in (output.read_text() if output.exists() else ""):  # its batch step listens from now
        assert time.monotonic() < deadline, slurm.job(job_id)
        time.sleep(0.5)
    notice = Notice("idle_warning", job_id, "ana", "idle", "no GPU work for 40 min", datetime.now(UTC), f"idle_warning:{job_id}")
    SlurmSender(Channel("slurm", comment=True)).send(notice, timeout=30)
    said = "failclass: idle GPUs: no GPU work for 40 min"
    deadline = time.monotonic() + 20
    while said not in (output.read_text() if output.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert said in output.read_text()
    assert slurm.job(job_id)["Comment"] == said and slurm.job(job_id)["JobState"] == "RUNNING"
    slurm.run("scancel", job_id)
    # scontrol's words, as Slurm 22.05 prints them here
    with pytest.raises(DeliveryFailed, match="job notify failure: Invalid job id specified"):
        SlurmSender(Channel("slurm")).send(Notice("hung_job", "999999", "ana", "hung", "m", datetime.now(UTC), "k"), 30)
