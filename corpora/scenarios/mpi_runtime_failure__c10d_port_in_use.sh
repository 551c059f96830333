#!/usr/bin/env bash
# Reproduces: a rank-0 c10d TCPStore that cannot bind MASTER_PORT because another
# job already listens on it ("address already in use" / DistNetworkError).
set -u
PY=${PY:-python3}
d=$(mktemp -d); trap 'rm -rf "$d"; [ -n "${blocker:-}" ] && kill "$blocker" 2>/dev/null' EXIT
cat > "$d/blocker.py" <<'PYEOF'
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 29637)); s.listen(1); time.sleep(25)
PYEOF
cat > "$d/train.py" <<'PYEOF'
import datetime, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
PYEOF
cd "$d"
"$PY" blocker.py & blocker=$!
sleep 1
MASTER_ADDR=127.0.0.1 MASTER_PORT=29637 WORLD_SIZE=2 RANK=0 timeout 30 "$PY" train.py 2>&1
echo "exit status: $?"
