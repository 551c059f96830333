"""Record what a real Slurm prints about GPU jobs: ``sacct --json``, ``sacct -P`` and
``scontrol show job -d``, after running a small set of GPU jobs on a real Slurm with
accounting (tests/slurm_accounting.py: slurmctld, two slurmd with 4 GRES GPUs each,
slurmdbd, a private MariaDB).

    python corpora/slurm_jobs/record_accounting.py OUT_FOLDER

The jobs: a 2-GPU batch job; a 2-node job with 2 GPUs per node; a 2-task array, 1 GPU each;
a job that exits 3; an interactive ``srun`` (no batch step); a 2-node job with 2 GPUs per
node still running when the output is taken (only a running job's GPU indices are printed:
once a job ends, ``scontrol show job -d`` prints ``GRES=`` empty); one held pending
(``--begin=now+1hour``). Needs root (apt-get installs
slurm-wlm, slurmdbd, munge and mariadb-server when missing). tests/waste/test_jobfiles_slurm.py
reads the recorded files, and records fresh ones where Slurm can run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from slurm_accounting import AccountingSlurm, ensure_accounting

SACCT_FIELDS = "JobID,JobIDRaw,JobName,User,Partition,State,Start,End,NodeList,AllocTRES"
FINISHED = ("train", "multinode", "sweep", "fails", "interactive")


def submit(slurm: AccountingSlurm) -> dict[str, str]:
    """Run the jobs; the names of those sbatch took, with their ids."""
    jobs = slurm.base / "jobs"
    out = str(jobs / "%x-%j.out")
    batch = {
        "train": ["--gres=gpu:2", "--wrap", "echo epoch 1; sleep 3; echo done"],
        "multinode": ["-N2", "--gres=gpu:2", "--wrap", "srun hostname; sleep 2"],
        "sweep": ["--array=0-1", "--gres=gpu:1", "-o", str(jobs / "%x-%A_%a.out"), "--wrap", "sleep 2"],
        "fails": ["--gres=gpu:1", "--wrap", "echo oops; exit 3"],
        "running": ["-N2", "--gres=gpu:2", "--wrap", "sleep 600"],
        "later": ["--gres=gpu:1", "--begin=now+3600", "--wrap", "true"],
    }
    ids = {}
    for name, options in batch.items():
        extra = [] if "-o" in options else ["-o", out]
        done = slurm.run("sbatch", "--parsable", "-J", name, "-D", str(jobs), *extra, *options)
        ids[name] = done.stdout.strip().split(";")[0]
    slurm.run("srun", "-J", "interactive", "--gres=gpu:1", "sleep", "2")
    return ids


def settle(slurm: AccountingSlurm, timeout: float = 120) -> None:
    """Until every finished-to-be job has finished (and is in the accounting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = slurm.run("sacct", "-a", "-X", "-n", "-P", "-o", "JobName,State", check=False).stdout.splitlines()
        states = dict(line.split("|", 1) for line in listed if "|" in line)
        done = [name for name in FINISHED if states.get(name, "").split(" ")[0] in ("COMPLETED", "FAILED")]
        if len(done) == len(FINISHED) and "RUNNING" in states.get("running", ""):
            return
        time.sleep(1)
    raise TimeoutError(f"jobs did not settle: {slurm.run('sacct', '-a', '-X', check=False).stdout}")


def record(out: Path) -> dict[str, Path]:
    """Run the jobs on a fresh Slurm and write what it prints into ``out``."""
    problem = ensure_accounting()
    if problem:
        raise RuntimeError(problem)
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="failclass-sacct-"))
    slurm = AccountingSlurm(base)
    slurm.write_config()
    slurm.start()
    try:
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 60))
        submit(slurm)
        settle(slurm)
        files = {
            "sacct_json": out / "sacct_json--22.05-gres-jobs.json",
            "sacct_parsable": out / "sacct_parsable--22.05-gres-jobs.txt",
            "scontrol": out / "scontrol_show_job_d--22.05-gres-jobs.txt",
        }
        files["sacct_json"].write_text(slurm.run("sacct", "--json", "-a", "-S", since).stdout)
        files["sacct_parsable"].write_text(slurm.run("sacct", "-a", "-P", "-S", since, "-o", SACCT_FIELDS).stdout)
        files["scontrol"].write_text(slurm.run("scontrol", "show", "job", "-d").stdout)
        return files
    finally:
        slurm.run("scancel", "--user=root", check=False)
        deadline = time.monotonic() + 30
        while slurm.run("squeue", "-h", "-t", "running,completing", check=False).stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.5)
        slurm.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    for name, path in record(parser.parse_args().out).items():
        print(f"{name}: {path}")
