"""Early-termination advice: when a run came within 0.1 % of its best training loss, and
the GPU time it spent after that (Jeon et al., Philly §4.1: 75 % of jobs reach it in 40 %
of their epochs).

Loss values are read from the forms training frameworks print: ``'loss': 2.31`` (Hugging
Face Trainer), ``lm loss: 7.1E+00`` (Megatron), ``loss: 0.12`` (mmengine, Keras, plain
prints), ``loss=0.12`` and ``train_loss=0.12`` (Lightning's progress bar),
``"train_loss": "534.9"`` (fairseq). Validation losses (``val_loss``,
``eval_loss``) are not the training curve and are skipped.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from failclass.waste.timeline import Timeline

LOSS = re.compile(r"(?<![A-Za-z_])(?:lm |train_)?loss['\"]?\s*[:=]\s*['\"]?([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.])")
MIN_POINTS = 5


@dataclass(frozen=True)
class Convergence:
    points: int
    best: float
    within_at: float  # fraction of the training (by time, else by reported step) when within tolerance
    after_gpu_h: float  # GPU time spent after that point


def has_loss(line: str) -> bool:
    return "loss" in line and LOSS.search(line) is not None


def convergence(timeline: Timeline, end: float, gpus: int, tolerance: float = 0.001) -> Convergence | None:
    """None when the log shows fewer than MIN_POINTS loss values."""
    points = [(line.ts, float(m.group(1))) for line in timeline.lines if (m := LOSS.search(line.text))]
    points = [(ts, value) for ts, value in points if math.isfinite(value)]
    if len(points) < MIN_POINTS:
        return None
    best = min(value for _, value in points)
    reached = next(i for i, (_, value) in enumerate(points) if value <= best + tolerance * abs(best))
    first_ts, reached_ts = points[0][0], points[reached][0]
    if timeline.timed and math.isfinite(first_ts) and math.isfinite(end) and end > first_ts:
        fraction = (reached_ts - first_ts) / (end - first_ts)
        after_h = max(end - reached_ts, 0.0) / 3600 * gpus
    else:
        fraction = reached / (len(points) - 1)
        after_h = math.nan
    return Convergence(len(points), best, fraction, after_h)
