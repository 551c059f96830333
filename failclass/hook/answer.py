"""The hook's answer about one attempt or submission, as the adapters and the CLI read it.
JSON only at the edges: ``from_json`` reads the service's body (or the local decision's),
``to_json`` is what `failclass hook ... --json` prints (the decision object of DESIGN.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RECORDED = "recorded"  # the answer about a passed attempt: recorded for the reports, nothing decided


@dataclass(frozen=True)
class Explanation:
    """Why: the classified reason, the rule, the policy clause, the message."""

    reason: str | None
    rule_id: str | None
    message: str = ""
    policy_clause: str | None = None
    evidence: tuple[Mapping[str, Any], ...] = ()  # {"line": n, "text": ...}, as classified
    counters: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Explanation:
        return cls(
            reason=body.get("reason"),
            rule_id=body.get("rule_id"),
            message=str(body.get("message") or ""),
            policy_clause=body.get("policy_clause"),
            evidence=tuple(body.get("evidence") or ()),
            counters=dict(body.get("counters") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "rule_id": self.rule_id,
            "evidence": [dict(e) for e in self.evidence],
            "policy_clause": self.policy_clause,
            "message": self.message,
            "counters": dict(self.counters),
        }


@dataclass(frozen=True)
class AnswerEffects:
    """What the decision changed in the cluster's memory."""

    hold: str | None = None
    blacklisted_inputs: tuple[str, ...] = ()
    suspect_nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class HookAnswer:
    """A decision (retry, retry_elsewhere, ..., hold, reject) or an admission ("admit")."""

    action: str
    mode: str = "enforce"
    enforced: bool = True
    backoff_seconds: float | None = None
    exclude_nodes: tuple[str, ...] = ()
    avoid_gpu_types: tuple[str, ...] = ()
    memory_factor: float | None = None
    explanation: Explanation | None = None
    effects: AnswerEffects | None = None
    attempt_id: int | None = None
    classification: Mapping[str, Any] | None = None  # the classify contract (JSON), passed through
    log: str | None = None  # the log that spoke for the attempt (local decisions, not duplicates)
    fallback: str | None = None  # why the service was not asked (its answer was decided locally)
    duplicate: bool = False  # the attempt was recorded before: this is the answer recorded then

    @classmethod
    def from_json(cls, body: Mapping[str, Any], **context: Any) -> HookAnswer:
        """From a decision body (Decision.to_dict, the service's "decision") or an admission;
        ``context`` adds attempt_id, classification, log, fallback or duplicate."""
        mode = str(body.get("mode") or "enforce")
        explanation, effects = body.get("explanation"), body.get("effects")
        return cls(
            action=str(body["action"]),
            mode=mode,
            enforced=bool(body.get("enforced", mode == "enforce")),
            backoff_seconds=body.get("backoff_seconds"),
            exclude_nodes=tuple(body.get("exclude_nodes") or ()),
            avoid_gpu_types=tuple(body.get("avoid_gpu_types") or ()),
            memory_factor=body.get("memory_factor"),
            explanation=Explanation.from_json(explanation) if explanation else None,
            effects=AnswerEffects(
                effects.get("hold"), tuple(effects.get("blacklisted_inputs") or ()), tuple(effects.get("suspect_nodes") or ())
            )
            if effects
            else None,
            **{"fallback": body.get("fallback"), **context},
        )

    @classmethod
    def of_recorded(cls, decision: Mapping[str, Any] | None, mode: str, **context: Any) -> HookAnswer:
        """The answer about a recorded attempt: its decision, or RECORDED for a passed one
        (recorded for the reports, nothing decided)."""
        return cls(RECORDED, mode, **context) if decision is None else cls.from_json(decision, **context)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.attempt_id is not None:
            body["attempt_id"] = self.attempt_id
        if self.classification is not None:
            body["classification"] = dict(self.classification)
        if self.log is not None:
            body["log"] = self.log
        body.update(action=self.action, mode=self.mode, enforced=self.enforced)
        if self.explanation is not None:
            body.update(
                backoff_seconds=self.backoff_seconds,
                exclude_nodes=list(self.exclude_nodes),
                avoid_gpu_types=list(self.avoid_gpu_types),
                memory_factor=self.memory_factor,
                explanation=self.explanation.to_json(),
            )
        if self.effects is not None:
            body["effects"] = {
                "hold": self.effects.hold,
                "blacklisted_inputs": list(self.effects.blacklisted_inputs),
                "suspect_nodes": list(self.effects.suspect_nodes),
            }
        if self.fallback is not None:
            body["fallback"] = self.fallback
        if self.duplicate:
            body["duplicate"] = True
        return body

    def summary(self) -> str:
        """One line: the action, and the reason, rule and message when there are any."""
        line = self.action
        if self.explanation is not None:
            found = self.explanation
            line += f": {found.reason} ({found.rule_id or 'no rule'}): {found.message}"
        return line
