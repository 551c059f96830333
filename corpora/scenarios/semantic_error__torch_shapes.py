#!/usr/bin/env python3
"""Reproduces PyTorch shape errors raised at runtime by model code (real torch 2.13 CPU):
mat1/mat2 matmul mismatch, broadcasting mismatch at a non-singleton dimension, conv channel
mismatch, invalid view/reshape, BCE target size mismatch, cross-entropy batch mismatch,
Embedding index out of range, cat size mismatch."""
import traceback
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def case(fn):
    try:
        fn()
    except Exception:
        traceback.print_exc()


case(lambda: nn.Linear(128, 10)(torch.randn(32, 256)))
case(lambda: torch.randn(2, 3) + torch.randn(2, 4))
case(lambda: nn.Conv2d(3, 16, 3)(torch.randn(8, 1, 28, 28)))
case(lambda: torch.randn(4, 10).view(-1, 3, 3))
case(lambda: F.binary_cross_entropy_with_logits(torch.randn(16, 1), torch.rand(16)))
case(lambda: F.binary_cross_entropy(torch.rand(16, 1), torch.rand(16)))
case(lambda: F.cross_entropy(torch.randn(16, 10), torch.randint(0, 10, (15,))))
case(lambda: nn.Embedding(100, 8)(torch.tensor([5, 100])))
case(lambda: torch.cat([torch.randn(2, 3), torch.randn(3, 4)], dim=0))
case(lambda: torch.randn(3, 4)[torch.tensor([5])])
case(lambda: F.mse_loss(torch.randn(4, 3), torch.randn(4, 5)))
case(lambda: nn.BatchNorm1d(64)(torch.randn(8, 32)))
case(lambda: nn.LSTM(10, 20)(torch.randn(5, 3, 12)))
