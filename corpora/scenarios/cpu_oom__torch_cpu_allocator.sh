#!/bin/bash
# Reproduces: PyTorch's CPU allocator failing under an address-space limit:
# "RuntimeError: [enforce fail at alloc_cpu.cpp:...] . DefaultCPUAllocator: can't allocate memory".
ulimit -v 3000000
${PY:-python3} - <<'PY' 2>&1
import torch
x = torch.empty(100000, 100000)
PY
echo "exit code: $?"
