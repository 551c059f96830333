#!/bin/bash
# Reproduces: a torchrun (torch.distributed.elastic) worker that aborts (SIGABRT, as
# after an uncaught C++ exception or a failed check); the elastic agent reports
# "failed (exitcode: -6)" and "Signal 6 (SIGABRT) received by PID".
# The same death under torch.multiprocessing.spawn is reported as ProcessExitedException.
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > train.py <<'PY'
import os
print("rank0: step 1", flush=True)
os.abort()
PY
${TORCHRUN:-torchrun} --nproc_per_node=1 --master_port=29613 train.py 2>&1
echo "exit code: $?"
echo "== torch.multiprocessing.spawn"
cat > spawn.py <<'PY'
import ctypes, os, signal
import torch.multiprocessing as mp


def worker(rank):
    if rank == 1:
        os.abort()


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2)
PY
${PY:-python3} spawn.py 2>&1
echo "exit code: $?"
