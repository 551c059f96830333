"""Root cause over consequence: order the rules that matched and say why the others lost.

The winner has the highest priority; among equals, the earliest first match (a cascade
follows its cause); then the rule id, so the answer never depends on load order. Where the
log reports an end without its cause (a time limit, torchrun told to stop by SIGTERM, a
cloud SDK's "training job failed" wrapper; the classifier finds it), the generic rules
(those that say only that the program failed) that matched from that end on say nothing:
what they saw is that end, which the guide files as No signature. So do those of a log
that goes on after them and ends recording no failure (a traceback the job survived, then
a kill from outside).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from failclass.matching.matcher import Hit
from failclass.matching.roles import Role
from failclass.matching.rules import Rule


class SetAside(Enum):
    """Why a log's generic candidates were set aside; the value is what ``--explain`` says."""

    END_WITHOUT_CAUSE = "generic, and the log reports an end that names no cause (No signature)"
    SURVIVED = "generic, and the log goes on after it and ends recording no failure (No signature)"


@dataclass(frozen=True)
class Candidate:
    """A rule that matched, with its role and its hits in log order."""

    rule: Rule
    role: Role
    hits: tuple[Hit, ...]

    @property
    def first(self) -> Hit:
        return self.hits[0]

    def order_key(self) -> tuple[int, int, str]:
        return (-self.rule.priority, self.first.offset, self.rule.id)


@dataclass(frozen=True)
class Ranking:
    winner: Candidate | None
    losers: tuple[tuple[Candidate, str], ...]  # with why each lost to the winner
    set_aside: tuple[tuple[Candidate, SetAside], ...] = ()  # generic candidates that saw only an end without a failure

    @property
    def others(self) -> tuple[tuple[Candidate, str], ...]:
        """Every candidate but the winner, with why, as ``--explain`` shows them."""
        return self.losers + tuple((candidate, why.value) for candidate, why in self.set_aside)


def candidates(hits: tuple[Hit, ...], rules: dict[str, Rule], roles: dict[str, Role]) -> list[Candidate]:
    grouped: dict[str, list[Hit]] = {}
    for hit in hits:
        grouped.setdefault(hit.rule_id, []).append(hit)
    return [
        Candidate(rules[rule_id], roles[rule_id], tuple(sorted(group, key=lambda h: h.offset)))
        for rule_id, group in grouped.items()
    ]


def why_lost(loser: Candidate, winner: Candidate) -> str:
    if loser.rule.priority < winner.rule.priority:
        return f"priority {loser.rule.priority} < {winner.rule.priority} of {winner.rule.id}"
    if loser.first.offset > winner.first.offset:
        return (
            f"same priority {loser.rule.priority}; first matched at line {loser.first.line},"
            f" after line {winner.first.line} of {winner.rule.id}"
        )
    return f"same priority and position as {winner.rule.id}; rule ids break the tie"


def rank(
    hits: tuple[Hit, ...],
    rules: dict[str, Rule],
    roles: dict[str, Role],
    aside: tuple[SetAside, Callable[[Candidate], bool]] | None = None,
) -> Ranking:
    """The winner and the losers with why; with ``aside`` (why, which), the generic
    candidates it picks (those that saw only an end reported without a cause, or that the
    log went on after) are set aside, for that why."""
    found = candidates(hits, rules, roles)
    void = tuple((c, aside[0]) for c in found if aside is not None and c.role is Role.GENERIC and aside[1](c))
    voided = [c for c, _ in void]
    ordered = sorted((c for c in found if c not in voided), key=Candidate.order_key)
    if not ordered:
        return Ranking(None, (), void)
    winner = ordered[0]
    return Ranking(winner, tuple((loser, why_lost(loser, winner)) for loser in ordered[1:]), void)
