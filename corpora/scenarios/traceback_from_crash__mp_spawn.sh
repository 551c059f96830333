#!/usr/bin/env bash
# Reproduces: torch.multiprocessing.spawn launchers (mp.start_processes, fork start method) where only the consequence of a worker
# crash survives: a worker raising a custom exception -> ProcessRaisedException
# ("-- Process 1 terminated with the following error:"), and a worker exiting with status 1
# -> "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1".
set -u
PY=${PY:-python3}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cd "$d"
cat > spawn_raise.py <<'PYEOF'
import torch.multiprocessing as mp
class TrainerStateError(Exception):
    pass
def worker(rank):
    if rank == 1:
        raise TrainerStateError(f"rank {rank} stopped")
if __name__ == "__main__":
    mp.start_processes(worker, nprocs=2, start_method="fork")
PYEOF
"$PY" spawn_raise.py 2>&1; echo "exit code: $?"
cat > spawn_exit.py <<'PYEOF'
import os, time, torch.multiprocessing as mp
def worker(rank):
    if rank == 1:
        os._exit(1)
    time.sleep(1)
if __name__ == "__main__":
    mp.start_processes(worker, nprocs=2, start_method="fork")
PYEOF
"$PY" spawn_exit.py 2>&1; echo "exit code: $?"
