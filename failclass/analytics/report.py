"""The failure report over classified attempts: Table 7, Table 6 and repetition per
reason, GPU time lost and right-sizing advice per user, and the cells every rendering of
them shows (GPU time in GPU-hours throughout, reasons by their names)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from failclass.analytics.goodput import JobGoodput, UserGoodput, goodput
from failclass.analytics.nodes import LEMON_FACTOR, LEMON_MIN, NodeFailures, gpu_failures, node_failures
from failclass.analytics.records import AttemptRecord
from failclass.analytics.repetition import ReasonRepetition, repetition
from failclass.analytics.status import Table6Row, table6_of
from failclass.analytics.table7 import Table7Row, table7
from failclass.matching.taxonomy import NO_SIGNATURE, Taxonomy

if TYPE_CHECKING:  # the waste half loads where a waste report is read
    from failclass.waste.rightsize import UserRightsizing

FINAL_STATUS = {"passed": "passed", "killed": "killed", "failed": "unsuccessful", "unsuccessful": "unsuccessful"}


@dataclass(frozen=True)
class Report:
    attempts: int
    failed_attempts: int
    jobs: int
    users: int
    gpu_hours_lost: float  # runtime to failure x GPUs over the failed attempts
    table7: list[Table7Row]
    table6: list[Table6Row]
    repetition: list[ReasonRepetition]
    goodput: list[UserGoodput]  # per user: GPU time lost since checkpoint and whole, idle, ETTR
    job_goodput: list[JobGoodput]  # the same per job: in the export, not in the JSON answer
    nodes: list[NodeFailures]  # where failures started, most first (lemon nodes marked)
    rightsizing: list[UserRightsizing]  # per user of the selection: what `failclass waste` advised (--waste)
    gpus: list[NodeFailures]  # the same per GPU of a node, where the origin's GPU is known

    def to_dict(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if name != "job_goodput"}

    def reason_names(self) -> dict[str, str]:
        return {row.reason_id: row.reason_name for row in self.table7}


def is_failure(record: AttemptRecord, taxonomy: Taxonomy) -> bool:
    """What Table 7 counts: attempts that failed, and killed ones that were preempted; a
    job killed by its user is no failure (it counts in Table 6)."""
    return record.status in ("failed", "unsuccessful") or (record.status == "killed" and record.reason in taxonomy.preemptions)


def reason_of(record: AttemptRecord) -> str:
    return record.reason or NO_SIGNATURE


def build_report(
    records: Sequence[AttemptRecord],
    taxonomy: Taxonomy,
    idle: Mapping[str, float] | None = None,
    read_logs: bool = True,
    rightsizing: Mapping[str, UserRightsizing] | None = None,
) -> Report:
    """The tables; ``idle``: job -> idle GPU-hours as `failclass waste` measured them;
    ``read_logs``: whether the attempts' logs are read for their checkpoints;
    ``rightsizing``: user -> `failclass waste`'s right-sizing advice summed."""
    failed = [r for r in records if is_failure(r, taxonomy)]
    attempts = [r.failed() for r in failed]
    last: dict[str, AttemptRecord] = {}
    gpu_hours: dict[str, float] = {}
    for record in sorted(records, key=lambda r: (r.job_id, r.attempt)):
        last[record.job_id] = record
        gpu_hours[record.job_id] = gpu_hours.get(record.job_id, 0.0) + record.gpus * (record.rtf_minutes or 0.0) / 60
    jobs = [(FINAL_STATUS.get(r.status, "unsuccessful"), gpu_hours[job]) for job, r in last.items()]
    rows = table7(attempts, taxonomy)
    reasons = {(r.job_id, r.attempt): reason_of(r) for r in failed}
    per_job, per_user = goodput(records, reasons, idle, read_logs)
    sized = rightsizing or {}
    return Report(
        attempts=len(records),
        failed_attempts=len(failed),
        jobs=len(last),
        users=len({r.user for r in records}),
        gpu_hours_lost=round(sum((a.rtf_minutes or 0.0) * max(a.gpus, 1) for a in attempts) / 60, 2),
        table7=rows,
        table6=table6_of(jobs),
        repetition=repetition(attempts),
        goodput=per_user,
        job_goodput=per_job,
        nodes=node_failures(failed, reasons),
        rightsizing=[sized[u.user] for u in per_user if u.user in sized],
        gpus=gpu_failures(failed, reasons),
    )


