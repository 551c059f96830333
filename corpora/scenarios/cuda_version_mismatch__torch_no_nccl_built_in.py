#!/usr/bin/env python3
# Reproduces: a PyTorch build without CUDA/NCCL asked for the NCCL backend ->
# "RuntimeError: Distributed package doesn't have NCCL built in". Needs no GPU, no network
# (single rank, store on 127.0.0.1).
import subprocess, sys
code = (
    "import torch.distributed as dist\n"
    "dist.init_process_group('nccl', init_method='tcp://127.0.0.1:29533', rank=0, world_size=1)\n"
)
r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=25)
sys.stdout.write(r.stdout + r.stderr)
