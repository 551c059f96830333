#!/usr/bin/env bash
# Reproduces: torch.distributed API misuse: (1) a collective called before
# init_process_group ("Default process group has not been initialized");
# (2) init_process_group(env://) launched with plain python instead of torchrun,
# so RANK is missing ("environment variable RANK expected, but not set").
set -u
PY=${PY:-python3}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/no_init.py" <<'PYEOF'
import torch, torch.distributed as dist
t = torch.ones(4)
dist.all_reduce(t)
PYEOF
cat > "$d/no_env.py" <<'PYEOF'
import torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
PYEOF
cd "$d"
echo "### collective without init_process_group"
timeout 30 "$PY" no_init.py 2>&1; echo "exit status: $?"
echo "### init_process_group(env://) without torchrun"
env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT timeout 30 "$PY" no_env.py 2>&1; echo "exit status: $?"
