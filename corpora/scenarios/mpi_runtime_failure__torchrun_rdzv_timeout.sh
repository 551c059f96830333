#!/usr/bin/env bash
# Reproduces: torchrun with the c10d rendezvous backend expecting 2 nodes while
# only one node ever joins; with a short join timeout the elastic agent raises
# RendezvousTimeoutError.
set -u
TORCHRUN=${TORCHRUN:-torchrun}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
print("never reached")
PYEOF
cd "$d" && timeout 60 "$TORCHRUN" --nnodes=2 --nproc_per_node=1 --rdzv-backend=c10d \
  --rdzv-endpoint=127.0.0.1:29634 --rdzv-id=job42 --rdzv-conf=join_timeout=5 train.py 2>&1
echo "torchrun exit status: $?"
