"""Right-sizing advice per job and per user: what a job should have asked for, from its
readings (peak memory used and utilisation per GPU, GPUs never used) and the time limit
its jobs file gives. Each item names the figure it rests on and the GPU-hours it frees.

The rules (their thresholds are ``Rules``):
- smaller GPU: every reading of the job's used GPUs has its memory used, and each GPU a
  memory total; a job whose busiest GPU has U_i above ``slice_util_pct`` keeps its GPUs.
  One used GPU of a MIG-capable model (failclass/data/waste/mig_profiles.yaml, the model
  from the name the GPU reports): the profile taking the least of the GPU whose memory holds
  the peak plus ``headroom`` and whose compute share covers U_i plus ``headroom``. U_i is the
  share of time a kernel ran, so a slice with 1/7 of the GPU does the same work in the same
  time only where the GPU was busy at most 1/7 of it. It frees the held GPU-hours x (1 - the
  profile's part of the GPU). Otherwise (several GPUs, whose ranks cannot span MIG
  instances; a model unknown or without MIG) a peak plus headroom within ``smaller_share``
  of the GPU's memory: a GPU or slice with that much memory, not priced (0 GPU-hours): which
  GPU that would be depends on the site's.
- fewer GPUs: GPUs with utilisation and memory used 0 in every reading (never used) are
  left out of the request; frees their held GPU-hours.
- shorter limit: a job with a time limit, a start and an end that ran at most
  ``limit_used_share`` of its limit is advised its runtime x ``limit_margin``, rounded up to
  ``limit_step_s``, where that is below the limit; frees (limit - advised) x its GPUs:
  GPU-hours the scheduler reserves for it and cannot give to others, not hours held."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from failclass.contracts import Notice
from failclass.waste.allocation import JobAllocation
from failclass.waste.measure import Measured
from failclass.waste.memory import MIB_PER_GB
from failclass.waste.mig import profiles_of

SMALLER_GPU, FEWER_GPUS, SHORTER_LIMIT = "smaller_gpu", "fewer_gpus", "shorter_limit"
HOUR = 3600.0


@dataclass(frozen=True)
class Rules:
    headroom: float = 0.10  # over the peak memory and over the utilisation a slice must cover
    slice_util_pct: float = 50.0  # a job whose busiest GPU is above this keeps its GPUs
    smaller_share: float = 0.5  # without a MIG profile: the peak plus headroom within this share of the GPU's memory
    limit_used_share: float = 0.5  # a job that ran at most this share of its limit ended far before it
    limit_margin: float = 1.5  # the advised limit: the runtime times this...
    limit_step_s: float = HOUR  # ...rounded up to a multiple of this


@dataclass(frozen=True)
class Advice:
    """One thing a job should have asked for, the figure it rests on and what it frees."""

    job: str
    user: str
    kind: str  # smaller_gpu, fewer_gpus or shorter_limit
    advice: str
    basis: str
    frees_gpu_h: float  # held GPU-hours (a limit's: reserved); 0 where not priced


@dataclass(frozen=True)
class UserRightsizing:
    """A user's advice summed by kind, and the item that frees most."""

    user: str
    jobs: int  # jobs with advice
    smaller_gpu_h: float
    fewer_gpus_h: float
    shorter_limit_h: float  # reserved, not held
    top: str  # "job: advice (basis)"


@dataclass(frozen=True)
class Rightsizing:
    """The report's part: the thresholds, every item and each user's sums."""

    rules: Rules
    advice: list[Advice]  # most GPU-hours freed first
    users: list[UserRightsizing]


@dataclass(frozen=True)
class _Gpu:
    held_h: float
    util: float  # U_i, percent
    peak_mib: float
    total_mib: float
    never_used: bool
    complete: bool  # every reading has its memory used
    model: str  # as the GPU reports it; "" where no reading names it


def advise(measured: Measured, jobs: Mapping[str, JobAllocation], rules: Rules = Rules()) -> list[Advice]:
    """Every job's advice (a job appears at most once per kind)."""
    use, table = measured.gpus, measured.samples
    found: list[Advice] = []
    for code in np.unique(use.job).tolist():
        name = table.jobs[code]
        job = jobs.get(name, JobAllocation(name))
        gpus = [
            _Gpu(
                float(use.held_s[r]) / HOUR,
                float(use.util[r]),
                float(use.mem_peak[r]),
                float(use.mem_total[r]),
                bool(use.never_used[r]),
                bool(use.mem_complete[r]),
                table.models.get((table.nodes[use.node[r]], int(use.gpu[r])), ""),
            )
            for r in np.flatnonzero(use.job == code).tolist()
        ]
        found += [a for a in (_smaller(job, gpus, rules), _fewer(job, gpus), _shorter(job, len(gpus), rules)) if a]
    return found


