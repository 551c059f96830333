"""GPU time lost, counted as the field counts it: per failed attempt the work lost since its
last checkpoint beside the Philly study's whole attempt, and per job and per user the
Effective Training Time Ratio (ETTR) with a goodput breakdown.

Sources (as text): Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN
Training Workloads" (USENIX ATC 2019, https://www.usenix.org/conference/atc19/presentation/jeon)
count a failure's cost as its runtime to failure x GPU demand (Table 7). Kokolis et al.
(Meta), "Revisiting Reliability in Large-Scale Machine Learning Research Clusters" (HPCA 2025,
https://arxiv.org/abs/2410.21680) define ETTR as a job's productive runtime over its wall
time from submission, where queueing, restart overhead and the progress lost since the last
checkpoint at each failure are unproductive. Wan et al. (ByteDance), "Robust LLM Training
Infrastructure at ByteDance" (https://arxiv.org/abs/2509.16293) report ETTR the same way
(97 % over a three-month job). Huawei's MindCluster guide names the lost part "training
rollback time": from the last saved checkpoint to the fault
(https://www.hiascend.com/document/detail/en/mindcluster/730/clustersched/schedulingug/dl_resume_005.html).

The figures, per attempt ``i`` of a job (attempts in order; ``g`` its GPUs, at least 1 as
Table 7 counts them; times from the attempt's facts):

- whole (Philly): ``(end - start) x g``, for a failed attempt (what Table 7 counts).
- since checkpoint: ``(end - c) x g`` where ``c`` is the time of the attempt's last
  checkpoint save in ``[start, end]``. A save is a log line the waste half recognises as
  one (the ``model_checkpointing`` cause of ``failclass/data/waste/causes.yaml``, read
  through its loader), timed as the waste half times lines (failclass.waste.timeline). No
  save in a log that was read: since ``start`` (the whole attempt). Saves without a time,
  or no log at hand (store rows only, a path that is gone): the whole attempt, and the
  row says which (``basis``). Where it is found: when the attempt is reported to the
  service with its log (kept with its classification: store revision 0004), else when the
  report is built, from the log paths the attempt names (manifests, the hook's records;
  not in the service, which opens no path a client named). The hook finds none itself:
  the waste causes loader loads numpy, which a hook run must not (tests/hook).
- queue: ``start - submit`` of the first attempt, and of a later one from its submission,
  where the submit time is known; x ``g``.
- restarts: from the end of one attempt to the start (or the submission, where known) of
  the next: the requeue; x the next attempt's ``g``.
- idle: the job's idle GPU-hours as ``failclass waste`` measured them (its JSON report's
  ``jobs[].idle_gpu_h``), where given; at most what the runs left productive.
- wall: queue + restarts + the attempts' runtimes (GPU-hours): from the first submission
  (else start) to the last end when the attempts do not overlap.
- productive: the runtimes - since checkpoint (failed attempts) - idle.
- ETTR: productive / wall, in GPU-hours; with one GPU count throughout, Meta's time ratio.

A job counts where every attempt has a start and an end; per user, the sums over those
jobs (ETTR weighted by GPU time) and the failed attempts of all of them. They are computed
over the attempts' columns in failclass.analytics.ettr."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from failclass.errors import InputError

if TYPE_CHECKING:  # the waste half loads where a log is read
    from failclass.waste.rightsize import UserRightsizing
    from failclass.waste.timeline import Timeline

CHECKPOINT_CAUSE = "model_checkpointing"  # the waste cause whose log lines are checkpoint saves
HOUR = 3600.0
Basis = Literal["checkpoint", "no checkpoint", "undated", "no log"]


@cache
def _is_save() -> Callable[[str], bool]:
    """The checkpoint-save wording, as the waste causes loader reads it."""
    from failclass.waste.causes import load_causes

    cause = next(c for c in load_causes() if c.id == CHECKPOINT_CAUSE)
    assert cause.log is not None
    return cause.log.matches


def last_save(logs: Iterable[str], start: datetime, end: datetime) -> tuple[Basis, datetime | None]:
    """The last checkpoint save in ``[start, end]`` of an attempt's logs (paths), and on what
    basis the loss is counted from it (see the module's docstring)."""
    from failclass.waste.timeline import read_timeline

    found = [Path(log) for log in logs if Path(log).is_file()]
    timelines = []
    for path in found:
        try:
            timelines.append(read_timeline(path, _is_save(), _seconds(start)))
        except InputError:
            continue
    return _last(timelines, start, end) if found else ("no log", None)


def last_save_in_text(text: str, start: datetime, end: datetime) -> tuple[Basis, datetime | None]:
    """The same of a log given as text (a report to the service)."""
    from failclass.waste.timeline import timeline_of

    return _last([timeline_of(text.splitlines(), _is_save(), _seconds(start))], start, end)


def _seconds(moment: datetime) -> float:
    """A time as the log's times are read: one without a zone is UTC (failclass.waste.timeline
    reads a log's stamps so, and the store keeps such a time so)."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _last(timelines: Iterable[Timeline], start: datetime, end: datetime) -> tuple[Basis, datetime | None]:
    saves: list[float] = []
    undated = False
    for timeline in timelines:
        for line in timeline.lines:
            if math.isnan(line.ts):
                undated = True
            elif _seconds(start) <= line.ts <= _seconds(end):
                saves.append(line.ts)
    if saves:
        saved = datetime.fromtimestamp(max(saves), UTC)
        return "checkpoint", saved.astimezone(start.tzinfo) if start.tzinfo else saved.replace(tzinfo=None)
    return ("undated" if undated else "no checkpoint"), None


@dataclass(frozen=True)
class UserGoodput:
    """A user's jobs summed: GPU-hours lost to failures (since checkpoint and whole), to
    idle, to restarts and queueing, and ETTR (None where no job has all its times)."""

    user: str
    jobs: int
    failed_attempts: int
    failures_since_checkpoint_gpu_h: float
    failures_whole_gpu_h: float
    idle_gpu_h: float
    restart_gpu_h: float
    queue_gpu_h: float
    productive_gpu_h: float
    wall_gpu_h: float
    ettr: float | None
    lost_by_reason: dict[str, float]
    counted_from_checkpoint: int  # failed attempts whose log showed a dated checkpoint save
    without_log: int  # failed attempts counted whole: no log at hand, or saves without a time


def idle_of_waste_report(path: Path) -> dict[str, float]:
    """Job -> idle GPU-hours from a ``failclass waste report --format json`` file."""
    try:
        return {str(job["job"]): float(job["idle_gpu_h"]) for job in _waste_document(path)["jobs"]}
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: not a `failclass waste` JSON report ({exc})") from None


def rightsizing_of_waste_report(path: Path) -> dict[str, UserRightsizing]:
    """User -> right-sizing advice summed (failclass.waste.rightsize) from the same file;
    none from a report without it."""
    from failclass.waste.rightsize import UserRightsizing

    try:
        users = (_waste_document(path).get("rightsizing") or {}).get("users") or []
        return {str(row["user"]): UserRightsizing(**row) for row in users}
    except (AttributeError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: right-sizing not as `failclass waste report` writes it ({exc!r})") from None


def _waste_document(path: Path) -> dict[str, Any]:
    import json

    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a `failclass waste` JSON report ({exc})") from None
    if not isinstance(document, dict):
        raise InputError(f"{path}: not a `failclass waste` JSON report (not an object)")
    return document
