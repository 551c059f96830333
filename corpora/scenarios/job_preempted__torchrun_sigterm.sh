#!/usr/bin/env bash
# Reproduces: the scheduler sending SIGTERM to a running torchrun (as Slurm/Kubernetes
# do on preemption or cancel); torchrun prints "Received 15 death signal, shutting down
# workers" and dies with torch.distributed.elastic.multiprocessing.api.SignalException.
set -u
TORCHRUN=${TORCHRUN:-torchrun}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import time, torch.distributed as dist
dist.init_process_group("gloo")
for step in range(100):
    time.sleep(0.2)
PYEOF
cd "$d"
"$TORCHRUN" --nproc_per_node=2 --master_port=29733 train.py > "$d/out.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; rm -rf "$d"' EXIT
sleep 8
kill -TERM "$pid"
wait "$pid"; rc=$?
cat "$d/out.log"
echo "torchrun exit status: $rc"
