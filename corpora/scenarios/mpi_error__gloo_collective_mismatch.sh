#!/usr/bin/env bash
# Reproduces: torchrun with 2 gloo workers whose all_reduce tensors differ in size
# between ranks (a model/config mismatch between ranks); gloo fails an enforce
# check on the message size.
set -u
TORCHRUN=${TORCHRUN:-torchrun}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(4 if rank == 0 else 1024)
dist.all_reduce(t)
print("rank", rank, "sum", t.sum().item())
PYEOF
cd "$d" && timeout 60 "$TORCHRUN" --nproc_per_node=2 --master_port=29635 train.py 2>&1
echo "torchrun exit status: $?"
