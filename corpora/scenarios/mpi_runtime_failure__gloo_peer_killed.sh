#!/usr/bin/env bash
# Reproduces: torchrun with 2 gloo workers training a toy model; rank 1 is killed
# by SIGKILL mid-training, so the survivor's next all_reduce fails with a gloo
# "Connection closed by peer" / "Connection reset by peer" error.
set -u
TORCHRUN=${TORCHRUN:-torchrun}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import os, signal, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(0)
for step in range(20):
    x = torch.randn(16, 8); loss = model(x).pow(2).mean()
    opt.zero_grad(); loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
    if rank == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    if rank == 1 and step == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.1)
PYEOF
cd "$d" && timeout 60 "$TORCHRUN" --nproc_per_node=2 --monitor-interval=5 --master_port=29631 train.py 2>&1
echo "torchrun exit status: $?"