def summarise(advice: Iterable[Advice], rules: Rules) -> Rightsizing:
    """The report's part: the items, most GPU-hours first, and their sums per user."""
    ordered = sorted(advice, key=lambda a: (-a.frees_gpu_h, a.job, a.kind))
    by_user: dict[str, list[Advice]] = {}
    for item in ordered:
        by_user.setdefault(item.user, []).append(item)

    def frees(items: list[Advice], kind: str) -> float:
        return round(sum((a.frees_gpu_h for a in items if a.kind == kind), 0.0), 3)

    users = [
        UserRightsizing(
            user,
            len({a.job for a in items}),
            frees(items, SMALLER_GPU),
            frees(items, FEWER_GPUS),
            frees(items, SHORTER_LIMIT),
            f"{items[0].job}: {items[0].advice} ({items[0].basis})",
        )
        for user, items in by_user.items()
    ]
    users.sort(key=lambda u: (-(u.smaller_gpu_h + u.fewer_gpus_h), -u.shorter_limit_h, u.user))
    return Rightsizing(rules, ordered, users)


def _smaller(job: JobAllocation, gpus: list[_Gpu], rules: Rules) -> Advice | None:
    used = [g for g in gpus if not g.never_used]
    if not used or not all(g.complete and g.peak_mib > 0 and math.isfinite(g.total_mib) and g.total_mib > 0 for g in used):
        return None
    busiest, peak, total = max(g.util for g in used), max(g.peak_mib for g in used), min(g.total_mib for g in used)
    if busiest > rules.slice_util_pct:
        return None
    need = peak * (1 + rules.headroom)
    basis = f"peak {peak / MIB_PER_GB:.1f} GiB of {total / MIB_PER_GB:.0f} GiB, utilisation {busiest:.0f}%"
    mig = profiles_of(used[0].model) if len(used) == 1 else None
    if mig is not None:
        compute = busiest * (1 + rules.headroom)  # percent of the GPU
        fits = [p for p in mig.profiles if p != mig.whole and p.mib >= need and 100 * p.compute_slices / mig.slices >= compute]
        if fits:
            best = min(fits, key=lambda p: (mig.share(p), p.memory_gb))
            frees = used[0].held_h * (1 - mig.share(best))
            return Advice(job.job, job.user, SMALLER_GPU, f"a MIG {best.name} slice of the {mig.model}", basis, round(frees, 3))
    if need > rules.smaller_share * total:
        return None
    wanted = math.ceil(need / MIB_PER_GB)
    return Advice(job.job, job.user, SMALLER_GPU, f"a GPU or MIG slice with {wanted} GiB (not priced)", basis, 0.0)


def _fewer(job: JobAllocation, gpus: list[_Gpu]) -> Advice | None:
    never = [g for g in gpus if g.never_used and g.complete]  # memory read as 0, not missing
    if not never:
        return None
    used = len(gpus) - len(never)
    advice = f"ask for {used} GPU{'s' if used != 1 else ''}" if used else "run it without a GPU"
    basis = f"{len(never)} of {len(gpus)} GPUs never used"
    return Advice(job.job, job.user, FEWER_GPUS, advice, basis, round(sum(g.held_h for g in never), 3))


def _shorter(job: JobAllocation, gpus: int, rules: Rules) -> Advice | None:
    limit = job.time_limit_s
    if limit is None or not (math.isfinite(job.start) and math.isfinite(job.end)):
        return None
    ran = job.end - job.start
    if ran <= 0 or ran > rules.limit_used_share * limit:
        return None
    advised = math.ceil(ran * rules.limit_margin / rules.limit_step_s) * rules.limit_step_s
    if advised >= limit:
        return None
    basis = f"ran {ran / HOUR:.1f} h of the {limit / HOUR:g} h asked"
    frees = (limit - advised) / HOUR * gpus
    return Advice(job.job, job.user, SHORTER_LIMIT, f"a time limit of {advised / HOUR:g} h", basis, round(frees, 3))


def notices(sized: Rightsizing, now: datetime) -> list[Notice]:
    """One notice per user with advice (kind ``rightsizing``), naming their largest item;
    keyed by the user and the day, so that a report run again that day is not sent twice."""
    made = []
    for user in sized.users:
        held = round(user.smaller_gpu_h + user.fewer_gpus_h, 1)
        message = (
            f"{user.user}: {user.jobs} jobs could ask for less: {held} GPU-hours held"
            f" and {round(user.shorter_limit_h, 1)} reserved could be freed; the largest, {user.top}"
        )
        job = user.top.split(":", 1)[0]
        made.append(Notice("rightsizing", job, user.user, "rightsizing", message, now, f"rightsizing:{user.user}:{now:%Y-%m-%d}"))
    return made
