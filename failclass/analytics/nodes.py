"""Where failures started, per node: the failed attempts whose logs were read as ranks name
the node of the rank that failed first (failclass.logs.origin). A node that starts far
more failures than the others is a lemon (Meta's term for the hosts to drain): it is
marked where it started at least LEMON_MIN of them and LEMON_FACTOR times the median of the
nodes that ran a failed attempt."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from failclass.analytics.records import AttemptRecord

LEMON_MIN = 3
LEMON_FACTOR = 3.0


@dataclass(frozen=True)
class NodeFailures:
    node: str
    started: int  # failed attempts whose failure started on this node
    failed_attempts: int  # failed attempts that ran on it (started there or not)
    started_gpu_h: float  # GPU time of the attempts it started (runtime to failure x GPUs)
    top_reason: str  # the reason it started most
    lemon: bool


def node_failures(failed: Sequence[AttemptRecord], reason_of: dict[tuple[str, int], str]) -> list[NodeFailures]:
    """The nodes where a failure started, most first."""
    started: Counter[str] = Counter()
    ran: Counter[str] = Counter()
    hours: dict[str, float] = {}
    reasons: dict[str, Counter[str]] = {}
    for record in failed:
        ran.update(set(record.nodes) | ({record.origin_node} if record.origin_node else set()))
        if record.origin_node is None:
            continue
        started[record.origin_node] += 1
        hours[record.origin_node] = hours.get(record.origin_node, 0.0) + max(record.gpus, 1) * (record.rtf_minutes or 0.0) / 60
        reasons.setdefault(record.origin_node, Counter())[reason_of[(record.job_id, record.attempt)]] += 1
    typical = median([started.get(node, 0) for node in ran]) if ran else 0
    return [
        NodeFailures(
            node,
            count,
            ran[node],
            round(hours[node], 2),
            reasons[node].most_common(1)[0][0],
            count >= LEMON_MIN and count >= LEMON_FACTOR * max(typical, 1),
        )
        for node, count in started.most_common()
    ]
