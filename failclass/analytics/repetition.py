"""How failures repeat per reason: trials per job and per user (the study's repetition
factors) and the users who hold most of a reason's trials."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from failclass.analytics.table7 import FailedAttempt


@dataclass(frozen=True)
class ReasonRepetition:
    reason_id: str
    trials: int
    trials_per_job: float
    trials_per_user: float
    top_users: list[tuple[str, int]]
    top_users_share: float


def repetition(attempts: Iterable[FailedAttempt], top: int = 3) -> list[ReasonRepetition]:
    by_reason: dict[str, list[FailedAttempt]] = defaultdict(list)
    for attempt in attempts:
        by_reason[attempt.reason].append(attempt)
    rows = []
    for reason, trials in by_reason.items():
        users = Counter(a.user for a in trials)
        leaders = users.most_common(top)
        rows.append(
            ReasonRepetition(
                reason_id=reason,
                trials=len(trials),
                trials_per_job=round(len(trials) / len({a.job_id for a in trials}), 2),
                trials_per_user=round(len(trials) / len(users), 2),
                top_users=leaders,
                top_users_share=round(sum(n for _, n in leaders) / len(trials), 4),
            )
        )
    return sorted(rows, key=lambda row: (-row.trials, row.reason_id))
