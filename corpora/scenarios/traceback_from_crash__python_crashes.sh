#!/usr/bin/env bash
# Reproduces: crashes where only the consequence survives in the log:
#  1. a Python traceback ending in a custom exception class no rule knows;
#  2. concurrent.futures BrokenProcessPool after a pool worker dies abruptly;
#  3. a PyTorch DataLoader worker that exits with status 1 -> "DataLoader worker ... exited unexpectedly";
#  4. a launcher (as accelerate/deepspeed do) running the training script with
#     subprocess.check_call -> "subprocess.CalledProcessError: ... returned non-zero exit status 1."
set -u
PY=${PY:-python3}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cd "$d"
cat > custom.py <<'PYEOF'
class TrainerStateError(Exception):
    pass
def train_epoch(epoch):
    raise TrainerStateError(f"trainer stopped in epoch {epoch}")
train_epoch(3)
PYEOF
"$PY" custom.py 2>&1; echo "exit code: $?"
cat > pool.py <<'PYEOF'
import os
from concurrent.futures import ProcessPoolExecutor
def work(i):
    os._exit(1)
if __name__ == "__main__":
    with ProcessPoolExecutor(2) as ex:
        print(list(ex.map(work, range(4))))
PYEOF
"$PY" pool.py 2>&1; echo "exit code: $?"
cat > loader.py <<'PYEOF'
import os, torch
from torch.utils.data import DataLoader, Dataset
class DS(Dataset):
    def __len__(self): return 8
    def __getitem__(self, i):
        os._exit(1)
if __name__ == "__main__":
    for batch in DataLoader(DS(), num_workers=2):
        pass
PYEOF
"$PY" loader.py 2>&1; echo "exit code: $?"
cat > launch.py <<'PYEOF'
import subprocess, sys
subprocess.check_call([sys.executable, "custom.py"])
PYEOF
"$PY" launch.py 2>&1; echo "exit code: $?"
