#!/usr/bin/env bash
# Reproduces: torchrun with 2 gloo workers (process-group timeout 5 s) where rank 1
# stalls before a collective (a hung peer); rank 0's all_reduce times out in gloo.
set -u
TORCHRUN=${TORCHRUN:-torchrun}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import datetime, time, torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
rank = dist.get_rank()
t = torch.ones(16)
dist.all_reduce(t)
print(f"rank {rank} step 0 ok", flush=True)
if rank == 1:
    time.sleep(12)
dist.all_reduce(t)
print(f"rank {rank} step 1 ok", flush=True)
PYEOF
cd "$d" && timeout 60 "$TORCHRUN" --nproc_per_node=2 --master_port=29636 train.py 2>&1
echo "torchrun exit status: $?"
