#!/bin/bash
# Reproduces: Python "SyntaxError: invalid syntax" in a training entry script
# (a stray token in a statement), as the interpreter prints it before running anything.
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import torch
for epoch in range(10)
    print(epoch)
PYEOF
cat > "$d/train2.py" <<'PYEOF'
lr = 0.1
model = torch.nn.Linear(4, 2) optimizer = None
PYEOF
cd "$d"; $PY train.py; echo "exit code: $?"; $PY train2.py; echo "exit code: $?"
