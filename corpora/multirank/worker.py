"""One rank of a data-parallel CPU training job (gloo) in which one rank meets a real fault.

    python worker.py --fault FAULT --fail-rank R [--fail-step S] [--logging] [--hello] [--timeout SECONDS]

Rank and world size come from the launcher's environment: torchrun (RANK, WORLD_SIZE,
MASTER_ADDR/PORT), srun (SLURM_PROCID, SLURM_NTASKS) or mpirun (OMPI_COMM_WORLD_RANK,
OMPI_COMM_WORLD_SIZE); MASTER_ADDR/MASTER_PORT must be set for the last two. Every rank
all-reduces its gradients each step, so when rank R fails at step S the other ranks fail
for real in their next collective (a closed connection or, when R hangs, a timeout), and
the launcher does the rest. The faults are the CPU scenarios of corpora/scenarios run
inside one rank; FAULTS names the reason each gets by docs/TAXONOMY.md.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import faulthandler
import logging
import math
import os
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist


def missing_input(rank: int, step: int) -> None:
    with open(f"/nonexistent/data/shard_{rank:03d}.jsonl") as shard:
        shard.readline()


def config_key(rank: int, step: int) -> None:
    config = {"lr": 0.1, "batch_size": 16}
    print(f"warmup for {config['warmup_steps']} steps", flush=True)


def shape_mismatch(rank: int, step: int) -> None:
    torch.nn.Linear(128, 10)(torch.randn(32, 256))


def nan_loss(rank: int, step: int) -> None:
    batch = torch.randn(16, 8)
    batch[3, 2] = math.inf  # a corrupt sample in this rank's shard
    loss = (batch - batch.mean()).pow(2).mean()
    print(f"step {step}: loss {loss.item():.4f}", flush=True)
    if math.isnan(loss.item()):
        raise RuntimeError(f"Loss is {loss.item()}, stopping training")


def checkpoint_dir(rank: int, step: int) -> None:
    torch.save({"w": torch.zeros(4)}, f"/nonexistent/checkpoints/step_{step}/shard_{rank}.pt")


def corrupt_checkpoint(rank: int, step: int) -> None:
    path = f"/tmp/multirank-init-{os.getpid()}.pt"
    torch.save({"w": torch.zeros(64)}, path)
    with open(path, "r+b") as written:
        written.truncate(100)  # the copy this rank found was cut short
    try:
        torch.load(path)
    finally:
        os.unlink(path)


def missing_module(rank: int, step: int) -> None:
    import apex  # noqa: F401  (the profiler only this rank turns on)


def numpy_alloc(rank: int, step: int) -> None:
    import numpy as np

    np.ones((1 << 20, 1 << 20))


def torch_alloc(rank: int, step: int) -> None:
    torch.empty(1 << 45, dtype=torch.uint8)


def sigkill(rank: int, step: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def sigsegv(rank: int, step: int) -> None:
    ctypes.string_at(0)


def sigsegv_reported(rank: int, step: int) -> None:
    faulthandler.enable()
    ctypes.string_at(0)


def abort_reported(rank: int, step: int) -> None:
    faulthandler.enable()
    os.abort()


def invalid_free(rank: int, step: int) -> None:
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    buffer = ctypes.create_string_buffer(64)
    libc.free(ctypes.addressof(buffer) + 8)


def exit_silently(rank: int, step: int) -> None:
    os._exit(1)


def hang(rank: int, step: int) -> None:
    time.sleep(3600)


FAULTS = {
    "missing_input": (missing_input, "incorrect_inputs"),
    "corrupt_checkpoint": (corrupt_checkpoint, "incorrect_inputs"),
    "config_key": (config_key, "semantic_error"),
    "shape_mismatch": (shape_mismatch, "semantic_error"),
    "nan_loss": (nan_loss, "model_diverged"),
    "checkpoint_dir": (checkpoint_dir, "model_ckpt_error"),
    "missing_module": (missing_module, "import_error"),
    "numpy_alloc": (numpy_alloc, "cpu_oom"),
    "torch_alloc": (torch_alloc, "cpu_oom"),
    "invalid_free": (invalid_free, "invalid_mem_access"),
    "sigsegv_reported": (sigsegv_reported, "core_dump"),
    "abort_reported": (abort_reported, "core_dump"),
    # Silent deaths: only a launcher's report (and the peers' broken connections) remain;
    # the guide files these under traceback_from_crash (scenarios/labels.yaml).
    "sigkill": (sigkill, "traceback_from_crash"),
    "sigsegv": (sigsegv, "traceback_from_crash"),
    "exit_silently": (exit_silently, "traceback_from_crash"),
    # A hung rank prints nothing; its peers' collectives time out.
    "hang": (hang, "mpi_runtime_failure"),
}


def rank_and_size() -> tuple[int, int]:
    for key, size in (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")):
        if key in os.environ:
            return int(os.environ[key]), int(os.environ[size])
    raise SystemExit("no launcher environment (RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fault", choices=sorted(FAULTS), required=True)
    parser.add_argument("--fail-rank", type=int, required=True)
    parser.add_argument("--fail-step", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--logging", action="store_true", help="report through logging, with timestamps")
    parser.add_argument("--hello", action="store_true", help="every rank says where it runs")
    parser.add_argument("--timeout", type=float, default=60, help="process group timeout, seconds")
    args = parser.parse_args()
    rank, size = rank_and_size()
    if args.logging:
        logging.basicConfig(
            level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s", stream=sys.stdout
        )
        say = logging.getLogger("train").info
    else:

        def say(message: str) -> None:
            print(message, flush=True)

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=args.timeout))
    if args.hello:
        say(f"rank {rank}/{size} on {socket.gethostname()} pid {os.getpid()}")
    torch.manual_seed(rank)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    fault = FAULTS[args.fault][0]
    for step in range(args.steps):
        if rank == args.fail_rank and step == args.fail_step:
            fault(rank, step)
        loss = model(torch.randn(16, 8)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        for parameter in model.parameters():
            assert parameter.grad is not None
            dist.all_reduce(parameter.grad)
        optimizer.step()
        if rank == 0 or args.hello:
            say(f"step {step} loss {loss.item():.4f}")
        time.sleep(0.2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
