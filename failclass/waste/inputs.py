"""What the inputs lacked, said loudly with counts: readings that belong to no job, jobs of
the jobs file that got no readings (and why: their time, their nodes, GPUs without
indices), job labels the jobs file does not know, fields every job of the file lacked, and
the GPUs without a memory total with the figures that are missing for them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from failclass.waste.allocation import JobAllocation, Matching, find_node, node_names
from failclass.waste.jobfiles import JobsFile
from failclass.waste.memory import MemoryCoverage, coverage, fill
from failclass.waste.samples import GpuSamples, TotalOrigin, merge_totals

EXAMPLES = 3


@dataclass(frozen=True)
class JobsFileSummary:
    path: str
    shape: str  # the reader that read it: "sacct --json", "CSV", ...
    jobs: int


@dataclass(frozen=True)
class InputReport:
    jobs_file: JobsFileSummary | None
    memory_total: MemoryCoverage
    warnings: list[str]


@dataclass
class InputCheck:
    """Gathers, batch by batch, what tying readings to jobs and finding memory totals met."""

    jobs_file: JobsFile | None = None
    gpu_memory_mib: float | None = None
    matching: Matching = field(default_factory=Matching)
    origins: dict[tuple[str, int], TotalOrigin] = field(default_factory=dict)
    missing_logs: list[str] = field(default_factory=list)  # jobs whose log the jobs file names but is not there

    def memory(self, batch: GpuSamples) -> GpuSamples:
        """The batch with its missing totals filled where they can be; notes each GPU's origin."""
        batch = fill(batch, self.gpu_memory_mib)
        slots = np.unique(batch.node.astype(np.int64) * 1024 + batch.gpu).tolist()
        present = {(batch.nodes[s // 1024], s % 1024) for s in slots}
        unrecorded = TotalOrigin(False, "the readings' source gives no total")
        self.origins = merge_totals([self.origins, {key: batch.totals.get(key, unrecorded) for key in present}])
        return batch

    def absorb(self, other: InputCheck) -> None:
        """Add what checking another part of the readings met."""
        self.matching.absorb(other.matching)
        self.origins = merge_totals([self.origins, other.origins])

    def report(self, jobs: Mapping[str, JobAllocation]) -> InputReport:
        summary = None
        warnings = list(self.jobs_file.notes) if self.jobs_file else []
        if self.jobs_file:
            summary = JobsFileSummary(str(self.jobs_file.path), self.jobs_file.shape, len(self.jobs_file.jobs))
        if self.missing_logs:
            logged = sum(1 for job in jobs.values() if job.log)
            warnings.append(
                f"{len(self.missing_logs)} of {logged} jobs' logs are not there ({_some(sorted(self.missing_logs))}):"
                " no log evidence or loss curve for them"
            )
        warnings += _matching(self.matching, jobs)
        return InputReport(summary, coverage(self.origins), warnings)


def _matching(m: Matching, jobs: Mapping[str, JobAllocation]) -> list[str]:
    found = []
    if m.dropped:
        nodes = sorted({node for node, _ in m.dropped_gpus})
        found.append(
            f"{m.dropped:,} of {m.readings:,} readings ({len(m.dropped_gpus)} GPUs on {len(nodes)} nodes: {_some(nodes)})"
            f" match no job: left out{_node_hint(jobs, m)}"
        )
    unknown = sorted(m.labelled - set(jobs))
    if unknown and jobs:
        found.append(
            f"{len(unknown)} jobs named by the readings' labels (hpc_job, pod) are not in the jobs file ({_some(unknown)}):"
            " user 'unknown', cluster 'default', kind batch"
        )
    if m.whole_nodes:
        guessed = sorted(m.whole_nodes)
        found.append(
            f"{len(guessed)} jobs name nodes but no GPU count ({_some(guessed)}): each was given every GPU of its nodes"
            " that no other job held in its time"
        )
    missing = [job for name, job in jobs.items() if name not in m.matched]
    if missing and m.readings:
        found.append(f"{len(missing)} of {len(jobs)} jobs in the jobs file match no readings: {_why_missing(missing, m)}")
    return found


def _why_missing(missing: list[JobAllocation], m: Matching) -> str:
    low, high = m.span
    known = node_names(sorted(m.reading_nodes))
    reasons: dict[str, list[str]] = {}
    for job in missing:
        nodes = [n for n, _ in job.gpus] + [n for n, _ in job.counts]
        if job.end < low or job.start > high:
            why = f"ran outside the readings' time ({_day(low)} to {_day(high)})"
        elif job.job in m.ambiguous:
            why = "GPU counts without indices on nodes where more GPUs were free (give indices, or DCGM hpc_job labels)"
        elif not nodes:
            why = "name no GPUs or nodes, and no reading's label names them"
        elif all(find_node(n, known) is None for n in nodes):
            why = f"on nodes no reading has ({_some(sorted(set(nodes)))}; the readings' nodes: {_some(sorted(m.reading_nodes))})"
        else:
            why = "no reading of their GPUs in their time"
        reasons.setdefault(why, []).append(job.job)
    return "; ".join(f"{len(names)} {why} ({_some(names)})" for why, names in sorted(reasons.items(), key=lambda r: -len(r[1])))


def _node_hint(jobs: Mapping[str, JobAllocation], m: Matching) -> str:
    named = {n for job in jobs.values() for n, _ in (*job.gpus, *job.counts)}
    dropped = {node for node, _ in m.dropped_gpus}
    known = node_names(sorted(named))
    if named and all(find_node(node, known) is None for node in dropped):
        return f" (no job in the jobs file names their nodes; it names {_some(sorted(named))})"
    return ""


def _some(names: list[str]) -> str:
    shown = ", ".join(names[:EXAMPLES])
    return shown + (f" and {len(names) - EXAMPLES} more" if len(names) > EXAMPLES else "")


def _day(ts: float) -> str:
    return "?" if not math.isfinite(ts) else datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%MZ")
