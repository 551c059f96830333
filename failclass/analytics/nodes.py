"""Where failures started, per node and per GPU: the failed attempts whose logs were read as
ranks name the node of the rank that failed first (failclass.logs.origin), and its GPU
where the logs or the facts tell it. A node that starts far more failures than the others
is a lemon (Meta's term for the hosts to drain): it is marked where it started at least
LEMON_MIN of them and LEMON_FACTOR times the median of the nodes that ran a failed
attempt. A GPU is marked where it alone meets that bar: the node's failures are its."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from failclass.analytics.columns import Attempts, Failed

LEMON_MIN = 3
LEMON_FACTOR = 3.0


@dataclass(frozen=True)
class NodeFailures:
    node: str
    started: int  # failed attempts whose failure started on this node (on this GPU of it)
    failed_attempts: int  # failed attempts that ran on the node (started there or not)
    started_gpu_h: float  # GPU time of the attempts it started (runtime to failure x GPUs)
    top_reason: str  # the reason it started most
    lemon: bool
    gpu: int | None = None  # one GPU of the node; None: the node as a whole


@dataclass(frozen=True)
class Ran:
    """A failed attempt that ran on named nodes: where, where it started, its GPU time and reason."""

    nodes: list[str]
    origin_node: str | None
    origin_gpu: int | None
    gpu_h: float  # runtime to failure x GPUs (at least 1)
    reason: str


def ran_on_nodes(attempts: Attempts, failed: Failed) -> list[Ran]:
    """The failed attempts that name a node (their own, or where their failure started)."""
    table = attempts.table.select(["nodes", "origin_node", "origin_gpu"]).take(pa.array(failed.rows, pa.int64()))
    named = pc.or_(pc.is_valid(table.column("origin_node")), pc.greater(pc.list_value_length(table.column("nodes")), 0))
    keep = np.flatnonzero(named.to_numpy(zero_copy_only=False))
    rows = table.take(pa.array(keep, pa.int64())).to_pylist()
    hours = np.nan_to_num(failed.rtf_minutes[keep]) * failed.demand()[keep] / 60
    reasons = [failed.reason.names[code] for code in failed.reason.codes[keep]]
    return [
        Ran(r["nodes"], r["origin_node"], r["origin_gpu"], float(h), why) for r, h, why in zip(rows, hours, reasons, strict=True)
    ]


def node_failures(failed: Sequence[Ran]) -> list[NodeFailures]:
    """The nodes where a failure started, most first."""
    return _started(failed, lambda r: (r.origin_node, None) if r.origin_node is not None else None)


def gpu_failures(failed: Sequence[Ran]) -> list[NodeFailures]:
    """The GPUs where a failure started (where the origin's GPU is known), most first."""
    return _started(failed, _on_gpu)


Place = tuple[str, int | None]  # a node, and one GPU of it (None: the whole node)


def _on_gpu(record: Ran) -> Place | None:
    return (record.origin_node, record.origin_gpu) if record.origin_node is not None and record.origin_gpu is not None else None


def _started(failed: Sequence[Ran], place: Callable[[Ran], Place | None]) -> list[NodeFailures]:
    """Failures started per place (a node, or a node and GPU), against the bar the nodes set."""
    started: Counter[Place] = Counter()
    per_node: Counter[str] = Counter()
    ran: Counter[str] = Counter()
    hours: dict[Place, float] = {}
    reasons: dict[Place, Counter[str]] = {}
    for record in failed:
        ran.update(set(record.nodes) | ({record.origin_node} if record.origin_node else set()))
        if record.origin_node is None:
            continue
        per_node[record.origin_node] += 1
        if (where := place(record)) is None:
            continue
        started[where] += 1
        hours[where] = hours.get(where, 0.0) + record.gpu_h
        reasons.setdefault(where, Counter())[record.reason] += 1
    typical = median([per_node.get(node, 0) for node in ran]) if ran else 0
    return [
        NodeFailures(
            where[0],
            count,
            ran[where[0]],
            round(hours[where], 2),
            reasons[where].most_common(1)[0][0],
            count >= LEMON_MIN and count >= LEMON_FACTOR * max(typical, 1),
            where[1],
        )
        for where, count in started.most_common()
    ]
