#!/usr/bin/env bash
# Reproduces: torchrun launching 2 gloo workers where rank 1 is killed by SIGKILL
# (as a kernel/agent kill would do); torchrun's ChildFailedError block reports
# "exitcode  : -9" and "Signal 9 (SIGKILL) received by PID".
set -u
TORCHRUN=${TORCHRUN:-torchrun}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import os, signal, time, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 1:
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(3)
PYEOF
cd "$d" && timeout 60 "$TORCHRUN" --nproc_per_node=2 --master_port=29732 train.py 2>&1
echo "torchrun exit status: $?"
