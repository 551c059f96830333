"""Make the multi-rank corpus: real launchers, one rank meeting a real fault, the others
cascading for real, each attempt labelled with the truth.

    python corpora/multirank/build.py [--only SUBSTRING]... [--styles STYLE,...] [--out DIR] [--variant N]

Every attempt of PLAN runs corpora/multirank/worker.py (copied to /tmp/multirank/train.py,
so that every path the programs print is the same on every machine) under one launcher
style, keeps the files the launcher wrote as they were written, and writes ``truth.json``
beside them (README.md says what it holds). An attempt whose ``truth.json`` exists is kept,
so the build can be resumed; one whose launcher is missing here is skipped and said so.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from worker import FAULTS  # noqa: E402

BIN = Path(sys.executable).parent
TORCHRUN = BIN / "torchrun"
JOB_DIR = Path("/tmp/multirank")
TRAIN = JOB_DIR / "train.py"
ATTEMPT_TIMEOUT = 240
HANG_TIMEOUT = 15  # the process-group timeout of the hung rank's peers, seconds
SLURM_NODES = 4
SLURM_PORT = 16917  # apart from the tests' clusters (16817)


@dataclass(frozen=True)
class Attempt:
    style: str
    fault: str
    nodes: int
    per_node: int
    fail_rank: int
    logging: bool = False
    hello: bool = False
    variant: int = 0

    @property
    def name(self) -> str:
        return f"{self.style}__{self.fault}__r{self.fail_rank}of{self.world}__{self.variant}"

    @property
    def world(self) -> int:
        return self.nodes * self.per_node

    def worker_args(self) -> list[str]:
        args = [str(TRAIN), "--fault", self.fault, "--fail-rank", str(self.fail_rank)]
        if self.fault == "hang":
            args += ["--timeout", str(HANG_TIMEOUT)]
        return args + ["--logging"] * self.logging + ["--hello"] * self.hello


STYLES = ("torchrun_stream", "torchrun_tee", "torchrun_logdir", "srun_label", "srun_files", "mpirun_tag")
SHAPES = {
    "torchrun": [(2, 2)] * 5 + [(2, 4)] * 3 + [(4, 4)] * 1,
    "srun": [(2, 2)] * 5 + [(4, 2)] * 3 + [(4, 4)] * 1,
    "mpirun": [(1, 4)] * 2 + [(1, 8)],
}


# The README's 64-rank example: srun --label over 4 nodes of 16 tasks, rank 37 meets a missing input.
EXAMPLE = Attempt("srun_label", "missing_input", 4, 16, 37, logging=True)


def plan(variant: int = 0) -> list[Attempt]:
    """Each fault under each launcher family once or more; the shape, the failing rank
    (any rank, not only 0), timestamps and hello lines drawn from a hash of the name. A
    variant above 0 is a held-out set: its own draws, and the other half of the faults
    under the styles that take every other one."""
    attempts = []
    for index, style in enumerate(STYLES):
        family = style.split("_")[0]
        for number, fault in enumerate(sorted(FAULTS)):
            if (number + index + variant) % 2 and style not in ("torchrun_stream", "srun_label"):
                continue  # the other styles take every other fault
            key = f"{style}:{fault}" + (f":{variant}" if variant else "")
            draw = int(hashlib.sha1(key.encode()).hexdigest(), 16)
            nodes, per_node = SHAPES[family][draw % len(SHAPES[family])]
            if fault == "hang":
                nodes, per_node = SHAPES[family][0]  # a 15 s timeout per rank: kept small
            fail_rank = (draw >> 8) % (nodes * per_node)
            attempts.append(
                Attempt(style, fault, nodes, per_node, fail_rank, (draw >> 16) % 2 == 1, (draw >> 20) % 3 == 0, variant)
            )
    # Round robin over the styles, so that a build cut short still has every style.
    by_style = [[a for a in attempts if a.style == style] for style in STYLES]
    return [a for group in itertools.zip_longest(*by_style) for a in group if a is not None]


def version(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        return None
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else None


def free_port(start: int) -> int:
    for port in range(start, start + 200):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError(f"no free port from {start}")


def node_names(count: int) -> list[str]:
    return [f"node{n}" for n in range(1, count + 1)]


def environment(port: int) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "PYTHONUNBUFFERED": "1"}


def torchrun(attempt: Attempt, out: Path, port: int) -> tuple[list[str], dict]:
    """One torchrun per fake node (its own UTS namespace, hostname nodeN), static rendezvous."""
    names = node_names(attempt.nodes)
    options = ["--tee", "3"] if attempt.style == "torchrun_tee" else []
    processes, commands = [], []
    stream = None if attempt.style == "torchrun_logdir" else (out / "job.log").open("ab")
    for node_rank, name in enumerate(names):
        node_options = list(options)
        if attempt.style == "torchrun_logdir":
            node_options = ["--log-dir", f"logs/{name}", "--redirects", "3"]
        command = [
            str(TORCHRUN),
            f"--nnodes={attempt.nodes}",
            f"--nproc-per-node={attempt.per_node}",
            f"--node-rank={node_rank}",
            "--master-addr=127.0.0.1",
            f"--master-port={port}",
            "--max-restarts=0",
            *node_options,
            *attempt.worker_args(),
        ]
        commands.append(f"unshare --uts sh -c 'hostname {name}; exec {' '.join(command)}'")
        output = stream or (out / f"{name}.log").open("ab")
        processes.append(
            subprocess.Popen(
                ["unshare", "--uts", "sh", "-c", f'hostname {name}; exec "$@"', "sh", *command],
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=out,
                env=environment(port),
            )
        )
    status = wait_all(processes)
    return commands, {
        "job_id": f"{attempt.name}",
        "nodes": names,
        "tasks_per_node": attempt.per_node,
        "exit_status": dict(zip(names, status, strict=True)),
    }


def wait_all(processes: list[subprocess.Popen[bytes]]) -> list[int | str]:
    deadline = time.monotonic() + ATTEMPT_TIMEOUT
    status: list[int | str] = []
    for process in processes:
        try:
            status.append(process.wait(timeout=max(1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            status.append("timeout")
    return status


def mpirun(attempt: Attempt, out: Path, port: int) -> tuple[list[str], dict]:
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--tag-output", "-np", str(attempt.world)]
    command += ["-x", "MASTER_ADDR", "-x", "MASTER_PORT", "-x", "OMP_NUM_THREADS", sys.executable, *attempt.worker_args()]
    env = {**environment(port), "OMPI_MCA_btl": "self,vader", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
    with (out / "job.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=out, env=env)
        status = wait_all([process])
    host = socket.gethostname()
    return [" ".join(command)], {
        "job_id": attempt.name,
        "nodes": [host],
        "tasks_per_node": attempt.world,
        "exit_status": status[0],
    }


class SlurmRunner:
    """The test Slurm of tests/slurm_cluster.py (SLURM_NODES nodes on this host), started once."""

    def __init__(self, stack: ExitStack) -> None:
        sys.path.insert(0, str(ROOT / "tests"))
        from slurm_cluster import ensure_slurm, running_slurm

        problem = ensure_slurm()
        if problem:
            raise RuntimeError(problem)
        base = Path(tempfile.mkdtemp(prefix="multirank-slurm-"))
        stack.callback(shutil.rmtree, base, ignore_errors=True)
        settings = ["--database-url", f"sqlite:///{base / 'failclass.db'}"]
        self.slurm = stack.enter_context(running_slurm(base, settings, SLURM_NODES, SLURM_PORT))

    def run(self, attempt: Attempt, out: Path, port: int) -> tuple[list[str], dict]:
        """srun -K --label (one stream) or -o %N-%t.out (a file per task); each task in its
        own UTS namespace named after its Slurm node, as on a real cluster."""
        where = ["--label"] if attempt.style == "srun_label" else ["-o", "train-%j-node%n-%t.out"]
        inner = f'hostname "$SLURMD_NODENAME"; exec {sys.executable} {" ".join(attempt.worker_args())}'
        command = [
            "srun",
            "-J",
            "train",
            "-K",
            "--overcommit",
            f"-N{attempt.nodes}",
            f"--ntasks-per-node={attempt.per_node}",
            *where,
        ]
        command += ["unshare", "--uts", "sh", "-c", inner]
        env = {**environment(port), **self.slurm.env}
        with (out / "job.log").open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=out, env=env)
            status = wait_all([process])
        job_id, nodes = self.last_job()
        shown = " ".join(command[:-1]) + f" '{inner}'"
        return [shown], {"job_id": job_id, "nodes": nodes, "tasks_per_node": attempt.per_node, "exit_status": status[0]}

    def last_job(self) -> tuple[str, list[str]]:
        """The newest job's id and its nodes (the tests' cluster names them node1..nodeN)."""
        listed = self.slurm.run("scontrol", "show", "job", "-o").stdout.strip().splitlines()
        jobs = [dict(field.split("=", 1) for field in line.split() if "=" in field) for line in listed]
        job_id = max(jobs, key=lambda fields: int(fields["JobId"]))["JobId"]
        # While COMPLETING, NodeList shrinks node by node; once over it is whole again.
        return job_id, expand_nodes(self.slurm.wait_final(job_id)["NodeList"])


def expand_nodes(listed: str) -> list[str]:
    """``node[1-2,4]`` -> node1, node2, node4 (one prefix, as the test cluster's names are)."""
    if "[" not in listed:
        return listed.split(",")
    prefix, ranges = listed.rstrip("]").split("[")
    names = []
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        names += [f"{prefix}{n}" for n in range(int(first), int(last or first) + 1)]
    return names


def truth(attempt: Attempt, out: Path, commands: list[str], facts: dict, seconds: float) -> dict:
    reason = FAULTS[attempt.fault][1]
    family = attempt.style.split("_")[0]
    node_index = attempt.fail_rank // attempt.per_node
    nodes = facts["nodes"]
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "truth.json")
    return {
        "attempt": attempt.name,
        "launcher": family,
        "style": attempt.style,
        "files": files,
        "commands": commands,
        "world_size": attempt.world,
        "origin": {
            "rank": attempt.fail_rank,
            "local_rank": attempt.fail_rank % attempt.per_node,
            "node": nodes[node_index],
            "gpu": None,
        },
        "node_shown_by": NODE_SHOWN_BY[attempt.style],
        "fault": attempt.fault,
        "reason": reason,
        "origin_prints_error": attempt.fault not in SILENT,
        "cascade": [rank for rank in range(attempt.world) if rank != attempt.fail_rank],
        "timestamps": attempt.logging,
        "hello": attempt.hello,
        "facts": {key: facts[key] for key in ("job_id", "nodes", "tasks_per_node")},
        "exit_status": facts["exit_status"],
        "seconds": round(seconds, 1),
    }


