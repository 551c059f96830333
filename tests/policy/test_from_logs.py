"""End to end, log to decision: the classifier on real corpus logs, then the policy. The
policy's own tests (test_policy.py, tests/store/) take hand-made failures
(tests/failures.py); these check that the classifier still finds them in the logs their
evidence was copied from, and that a log's answer reaches the decision its reason asks."""

from __future__ import annotations

import pytest
from conftest import ROOT
from failures import MADE, examination

from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.policy.config import load_policy
from failclass.usecases import decide_without_history

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("name", sorted(MADE))
def test_the_classifier_finds_the_hand_made_answer_in_its_log(classifier: Classifier, name: str) -> None:
    found = classifier.examine_path(ROOT / MADE[name].log)
    made = examination(name)
    facts = ("reason", "reason_name", "categories", "source", "rule_id", "evidence")
    assert {f: getattr(found.classification, f) for f in facts} == {f: getattr(made.classification, f) for f in facts}
    assert found.progress == made.progress


@pytest.mark.parametrize(
    ("name", "number", "action"),
    [("syntax", 1, "no_retry"), ("nccl_timeout", 1, "retry"), ("nccl_timeout", 4, "no_retry"), ("ecc", 1, "retry_elsewhere")],
)
def test_a_logs_answer_reaches_its_decision(classifier: Classifier, name: str, number: int, action: str) -> None:
    """Without a store every earlier attempt counts against the budget (3 retries of a
    timeout); a hardware failure moves the job off its node."""
    examined = classifier.examine_path(ROOT / MADE[name].log)
    attempt = Attempt("job-1", number, "alice", nodes=("gpu-07",))
    decision = decide_without_history(attempt, examined, load_policy())
    assert (examined.classification.reason, decision.explanation.reason, decision.action) == (MADE[name].reason,) * 2 + (action,)
    assert decision.exclude_nodes == (("gpu-07",) if action == "retry_elsewhere" else ())
