"""Loss values from real training logs (corpora/waste_logs) and the early-termination point."""

from __future__ import annotations

from pathlib import Path

import pytest

from failclass.waste.loss import LOSS, convergence
from failclass.waste.timeline import timeline_of

LINES = Path(__file__).resolve().parents[2] / "corpora" / "waste_logs"


@pytest.mark.parametrize(
    ("source", "first"),
    [
        ("loss_progress--hf-tf-trainer-loss-dicts.log", 18.6387),
        ("loss_progress--megatron-lm-loss-iteration.log", 2.504220),
    ],
)
def test_training_losses_are_read_from_real_framework_lines(source, first):
    values = [float(m.group(1)) for line in (LINES / source).read_text().splitlines() if (m := LOSS.search(line))]
    assert values[0] == pytest.approx(first)
    assert len(values) >= 3


@pytest.mark.parametrize(
    "line", ["{'eval_loss': 0.5, 'epoch': 1.0}", "Epoch 2, global step 400000: 'val/AP' was not in top 1", "val_loss: 0.31"]
)
def test_validation_losses_are_not_the_training_curve(line):
    assert LOSS.search(line) is None


def test_the_point_within_a_tenth_of_a_percent_of_the_best_and_the_gpu_time_after():
    losses = [5.0, 3.0, 2.0, 1.5, 1.2, 1.0005, 1.0003, 1.0001, 1.0, 1.0]
    lines = [f"2024-05-01T{10 + i:02d}:00:00Z {{'loss': {value}, 'epoch': {i}}}" for i, value in enumerate(losses)]
    found = convergence(timeline_of(lines), end=timeline_of([lines[-1]]).lines[0].ts, gpus=4)
    assert found is not None and found.best == 1.0
    assert found.within_at == pytest.approx(5 / 9)  # 1.0005 is within 0.1 % of 1.0, reached at 15:00 of 10:00-19:00
    assert found.after_gpu_h == pytest.approx(4 * 4)


def test_too_few_values_give_no_advice():
    assert convergence(timeline_of(["loss: 1.0", "loss: 0.9"]), end=0.0, gpus=1) is None


@pytest.mark.parametrize(
    ("source", "first"),
    [
        ("loss_progress--lightning-tqdm-full-run-recorded.log", None),
        ("checkpoint--fairseq-saved-checkpoint-writing-took.log", 534.887),
    ],
)
def test_lightning_and_fairseq_train_losses_are_read(source, first):
    text = (LINES / source).read_text().replace("\r", "\n")
    values = [float(m.group(1)) for line in text.splitlines() if (m := LOSS.search(line))]
    assert values
    if first is not None:
        assert values[0] == pytest.approx(first)