SILENT = {"sigkill", "sigsegv", "exit_silently", "hang"}
NODE_SHOWN_BY = {
    "torchrun_stream": (
        "the node's hostname (set per torchrun with unshare --uts) in torchrun's ChildFailedError 'host :' lines;"
        " rank = node_rank * nproc_per_node + local_rank"
    ),
    "torchrun_tee": (
        "as torchrun_stream; every worker line carries torchrun's [defaultN]: prefix, N the local rank on its node"
        " (the prefix alone does not tell the nodes apart)"
    ),
    "torchrun_logdir": (
        "the folder logs/<node>/ (--log-dir per node) and the node's own agent output <node>.log;"
        " per-rank files under attempt_0/<local_rank>/"
    ),
    "srun_label": (
        "srun's 'srun: error: <node>: task <rank>:' lines; ranks fill nodes in SLURM_JOB_NODELIST order, tasks_per_node each"
    ),
    "srun_files": (
        "the file name train-<job>-node<n>-<rank>.out (srun -o train-%j-node%n-%t.out: %n is the node's index in the job,"
        " as %N would be this one host's name for every test node), and srun's 'srun: error: <node>: task <rank>:' lines"
        " in job.log"
    ),
    "mpirun_tag": "one node (this host); mpirun's own messages name it",
}


