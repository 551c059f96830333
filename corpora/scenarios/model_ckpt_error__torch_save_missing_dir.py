#!/usr/bin/env python3
# Reproduces: torch.save of a checkpoint into a directory that does not exist (the
# output/checkpoint folder was never created).
import subprocess, sys
PY = sys.executable
p = "import torch\ntorch.save({'w': torch.zeros(4)}, '/nonexistent/checkpoints/epoch_1.pt')\n"
r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
sys.stdout.write(r.stdout + r.stderr)
