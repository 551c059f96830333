"""One vocabulary of rule roles (failclass.matching.roles), derived once per rule set from
the rule files' kind and generic and the taxonomy's consequence marks."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from failclass.classifier import Classifier
from failclass.matching.roles import Role, derive_roles


def test_each_rule_has_the_role_its_kind_generic_and_reason_give(classifier: Classifier) -> None:
    ruleset = classifier.ruleset
    roles = ruleset.roles
    assert roles.consequences == {"core_dump", "traceback_from_crash"}
    for rule in ruleset.rules:
        role = roles.of[rule.id]
        if rule.kind == "implicit":
            assert role is (Role.GENERIC if rule.generic else Role.HINT), rule.id
        else:
            assert role is (Role.CONSEQUENCE if rule.reason in roles.consequences else Role.CAUSE), rule.id
    counted = Counter((rule.reason, roles.of[rule.id]) for rule in ruleset.rules)
    assert counted[("core_dump", Role.CONSEQUENCE)] == 14  # explicit about how the process died, never decisive
    assert {role for (reason, role) in counted if reason == "traceback_from_crash"} == {Role.HINT, Role.GENERIC}


def test_a_reason_that_no_explicit_rule_names_is_a_consequence(classifier: Classifier) -> None:
    """As in a cross-validation fold that left out every explicit rule of a reason: what
    remains of it only hints, and the model may name another reason over it."""
    ruleset = classifier.ruleset
    kept = tuple(rule for rule in ruleset.rules if not (rule.reason == "semantic_error" and rule.kind == "explicit"))
    assert "semantic_error" not in ruleset.roles.consequences
    assert "semantic_error" in replace(ruleset, rules=kept).roles.consequences
    marked = derive_roles((), ruleset.taxonomy)
    assert marked.consequences == {"core_dump", "traceback_from_crash"} and not marked.of


def test_an_attempts_logs_are_weighed_by_role(classifier: Classifier) -> None:
    """Among an attempt's logs, a cause or an explicit consequence speaks over the model's
    answer, which speaks over a hint or a generic rule."""
    answers = {}
    for role in Role:  # the first rule of each role whose own example it wins
        of_role = (rule for rule in classifier.ruleset.rules if classifier.roles[rule.id] is role)
        answered = (classifier.classify_bytes(rule.positives[0].text) for rule in of_role)
        answers[role] = next(a for a in answered if a.rule_id is not None and classifier.roles[a.rule_id] is role)
    ranks = {role: classifier.strength(answer)[0] for role, answer in answers.items()}
    assert ranks == {Role.CAUSE: 3, Role.CONSEQUENCE: 3, Role.HINT: 1, Role.GENERIC: 1}
