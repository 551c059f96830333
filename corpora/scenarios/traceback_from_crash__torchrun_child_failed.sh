#!/usr/bin/env bash
# Reproduces: torchrun (torch.distributed.elastic) launching 2 gloo workers where rank 1
# raises a custom exception class; torchrun prints the worker traceback, SIGTERMs the
# other worker and prints its "ChildFailedError" summary block ("Root Cause (first
# observed failure)", "exitcode  : 1", "error_file: <N/A>").
set -u
PY=${PY:-python3}
TORCHRUN=${TORCHRUN:-torchrun}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import time, torch.distributed as dist
class TrainerCrash(Exception):
    pass
dist.init_process_group("gloo")
if dist.get_rank() == 1:
    raise TrainerCrash("worker step failed")
time.sleep(3)
PYEOF
cd "$d" && timeout 60 "$TORCHRUN" --nproc_per_node=2 --master_port=29731 train.py 2>&1
echo "torchrun exit status: $?"
