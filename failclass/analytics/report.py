"""The failure report over classified attempts: Table 7, Table 6 and repetition per
reason, GPU time lost and right-sizing advice per user, and the cells every rendering of
them shows (GPU time in GPU-hours throughout, reasons by their names)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from failclass.analytics.columns import Attempts, sums
from failclass.analytics.ettr import goodput
from failclass.analytics.goodput import UserGoodput
from failclass.analytics.nodes import LEMON_FACTOR, LEMON_MIN, NodeFailures, gpu_failures, node_failures, ran_on_nodes
from failclass.analytics.repetition import ReasonRepetition, repetition
from failclass.analytics.status import ORDER, Table6Row, table6_of
from failclass.analytics.table7 import Table7Row, table7
from failclass.matching.taxonomy import Taxonomy

if TYPE_CHECKING:  # the waste half loads where a waste report is read
    from failclass.waste.rightsize import UserRightsizing

FINAL_STATUS = {"passed": "passed", "killed": "killed", "failed": "unsuccessful", "unsuccessful": "unsuccessful"}
FINAL_CODES = pa.array(list(FINAL_STATUS))  # a job's last attempt's status, any other one unsuccessful
FINAL_INDEX = np.array([ORDER.index(final) for final in FINAL_STATUS.values()] + [ORDER.index("unsuccessful")], dtype=np.int8)


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
    job_goodput: pa.Table | None  # the same per job (ettr.JOB_COLUMNS), for the export only: not in the JSON answer
    nodes: list[NodeFailures]  # where failures started, most first (lemon nodes marked)
    rightsizing: list[UserRightsizing]  # per user of the selection: what `failclass waste` advised (--waste)
    gpus: list[NodeFailures]  # the same per GPU of a node, where the origin's GPU is known

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "job_goodput"}

    def reason_names(self) -> dict[str, str]:
        return {row.reason_id: row.reason_name for row in self.table7}


def _plain(value: Any) -> Any:
    """A field as JSON holds it: dataclasses as dicts."""
    return [asdict(item) for item in value] if isinstance(value, list) else value


def _table6(attempts: Attempts) -> list[Table6Row]:
    """Each job's final status (its last attempt's) and GPU-hours (runtime x GPUs of all)."""
    rows, job = attempts.by_job
    gpu_hours = np.nan_to_num(attempts.rtf_minutes[rows], copy=False)
    np.divide(np.multiply(attempts.gpus[rows], gpu_hours, out=gpu_hours), 60, out=gpu_hours)
    last = rows[np.r_[job[1:] != job[:-1], True]] if len(rows) else rows
    final = pc.index_in(attempts.column("status").take(pa.array(last, pa.int64())), value_set=FINAL_CODES)
    status = FINAL_INDEX[pc.fill_null(final, len(FINAL_STATUS)).to_numpy()]
    return table6_of(status, sums(job, gpu_hours, len(last)))


def build_report(
    attempts: Attempts,
    taxonomy: Taxonomy,
    idle: Mapping[str, float] | None = None,
    read_logs: bool = True,
    rightsizing: Mapping[str, UserRightsizing] | None = None,
    per_job: bool = False,
) -> Report:
    """The tables; ``idle``: job -> idle GPU-hours as `failclass waste` measured them;
    ``read_logs``: whether the attempts' logs are read for their checkpoints;
    ``rightsizing``: user -> `failclass waste`'s right-sizing advice summed;
    ``per_job``: the goodput per job too (the export's)."""
    failed = attempts.failed(taxonomy)
    jobs, per_user = goodput(attempts, failed, idle, read_logs, per_job)
    named = ran_on_nodes(attempts, failed)
    sized = rightsizing or {}
    lost = np.nan_to_num(failed.rtf_minutes) * failed.demand()
    return Report(
        attempts=len(attempts),
        failed_attempts=len(failed),
        jobs=attempts.job_count(),
        users=len(attempts.users.values),
        gpu_hours_lost=round(float(np.cumsum(lost)[-1]) / 60, 2) if len(lost) else 0.0,
        table7=table7(failed, taxonomy),
        table6=_table6(attempts),
        repetition=repetition(failed),
        goodput=per_user,
        job_goodput=jobs,
        nodes=node_failures(named),
        rightsizing=[sized[u.user] for u in per_user if u.user in sized],
        gpus=gpu_failures(named),
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
