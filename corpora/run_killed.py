"""Regenerate corpora/killed/: real training jobs killed from outside, and long healthy runs
cut off by a limit, whose logs name no failure (by docs/TAXONOMY.md: ``no_signature``).

    python corpora/run_killed.py [--only NAME]... [--kind KIND]... [--list] [--no-manifest] [--manifest-only]

Every line of every log is printed by a real program run here: corpora/programs/train_long.py
(a PyTorch CPU training job; alone, under torchrun with 2-4 gloo ranks, or in a bash job
script), by torchrun itself, by bash, or by a real one-node Slurm (slurm-wlm, brought up in
a scratch folder the way tests/slurm_cluster.py does). Kinds:

- ``single``: one process, sent SIGKILL or SIGTERM at a seeded moment (during start-up,
  mid-epoch, during a checkpoint save, during evaluation, or any time);
- ``torchrun``: the same under torchrun (``--tee 3``, a rank-prefix template, or neither);
- ``slurm``: sbatch jobs that hit ``--time=1`` or that ``scancel`` stops mid-run; the log is
  the job's output file, Slurm's own lines included;
- ``oom``: a job in a memory cgroup (v1 or v2, as root) whose memory grows until the
  kernel kills it; the log is the job's own output only (the kernel's report is elsewhere);
- ``noisy``: long healthy runs that print configuration dumps, real warnings, logging
  WARNING records and a download retried until it succeeds, cut off by a kill late in the run.

How a batch system kills: the job's processes sit in their own cgroup (or, without root,
its process tree) and the signal goes to every one of them ("all"), or to the job's main
process only ("main"); after a grace period whatever is left gets SIGKILL, and so does
anything still alive when the main process ends. Output is captured as a batch system
does: stdout and stderr of the job to one file. Each log's ``NAME.json`` records the
command, the job script, the environment added, the signal, its target, when it was sent
(the trigger, the delay, seconds since start, the last phase the log showed by then) and
the exit status. Kill times are seeded by the log's name; the rest (timings, pids, ports)
is whatever the run really printed.

Finally the manifest's ``origin: killed`` rows are replaced by one row per log in
``killed/`` (reason ``no_signature``, outcome ``killed``, split ``test``); other rows are
kept as they are. Needs: the venv's torch, root for the cgroups (the ``oom`` kind is skipped
without them), slurm-wlm and munge for ``slurm`` (installed with apt-get when missing and
root). Runs one job at a time; 20 to 35 minutes on a 2-core machine, depending on its load.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDED_ROOT = "/work/main"  # paths of this checkout are written as where the corpus was first built
CORPORA = ROOT / "corpora"
OUT = CORPORA / "killed"
MANIFEST = CORPORA / "manifest.jsonl"
PROGRAM = CORPORA / "programs" / "train_long.py"
PY = sys.executable
TORCHRUN = str(Path(PY).with_name("torchrun"))
SCRATCH = Path(tempfile.gettempdir()) / "failclass-killed"
SAFETY_S = 240  # no job here should live this long; past it, it is killed and the run is flagged
SLURM_PORT = 16917  # not the test suite's 16817

# Phase markers printed by train_long.py, newest wins: what the log showed when the signal went.
PHASES = [
    ("start-up", re.compile(r"Building dataset|Downloading|Initialized process group|Namespace\(")),
    ("training", re.compile(r"Epoch \d+/\d+|step \d+/\d+|Step \[\d+/\d+\]|'loss': |Training for")),
    ("evaluation", re.compile(r"Running evaluation|Evaluating")),
    ("checkpoint save", re.compile(r"Saving checkpoint to")),
    ("training", re.compile(r"Checkpoint saved")),
]
TRIGGERS = {
    "checkpoint": r"Saving checkpoint to",
    "late": r"Saving checkpoint to",  # after the k-th epoch's checkpoint, in the next epoch
    "eval": r"Running evaluation on",
    "start-up": r"Building dataset|Namespace\(|Initialized process group|Downloading",
    "mid-epoch": r"Epoch \d+/\d+|Epoch \[\d+/\d+\] Step \[10/|Training for",
}


@dataclass
class Kill:
    """When and how the job is stopped from outside."""

    signal: str = "SIGKILL"  # SIGKILL or SIGTERM
    target: str = "all"  # all: every process of the job; main: the job's main process only
    grace_s: float = 10.0  # after SIGTERM, SIGKILL to what is left
    phase: str = "any"  # the phase aimed at: start-up, mid-epoch, checkpoint, eval, late, any
    after_s: float = 0.0  # for any: seconds after the start
    occurrence: int = 1  # for a phase: which occurrence of its marker
    delay_s: float = 0.0  # for a phase: seconds after the marker appears


@dataclass
class Job:
    name: str
    kind: str  # single, torchrun, slurm, oom, noisy
    args: list[str]  # train_long.py's arguments
    style_env: dict[str, str] = field(default_factory=dict)
    script: str = ""  # a bash job script ("" = run the command directly)
    nproc: int = 0  # torchrun workers (0 = no torchrun)
    torchrun_opts: list[str] = field(default_factory=list)
    kill: Kill | None = None
    memory_mib: int = 0  # oom: the cgroup's limit
    slurm: dict[str, object] = field(default_factory=dict)  # sbatch options and how it ends


def number(job: Job) -> int:
    return int(job.name.rsplit("_", 1)[1])


def seeded(name: str) -> random.Random:
    return random.Random(int(hashlib.sha1(name.encode()).hexdigest(), 16))


def shown(text: str) -> str:
    return text.replace(PY, "$PY").replace(TORCHRUN, "$TORCHRUN").replace(str(ROOT), RECORDED_ROOT)


# --------------------------------------------------------------------------- the jobs


def plan() -> list[Job]:
    jobs: list[Job] = []
    styles = ("plain", "logging", "tqdm", "dict")
    formats = ("dash", "bracket", "short")
    phases = ("start-up", "mid-epoch", "checkpoint", "eval", "any")
    kills = (("SIGKILL", "all"), ("SIGTERM", "all"), ("SIGTERM", "main"))

    def aim(r: random.Random, phase: str, epochs: int) -> Kill:
        k = Kill(phase=phase)
        if phase == "start-up":  # after the job's first output, while it is still setting up
            k.delay_s = round(r.uniform(0.0, 2.5), 2)
        elif phase == "any":  # a moment, not a phase: start-up on a loaded machine, training on an idle one
            k.after_s = round(r.uniform(2.5, 5.0), 2)
        elif phase == "checkpoint":
            k.occurrence, k.delay_s = r.randint(1, max(1, epochs - 1)), round(r.uniform(0.0, 0.06), 3)
        elif phase == "eval":
            k.occurrence, k.delay_s = r.randint(1, max(1, epochs - 1)), round(r.uniform(0.02, 0.25), 3)
        else:
            k.occurrence, k.delay_s = r.randint(1, epochs), round(r.uniform(0.2, 2.5), 2)
        return k

    # single: one process, alone or in a bash job script
    for i in range(28):
        name = f"single_{i:02d}"
        r = seeded(name)
        style, phase = styles[i % 4], phases[i % 5]
        epochs = r.randint(3, 5)
        args = [f"--style={style}", f"--epochs={epochs}", f"--seed={i}", f"--every={r.choice((5, 10, 20))}"]
        if style == "logging":
            args.append(f"--log-format={formats[i % 3]}")
        if i % 7 == 3:
            args.append("--ckpt-every=50")
        kill = aim(r, phase, epochs)
        kill.signal, kill.target = kills[(i + 2 * (i // 5)) % 3]
        if i in (9, 16, 23):  # preemption-aware scripts: SIGTERM handler saves and exits
            args.append("--handle-sigterm")
            kill.signal, kill.target = "SIGTERM", "all"
        kill.grace_s = float(r.choice((5, 10, 30)))
        env = {"OMP_NUM_THREADS": "1"}
        if phase != "any" or style in ("logging", "tqdm") or i % 3 != 1:
            env["PYTHONUNBUFFERED"] = "1"  # else stdout is block-buffered into the file, as it really is
        script = ""
        if i % 3 == 1:
            script = job_script(name, args, env, r)
            env = {}
        jobs.append(Job(name, "single", args, env, script, kill=kill))

    # torchrun: 2-4 gloo ranks
    outputs = ("tee", "template", "plain", "tee-filter", "own-prefix")
    for i in range(20):
        name = f"torchrun_{i:02d}"
        r = seeded(name)
        style, phase = ("plain", "logging", "tqdm", "dict", "plain")[i % 5], phases[(i + 2) % 5]
        epochs = r.randint(3, 4)
        nproc = (2, 3, 4, 2)[i % 4]
        args = [f"--style={style}", f"--epochs={epochs}", f"--seed={100 + i}", f"--every={r.choice((5, 10))}"]
        if style == "logging":
            args.append(f"--log-format={formats[i % 3]}")
        output = outputs[i % 5]
        opts, env = [], {}
        if output in ("tee", "template", "tee-filter"):
            opts.append("--tee=3")
        if output == "template":
            env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = r.choice(("[rank${rank}]: ", "[${role_name}${local_rank}]:"))
        if output == "tee-filter":
            opts.append("--local-ranks-filter=0")
        if output == "own-prefix":
            args.append("--rank-prefix")
        if i % 3 != 0:
            env["OMP_NUM_THREADS"] = "1"  # else torchrun sets it to 1 and says so
        env["PYTHONUNBUFFERED"] = "1"
        kill = aim(r, phase, epochs)
        kill.signal, kill.target = kills[i % 3]
        kill.grace_s = float(r.choice((5, 10, 30)))
        jobs.append(Job(name, "torchrun", args, env, nproc=nproc, torchrun_opts=opts, kill=kill))

    # oom: memory cgroup, memory grows until the kernel kills the job; no kill from us
    for i in range(8):
        name = f"oom_{i:02d}"
        r = seeded(name)
        style = styles[i % 4]
        leak = ("snapshots", "cache")[i % 2]
        args = [f"--style={style}", "--epochs=20", f"--seed={200 + i}", "--every=10", f"--leak={leak}"]
        env = {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        script = ""
        if i % 2 == 1:
            script = job_script(name, args, env, r)
            env = {}
        jobs.append(Job(name, "oom", args, env, script, memory_mib=r.choice((450, 520, 600))))

    # noisy: long healthy runs with configuration dumps, warnings, retried downloads; cut late
    for i in range(14):
        name = f"noisy_{i:02d}"
        r = seeded(name)
        style = styles[i % 4]
        epochs = r.randint(5, 8)
        args = [f"--style={style}", f"--epochs={epochs}", f"--seed={300 + i}", "--every=20", "--config-dump"]
        args += ["--warnings"] * (i % 3 != 2) + ["--log-warnings"] * (i % 3 != 1)
        args.append(f"--download={('503', 'refused', 'none')[i % 3]}")
        args += [f"--timeout={r.choice((1800, 3600, 600))}", f"--max-failures={r.choice((3, 5))}"]
        args += ["--ignore-errors", "--skip-oom-batches"] * (i % 2) + ["--fail-fast"] * (i % 4 == 3)
        if style == "logging":
            args.append(f"--log-format={formats[i % 3]}")
        env = {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        kill = Kill(signal=("SIGTERM", "SIGKILL")[i % 2], target="all", phase="late", grace_s=10.0)
        kill.occurrence, kill.delay_s = r.randint(epochs - 3, epochs - 2), round(r.uniform(0.3, 1.5), 2)  # well on
        if i % 4 == 2:  # under torchrun
            jobs.append(Job(name, "noisy", args, {**env, "OMP_NUM_THREADS": "1"}, nproc=2, torchrun_opts=["--tee=3"], kill=kill))
            continue
        script = job_script(name, args, env, r) if i % 3 == 0 else ""
        jobs.append(Job(name, "noisy", args, {} if script else env, script, kill=kill))

    # slurm: time limits and cancellations
    slurm_plans = [
        ("timeout", "python", {}),
        ("timeout", "srun", {}),
        ("timeout", "torchrun", {}),
        ("scancel", "python", {}),
        ("scancel", "srun", {}),
        ("scancel", "torchrun", {}),
        ("scancel", "python", {"signal": "KILL"}),
        ("scancel", "srun", {"signal": "TERM", "full": True}),
        ("scancel", "torchrun", {"signal": "TERM", "full": True}),
        ("scancel", "python", {"batch": True}),
    ]
    for i, (how, runner, extra) in enumerate(slurm_plans):
        name = f"slurm_{i:02d}"
        r = seeded(name)
        style = styles[i % 4]
        epochs = 250 if how == "timeout" else r.randint(40, 60)  # longer than the limit or the cancel, however fast
        args = [f"--style={style}", f"--epochs={epochs}", f"--seed={400 + i}", "--every=20"]
        if i in (2, 5):
            args.append("--config-dump")
        if style == "logging":
            args.append(f"--log-format={formats[i % 3]}")
        plan_ = {"how": how, "runner": runner, **extra}
        if how == "scancel":
            plan_["after_s"] = round(r.uniform(14.0, 30.0), 2)
        jobs.append(Job(name, "slurm", args, slurm=plan_))
    return jobs


def job_script(name: str, args: list[str], env: dict[str, str], r: random.Random) -> str:
    """A bash job script of the plain kind batch users write."""
    lines = ["#!/bin/bash"]
    if r.random() < 0.4:
        lines.append("set -x")
    lines.append(f'echo "[$(date "+%Y-%m-%d %H:%M:%S")] job {name} starting on $(hostname), pid $$"')
    lines += [f"export {k}={v}" for k, v in env.items()]
    if r.random() < 0.5:
        lines.append(f'{PY} -c \'import torch; print("torch", torch.__version__, "threads", torch.get_num_threads())\'')
    lines.append(" ".join([PY, str(PROGRAM), *args, "--output-dir=$PWD/out"]))
    # No "exited with status $?" line: a runner's report of status 137 is filed as a crash report
    # (scenarios/labels.yaml, cpu_oom__sigkill_killed), and these logs are to say nothing.
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- cgroups


class Group:
    """The job's processes: its own cgroup when we may make one, else its process tree."""

    def __init__(self, name: str, memory_mib: int = 0) -> None:
        self.path: Path | None = None
        self.version = 0
        self.root_pid = 0
        for version, base in ((2, Path("/sys/fs/cgroup")), (1, Path("/sys/fs/cgroup/memory"))):
            if version == 2 and "memory" not in read(base / "cgroup.controllers"):
                continue
            if version == 1 and not (base / "memory.limit_in_bytes").exists():
                continue
            try:
                path = base / f"failclass_killed_{name}_{os.getpid()}"
                path.mkdir()
            except OSError:
                continue
            self.path, self.version = path, version
            break
        if memory_mib:
            if self.path is None:
                raise RuntimeError("no memory cgroup can be made here (needs root and cgroup v1 or v2)")
            limit = str(memory_mib * 2**20)
            if self.version == 1:
                (self.path / "memory.limit_in_bytes").write_text(limit)
                with contextlib.suppress(OSError):
                    (self.path / "memory.memsw.limit_in_bytes").write_text(limit)
            else:
                (self.path / "memory.max").write_text(limit)
                with contextlib.suppress(OSError):
                    (self.path / "memory.swap.max").write_text("0")

    def enter(self) -> None:  # in the child, before exec
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def pids(self) -> list[int]:
        """The job's live processes (a zombie has already died: it waits for its parent to reap it)."""
        pids = [int(p) for p in read(self.path / "cgroup.procs").split()] if self.path is not None else tree(self.root_pid)
        return [pid for pid in pids if read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[-1].split()[:1] not in (["Z"], [])]

    def signal(self, sig: int) -> int:
        sent = 0
        for pid in self.pids():
            try:
                os.kill(pid, sig)
                sent += 1
            except ProcessLookupError:
                pass
        return sent

    def kill_all(self, timeout: float = 20) -> int:
        """SIGKILL until nothing is left; how many got it."""
        killed, deadline = 0, time.monotonic() + timeout
        while self.pids() and time.monotonic() < deadline:
            killed += self.signal(signal.SIGKILL)
            time.sleep(0.05)
        return killed

    def oom_kills(self) -> int | None:
        if self.path is None:
            return None
        events = read(self.path / ("memory.oom_control" if self.version == 1 else "memory.events"))
        found = re.search(r"oom_kill (\d+)", events)
        if found:
            return int(found.group(1))
        failcnt = read(self.path / "memory.failcnt")
        return None if not failcnt else -int(failcnt)  # only the limit's fail count is known

    def remove(self) -> None:
        if self.path is not None:
            for _ in range(50):
                try:
                    self.path.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