def cell(value: Any) -> str:
    """How a table shows a value: thousands separators, two decimals, "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


TABLE7_HEADERS = [
    "reason",
    "cat.",
    "trials",
    "jobs",
    "users",
    "RTF p50",
    "p90",
    "p95 (min)",
    "RTF %",
    "1 GPU",
    "2-4",
    ">4",
    "RTF x GPUs (GPU-h)",
    "%",
]
TABLE6_HEADERS = ["status", "jobs", "jobs %", "GPU-h", "GPU time %"]
REPEAT_HEADERS = ["reason", "trials", "per job", "per user", "top users (trials)", "their share"]


def table7_cells(report: Report) -> list[list[Any]]:
    return [
        [
            r.reason_name,
            r.categories or "-",
            r.trials,
            r.jobs,
            r.users,
            r.rtf_p50_min,
            r.rtf_p90_min,
            r.rtf_p95_min,
            r.rtf_total_pct,
            r.demand_1,
            r.demand_2_4,
            r.demand_gt4,
            r.rtf_x_demand_gpu_h,
            r.rtf_x_demand_pct,
        ]
        for r in report.table7
    ]


def table6_cells(report: Report) -> list[list[Any]]:
    return [[r.status, r.jobs, r.jobs_pct, r.gpu_hours, r.gpu_time_pct] for r in report.table6]


def repeat_cells(report: Report) -> list[list[Any]]:
    names = report.reason_names()
    return [
        [
            names.get(r.reason_id, r.reason_id),
            r.trials,
            r.trials_per_job,
            r.trials_per_user,
            ", ".join(f"{u} ({n})" for u, n in r.top_users),
            f"{100 * r.top_users_share:.1f}%",
        ]
        for r in report.repetition
    ]


GOODPUT_HEADERS = [
    "user",
    "jobs",
    "failed",
    "lost since checkpoint (GPU-h)",
    "whole attempts (GPU-h)",
    "idle (GPU-h)",
    "restarts (GPU-h)",
    "queue (GPU-h)",
    "ETTR",
    "lost most to",
    "from a checkpoint / no log",
]


def goodput_cells(report: Report) -> list[list[Any]]:
    names = report.reason_names()
    return [
        [
            u.user,
            u.jobs,
            u.failed_attempts,
            u.failures_since_checkpoint_gpu_h,
            u.failures_whole_gpu_h,
            u.idle_gpu_h,
            u.restart_gpu_h,
            u.queue_gpu_h,
            None if u.ettr is None else f"{100 * u.ettr:.1f}%",
            next((f"{names.get(r, r)} ({h:,.2f})" for r, h in u.lost_by_reason.items()), None),
            f"{u.counted_from_checkpoint} / {u.without_log}",
        ]
        for u in report.goodput
    ]


RIGHTSIZE_HEADERS = [
    "user",
    "jobs advised",
    "MIG slice (GPU-h freed)",
    "fewer GPUs (GPU-h freed)",
    "shorter limits (GPU-h reserved)",
    "advice freeing most",
]


def rightsize_cells(report: Report) -> list[list[Any]]:
    return [[u.user, u.jobs, u.smaller_gpu_h, u.fewer_gpus_h, u.shorter_limit_h, u.top] for u in report.rightsizing]


NODE_HEADERS = ["node", "failures started", "failed attempts on it", "GPU-h of those started", "started most", "lemon"]
NODE_NOTE = (
    "Where a failed attempt's logs were read as ranks, the node of the rank that failed first"
    f" (failclass/analytics/nodes.py). Lemon: at least {LEMON_MIN} started and {LEMON_FACTOR:g}x the median"
    " of the nodes that ran a failed attempt: drain it and check its GPUs."
)


def node_cells(report: Report) -> list[list[Any]]:
    return _place_cells(report.nodes, report.reason_names())


def _place_cells(rows: list[NodeFailures], names: Mapping[str, str]) -> list[list[Any]]:
    return [
        [n.node, n.started, n.failed_attempts, n.started_gpu_h, names.get(n.top_reason, n.top_reason), "lemon" if n.lemon else ""]
        for n in rows
    ]


GPU_HEADERS = ["node", "GPU", "failures started", "failed attempts on its node", "GPU-h started", "started most", "lemon"]
GPU_NOTE = (
    "The same per GPU, where the logs name the origin's GPU (its CUDA device, an Xid's bus id) or the facts give each"
    " rank one GPU. Lemon: the GPU alone meets the nodes' bar: drain it and check it (nvidia-smi -q, its Xid history)."
)


def gpu_cells(report: Report) -> list[list[Any]]:
    names = report.reason_names()
    return [[g.node, g.gpu, *row[1:]] for g, row in zip(report.gpus, _place_cells(report.gpus, names), strict=True)]
