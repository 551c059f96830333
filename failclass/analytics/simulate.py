"""`failclass simulate`: a job/attempt trace and its logs whose statistics follow the
Philly study's Table 7 (trials, jobs and users per reason, RTF percentiles, GPU demand)
and Table 6 (jobs by final status), at full scale or any fraction; seeded.

How it is drawn, per reason (counts scaled by the fraction, rounded, at least 1):
- its jobs go to its users, each user at least one job, the rest by Zipf weights (a few
  users dominate, as in the study);
- its trials go to its jobs, each job at least one, the rest by Zipf weights (repeats);
- each job's GPU demand is drawn from the reason's demand buckets (1; 2 or 4; 8 or 16);
- each trial's runtime to failure is drawn from the reason's RTF quantiles (p50, p90,
  p95), interpolated in log space, between p50/20 and 3 x p95.
Jobs that failed end unsuccessful (preempted ones: killed); jobs that never failed are
added so that passed and killed jobs follow Table 6. Table 7 counts a job once per
reason, so a failing job here has one reason. Every attempt gets a log: training
progress in proportion to its runtime, then a real failure excerpt of its reason drawn
from the corpus (passed jobs: a real passed run).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from failclass.matching.taxonomy import builtin_taxonomy
from failclass.model.corpus import MANIFEST, read_manifest, resolve
from failclass.resources import CORPORA, PHILLY

START = datetime(2017, 10, 1, tzinfo=UTC)  # Philly's trace starts in autumn 2017
DAYS = 75
ZIPF = 1.2
Progress = Callable[[int, int | None], None]  # (attempts drawn, None: the total is known only at the end)
PASSED_MEDIAN_MIN = 120.0
LINE = "{time} - train - INFO - Epoch [{epoch}/100] Step [{step}/5000] Loss: {loss:.4f} LR: 0.000300"


@dataclass(frozen=True)
class ReasonStats:
    reason_id: str
    trials: int
    jobs: int
    users: int
    quantiles: tuple[float, float, float]  # p50, p90, p95 in minutes
    demand: tuple[int, int, int]  # trials with 1, 2-4, >4 GPUs


def read_table7(path: Path = PHILLY / "table7.csv") -> list[ReasonStats]:
    with path.open(newline="") as handle:
        return [
            ReasonStats(
                row["reason_id"],
                int(row["trials"]),
                int(row["jobs"]),
                int(row["users"]),
                (float(row["rtf_p50_min"]), float(row["rtf_p90_min"]), float(row["rtf_p95_min"])),
                (int(row["demand_1"]), int(row["demand_2_4"]), int(row["demand_gt4"])),
            )
            for row in csv.DictReader(handle)
        ]


def read_table6(path: Path = PHILLY / "table6.csv") -> dict[str, int]:
    with path.open(newline="") as handle:
        return {row["status"].lower(): int(row["jobs"]) for row in csv.DictReader(handle)}


def scaled(count: int, fraction: float) -> int:
    return max(1, round(count * fraction))


def zipf_spread(total: int, bins: int, rng: random.Random) -> list[int]:
    """``total`` items over ``bins`` bins: one each, the rest by Zipf weights."""
    counts = [1] * bins
    weights = [1 / (rank + 1) ** ZIPF for rank in range(bins)]
    rng.shuffle(weights)
    for index in rng.choices(range(bins), weights=weights, k=max(total - bins, 0)):
        counts[index] += 1
    return counts


def draw_rtf(quantiles: tuple[float, float, float], rng: random.Random) -> float:
    """Inverse CDF through (0, p50/20), (.5, p50), (.9, p90), (.95, p95), (1, 3 p95), log-linear."""
    p50, p90, p95 = (max(q, 0.01) for q in quantiles)
    points = [(0.0, p50 / 20), (0.5, p50), (0.9, max(p90, p50)), (0.95, max(p95, p90, p50)), (1.0, 3 * max(p95, p90, p50))]
    u = rng.random()
    for (q0, v0), (q1, v1) in itertools.pairwise(points):
        if u <= q1:
            t = (u - q0) / (q1 - q0)
            return round(math.exp(math.log(v0) + t * (math.log(v1) - math.log(v0))), 3)
    return points[-1][1]


def draw_gpus(demand: tuple[int, int, int], rng: random.Random) -> int:
    bucket = rng.choices((0, 1, 2), weights=[max(d, 0) or 0.0001 for d in demand])[0]
    return (1, rng.choice((2, 4)), rng.choice((8, 16)))[bucket]


@dataclass
class Simulation:
    """What was drawn: attempt rows (the truth) and where their logs are."""

    attempts: list[dict[str, Any]]

    def write_manifest(self, path: Path) -> None:
        with path.open("w") as out:
            for row in self.attempts:
                out.write(json.dumps(row) + "\n")


def known_misses(corpora: Path = CORPORA) -> set[Path]:
    """Development-side logs the rules get wrong (corpora/public/KNOWN_MISSES.md)."""
    listing = corpora / "public" / "KNOWN_MISSES.md"
    rows = listing.read_text().splitlines() if listing.exists() else []
    return {
        (corpora / "public" / f"{cells[1].strip()}.log").resolve() for cells in (row.split("|") for row in rows) if len(cells) > 2
    }


def _excerpts(manifest: Path) -> dict[str, list[str]]:
    """Excerpts per reason: development-side logs whose reason the rules name (a simulation
    measures the analytics, not the classifier)."""
    by_reason: dict[str, list[str]] = {}
    misses = known_misses(manifest.parent)
    for entry in read_manifest(manifest):
        if entry.origin == "holdout" or resolve(entry).resolve() in misses:
            continue
        key = "passed" if entry.outcome == "passed" else entry.reason
        text = resolve(entry).read_text(errors="replace")
        by_reason.setdefault(key, []).append(text[-8000:])
    return by_reason


def _progress(minutes: float, start: datetime, rng: random.Random) -> str:
    lines = min(max(int(minutes / 2), 3), 400)
    step_every = max(minutes / lines, 0.01)
    out = []
    for n in range(lines):
        moment = start + timedelta(minutes=n * step_every)
        out.append(
            LINE.format(
                time=moment.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3],
                epoch=1 + n // 50,
                step=n * 10,
                loss=2.5 * math.exp(-n / 150) + rng.random() * 0.05,
            )
        )
    return "\n".join(out) + "\n"


def _row(
    job: str, number: int, user: str, status: str, gpus: int, start: datetime, minutes: float, reason: str | None
) -> dict[str, Any]:
    """One attempt of the trace, as its manifest holds it."""
    return {
        "job_id": job,
        "attempt": number,
        "user": user,
        "vc": f"vc{int(user[4:]) % 14:02d}",  # Philly had 14 virtual clusters
        "status": status,
        "start_time": start.isoformat(),
        "end_time": (start + timedelta(minutes=minutes)).isoformat(),
        "gpus": gpus,
        "reason": reason,
    }


def _unshown(done: int, total: int | None) -> None:
    """Progress nobody watches."""


def simulate(
    fraction: float, seed: int, out: Path, write_logs: bool = True, on_progress: Progress = _unshown, manifest: Path = MANIFEST
) -> Simulation:
    """Draw the trace; write logs under ``out/logs`` (their failure excerpts from the corpus
    of ``manifest``) and the manifest ``out/attempts.jsonl``."""
    rng = random.Random(seed)
    excerpts = _excerpts(manifest) if write_logs else {}
    if write_logs:
        (logs := out / "logs").mkdir(parents=True, exist_ok=True)
    attempts: list[dict[str, Any]] = []
    pool = [f"user{n:03d}" for n in range(max(scaled(max(s.users for s in read_table7()), 1.0), 1))]
    job_number = 0

    def add_attempt(
        job: str, number: int, user: str, status: str, gpus: int, minutes: float, reason: str | None, kind: str
    ) -> None:
        start = START + timedelta(minutes=rng.random() * DAYS * 24 * 60)
        row = _row(job, number, user, status, gpus, start, minutes, reason)
        if write_logs:
            path = logs / f"{job}-{number}.log"
            path.write_text(_progress(minutes, start, rng) + rng.choice(excerpts[kind]))
            row["log"] = str(path)
        attempts.append(row)
        on_progress(len(attempts), None)

    preempted = builtin_taxonomy().preemptions  # the scheduler ended them: killed, not failed
    for stats in read_table7():
        trials, jobs = scaled(stats.trials, fraction), scaled(stats.jobs, fraction)
        jobs = min(jobs, trials)
        users = rng.sample(pool, min(scaled(stats.users, fraction), jobs, len(pool)))
        owners = [users[i] for i in range(len(users))] + rng.choices(
            users, weights=[1 / (r + 1) ** ZIPF for r in range(len(users))], k=jobs - len(users)
        )
        for owner, count in zip(owners, zipf_spread(trials, jobs, rng), strict=False):
            job_number += 1
            job, gpus = f"job{job_number:06d}", draw_gpus(stats.demand, rng)
            final = "killed" if stats.reason_id in preempted else "failed"
            for number in range(1, count + 1):
                add_attempt(job, number, owner, final, gpus, draw_rtf(stats.quantiles, rng), stats.reason_id, stats.reason_id)
    table6 = read_table6()
    failing_killed = sum(1 for a in attempts if a["status"] == "killed" and a["attempt"] == 1)
    for status, count in (
        ("passed", scaled(table6["passed"], fraction)),
        ("killed", max(scaled(table6["killed"], fraction) - failing_killed, 0)),
    ):
        for _ in range(count):
            job_number += 1
            minutes = PASSED_MEDIAN_MIN * math.exp(rng.gauss(0, 1.2))
            add_attempt(f"job{job_number:06d}", 1, rng.choice(pool), status, draw_gpus((6, 3, 1), rng), minutes, None, "passed")
    simulation = Simulation(attempts)
    out.mkdir(parents=True, exist_ok=True)
    simulation.write_manifest(out / "attempts.jsonl")
    return simulation
