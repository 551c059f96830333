"""The idle watch against a real Slurm: an idle interactive job is warned in its own
output (scontrol notify) and, past the release limit, cancelled (scancel); run every few
minutes by the policy's watch: section, it is warned twice, then released, each step once,
in the store, and told by mail and webhook; a hung batch job is cancelled so that
failclass's epilog decides its attempt."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import ROOT
from receivers import receiver, smtp_server
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
    slurm: Slurm, tmp_path: Path, idle_minutes: int, command: tuple[str, ...] = ("waste", "watch"), ahead_minutes: int = 0
) -> tuple[str, list[str]]:
    """A running job whose (recorded) GPU readings show 10 busy minutes, then idle ones
    until now (and ``ahead_minutes`` beyond, for a watch judging later)."""
    submitted = slurm.sbatch("#!/bin/bash\n#SBATCH --job-name=notebook\necho notebook up\nsleep 300\n")
    job_id = submitted.stdout.strip()
    assert submitted.returncode == 0 and job_id, submitted.stderr
    deadline = time.monotonic() + 60
    while slurm.job(job_id).get("JobState") != "RUNNING":
        assert time.monotonic() < deadline, slurm.job(job_id)
        time.sleep(0.5)
    now = datetime.now(UTC).replace(microsecond=0)
    start = now - timedelta(minutes=10 + idle_minutes)
    write_readings(tmp_path / f"{slurm.host}.csv", start, now + timedelta(minutes=ahead_minutes), idle_memory_mib=0)
    (tmp_path / "jobs.csv").write_text(f"job,user,kind,gpus,start\n{job_id},ana,interactive,{slurm.host}:0,{start.isoformat()}\n")
    command = [
        sys.executable,
        "-m",
        "failclass",
        *command,
        str(tmp_path / f"{slurm.host}.csv"),
        "--jobs",
        str(tmp_path / "jobs.csv"),
    ]
    store = f"sqlite:///{tmp_path / 'steps.db'}"  # the steps taken
    return job_id, [*command, "--database-url", store, "--now", now.isoformat(), "--act", "slurm"]


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


def notifying_policy(path: Path, webhook: str, smtp_port: int) -> Path:
    """The built-in watch (warnings at 30 and 45 idle minutes, release at 60), its notices
    to a webhook and by mail."""
    channels = {
        "hook": {"type": "webhook", "url": webhook},
        "mail": {
            "type": "email",
            "smtp_host": "127.0.0.1",
            "smtp_port": smtp_port,
            "sender": "failclass@cluster",
            "to": ["ops@cluster"],
        },
    }
    routes = {kind: ["hook", "mail"] for kind in ("idle_warning", "release", "hung_job")}
    path.write_text(json.dumps({"notifications": {"channels": channels, "routes": routes}}))  # YAML reads JSON
    return path


def test_a_watch_run_every_few_minutes_warns_twice_then_releases_each_step_once_told_by_mail_and_webhook(
    slurm: Slurm, tmp_path: Path
) -> None:
    with receiver() as hook, smtp_server() as mail:
        job_id, command = idle_notebook(slurm, tmp_path, idle_minutes=31, ahead_minutes=30)
        now = datetime.fromisoformat(command[command.index("--now") + 1])
        store = f"sqlite:///{tmp_path / 'steps.db'}"
        policy = notifying_policy(tmp_path / "policy.yaml", hook.url, mail.port)
        base = [*command[: command.index("--now")], "--act", "slurm", "--policy", str(policy)]
        said = []
        for minutes in (0, 5, 15, 30):  # 31, 36, 46 and 61 minutes idle
            at = (now + timedelta(minutes=minutes)).isoformat()
            done = subprocess.run(
                [*base, "--now", at], capture_output=True, text=True, env=slurm.env, cwd=ROOT, timeout=120, check=False
            )
            assert done.returncode == 0, done.stderr
            said.append([line.split(":")[0] for line in done.stdout.splitlines() if not line.startswith(" ")])
        assert said == [[f"warn {job_id}"], [], [f"warn {job_id}"], [f"release {job_id}"]]
        assert slurm.wait_final(job_id, timeout=60)["JobState"] == "CANCELLED"
        deadline = time.monotonic() + 20
        while (len(hook.requests) < 3 or len(mail.mail) < 3) and time.monotonic() < deadline:
            time.sleep(0.2)
    posted = [json.loads(body) for _, body in hook.requests]
    assert [(p["kind"], p["job_id"]) for p in posted] == [("idle_warning", job_id), ("idle_warning", job_id), ("release", job_id)]
    assert (
        posted[1]["message"]
        == f"job {job_id} (ana): warn 2: no GPU work for 46 min; interactive jobs are released after 60 min idle"
    )
    subjects = [next(line for line in m.content.decode().splitlines() if line.startswith("Subject:")) for m in mail.mail]
    assert subjects == [f"Subject: failclass: {what}: job {job_id}" for what in ("idle GPUs", "idle GPUs", "job released")]
    output = output_of(slurm, job_id)
    assert "failclass: warn: no GPU work for 31 min" in output and "failclass: warn: no GPU work for 46 min" in output
    listed = subprocess.run(
        [sys.executable, "-m", "failclass", "waste", "steps", "--job", job_id, "--database-url", store, "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=True,
    )  # fmt: skip
    steps = [json.loads(line) for line in listed.stdout.splitlines()][::-1]
    assert [(s["action"], s["step"], s["user"], s["enforced"]) for s in steps] == [
        ("warn", 1, "ana", True), ("warn", 2, "ana", True), ("release", 1, "ana", True)
    ]  # fmt: skip
    assert any(line.startswith("scancel ") for line in steps[2]["done"]) and not any(
        "failed" in line for s in steps for line in s["done"]
    )


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
    store = f"sqlite:///{tmp_path / 'steps.db'}"
    command += ["--jobs", str(tmp_path / "jobs.csv"), "--now", judged.isoformat(), "--act", "slurm", "--database-url", store]
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
    (step,) = Store.open(store).watch_steps(job_id=job_id)
    assert (step.action, step.evidence[-1]) == ("cancel", "step 2 loss 2.07")
    assert any(line.startswith("scancel ") for line in step.done)


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
