#!/usr/bin/env python3
# Reproduces: resuming from a checkpoint file that is truncated (the job died while
# writing it, or the copy was cut short) or empty: torch.load raises
# "PytorchStreamReader failed reading zip archive: failed finding central directory"
# and related reader errors.
import subprocess, sys, os, tempfile, textwrap
import torch
PY = sys.executable
d = "/tmp/fc_torch_load_corrupt"; os.makedirs(d, exist_ok=True)
good = os.path.join(d, "good.pt")
torch.save({"epoch": 3, "model": {"w": torch.zeros(256, 256)}, "optimizer": {}}, good)
b = open(good, "rb").read()
open(os.path.join(d, "checkpoint_last.pt"), "wb").write(b[: len(b) // 2])
open(os.path.join(d, "checkpoint_empty.pt"), "wb").close()
# checkpoint_missing.pt is never written: resuming from a checkpoint that is not there
# zip directory intact but a stored member renamed: the reader cannot find data.pkl
open(os.path.join(d, "checkpoint_mangled.pt"), "wb").write(b.replace(b"data.pkl", b"data.pkx"))
for n in ["checkpoint_last.pt", "checkpoint_empty.pt", "checkpoint_mangled.pt", "checkpoint_missing.pt"]:
    p = textwrap.dedent(f"""
        import torch
        print("=> loading checkpoint '{n}'", flush=True)
        ckpt = torch.load({os.path.join(d, n)!r}, map_location='cpu')
    """)
    r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
