#!/bin/bash
# Reproduces: a torchrun (torch.distributed.elastic) worker that dies of SIGBUS (what a
# worker gets when /dev/shm is exhausted in a container or an mmap'ed file shrinks); the
# elastic agent reports "failed (exitcode: -7)" and "Signal 7 (SIGBUS) received by PID".
# The signal is raised directly so the run is deterministic.
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > train.py <<'PY'
import os, signal
print("rank0: step 1", flush=True)
os.kill(os.getpid(), signal.SIGBUS)
PY
${TORCHRUN:-torchrun} --nproc_per_node=1 --master_port=29617 train.py 2>&1
echo "exit code: $?"
