#!/usr/bin/env python3
"""Reproduces autograd misuse errors (real torch 2.13 CPU): backward on a tensor that does not
require grad, backward through the graph a second time, in-place modification of a tensor
needed for the gradient, backward on a non-scalar output."""
import traceback
import torch


def case(fn):
    try:
        fn()
    except Exception:
        traceback.print_exc()


def no_grad():
    w = torch.randn(3)
    loss = (w * 2).sum()
    loss.backward()


def twice():
    w = torch.randn(3, requires_grad=True)
    loss = (w.exp()).sum()
    loss.backward()
    loss.backward()


def inplace():
    w = torch.randn(3, requires_grad=True)
    y = w.sigmoid()
    y.mul_(2)
    y.sum().backward()


def nonscalar():
    w = torch.randn(3, requires_grad=True)
    (w * 2).backward()


def leaf_inplace():
    w = torch.randn(3, requires_grad=True)
    w.add_(1)


for f in (no_grad, twice, inplace, nonscalar, leaf_inplace):
    case(f)
