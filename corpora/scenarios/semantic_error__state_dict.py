#!/usr/bin/env python3
"""Reproduces model.load_state_dict() failures (real torch 2.13 CPU): missing/unexpected keys
(e.g. a DataParallel "module." prefix) and size mismatch for a parameter (changed head)."""
import traceback
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.backbone = nn.Linear(16, 32)
        self.fc = nn.Linear(32, classes)


src = nn.DataParallel(Net()).state_dict()          # keys carry a "module." prefix
try:
    Net().load_state_dict(src)
except Exception:
    traceback.print_exc()
try:
    Net(classes=1000).load_state_dict(Net().state_dict())
except Exception:
    traceback.print_exc()
