#!/usr/bin/env python3
# Reproduces: torch.load of a checkpoint onto a CUDA device while torch.cuda.is_available()
# is False (no usable GPU/driver in the job) -> "Attempting to deserialize object on a CUDA
# device but torch.cuda.is_available() is False". Needs no GPU.
import subprocess, sys
code = (
    "import io, torch\n"
    "buf = io.BytesIO(); torch.save({'w': torch.zeros(2)}, buf); buf.seek(0)\n"
    "state = torch.load(buf, map_location='cuda:0')\n"
)
r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
sys.stdout.write(r.stdout + r.stderr)
