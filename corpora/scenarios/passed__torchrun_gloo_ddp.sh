#!/usr/bin/env bash
# Passed job: torchrun launching 2 gloo workers that train a DistributedDataParallel model
# to the end, with torch.distributed's own warnings (OMP_NUM_THREADS) and per-rank output.
# Its log must match no signature.
set -u
PY=${PY:-python3}
TORCHRUN=${TORCHRUN:-$(dirname "$PY")/torchrun}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
model = DDP(nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, 31):
    x = torch.randn(32, 16)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad(); loss.backward(); optimizer.step()
    if step % 10 == 0:
        print(f"[rank{rank}]: step {step} loss {loss.item():.4f}", flush=True)
dist.barrier()
if rank == 0:
    print("[rank0]: training complete, saving model", flush=True)
dist.destroy_process_group()
PYEOF
cd "$d" && timeout 120 "$TORCHRUN" --nproc_per_node=2 --master_port=29741 train.py 2>&1
echo "torchrun exit status: $?"
