#!/usr/bin/env python3
# Reproduces: reading a dataset cache stored as a pickle that is empty, truncated or
# not a pickle at all: "EOFError: Ran out of input", "_pickle.UnpicklingError: pickle
# data was truncated", "_pickle.UnpicklingError: invalid load key".
import subprocess, sys, textwrap, pickle, os, tempfile
PY = sys.executable
d = "/tmp/fc_truncated_pickle"; os.makedirs(d, exist_ok=True)
data = pickle.dumps({"x": list(range(10000)), "y": ["label"] * 10000})
open(os.path.join(d, "empty.pkl"), "wb").close()
open(os.path.join(d, "trunc.pkl"), "wb").write(data[: len(data) // 2])
open(os.path.join(d, "html.pkl"), "wb").write(b"<html><body>404 Not Found</body></html>")
for name in ["empty.pkl", "trunc.pkl", "html.pkl"]:
    p = textwrap.dedent(f"""
        import pickle
        with open({os.path.join(d, name)!r}, 'rb') as f:
            cache = pickle.load(f)
    """)
    r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
# a "pretrained model" that is really an HTML error page (a failed download)
p = f"import torch\nsd = torch.load({os.path.join(d, 'html.pkl')!r}, map_location='cpu', weights_only=False)\n"
r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
sys.stdout.write(r.stdout + r.stderr)
