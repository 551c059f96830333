#!/usr/bin/env python3
# Reproduces: a CPU-only PyTorch build (the wrong wheel for a GPU node) asked to put a
# tensor on the GPU -> "AssertionError: Torch not compiled with CUDA enabled".
# Needs no GPU; runs the real torch code path and prints its real traceback.
import subprocess, sys
code = "import torch\nx = torch.zeros(4)\nx = x.cuda()\n"
r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
sys.stdout.write(r.stdout + r.stderr)
