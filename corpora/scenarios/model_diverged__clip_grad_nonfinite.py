#!/usr/bin/env python3
"""Reproduces: torch.nn.utils.clip_grad_norm_(..., error_if_nonfinite=True) on gradients
that became inf/NaN after the loss diverged; PyTorch raises RuntimeError "The total norm
of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped."."""
import traceback, sys, torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
x = torch.full((2, 4), 1e30)
loss = (model(x) ** 2).mean()
print("loss", loss.item(), flush=True)
loss.backward()
try:
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
except Exception:
    traceback.print_exc()
    sys.exit(1)
