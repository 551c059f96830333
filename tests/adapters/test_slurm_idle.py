"""The idle watch against a real Slurm: an idle interactive job is warned in its own
output (scontrol notify) and, past the release limit, cancelled (scancel); a hung batch
job is cancelled so that failclass's epilog decides its attempt."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import ROOT
from slurm_cluster import Slurm, slurm_for_tests

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("slurm")]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    with slurm_for_tests(tmp_path_factory.mktemp("slurm-idle"), short_backoff=False) as cluster:
        yield cluster


def write_readings(path: Path, start: datetime, end: datetime, idle_memory_mib: int) -> None:
    """nvidia-smi readings of GPU 0 every 15 s: busy its first 10 minutes, idle after."""
    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    moment = start
    while moment <= end:
        busy = moment < start + timedelta(minutes=10)
        memory = 8000 if busy else idle_memory_mib
        lines.append(f"{moment:%Y/%m/%d %H:%M:%S}.000, 0, {60 if busy else 0} %, {memory} MiB, 40960 MiB")
        moment += timedelta(seconds=15)
    path.write_text("\n".join(lines) + "\n")


def idle_notebook(
    slurm: Slurm, tmp_path: Path, idle_minutes: int, command: tuple[str, ...] = ("waste", "watch")
) -> tuple[str, list[str]]:
    """A running job whose (recorded) GPU readings show 10 busy minutes, then idle ones."""
    submitted = slurm.sbatch("#!/bin/bash\n#SBATCH --job-name=notebook\necho notebook up\nsleep 300\n")
    job_id = submitted.stdout.strip()
    assert submitted.returncode == 0 and job_id, submitted.stderr
    deadline = time.monotonic() + 60
    while slurm.job(job_id).get("JobState") != "RUNNING":
        assert time.monotonic() < deadline, slurm.job(job_id)
        time.sleep(0.5)
    now = datetime.now(UTC).replace(microsecond=0)
    start = now - timedelta(minutes=10 + idle_minutes)
    write_readings(tmp_path / f"{slurm.host}.csv", start, now, idle_memory_mib=0)
    (tmp_path / "jobs.csv").write_text(f"job,user,kind,gpus,start\n{job_id},ana,interactive,{slurm.host}:0,{start.isoformat()}\n")
    command = [
        sys.executable,
        "-m",
        "failclass",
        "waste",
        "watch",
        str(tmp_path / f"{slurm.host}.csv"),
        "--jobs",
        str(tmp_path / "jobs.csv"),
    ]
    return job_id, [*command, "--now", now.isoformat(), "--act", "slurm"]


def output_of(slurm: Slurm, job_id: str) -> str:
    return "".join(path.read_text() for path in (slurm.base / "jobs").glob(f"notebook-{job_id}.out"))


def test_an_idle_notebook_past_the_warning_is_told_so_in_its_output_and_keeps_running(slurm: Slurm, tmp_path: Path) -> None:
    job_id, command = idle_notebook(slurm, tmp_path, idle_minutes=40)
    done = subprocess.run(command, capture_output=True, text=True, env=slurm.env, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"warn {job_id}: no GPU work for 40 min")
    assert "failed" not in done.stdout
    deadline = time.monotonic() + 20
    while "failclass: warn" not in output_of(slurm, job_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "failclass: warn: no GPU work for 40 min" in output_of(slurm, job_id)
    assert slurm.job(job_id)["JobState"] == "RUNNING"
    slurm.run("scancel", job_id)


def test_an_idle_notebook_past_the_release_limit_is_cancelled_by_the_hook(slurm: Slurm, tmp_path: Path) -> None:
    job_id, command = idle_notebook(slurm, tmp_path, idle_minutes=75, command=("hook", "idle-watch"))
    done = subprocess.run(command, capture_output=True, text=True, env=slurm.env, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"release {job_id}: no GPU work for 75 min")
    assert slurm.wait_final(job_id, timeout=60)["JobState"] == "CANCELLED"


def test_a_hung_job_is_cancelled_and_its_attempt_decided_by_the_epilog(slurm: Slurm, tmp_path: Path) -> None:
    """A real process that printed its steps, then stopped printing (a hang), with its GPU
    busy 10 minutes and then idle in the readings; judged 70 minutes after its last line."""
    from failclass.store.repository import Store

    script = (
        "#!/bin/bash\n#SBATCH --job-name=stuck\n#SBATCH --no-requeue\necho step 1 loss 2.31\necho step 2 loss 2.07\nsleep 300\n"
    )
    job_id = slurm.sbatch(script).stdout.strip()
    log = slurm.base / "jobs" / f"stuck-{job_id}.out"
    deadline = time.monotonic() + 60
    while slurm.job(job_id).get("JobState") != "RUNNING" or "step 2" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, slurm.job(job_id)
        time.sleep(0.5)
    judged = datetime.fromtimestamp(log.stat().st_mtime, UTC).replace(microsecond=0) + timedelta(minutes=70)
    start = judged - timedelta(minutes=80)
    write_readings(tmp_path / f"{slurm.host}.csv", start, judged, idle_memory_mib=8000)  # a hang holds its memory
    (tmp_path / "jobs.csv").write_text(
        f"job,user,kind,gpus,start,log\n{job_id},ana,batch,{slurm.host}:0,{start.isoformat()},{log}\n"
    )
    command = [sys.executable, "-m", "failclass", "waste", "watch", str(tmp_path / f"{slurm.host}.csv")]
    command += ["--jobs", str(tmp_path / "jobs.csv"), "--now", judged.isoformat(), "--act", "slurm"]
    done = subprocess.run(command, capture_output=True, text=True, env=slurm.env, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"cancel {job_id}: no GPU work for 70 min and no log line for 70 min after it had worked")
    assert "| step 2 loss 2.07" in done.stdout  # its last lines, quoted
    final = slurm.wait_final(job_id, timeout=60)
    assert final["JobState"] == "CANCELLED" and final["Comment"].startswith("failclass: hung: no GPU work")
    deadline = time.monotonic() + 30
    while not (attempts := Store.open(f"sqlite:///{slurm.base / 'failclass.db'}").job(job_id)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(attempts) == 1 and attempts[0].decision is not None  # not skipped as a release: decided


def test_running_jobs_are_read_from_the_real_scontrol_show_job_d(slurm: Slurm) -> None:
    from failclass.adapters.slurm_jobs import running_allocations

    def running_when(ready) -> dict:
        deadline = time.monotonic() + 60
        while True:
            found = {job.job: job for job in running_allocations(slurm.run("scontrol", "show", "job", "-d").stdout)}
            if ready(found):
                return found
            assert time.monotonic() < deadline, found
            time.sleep(0.5)

    # One job at a time: this one-node Slurm gives a job the whole node.
    batch = slurm.sbatch("#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --no-requeue\nsleep 120\n").stdout.strip()
    job = running_when(lambda found: batch in found)[batch]
    assert (job.user, job.cluster, job.kind) == ("root", "debug", "batch")
    assert abs(job.start - time.time()) < 120
    assert job.gpus == ()  # this Slurm has no GPUs: nothing to place readings on
    slurm.run("scancel", batch, check=False)
    slurm.wait_final(batch, timeout=60)

    allocated = slurm.run("salloc", "--no-shell", "--job-name=notebook-shell", check=False)
    found = running_when(lambda found: any(job.kind == "interactive" for job in found.values()))
    assert [job.kind for job in found.values()] == ["interactive"], allocated.stderr
    slurm.run("scancel", "--user=root", check=False)