def build_one(attempt: Attempt, out_root: Path, slurm: SlurmRunner | None, port: int) -> str:
    out = out_root / attempt.name
    if (out / "truth.json").exists():
        return f"kept    {attempt.name}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.monotonic()
    if attempt.style.startswith("torchrun"):
        commands, facts = torchrun(attempt, out, port)
    elif attempt.style.startswith("mpirun"):
        commands, facts = mpirun(attempt, out, port)
    else:
        assert slurm is not None
        commands, facts = slurm.run(attempt, out, port)
    row = truth(attempt, out, commands, facts, time.monotonic() - started)
    (out / "truth.json").write_text(json.dumps(row, indent=1) + "\n")
    return f"{json.dumps(row['exit_status'])[:40]:40} {row['seconds']:6.1f}s {attempt.name}"


def versions() -> dict[str, str | None]:
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "slurm": version(["slurmd", "-V"]),
        "openmpi": version(["mpirun", "--version"]),
        "kernel": platform.release(),
    }


@contextmanager
def slurm_or_none(needed: bool) -> Iterator[SlurmRunner | None]:
    with ExitStack() as stack:
        runner = None
        if needed:
            try:
                runner = SlurmRunner(stack)
            except Exception as exc:  # a missing or failing Slurm skips its styles, saying why
                print(f"skip srun styles: {exc}")
        yield runner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE / "attempts")
    parser.add_argument("--only", action="append", help="only attempts whose name contains this (repeatable)")
    parser.add_argument("--styles", default=",".join(STYLES))
    parser.add_argument("--list", action="store_true", help="print the plan and stop")
    parser.add_argument("--variant", type=int, default=0, help="a held-out plan (1, 2, ...): other draws, other faults")
    parser.add_argument("--example", action="store_true", help="build only the README's 64-rank attempt (EXAMPLE)")
    args = parser.parse_args()
    styles = args.styles.split(",")
    attempts = [
        a
        for a in ([EXAMPLE] if args.example else plan(args.variant))
        if a.style in styles and (not args.only or any(part in a.name for part in args.only))
    ]
    if args.list:
        print("\n".join(a.name for a in attempts), f"\n{len(attempts)} attempts", sep="")
        return
    JOB_DIR.mkdir(exist_ok=True)
    shutil.copy(HERE / "worker.py", TRAIN)
    if shutil.which("mpirun") is None:
        print("skip mpirun styles: mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)")
        attempts = [a for a in attempts if a.style.split("_")[0] != "mpirun"]
    todo = [a for a in attempts if not (args.out / a.name / "truth.json").exists()]
    with slurm_or_none(any(a.style.startswith("srun") for a in todo)) as slurm:
        for number, attempt in enumerate(attempts):
            if attempt.style.startswith("srun") and slurm is None and attempt in todo:
                continue
            print(build_one(attempt, args.out, slurm, free_port(31000 + 10 * (number % 50))), flush=True)
    (args.out.parent / "versions.json").write_text(json.dumps(versions(), indent=1) + "\n")


if __name__ == "__main__":
    main()
