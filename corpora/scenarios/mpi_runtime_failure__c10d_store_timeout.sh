#!/usr/bin/env bash
# Reproduces: torch.distributed.init_process_group (gloo, env://) with WORLD_SIZE=2
# but only rank 0 ever starts; the c10d TCPStore waits for the missing peer and
# times out ("Timed out after ... seconds waiting for clients. 1/2 clients joined.").
set -u
PY=${PY:-python3}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import datetime, torch.distributed as dist
print("initialising process group, world_size=2", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
print("never reached")
PYEOF
cd "$d" && MASTER_ADDR=127.0.0.1 MASTER_PORT=29632 WORLD_SIZE=2 RANK=0 timeout 60 "$PY" train.py 2>&1
echo "exit status: $?"
