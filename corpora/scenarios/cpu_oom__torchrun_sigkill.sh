#!/bin/bash
# Reproduces: a torchrun (torch.distributed.elastic) worker killed with SIGKILL, as the
# Linux OOM killer does; the elastic agent reports "failed (exitcode: -9)" and
# "Signal 9 (SIGKILL) received by PID" in its ChildFailedError summary.
# The same death under torch.multiprocessing.spawn is reported as ProcessExitedException.
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > train.py <<'PY'
import os, signal
print("rank0: step 1", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
PY
${TORCHRUN:-torchrun} --nproc_per_node=1 --master_port=29612 train.py 2>&1
echo "exit code: $?"
echo "== torch.multiprocessing.spawn"
cat > spawn.py <<'PY'
import ctypes, os, signal
import torch.multiprocessing as mp


def worker(rank):
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2)
PY
${PY:-python3} spawn.py 2>&1
echo "exit code: $?"
