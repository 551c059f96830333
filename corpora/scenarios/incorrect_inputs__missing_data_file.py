#!/usr/bin/env python3
# Reproduces: a training script whose dataset files are missing: Python's open() and
# numpy's np.load raise FileNotFoundError: [Errno 2] No such file or directory.
import subprocess, sys, textwrap
PY = sys.executable
progs = [
    textwrap.dedent("""
        import torch
        from torch.utils.data import Dataset, DataLoader
        class TextDataset(Dataset):
            def __init__(self, path):
                with open(path) as f:
                    self.lines = f.readlines()
            def __len__(self): return len(self.lines)
            def __getitem__(self, i): return self.lines[i]
        print("Loading training data ...", flush=True)
        ds = TextDataset('/nonexistent/data/train.txt')
    """),
    textwrap.dedent("""
        import numpy as np
        x = np.load('/nonexistent/data/features_train.npy')
    """),
]
for p in progs:
    r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
# near miss (not a data file): the entry script itself is missing
r = subprocess.run([PY, "/nonexistent/train.py"], capture_output=True, text=True)
sys.stdout.write(r.stdout + r.stderr)