def read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def tree(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read(Path("/proc") / entry / "stat")
            if stat:
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root] if root in parents else []
    while frontier:
        pid = frontier.pop()
        found.append(pid)
        frontier += [p for p, parent in parents.items() if parent == pid]
    return found


def free_port(start: int) -> int:
    for port in range(start, start + 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port")


# --------------------------------------------------------------------------- running one job


def phase_in(text: str) -> str:
    last, at = "nothing printed yet", -1
    for name, pattern in PHASES:
        for match in pattern.finditer(text):
            if match.start() > at:
                last, at = name, match.start()
    return last


def command_of(job: Job, work: Path) -> tuple[list[str], dict[str, str]]:
    if job.script:
        (work / "job.sh").write_text(job.script)
        return ["bash", "job.sh"], {}
    args = [str(PROGRAM), *job.args, f"--output-dir={work / 'out'}"]
    if job.nproc:
        port = free_port(29600 + 7 * number(job) + (100 if job.kind == "noisy" else 0))
        opts = [f"--nproc-per-node={job.nproc}", f"--master-port={port}", *job.torchrun_opts]
        return [TORCHRUN, *opts, *args], {}
    return [PY, *args], {}


def run_local(job: Job) -> dict[str, object]:
    work = SCRATCH / job.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if job.kind == "noisy" and "--log-warnings" in job.args:
        (work / "out").mkdir()
    command, _ = command_of(job, work)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OMP_NUM_THREADS", "PYTHONUNBUFFERED", "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")
    }
    env.update(job.style_env)
    log = work / "job.log"
    group = Group(job.name, job.memory_mib)
    facts: dict[str, object] = {}
    kill = job.kill
    started = time.monotonic()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=work,
            env=env,
            start_new_session=True,
            preexec_fn=group.enter if group.path else None,
        )
    group.root_pid = proc.pid
    sent_at = None
    try:
        while proc.poll() is None:
            now = time.monotonic() - started
            if now > SAFETY_S:
                facts["safety_kill"] = f"still running after {SAFETY_S} s: SIGKILL to all"
                group.kill_all()
                break
            if kill is not None and sent_at is None:
                text = log.read_bytes().decode(errors="replace")
                due = due_now(kill, text, now, facts)
                if due:
                    sent_at = time.monotonic() - started
                    facts["phase_in_log"] = phase_in(text)
                    sig = getattr(signal, kill.signal)
                    if kill.target == "all":
                        facts["processes_signalled"] = group.signal(sig)
                    else:
                        os.kill(proc.pid, sig)
                        facts["processes_signalled"] = 1
                    facts["sent_at_s"] = round(sent_at, 2)
            if sent_at is not None and kill.signal != "SIGKILL" and time.monotonic() - started - sent_at > kill.grace_s:
                if group.pids():
                    facts["sigkill_after_grace"] = group.kill_all()
                    facts["sigkill_after_grace_at_s"] = round(time.monotonic() - started, 2)
                break
            time.sleep(0.004 if kill is not None and kill.phase in ("checkpoint", "eval") else 0.02)
        proc.wait(timeout=60)
        for _ in range(40):  # processes already signalled may take a moment to die
            left = group.pids()
            if not left or sent_at is None:
                break
            time.sleep(0.05)
        if left:  # the batch system kills what the job left behind when it ends
            facts["left_behind_then_sigkilled"] = len(left)
            group.kill_all()
    finally:
        if proc.poll() is None:
            group.kill_all()
            proc.wait()
        oom = group.oom_kills()
        group.remove()
    facts["duration_s"] = round(time.monotonic() - started, 2)
    facts["returncode"] = proc.returncode
    facts["exit_status"] = 128 - proc.returncode if proc.returncode < 0 else proc.returncode
    if job.memory_mib:
        facts["oom_kills_in_cgroup"] = oom
    facts["log"] = log.read_bytes()
    facts["command"] = shown(" ".join(command))
    return facts


