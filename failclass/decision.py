"""A decision about an attempt: what the scheduler should do, the policy clause behind
it, and the changes it makes to the cluster's memory (holds, blacklist, suspect nodes).
The policy makes it, the store keeps it, the adapters act on it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

RETRY_ACTIONS = ("retry", "retry_elsewhere", "retry_with_more_resources")
ACTIONS = (*RETRY_ACTIONS, "no_retry", "hold", "reject")


@dataclass(frozen=True)
class Effects:
    hold_reason: str | None = None
    blacklist: tuple[str, ...] = ()
    suspect_nodes: tuple[str, ...] = ()
    implicated_inputs: tuple[str, ...] = ()
    implicated_nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decision:
    action: str
    reason: str
    rule_id: str | None
    clause: str
    message: str
    counters: dict[str, Any]
    mode: str = "enforce"
    backoff_seconds: float | None = None
    exclude_nodes: tuple[str, ...] = ()
    avoid_gpu_types: tuple[str, ...] = ()
    memory_factor: float | None = None
    effects: Effects = field(default_factory=Effects)

    def to_dict(self, evidence: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        return {
            "action": self.action,
            "mode": self.mode,
            "enforced": self.mode == "enforce",
            "backoff_seconds": self.backoff_seconds,
            "exclude_nodes": list(self.exclude_nodes),
            "avoid_gpu_types": list(self.avoid_gpu_types),
            "memory_factor": self.memory_factor,
            "explanation": {
                "reason": self.reason,
                "rule_id": self.rule_id,
                "evidence": list(evidence),
                "policy_clause": self.clause,
                "message": self.message,
                "counters": self.counters,
            },
            "effects": {
                "hold": self.effects.hold_reason,
                "blacklisted_inputs": list(self.effects.blacklist),
                "suspect_nodes": list(self.effects.suspect_nodes),
            },
        }
