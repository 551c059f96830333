"""What a rule's match says of a failure, and so what the classifier does with it: one
vocabulary, derived once per rule set from the rule files' ``kind`` and ``generic`` and the
taxonomy's ``consequence`` (signatures/README.md, "Roles")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from failclass.matching.taxonomy import Taxonomy


class Role(Enum):
    CAUSE = "cause"  # explicit, of a reason that is not a consequence: it answers at once
    CONSEQUENCE = "consequence"  # explicit, of a consequence reason: how a process died, not why
    HINT = "hint"  # implicit: points at a reason from what followed it (a launcher's report)
    GENERIC = "generic"  # implicit and generic: says only that the program failed (a bare traceback)


class RoleSource(Protocol):
    """What a role is derived from: the fields a rule file gives."""

    @property
    def id(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def generic(self) -> bool: ...


@dataclass(frozen=True)
class Roles:
    """Each rule's role, and the consequence reasons they rest on."""

    of: dict[str, Role]  # rule id -> its role
    consequences: frozenset[str]  # reasons that only say how a process died: the model may name the cause instead


def derive_roles(rules: Iterable[RoleSource], taxonomy: Taxonomy) -> Roles:
    """The roles of ``rules``. A reason is a consequence when the taxonomy marks it so, or
    when no explicit rule of the set names it (only a consequence of it survives)."""
    rules = tuple(rules)
    explicit = {rule.reason for rule in rules if rule.kind == "explicit"}
    marked = frozenset(r.id for r in taxonomy.reasons.values() if r.consequence)
    consequences = marked | (frozenset(rule.reason for rule in rules) - explicit)

    def role(rule: RoleSource) -> Role:
        if rule.kind == "implicit":
            return Role.GENERIC if rule.generic else Role.HINT
        return Role.CONSEQUENCE if rule.reason in consequences else Role.CAUSE

    return Roles({rule.id: role(rule) for rule in rules}, consequences)
