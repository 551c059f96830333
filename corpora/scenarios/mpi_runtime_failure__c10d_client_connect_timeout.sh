#!/usr/bin/env bash
# Reproduces: a non-zero rank whose MASTER_ADDR:MASTER_PORT has no listening
# c10d store (the master never came up); TCPStore client gives up with
# torch.distributed.DistNetworkError / "The client socket has timed out".
set -u
PY=${PY:-python3}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import datetime, torch.distributed as dist
print("rank 1 connecting to master", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
print("never reached")
PYEOF
cd "$d" && MASTER_ADDR=127.0.0.1 MASTER_PORT=29633 WORLD_SIZE=2 RANK=1 timeout 60 "$PY" train.py 2>&1
echo "exit status: $?"