def due_now(kill: Kill, text: str, now: float, facts: dict[str, object]) -> bool:
    if kill.phase == "any":
        facts["trigger"] = f"{kill.after_s} s after the start"
        return now >= kill.after_s
    pattern = TRIGGERS[kill.phase]
    hits = list(re.finditer(pattern, text))
    if len(hits) < kill.occurrence:
        return False
    key = "_seen_at"
    if key not in facts:
        facts[key] = now
    facts["trigger"] = f"{kill.delay_s} s after occurrence {kill.occurrence} of /{pattern}/ in the log"
    return now - float(facts[key]) >= kill.delay_s  # type: ignore[arg-type]


# --------------------------------------------------------------------------- Slurm


class Slurm:
    """One-node Slurm in a scratch folder: the approach of tests/slurm_cluster.py (munged with
    a private key, slurmctld and slurmd in the foreground, proctrack/linuxproc, no cgroups)."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="failclass-killed-slurm-"))
        self.base.chmod(0o755)
        self.munge = self.base / "munge"
        self.munge.mkdir(mode=0o755)
        self.conf = self.base / "etc" / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.daemons: list[subprocess.Popen[bytes]] = []
        self.host = socket.gethostname().split(".")[0]

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=60, check=check)

    def start(self) -> None:
        for folder in ("etc", "state", "spool", "jobs"):
            (self.base / folder).mkdir(exist_ok=True)
        hardware = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
        hardware = re.sub(r"^NodeName=\S+", "", hardware).strip()
        self.conf.write_text(
            f"""ClusterName=failclass
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={SLURM_PORT}
SlurmdPort={SLURM_PORT + 1}
AuthType=auth/munge
AuthInfo=socket={self.munge / "munge.sock"},cred_expire=5
SlurmUser=root
StateSaveLocation={self.base}/state
SlurmdSpoolDir={self.base}/spool
SlurmctldPidFile={self.base}/slurmctld.pid
SlurmdPidFile={self.base}/slurmd.pid
SlurmctldLogFile={self.base}/slurmctld.log
SlurmdLogFile={self.base}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
SchedulerParameters=sched_interval=1,bf_interval=1
KillWait=10
MinJobAge=300
NodeName={self.host} NodeAddr=127.0.0.1 {hardware} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        )
        key = self.munge / "munge.key"
        self.run("mungekey", "--create", f"--keyfile={key}", "--force")
        key.chmod(0o600)
        self.run(
            "munged",
            f"--socket={self.munge / 'munge.sock'}",
            f"--key-file={key}",
            f"--pid-file={self.munge / 'munged.pid'}",
            f"--log-file={self.munge / 'munged.log'}",
            f"--seed-file={self.munge / 'munged.seed'}",
        )
        for name, command in (
            ("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)]),
            ("slurmd", ["slurmd", "-D", "-f", str(self.conf)]),
        ):
            out = (self.base / f"{name}.out").open("wb")
            self.daemons.append(
                subprocess.Popen(
                    command,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=self.env,
                    start_new_session=True,
                    cwd=self.base,
                )
            )
        deadline = time.monotonic() + 60
        while self.run("sinfo", "-h", "-N", "-o", "%t", check=False).stdout.strip() != "idle":
            if time.monotonic() > deadline:
                raise RuntimeError(f"Slurm did not come up: {read(self.base / 'slurmctld.log')[-2000:]}")
            time.sleep(0.3)

    def stop(self) -> None:
        self.run("scancel", "--user=root", check=False)
        for daemon in reversed(self.daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        self.run("munged", f"--socket={self.munge / 'munge.sock'}", "--stop", check=False)
        shutil.rmtree(self.base, ignore_errors=True)

    def job(self, job_id: str) -> dict[str, str]:
        line = self.run("scontrol", "show", "job", "-o", job_id, check=False).stdout.strip()
        return dict(re.findall(r"(\w+)=(\S*)", line))


def slurm_script(job: Job, work: Path) -> str:
    how, runner = job.slurm["how"], job.slurm["runner"]
    program = " ".join([str(PROGRAM), *job.args, f"--output-dir={work / 'out'}"])
    lines = ["#!/bin/bash", f"#SBATCH --job-name={job.name}"]
    if how == "timeout":
        lines.append("#SBATCH --time=1")
    lines += [
        'echo "job $SLURM_JOB_ID ($SLURM_JOB_NAME) on $SLURMD_NODENAME, $SLURM_CPUS_ON_NODE cpus, started $(date)"',
        "export OMP_NUM_THREADS=1",
    ]
    if number(job) % 2 == 0:
        lines.append("export PYTHONUNBUFFERED=1")
    if runner == "python":
        lines.append(f"{PY} {program}")
    elif runner == "srun":
        lines.append(f"srun --ntasks=1 {PY} -u {program}")
    else:
        lines.append(f"{TORCHRUN} --nproc-per-node=2 --master-port={free_port(29900 + number(job))} --tee=3 {program}")
    lines.append('echo "exit status $?"')
    return "\n".join(lines) + "\n"


def run_slurm(slurm: Slurm, job: Job) -> dict[str, object]:
    work = SCRATCH / job.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    script = slurm_script(job, work)
    path = work / "job.sh"
    path.write_text(script)
    log = work / "slurm.out"
    env = {k: v for k, v in slurm.env.items() if k not in ("OMP_NUM_THREADS", "PYTHONUNBUFFERED")}
    done = subprocess.run(
        ["sbatch", "--parsable", f"--chdir={work}", "-o", str(log), str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    job_id = done.stdout.strip().split(";")[0]
    facts: dict[str, object] = {"command": shown(f"sbatch --chdir={work} -o {log} job.sh"), "slurm_job_id": int(job_id)}
    started = None
    final = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL")
    deadline = time.monotonic() + SAFETY_S
    sent = False
    while True:
        state = slurm.job(job_id)
        if state.get("JobState") == "RUNNING" and started is None:
            started = time.monotonic()
        if state.get("JobState") in final:
            break
        if time.monotonic() > deadline:
            slurm.run("scancel", "-s", "KILL", job_id, check=False)
            facts["safety_kill"] = f"still {state.get('JobState')} after {SAFETY_S} s: scancel -s KILL"
            deadline += 60
        if (
            job.slurm["how"] == "scancel"
            and started is not None
            and not sent
            and time.monotonic() - started >= float(job.slurm["after_s"])
        ):
            cancel = ["scancel"]
            if job.slurm.get("signal"):
                cancel.append(f"--signal={job.slurm['signal']}")
            if job.slurm.get("full"):
                cancel.append("--full")
            if job.slurm.get("batch"):
                cancel.append("--batch")
            cancel.append(job_id)
            facts["phase_in_log"] = phase_in(read(log))
            slurm.run(*cancel)
            facts["cancel"] = " ".join([*cancel[:-1], "$JOBID"])
            facts["sent_at_s"] = round(time.monotonic() - started, 2)
            sent = True
            if job.slurm.get("signal") or job.slurm.get("batch"):  # a signal alone may not end the job: then cancel it
                time.sleep(float(10))
                if slurm.job(job_id).get("JobState") not in final:
                    slurm.run("scancel", job_id)
                    facts["then"] = "scancel $JOBID 10 s later (the signal alone had not ended the job)"
        time.sleep(0.25)
    time.sleep(2)  # slurmstepd's last lines
    state = slurm.job(job_id)
    facts.update(
        state=state.get("JobState"),
        slurm_reason=state.get("Reason"),
        slurm_exit_code=state.get("ExitCode"),
        run_time=state.get("RunTime"),
        time_limit=state.get("TimeLimit"),
    )
    if started is not None:
        facts["duration_s"] = round(time.monotonic() - started, 2)
    facts["log"] = log.read_bytes() if log.exists() else b""
    facts["script"] = shown(script)
    return facts


def ensure_slurm() -> str | None:
    if shutil.which("slurmctld") and shutil.which("munged"):
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "Slurm is not installed and installing it needs root and apt-get"
    done = subprocess.run(["apt-get", "install", "-y", "slurm-wlm", "munge"], capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else f"apt-get install slurm-wlm munge failed: {done.stderr[-300:]}"


# --------------------------------------------------------------------------- records


def unexpected(job: Job, facts: dict[str, object]) -> str:
    """Why this run is not what the corpus needs (it ended on its own, or failed by itself), or ""."""
    if b"Training finished" in bytes(facts["log"]):  # type: ignore[call-overload]
        return "the training ran to its end"
    if job.kind == "slurm":
        state = facts.get("state")
        if job.slurm["how"] == "timeout" and (state != "TIMEOUT" or b"DUE TO TIME LIMIT" not in bytes(facts["log"])):  # type: ignore[call-overload]
            return f"ended {state}, not at its time limit"
        if job.slurm["how"] == "scancel" and ("sent_at_s" not in facts or state == "COMPLETED"):
            return f"ended {state} before scancel"
        return ""
    if job.memory_mib:
        return "" if facts.get("oom_kills_in_cgroup") else f"no OOM kill in its cgroup (exit {facts.get('exit_status')})"
    if "sent_at_s" not in facts:
        return f"ended on its own (exit {facts.get('exit_status')}) before the planned kill"
    return ""


def record(job: Job, facts: dict[str, object]) -> Path | None:
    OUT.mkdir(exist_ok=True)
    problem = unexpected(job, facts)
    if problem:
        for suffix in (".log", ".json"):
            (OUT / f"{job.name}{suffix}").unlink(missing_ok=True)
        print(f"NOT RECORDED {job.name}: {problem}; last output: {bytes(facts['log'])[-600:]!r}", flush=True)  # type: ignore[call-overload]
        return None
    data = bytes(facts.pop("log"))  # type: ignore[call-overload]
    data = data.replace(str(ROOT).encode(), RECORDED_ROOT.encode())
    log = OUT / f"{job.name}.log"
    log.write_bytes(data)
    facts.pop("_seen_at", None)
    meta: dict[str, object] = {
        "program": f"$PY corpora/run_killed.py --only {job.name}",
        "kind": job.kind,
        "command": facts.pop("command"),
    }
    if job.script:
        meta["script"] = shown(job.script)
    if job.style_env:
        meta["env"] = job.style_env
    if job.kill is not None:
        k = job.kill
        meta["kill"] = {
            "signal": k.signal,
            "sent_to": "every process of the job" if k.target == "all" else "the job's main process",
            "then": "none" if k.signal == "SIGKILL" else f"SIGKILL to every process left after {k.grace_s:g} s",
            "aimed_at": k.phase,
            **{key: facts.pop(key) for key in ("trigger", "sent_at_s", "phase_in_log", "processes_signalled") if key in facts},
        }
        for key in ("sigkill_after_grace", "sigkill_after_grace_at_s"):
            if key in facts:
                meta["kill"][key] = facts.pop(key)  # type: ignore[index]
    if job.memory_mib:
        meta["kill"] = {
            "by": "the kernel's OOM killer (memory cgroup limit); no signal was sent by us",
            "memory_limit_mib": job.memory_mib,
            "oom_kills_in_cgroup": facts.pop("oom_kills_in_cgroup", None),
            "log": "the job's own output only; the kernel's report goes to the kernel log, not to the job",
        }
    if job.kind == "slurm":
        meta["slurm"] = {
            "how": job.slurm["how"],
            "runner": job.slurm["runner"],
            "config": "KillWait=10, ProctrackType=proctrack/linuxproc, slurm-wlm " + slurm_version(),
            **{k: facts.pop(k) for k in list(facts) if k in ("cancel", "sent_at_s", "phase_in_log", "then", "slurm_job_id")},
        }
        meta["script"] = facts.pop("script")
    meta.update(facts)
    meta.update(reason="no_signature", outcome="killed")
    log.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    return log


def slurm_version() -> str:
    done = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True, check=False)
    return done.stdout.strip().split()[-1] if done.returncode == 0 else "?"


def update_manifest() -> int:
    """Replace the manifest's killed rows by one per log in killed/, keeping every other line."""
    rows = []
    for log in sorted(OUT.glob("*.log")):
        meta = json.loads(log.with_suffix(".json").read_text())
        data = log.read_bytes()
        rows.append(
            json.dumps(
                {
                    "bytes": len(data),
                    "origin": "killed",
                    "outcome": meta.get("outcome", "killed"),
                    "path": str(log.relative_to(ROOT)),
                    "reason": "no_signature",
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "source": f"program:{meta['program']}",
                    "split": "test",
                },
                sort_keys=True,
            )
        )
    kept = [line for line in MANIFEST.read_text().splitlines() if line.strip() and json.loads(line).get("origin") != "killed"]
    MANIFEST.write_text("".join(line + "\n" for line in kept + rows))
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", help="only this log (repeatable)")
    parser.add_argument("--kind", action="append", choices=("single", "torchrun", "slurm", "oom", "noisy"))
    parser.add_argument("--list", action="store_true", help="list the jobs and exit")
    parser.add_argument("--no-manifest", action="store_true", help="do not touch manifest.jsonl")
    parser.add_argument("--manifest-only", action="store_true", help="only rewrite the manifest's killed rows from killed/")
    args = parser.parse_args()
    if args.manifest_only:
        print(f"manifest: {update_manifest()} killed logs")
        return
    jobs = [j for j in plan() if (not args.only or j.name in args.only) and (not args.kind or j.kind in args.kind)]
    if args.list:
        for job in jobs:
            print(job.name, job.kind, job.kill or job.slurm or f"memory {job.memory_mib} MiB")
        return
    SCRATCH.mkdir(parents=True, exist_ok=True)

    def stop(signum: int, frame: object) -> None:  # clean up the running job (finally clauses) on SIGTERM
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    cgroups = Group("probe")
    can_oom = cgroups.path is not None
    cgroups.remove()
    slurm = None
    if any(j.kind == "slurm" for j in jobs):
        problem = ensure_slurm()
        if problem:
            print(f"skip the slurm jobs: {problem}")
            jobs = [j for j in jobs if j.kind != "slurm"]
    try:
        for job in jobs:
            if job.kind == "oom" and not can_oom:
                print(f"skip {job.name}: no memory cgroup can be made here (needs root)")
                continue
            begun = time.monotonic()
            if job.kind == "slurm":
                if slurm is None:
                    slurm = Slurm()
                    slurm.start()
                facts = run_slurm(slurm, job)
            else:
                facts = run_local(job)
            log = record(job, facts)
            if log is None:
                continue
            meta = json.loads(log.with_suffix(".json").read_text())
            what = meta.get("kill", meta.get("slurm", {}))
            print(
                f"{job.name:12} {time.monotonic() - begun:6.1f}s exit {meta.get('exit_status', meta.get('state'))!s:>9}"
                f"  {what.get('phase_in_log', '') if isinstance(what, dict) else ''}  {log.stat().st_size} bytes",
                flush=True,
            )
            shutil.rmtree(SCRATCH / job.name, ignore_errors=True)
    finally:
        if slurm is not None:
            slurm.stop()
    if not args.no_manifest:
        print(f"manifest: {update_manifest()} killed logs")


if __name__ == "__main__":
    main()
