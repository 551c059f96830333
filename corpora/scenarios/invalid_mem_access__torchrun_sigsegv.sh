#!/bin/bash
# Reproduces: a torchrun (torch.distributed.elastic) worker that dies of SIGSEGV in native
# code; the elastic agent reports "failed (exitcode: -11)" and "Signal 11 (SIGSEGV)
# received by PID" in its ChildFailedError summary.
# The same death under torch.multiprocessing.spawn is reported as ProcessExitedException.
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > train.py <<'PY'
import ctypes
print("rank0: step 1", flush=True)
ctypes.string_at(0)
PY
${TORCHRUN:-torchrun} --nproc_per_node=1 --master_port=29611 train.py 2>&1
echo "exit code: $?"
echo "== torch.multiprocessing.spawn"
cat > spawn.py <<'PY'
import ctypes, os, signal
import torch.multiprocessing as mp


def worker(rank):
    if rank == 1:
        ctypes.string_at(0)


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2)
PY
${PY:-python3} spawn.py 2>&1
echo "exit code: $?"
