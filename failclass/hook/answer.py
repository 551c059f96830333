"""The hook's answer about one attempt or submission, as the adapters and the CLI read it:
the decision (failclass.contracts), and where it came from. JSON only at the edges:
``of_body`` reads the service's body, ``to_json`` is what `failclass hook ... --json`
prints (the decision object of DESIGN.md, with the classification and the log)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from failclass.contracts import Admitted, Classification, Decision, Mode, from_json, to_json

RECORDED = "recorded"


@dataclass(frozen=True)
class RecordedPass:
    """The answer about a passed attempt: recorded for the reports, nothing decided."""

    mode: Mode = "enforce"
    enforced: bool = True
    action: Literal["recorded"] = "recorded"


@dataclass(frozen=True)
class HookAnswer:
    """A decision (retry, retry_elsewhere, ..., hold, reject), an admission or a recorded
    pass, with the attempt's id, its classification and the log that spoke for it."""

    decision: Decision | Admitted | RecordedPass
    attempt_id: int | None = None
    classification: Classification | None = None
    log: str | None = None  # the log that spoke for the attempt (local decisions, not duplicates)
    fallback: str | None = None  # why the service was not asked (its answer was decided locally)
    duplicate: bool = False  # the attempt was recorded before: this is the answer recorded then

    @property
    def action(self) -> str:
        return self.decision.action

    @property
    def enforced(self) -> bool:
        return self.decision.enforced

    @property
    def decided(self) -> Decision | None:
        """The decision, where the answer is one (not an admission or a recorded pass)."""
        return self.decision if isinstance(self.decision, Decision) else None

    @classmethod
    def of_attempt(cls, decision: Decision | None, mode: Mode, **context: Any) -> HookAnswer:
        """The answer about a recorded attempt: its decision, or RecordedPass for a passed one."""
        return cls(decision or RecordedPass(mode, mode == "enforce"), **context)

    @classmethod
    def of_body(cls, body: Mapping[str, Any], **context: Any) -> HookAnswer:
        """From the service's decision or admission body; ``context`` adds attempt_id,
        classification, log, fallback or duplicate."""
        if body.get("action") == "admit":
            return cls(from_json(Admitted, body), **context)
        return cls(from_json(Decision, body), **context)

    def to_json(self) -> dict[str, Any]:
        head = {"attempt_id": self.attempt_id, "classification": self.classification, "log": self.log}
        tail = {"fallback": self.fallback, "duplicate": self.duplicate or None}
        present = {key: value for key, value in {**head, **tail}.items() if value is not None}
        return {
            **to_json({key: present[key] for key in head if key in present}),
            **to_json(self.decision),
            **{key: present[key] for key in tail if key in present},
        }

    def summary(self) -> str:
        """One line: the action, and the reason, rule and message when there are any."""
        line = self.action
        if self.decided is not None:
            found = self.decided.explanation
            line += f": {found.reason} ({found.rule_id or 'no rule'}): {found.message}"
        return line
