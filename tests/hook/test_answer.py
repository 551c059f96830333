"""The hook's answer: every action the policy can take has its documented exit status,
and the answer's JSON is the decision contract that the service answers with."""

from __future__ import annotations

from failclass.contracts import ACTIONS, Admitted, Decision, Effects, Explanation, from_json, to_json
from failclass.hook.answer import RECORDED, HookAnswer, RecordedPass
from failclass.hook.backends import EXIT_CODES, exit_code

WHY = Explanation("gpu_ecc_error", "gpu_ecc_error.xid_48", "reasons.gpu_ecc_error.action", "retry elsewhere", {"n": 1})


def test_every_action_has_its_own_exit_status_and_answers_without_one_exit_0() -> None:
    assert set(EXIT_CODES) == {*ACTIONS, "admit", RECORDED}
    decided = [EXIT_CODES[action] for action in ACTIONS]
    assert len(set(decided)) == len(ACTIONS) and min(decided) == 10
    assert exit_code(HookAnswer(Admitted())) == exit_code(HookAnswer(RecordedPass())) == 0
    audit = Decision("no_retry", explanation=WHY).in_mode("audit")
    assert (audit.enforced, exit_code(HookAnswer(audit))) == (False, 0)


def test_the_answers_json_is_the_decision_read_back_whole() -> None:
    decision = Decision("retry_elsewhere", exclude_nodes=("gpu-07",), explanation=WHY, effects=Effects(suspect_nodes=("gpu-07",)))
    body = HookAnswer(decision, attempt_id=4, log="slurm-9.out").to_json()
    assert (body["attempt_id"], body["log"], body["action"], body["effects"]["suspect_nodes"]) == (
        4,
        "slurm-9.out",
        "retry_elsewhere",
        ["gpu-07"],
    )
    assert from_json(Decision, body) == decision and HookAnswer.of_body(body).decided == decision
    assert to_json(decision) == {key: body[key] for key in to_json(decision)}
    assert HookAnswer.of_body({"action": "admit", "mode": "audit", "enforced": False}).decision == Admitted("audit", False)
