#!/usr/bin/env python3
"""Reproduces PyTorch dtype errors (real torch 2.13 CPU): matmul of float and double, Linear on
an integer tensor, cross_entropy with float targets of the wrong shape / Long vs Float,
index with float tensor."""
import traceback
import torch
import torch.nn as nn
import torch.nn.functional as F


def case(fn):
    try:
        fn()
    except Exception:
        traceback.print_exc()


case(lambda: nn.Linear(4, 2)(torch.randn(3, 4, dtype=torch.float64)))
case(lambda: nn.Linear(4, 2)(torch.randint(0, 5, (3, 4))))
case(lambda: torch.randn(3, 4) @ torch.randn(4, 2, dtype=torch.float64))
case(lambda: F.nll_loss(torch.randn(3, 5), torch.tensor([1.0, 2.0, 3.0])))
case(lambda: nn.Embedding(10, 3)(torch.tensor([1.0, 2.0])))
case(lambda: torch.randn(3).to("cuda"))
case(lambda: torch.randn(3).index_select(0, torch.tensor([0.0])))
