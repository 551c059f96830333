"""How failures repeat per reason: trials per job and per user (the study's repetition
factors) and the users who hold most of a reason's trials."""

from __future__ import annotations

from dataclasses import dataclass

from failclass.analytics.columns import Failed, counts, distinct, most_common


@dataclass(frozen=True)
class ReasonRepetition:
    reason_id: str
    trials: int
    trials_per_job: float
    trials_per_user: float
    top_users: list[tuple[str, int]]
    top_users_share: float


def repetition(failed: Failed, top: int = 3) -> list[ReasonRepetition]:
    groups = len(failed.reason.names)
    trials = counts(failed.reason.codes, groups)
    jobs = distinct(failed.reason.codes, failed.job, groups)
    users = distinct(failed.reason.codes, failed.user.codes, groups)
    rows = []
    for code, reason in enumerate(failed.reason.names):
        leaders = most_common(failed.user.codes[failed.reason.codes == code], failed.user.names, top)
        rows.append(
            ReasonRepetition(
                reason_id=reason,
                trials=int(trials[code]),
                trials_per_job=round(int(trials[code]) / int(jobs[code]), 2),
                trials_per_user=round(int(trials[code]) / int(users[code]), 2),
                top_users=leaders,
                top_users_share=round(sum(n for _, n in leaders) / int(trials[code]), 4),
            )
        )
    return sorted(rows, key=lambda row: (-row.trials, row.reason_id))
