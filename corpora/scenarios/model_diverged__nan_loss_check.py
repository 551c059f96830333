#!/usr/bin/env python3
"""Reproduces: a PyTorch training loop whose learning rate is far too high; the loss
explodes to inf then NaN and the loop's own NaN check (as in many training scripts) raises "Loss is nan, stopping training"."""
import math, sys, torch
torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e3)
x = torch.randn(64, 8) * 10
y = torch.randn(64, 1)
for step in range(100):
    loss = torch.nn.functional.mse_loss(model(x), y)
    print(f"step {step}: loss {loss.item():.4f}", flush=True)
    if math.isnan(loss.item()):
        print("Loss is {}, stopping training".format(loss.item()), flush=True)
        sys.exit(1)
    opt.zero_grad(); loss.backward(); opt.step()
