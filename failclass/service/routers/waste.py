"""POST /v1/waste/report and /v1/waste/watch: GPU time held but not used, from DCGM
metrics as Prometheus answers them (range queries) or as the exporter prints them."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, HTTPException
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from failclass.errors import InputError
from failclass.schema import Invalid
from failclass.service.bodies import JsonRoute
from failclass.service.deps import MetricsDep, PolicyDep, Reader
from failclass.service.schemas import WasteIn, WatchIn
from failclass.waste.allocation import JobAllocation, Matching, assign
from failclass.waste.analyse import WasteOptions, analyse_batches
from failclass.waste.causes import load_causes
from failclass.waste.formats.prometheus import read_answers, read_exposition
from failclass.waste.inputs import InputCheck
from failclass.waste.report import WasteReport
from failclass.waste.samples import GpuSamples, concat
from failclass.waste.watch import Signal, watch

router = APIRouter(prefix="/v1/waste", route_class=JsonRoute, tags=["waste"])


class WatchOut(BaseModel):
    signals: list[Signal]


@router.post("/report", response_model=WasteReport)
async def waste_report(body: WasteIn, metrics: MetricsDep, _: Reader) -> WasteReport:
    """U, idle slots, never-used GPUs and low-utilisation intervals with their likely
    causes (from the series and the jobs' declared kinds; logs stay on the cluster)."""
    jobs = _jobs(body)
    check = InputCheck()
    samples = _samples(body, jobs, check.matching)
    options = WasteOptions(time_limit_s=body.time_limit_hours * 3600 if body.time_limit_hours else None)
    by_name = {j.job: j for j in jobs}
    report = await run_in_threadpool(analyse_batches, [samples], by_name, load_causes(), options, check, read_logs=False)
    for cause in report.causes:
        metrics.waste_gpu_hours.labels(cause.cause).set(cause.gpu_h)
    return report


@router.post("/watch", response_model=WatchOut)
async def waste_watch(body: WatchIn, metrics: MetricsDep, policy: PolicyDep, _: Reader) -> WatchOut:
    """Signals for running jobs by the service's policy (its watch: section; the limits
    given here over it): warn or release idle ones, flag GPUs they never used."""
    jobs = _jobs(body)
    samples = _samples(body, jobs)
    now = (body.now or datetime.now(UTC)).timestamp()
    try:
        limits = policy.watch.with_limits(
            body.warn_after_minutes,
            body.release_after_minutes,
            tuple(body.kinds),
            never_used_after_minutes=body.never_used_after_minutes,
        )
    except Invalid as exc:
        raise HTTPException(422, f"{exc.at}: {exc}") from None
    found = watch(samples, {j.job: j for j in jobs}, now, limits)
    for signal in found:
        metrics.waste_signals.labels(signal.action).inc()
    return WatchOut(signals=found)


def _jobs(body: WasteIn) -> list[JobAllocation]:
    jobs = []
    for job in body.jobs:
        gpus = []
        for gpu in job.gpus:
            node, _, index = gpu.rpartition(":")
            gpus.append((node, int(index)))
        start = job.start.timestamp() if job.start else float("-inf")
        end = job.end.timestamp() if job.end else float("inf")
        if end < start:
            raise HTTPException(422, f"job {job.job} ends before it starts")
        jobs.append(JobAllocation(job.job, job.user, job.cluster, job.kind, tuple(gpus), start, end))
    return jobs


def _samples(body: WasteIn, jobs: list[JobAllocation], matching: Matching | None = None) -> GpuSamples:
    try:
        parts = [read_answers(list(body.prometheus), "request body: prometheus")] if body.prometheus else []
        if body.exposition:
            scraped = (body.scraped_at or datetime.now(UTC)).timestamp()
            parts.append(read_exposition(body.exposition, "request body: exposition", scraped))
        if not parts:
            raise InputError("give `prometheus` (range-query answers) or `exposition` (a scrape)")
        return assign(concat(parts), jobs, matching)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from None
