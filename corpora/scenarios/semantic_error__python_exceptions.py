#!/usr/bin/env python3
"""Reproduces generic Python exceptions raised by bugs in training code, as the interpreter
prints them: TypeError, AttributeError, KeyError, NameError, ValueError, IndexError,
ZeroDivisionError, AssertionError, RecursionError, NotImplementedError, UnboundLocalError."""
import traceback
import torch
import torch.nn as nn


def case(fn):
    try:
        fn()
    except BaseException:
        traceback.print_exc()


model = nn.Linear(4, 2)
cfg = {"lr": 0.1}
case(lambda: model(torch.randn(2, 4), torch.randn(2)))
case(lambda: model.fc.weight)
case(lambda: cfg["batch_size"])
case(lambda: undefined_optimizer.step())  # noqa: F821
case(lambda: int("3e-4"))
case(lambda: [1, 2, 3][5])
case(lambda: 10 / len([]))
case(lambda: torch.tensor([1.0, 2.0]).item())
case(lambda: torch.randn(2, 3).numpy().reshape(4, 4))
case(lambda: len(5))


def f():
    total += 1  # noqa: F821


case(f)


class Base(nn.Module):
    pass


case(lambda: Base()(torch.randn(2)))


def assert_fail():
    assert torch.randn(2, 3).shape[0] == 4, "batch size mismatch"


case(assert_fail)
