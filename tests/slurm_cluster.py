"""A real Slurm (munged, slurmctld, one slurmd per node from Debian's slurm-wlm) in a
scratch folder, with failclass's epilog and job_submit.lua installed, for the end-to-end
tests. Facts it relies on: ../shared/notes/slurm-single-node.md. Several nodes run on this
one host as Slurm's own test setups do: one ``NodeName=... NodeHostname=<host> Port=...``
line each and one ``slurmd -N <node>`` each, ``%n`` in the slurmd paths (Debian's build
needs no ``--enable-multiple-slurmd`` for this, measured on 22.05.8)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAILCLASS = Path(sys.executable).with_name("failclass")
PACKAGES = ("slurm-wlm", "munge")


def ensure_slurm() -> str | None:
    """None when Slurm is ready, else why it cannot be (the tests then skip, saying so)."""
    if shutil.which("slurmctld") and shutil.which("munged"):
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "Slurm is not installed and installing it needs root and apt-get"
    done = subprocess.run(["apt-get", "install", "-y", *PACKAGES], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"apt-get install {' '.join(PACKAGES)} failed: {done.stderr.strip()[-500:]}"
    return None


def node_line() -> str:
    line = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    return re.sub(r"^NodeName=\S+", "", line).strip()


class Slurm:
    def __init__(self, base: Path, nodes: int = 1, port: int = 16817) -> None:
        self.base = base
        self.host = socket.gethostname().split(".")[0]
        # One node: the host itself. Several: node1..nodeN, all on this host.
        self.nodes = [self.host] if nodes == 1 else [f"node{n}" for n in range(1, nodes + 1)]
        self.port = port
        self.conf = base / "etc" / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.daemons: list[subprocess.Popen[bytes]] = []
        # munged wants every folder above its socket world-executable; pytest's are 0700.
        self.munge = Path(tempfile.mkdtemp(prefix="failclass-munge-"))
        self.munge.chmod(0o755)

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=60, check=check)

    def write_config(self) -> None:
        for folder in ("etc", "state", "jobs", *(f"spool/{node}" for node in self.nodes)):
            (self.base / folder).mkdir(parents=True, exist_ok=True)
        munge = self.munge / "munge.sock"
        self.conf.write_text(
            f"""ClusterName=failclass
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={self.port}
SlurmdPort={self.port + 1}
AuthType=auth/munge
AuthInfo=socket={munge},cred_expire=5
SlurmUser=root
StateSaveLocation={self.base}/state
SlurmdSpoolDir={self.base}/spool/%n
SlurmctldPidFile={self.base}/slurmctld.pid
SlurmdPidFile={self.base}/slurmd-%n.pid
SlurmctldLogFile={self.base}/slurmctld.log
SlurmdLogFile={self.base}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
MinJobAge=300
EpilogSlurmctld={self.base}/etc/failclass-epilog.sh
JobSubmitPlugins=lua
{self.node_lines()}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        )

    def node_lines(self) -> str:
        hardware = node_line()
        if self.nodes == [self.host]:
            return f"NodeName={self.host} NodeAddr=127.0.0.1 {hardware} State=UNKNOWN"
        return "\n".join(
            f"NodeName={name} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={self.port + 1 + n} {hardware} State=UNKNOWN"
            for n, name in enumerate(self.nodes)
        )

    def start(self) -> None:
        self.start_munge()
        self.start_daemons()

    def start_munge(self) -> None:
        munge = self.munge
        key = munge / "munge.key"
        self.run("mungekey", "--create", f"--keyfile={key}", "--force")
        key.chmod(0o600)
        self.run(
            "munged",
            f"--socket={munge / 'munge.sock'}",
            f"--key-file={key}",
            f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={munge / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        )

    def start_daemons(self) -> None:
        """slurmctld and a slurmd per node, until every node is idle."""
        daemons = {"slurmctld": ["slurmctld", "-D", "-c", "-f", str(self.conf)]}
        daemons.update({f"slurmd-{node}": ["slurmd", "-D", "-N", node, "-f", str(self.conf)] for node in self.nodes})
        for name, command in daemons.items():
            log = (self.base / f"{name}.out").open("wb")
            self.daemons.append(
                subprocess.Popen(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=self.env,
                    start_new_session=True,
                    cwd=self.base,
                )
            )
        deadline = time.monotonic() + 60
        while self.node_states() != dict.fromkeys(self.nodes, "idle"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"Slurm did not come up: {(self.base / 'slurmctld.log').read_text()[-2000:]}")
            time.sleep(0.3)

    def node_states(self) -> dict[str, str]:
        listed = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout.split()
        return dict(zip(listed[::2], listed[1::2], strict=False))

    def stop(self) -> None:
        self.run("scancel", "--user=root", check=False)
        for daemon in reversed(self.daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
        self.run("munged", f"--socket={self.munge / 'munge.sock'}", "--stop", check=False)
        shutil.rmtree(self.munge, ignore_errors=True)

    def sbatch(self, script: str) -> subprocess.CompletedProcess[str]:
        path = self.base / "jobs" / f"job-{time.monotonic_ns()}.sh"
        path.write_text(script)
        return self.run(
            "sbatch", "--parsable", "--open-mode=append", "-o", str(self.base / "jobs" / "%x-%j.out"), str(path), check=False
        )

    def job(self, job_id: str) -> dict[str, str]:
        from failclass.adapters.slurm import parse_show_job

        return parse_show_job(self.run("scontrol", "show", "job", "-o", job_id).stdout)

    def wait_final(self, job_id: str, timeout: float = 120, states: tuple[str, ...] = ()) -> dict[str, str]:
        """The job once it is over (or in one of ``states``): not pending, running,
        completing or requeued."""
        deadline = time.monotonic() + timeout
        final = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", *states)
        while True:
            job = self.job(job_id)
            if job.get("JobState") in final:
                time.sleep(1.5)  # the epilog of this last run may still be writing
                return self.job(job_id)
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job.get('JobState')} after {timeout} s")
            time.sleep(0.5)


@contextmanager
def running_slurm(base: Path, hook_settings: list[str], nodes: int = 1, port: int = 16817) -> Iterator[Slurm]:
    slurm = Slurm(base, nodes, port)
    slurm.write_config()
    installed = subprocess.run(
        [str(FAILCLASS), "hook", "slurm-install", str(base / "etc"), "--slurm-conf", str(slurm.conf), *hook_settings],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert "EpilogSlurmctld=" in installed.stdout
    slurm.start()
    try:
        yield slurm
    finally:
        slurm.stop()


@contextmanager
def slurm_for_tests(base: Path, nodes: int = 1, port: int = 16817, short_backoff: bool = True) -> Iterator[Slurm]:
    """A real Slurm whose hook records into ``base``/failclass.db, for a test module's
    fixture; the module skips, saying why, where Slurm cannot run. ``short_backoff``
    keeps the requeue cycle to a second or two."""
    import pytest

    problem = ensure_slurm()
    if problem:
        pytest.skip(f"no Slurm here: {problem}")
    settings = ["--database-url", f"sqlite:///{base / 'failclass.db'}"]
    if short_backoff:
        policy = base / "policy.yaml"
        policy.write_text("backoff: {base_seconds: 1, max_seconds: 2}\n")
        settings += ["--policy", str(policy)]
    with running_slurm(base, settings, nodes, port) as cluster:
        yield cluster
