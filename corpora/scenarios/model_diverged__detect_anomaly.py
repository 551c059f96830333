#!/usr/bin/env python3
"""Reproduces: a PyTorch training step under torch.autograd.detect_anomaly() where the
loss is sum(sqrt(w) * w) at w = 0, whose sqrt gradient is 0/0 = NaN, so anomaly mode
raises "Function 'SqrtBackward0' returned nan values in its 0th output."
(also prints the anomaly-mode UserWarning with the forward traceback)."""
import traceback, sys, torch
torch.manual_seed(0)
w = torch.nn.Parameter(torch.zeros(4))
try:
    with torch.autograd.detect_anomaly():
        for step in range(2):
            loss = (torch.sqrt(w) * w).sum()
            print(f"step {step} loss {loss.item()}", flush=True)
            loss.backward()
except Exception:
    traceback.print_exc()
    sys.exit(1)
