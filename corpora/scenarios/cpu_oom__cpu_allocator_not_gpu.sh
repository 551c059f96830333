#!/bin/bash
# Near-miss check for the gpu_oom rules: PyTorch running out of HOST memory (CPU allocator,
# under an address-space limit) prints "DefaultCPUAllocator: can't allocate memory", which is
# cpu_oom and must not match the CUDA/GPU out-of-memory patterns. No GPU needed.
ulimit -v 3000000
${PY:-python3} - <<'PY' 2>&1
import torch
x = torch.empty(100000, 100000)
PY
echo "exit code: $?"
